# syntax=docker/dockerfile:1
# The tessera-extender image: built and tested on Debian 12, run on Debian 12
# slim with only the shared libraries the binaries link. It carries the node
# agent too (/usr/local/bin/tessera-node-agent, run by the chart's DaemonSet
# with its own command); the agent loads the driver's libnvidia-ml.so.1 at run
# time, so nothing NVIDIA is in the image. From the repository root:
#
#   docker build -t tessera-extender:0.1.0 .
#   docker build --build-arg SKIP_TESTS=1 -t tessera-extender:0.1.0 .
#
# The test suite's data (recorded kube-scheduler requests, the Alibaba GPU
# trace) is in the repository's data/, so the build context is all it needs.
# The Helm chart (k8s/helm/tessera) runs this image beside kube-scheduler.

FROM debian:bookworm AS build
ARG SKIP_TESTS=0
# The packages README's set-up installs, by the same script.
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh && rm -rf /var/lib/apt/lists/*
WORKDIR /src/tessera
COPY . .
RUN if [ "$SKIP_TESTS" = 1 ]; then \
      cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCHMARKS=OFF && \
      cmake --build build -j"$(nproc)" --target tessera-extender tessera-node-agent; \
    else \
      cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_BENCHMARKS=OFF && \
      cmake --build build -j"$(nproc)" && \
      ctest --test-dir build --output-on-failure -j"$(nproc)"; \
    fi && \
    strip build/tessera-extender build/tessera-node-agent

FROM debian:bookworm-slim
# What `ldd tessera-extender` (and tessera-node-agent, a subset) lists, by Debian 12 package: abseil, yaml-cpp,
# simdjson, OpenSSL (libssl and libcrypto), nghttp2 (HTTP/2), the C++ runtime. ca-certificates
# for API servers reached through a kubeconfig that names no CA.
RUN apt-get update && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libabsl20220623 libyaml-cpp0.7 libsimdjson14 libssl3 libnghttp2-14 libstdc++6 libgcc-s1 ca-certificates && \
    rm -rf /var/lib/apt/lists/*
COPY --from=build /src/tessera/build/tessera-extender /usr/local/bin/tessera-extender
COPY --from=build /src/tessera/build/tessera-node-agent /usr/local/bin/tessera-node-agent
COPY config/examples/default-policy.yaml /etc/tessera/policy.yaml
# Numeric, so Kubernetes' runAsNonRoot can check it; no home, no shell needed.
USER 65532:65532
EXPOSE 8888
ENTRYPOINT ["/usr/local/bin/tessera-extender"]
# Defaults: the shipped policy, 127.0.0.1:8888 (the containers of the same pod),
# the in-cluster service account. The Helm chart passes its own flags.
CMD ["--policy-file=/etc/tessera/policy.yaml"]
