#!/usr/bin/env bash
# scripts/check_layers.sh must pass on the tree and fail, naming the file and
# the include, on an include that points up or sideways.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash "$src/scripts/check_layers.sh" "$src" >/dev/null || fail "the tree itself breaks the floor plan"

copy_tree() {
  rm -rf "$tmp/tree"; mkdir -p "$tmp/tree"
  for d in scheduler policies k8s telemetry config extender agent sim fuzz scripts; do cp -r "$src/$d" "$tmp/tree/"; done
}
expect_violation() {  # FILE INCLUDE WORDS-IN-MESSAGE
  copy_tree
  printf '#include "%s"\n' "$2" >> "$tmp/tree/$1"
  if out="$(bash "$tmp/tree/scripts/check_layers.sh" "$tmp/tree" 2>&1)"; then fail "$1 including $2 was accepted"; fi
  grep -q "$1:.*$3" <<<"$out" || fail "the message does not name $1 and $3: $out"
}
expect_violation scheduler/model/quantity.h extender/program.h "scheduler/model may not include extender/program.h"
expect_violation scheduler/framework/plugin.h scheduler/cache/cluster_model.h "may not include scheduler/cache"
expect_violation policies/fgd/fgd.cc k8s/node_inventory.h "policies may not include k8s/node_inventory.h"
expect_violation k8s/node_inventory.cc config/policy_loader.h "k8s may not include"
expect_violation config/policy_loader.cc policies/gpu_share/gpu_share.h "config may not include"
expect_violation telemetry/gpu_samples.cc test/testing/builders.h "never includes tests"
expect_violation agent/gpu_probe.cc extender/program.h "agent may not include extender/program.h"
expect_violation k8s/node_inventory.cc agent/annotations.h "k8s may not include agent/annotations.h"
expect_violation agent/nvml/nvml_library.cc k8s/annotations.h "agent/nvml may not include k8s/annotations.h"
expect_violation k8s/node_inventory.cc fuzz/fuzz_input.h "never includes tests, benchmarks or fuzzers"
echo "check_layers_test: every case behaved"
