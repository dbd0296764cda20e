#!/usr/bin/env bash
# README command (1): install, build, and start Tessera on 127.0.0.1:8888
# serving the demo cluster in config/examples/demo-cluster.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-demo -j"$(nproc)" --target tessera-extender

cat <<MSG

Tessera is starting on http://127.0.0.1:8888 with the demo cluster. From another terminal, ask it
where a pod wanting a quarter of a GPU (burst to 0.8) and 10Gi of GPU memory may run:

  curl -s -X POST http://127.0.0.1:8888/filter -H 'Content-Type: application/json' --data @$(pwd)/config/examples/requests/filter-quarter-gpu.json

and which of those nodes it prefers (scores 0..10):

  curl -s -X POST http://127.0.0.1:8888/prioritize -H 'Content-Type: application/json' --data @$(pwd)/config/examples/requests/prioritize-quarter-gpu.json

More requests are in config/examples/requests/. Metrics: curl -s http://127.0.0.1:8888/metrics
Stop with Ctrl-C (SIGINT/SIGTERM drain requests in flight); reload the policy with SIGHUP.

MSG
exec ./build-demo/tessera-extender \
  --address=127.0.0.1 --port=8888 \
  --policy-file=config/examples/default-policy.yaml \
  --cluster-file=config/examples/demo-cluster.yaml
