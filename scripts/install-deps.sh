#!/usr/bin/env bash
# Installs what Tessera needs to build and test, from Debian 12's packages only.
# Idempotent: installs only what is missing. Uses sudo when not root.
# etcd-server, openssl, curl, xz-utils and util-linux (flock) are for the tests on a
# real control plane (docs/operations/testing.md, "Tests on a real control plane"); the plane's
# kube-apiserver and kube-scheduler come from ../shared/kube, not from Debian.
set -euo pipefail

packages=(
  g++ cmake make pkg-config curl ccache
  libboost-dev nlohmann-json3-dev libyaml-cpp-dev libabsl-dev libsimdjson-dev libssl-dev libnghttp2-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  prometheus
  # Only benchmarks/exposition (Tessera's exposition format against prometheus-cpp,
  # docs/operations/metrics.md); nothing Tessera ships links it.
  prometheus-cpp-dev
  etcd-server openssl xz-utils util-linux
  # Helm and kubectl come from the npm registry (scripts/install-helm.sh);
  # npm itself below, only when no npm is on the PATH.
  unzip
  # The sanitizer build and the fuzz targets (scripts/test.sh, scripts/fuzz.sh):
  # clang, its libFuzzer and sanitizer runtimes, llvm-symbolizer for stack traces.
  clang-14 libclang-rt-14-dev llvm-14
  # The GPU map page's test renders /ui in a real headless browser.
  chromium
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
