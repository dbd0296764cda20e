#!/usr/bin/env bash
# Placement quality on the Alibaba GPU-sharing trace: every shipped policy,
# 10 seeds (README, "Measure placement quality").
#
#   benchmarks/placement.sh                  # the default trace
#   benchmarks/placement.sh --all-traces     # and every variant in ../shared/data/openb
#   benchmarks/placement.sh --seeds 42       # any further flag goes to tessera-sim
#
# Builds tessera-sim in ${TESSERA_BUILD_DIR:-build}, writes curves.csv,
# summary.md and one SVG per trace to ${TESSERA_SIM_OUT:-<build>/placement}, and prints
# the summary.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${TESSERA_BUILD_DIR:-build}"
out="${TESSERA_SIM_OUT:-$build/placement}"
data=../shared/data/openb

traces="$data/openb_pod_list_default.csv"
if [ "${1:-}" = "--all-traces" ]; then
  shift
  traces="$(ls "$data"/openb_pod_list_*.csv | paste -sd, -)"
fi

placement=config/examples/placement
policies="$placement/random-policy.yaml,$placement/dot-product-policy.yaml,$placement/gpu-clustering-policy.yaml"
policies+=",$placement/gpu-packing-policy.yaml,$placement/best-fit-policy.yaml,$placement/fgd-policy.yaml"
policies+=",tessera=config/examples/default-policy.yaml"

cmake -S . -B "$build" >/dev/null
cmake --build "$build" --target tessera-sim -j"$(nproc)" >/dev/null
time "$build/tessera-sim" --nodes "$data/openb_node_list_gpu_node.csv" --pods "$traces" --policies "$policies" \
  --seeds 42-51 --out "$out" --progress=false "$@"
