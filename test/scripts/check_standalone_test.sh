#!/usr/bin/env bash
# scripts/check_standalone.sh must pass on the tree and fail, naming the file
# and line, on any new use of ../shared outside its two documented exceptions.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash "$src/scripts/check_standalone.sh" "$src" >/dev/null || fail "the tree itself reads ../shared: $(bash "$src/scripts/check_standalone.sh" "$src")"

copy_tree() {
  rm -rf "$tmp/tree"; mkdir -p "$tmp/tree"
  for d in sim test benchmarks scripts; do cp -r "$src/$d" "$tmp/tree/"; done
  cp "$src/CMakeLists.txt" "$src/Dockerfile" "$tmp/tree/"
}
expect_violation() {  # FILE LINE
  copy_tree
  printf '%s\n' "$2" >> "$tmp/tree/$1"
  if out="$(bash "$tmp/tree/scripts/check_standalone.sh" "$tmp/tree" 2>&1)"; then fail "$1 with '$2' was accepted"; fi
  grep -q "^$1:[0-9]*: names the team's ../shared folder" <<<"$out" || fail "the message does not name $1 and its line: $out"
}
expect_accepted() {  # FILE LINE
  copy_tree
  printf '%s\n' "$2" >> "$tmp/tree/$1"
  out="$(bash "$tmp/tree/scripts/check_standalone.sh" "$tmp/tree" 2>&1)" || fail "$1 with '$2' was refused: $out"
}
expect_violation test/sim/trace_test.cc 'constexpr const char* kOpenb = TESSERA_SHARED_DIR "/data/openb/";'
expect_violation test/CMakeLists.txt 'target_compile_definitions(x PRIVATE TESSERA_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")'
expect_violation sim/main.cc 'ABSL_FLAG(std::string, nodes, "../shared/data/openb/openb_node_list_gpu_node.csv", "");'
expect_violation benchmarks/json_decode_benchmark.cc 'std::ifstream in("../shared/fixtures/kube-scheduler-v1.26/bind-request.json");'
expect_violation scripts/test.sh 'ls ../shared/data'
expect_violation Dockerfile 'COPY --from=shared . /src/shared/   # the tests read ../shared'
# The control plane cannot be carried; placement.sh's default folder falls back to data/openb.
expect_accepted test/CMakeLists.txt 'set(TESSERA_KUBE_DIR "${PROJECT_SOURCE_DIR}/../shared/kube")'
expect_accepted benchmarks/placement.sh '[ -d ../shared/data/openb ] && data=../shared/data/openb'
# ...but only there.
expect_violation benchmarks/placement_benchmark.cc 'const char* kTraces = "../shared/data/openb";'
echo "check_standalone_test: every case behaved"
