#!/usr/bin/env bash
# Placement quality on the Alibaba GPU-sharing trace: every shipped policy,
# 10 seeds (docs/benchmarks.md, "Placement quality").
#
#   benchmarks/placement.sh                      # the default trace
#   benchmarks/placement.sh --all-traces         # and every variant in the traces folder
#   benchmarks/placement.sh --traces DIR ...     # the traces folder (or TESSERA_TRACES=DIR)
#   benchmarks/placement.sh --stress             # fgd against tessera, each stress variant too
#   benchmarks/placement.sh --seeds 42           # any further flag goes to tessera-sim
#
# The traces folder holds openb_node_list_gpu_node.csv and openb_pod_list_*.csv
# (data/openb/README.md says where the variants come from). Unless named, it is
# ../shared/data/openb where that exists (our machines keep all 20 pod lists
# there), else the repository's data/openb (the default trace and the two
# variants the tests read).
#
# Builds tessera-sim in ${TESSERA_BUILD_DIR:-build}, writes curves.csv,
# summary.md and one SVG per trace to ${TESSERA_SIM_OUT:-<build>/placement}, and prints
# the summary.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${TESSERA_BUILD_DIR:-build}"
out="${TESSERA_SIM_OUT:-$build/placement}"
data="${TESSERA_TRACES:-}"
all=0
stress=0
while [ $# -gt 0 ]; do
  case "$1" in
    --all-traces) all=1; shift;;
    --stress) stress=1; shift;;
    --traces) [ $# -ge 2 ] || { echo "placement.sh: --traces needs a folder" >&2; exit 2; }; data="$2"; shift 2;;
    --traces=*) data="${1#--traces=}"; shift;;
    *) break;;
  esac
done
if [ -z "$data" ]; then
  data=data/openb
  [ -d ../shared/data/openb ] && data=../shared/data/openb
fi
if [ ! -f "$data/openb_node_list_gpu_node.csv" ]; then
  echo "placement.sh: $data has no openb_node_list_gpu_node.csv; name a traces folder with --traces DIR" >&2
  exit 2
fi
echo "placement.sh: traces from $data" >&2

traces="$data/openb_pod_list_default.csv"
if [ "$all" = 1 ]; then
  traces="$(ls "$data"/openb_pod_list_*.csv | paste -sd, -)"
fi

placement=config/examples/placement
policies="$placement/random-policy.yaml,$placement/dot-product-policy.yaml,$placement/gpu-clustering-policy.yaml"
policies+=",$placement/gpu-packing-policy.yaml,$placement/best-fit-policy.yaml,$placement/fgd-policy.yaml"
policies+=",tessera=config/examples/default-policy.yaml"

cmake -S . -B "$build" >/dev/null
cmake --build "$build" --target tessera-sim -j"$(nproc)" >/dev/null
if [ "$stress" = 1 ]; then
  # FGD told each trace's mix against Tessera learning it, on the traces as
  # they are and on the stress variants (sim/stress.h); the summaries give
  # 10-seed means and the seeds Tessera won. Node CPU × 0.6 and × 0.9 are
  # checks the policy was not tuned on (docs/experiments/2026-11-27-cpu-0.9-and-0.6.md).
  for variant in "as-is::--node_cpu_percent=100" "cpu-x0.5::--node_cpu_percent=50" \
                 "cpu-x0.75::--node_cpu_percent=75" "gpu-memory-heavy::--pod_gpu_memory_percent=100" \
                 "cpu-x0.6::--node_cpu_percent=60" "cpu-x0.9::--node_cpu_percent=90"; do
    name="${variant%%::*}"
    echo "== $name" >&2
    "$build/tessera-sim" --nodes "$data/openb_node_list_gpu_node.csv" --pods "$traces" \
      --policies "$placement/fgd-policy.yaml,tessera=config/examples/default-policy.yaml" \
      --seeds 42-51 --out "$out/$name" --progress=false "${variant##*::}" "$@"
  done
  exit 0
fi
time "$build/tessera-sim" --nodes "$data/openb_node_list_gpu_node.csv" --pods "$traces" --policies "$policies" \
  --seeds 42-51 --out "$out" --progress=false "$@"
