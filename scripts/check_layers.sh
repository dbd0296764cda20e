#!/usr/bin/env bash
# The floor plan, checked: every quoted #include of ours must point to the
# file's own unit or to a unit that unit may use (ARCHITECTURE.md draws it).
# The build runs this before compiling anything, so an include that points up
# or sideways is a build error, not a review comment.
#
#   scripts/check_layers.sh [SOURCE_DIR]     exit 0: clean; 1: violations listed
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root"

# unit -> the units it may include (besides itself). Longest prefix owns a file.
declare -A allowed=(
  [scheduler/common]=""
  [scheduler/metrics]="scheduler/common"
  [scheduler/model]="scheduler/common"
  [scheduler/framework]="scheduler/common scheduler/model"
  [scheduler/memo]="scheduler/common scheduler/model scheduler/framework"
  [scheduler/cache]="scheduler/common scheduler/metrics scheduler/model scheduler/framework"
  [scheduler/tenancy]="scheduler/common scheduler/model scheduler/framework scheduler/cache"
  [policies]="scheduler/common scheduler/model scheduler/framework"
  [k8s/internal]="scheduler/common scheduler/model"
  [k8s]="scheduler/common scheduler/metrics scheduler/model scheduler/cache k8s/internal"
  [k8s/admission]="scheduler/common scheduler/model k8s k8s/internal"
  [k8s/client]="scheduler/common scheduler/metrics scheduler/model scheduler/cache k8s k8s/internal"
  [k8s/sync]="scheduler/common scheduler/metrics scheduler/model scheduler/cache k8s k8s/internal k8s/client"
  [telemetry]="scheduler/common scheduler/metrics scheduler/model scheduler/cache k8s"
  [config]="scheduler/common scheduler/model scheduler/framework scheduler/cache scheduler/tenancy k8s telemetry"
  [extender/server]="scheduler/common scheduler/metrics"
  [extender/service]="scheduler/common scheduler/metrics scheduler/model scheduler/framework scheduler/memo
                      scheduler/cache scheduler/tenancy k8s k8s/admission k8s/client k8s/sync telemetry config extender/server"
  [extender]="scheduler/common scheduler/metrics scheduler/model scheduler/framework scheduler/memo
              scheduler/cache scheduler/tenancy policies k8s k8s/admission k8s/client k8s/sync telemetry config extender/server extender/service"
  # Beside the extender: the node agent publishes what k8s/ parses.
  [agent/nvml]="scheduler/common scheduler/model"
  [agent]="scheduler/common scheduler/model k8s k8s/client k8s/internal agent/nvml"
  [sim]="scheduler/common scheduler/model scheduler/framework scheduler/cache scheduler/tenancy policies config"
  # On top, beside the tests: a fuzz target may reach any decoder.
  [fuzz]="scheduler/common scheduler/metrics scheduler/model scheduler/framework scheduler/memo scheduler/cache scheduler/tenancy
          policies k8s k8s/admission k8s/internal k8s/client k8s/sync telemetry config extender/server extender/service extender"
)

# The unit owning a directory, into $unit: its longest prefix that is a unit.
# (Parameter expansion, not $(dirname): no subshell per include keeps the
# check to a fraction of a second before every build.)
unit_of() {
  local d="$1"
  unit=""
  while [ -n "$d" ] && [ "$d" != "." ]; do
    if [ -n "${allowed[$d]+set}" ]; then unit="$d"; return; fi
    case "$d" in */*) d="${d%/*}";; *) d="";; esac
  done
}

violations=0
while IFS= read -r file; do
  unit_of "${file%/*}"; from="$unit"
  [ -n "$from" ] || { echo "check_layers: $file is in no unit; add its folder to scripts/check_layers.sh"; violations=$((violations + 1)); continue; }
  while IFS=: read -r line inc; do
    inc="${inc#*\"}"; inc="${inc%%\"*}"
    case "$inc" in test/*|benchmarks/*|fuzz/*)
      if [ "$from" != fuzz ] || [ "${inc%%/*}" != fuzz ]; then
        echo "$file:$line: includes $inc: product code never includes tests, benchmarks or fuzzers"
        violations=$((violations + 1)); continue
      fi;;
    esac
    case "$inc" in */*) unit_of "${inc%/*}";; *) unit="";; esac; to="$unit"
    [ -n "$to" ] || continue   # not ours: absl/, yaml-cpp/, simdjson.h ...
    [ "$to" = "$from" ] && continue
    case " ${allowed[$from]//$'\n'/ } " in *" $to "*) continue;; esac
    echo "$file:$line: $from may not include $inc ($to is not below it)"
    violations=$((violations + 1))
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
done < <(find scheduler policies k8s telemetry config extender agent sim fuzz -name '*.h' -o -name '*.cc' | sort)

if [ "$violations" -ne 0 ]; then
  echo "check_layers: $violations include(s) break the floor plan (ARCHITECTURE.md)"
  exit 1
fi
echo "check_layers: every include points down"
