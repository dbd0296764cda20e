#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (docs/operations/testing.md, "Fuzzing") from a build
# configured with -DTESSERA_FUZZ=ON (scripts/test.sh makes one: build-sanitize).
#
#   scripts/fuzz.sh [-b BUILD_DIR] [-t SECONDS] [TARGET...] [-- LIBFUZZER_FLAG...]
#
# Each target (all of them when none is named: extender_args, policy, ...)
# runs SECONDS (default 15) from its seed corpus, fuzz/corpus/<target>/, and its
# saved crashes, fuzz/regressions/<target>/. New interesting inputs go to a
# scratch corpus under BUILD_DIR/fuzz-work/, never into the source tree. A
# crash, leak, timeout (> 5 s for one input) or out-of-memory (> 2 GB) stops
# that target; its input is saved under BUILD_DIR/fuzz-work/artifacts/<target>/
# and the script exits 1 after running the rest. Targets run TESSERA_FUZZ_JOBS
# (default: the number of cores) at a time. Flags after `--` go to every
# target as they are (e.g. -- -fork=8 to use 8 cores, -- -max_len=100000).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-sanitize
seconds=15
while getopts "b:t:" opt; do
  case "$opt" in
    b) build="$OPTARG" ;;
    t) seconds="$OPTARG" ;;
    *) echo "usage: $0 [-b BUILD_DIR] [-t SECONDS] [TARGET...] [-- LIBFUZZER_FLAG...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

targets=()
while [ $# -gt 0 ] && [ "$1" != "--" ] && [ "${1#-}" = "$1" ]; do targets+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
extra=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for dir in fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

work="$build/fuzz-work"
# One fuzz target per core at a time: each is single-threaded, and CI has 2
# cores, so the whole run takes half as long as one after the other.
parallel="${TESSERA_FUZZ_JOBS:-$(nproc)}"

# Runs target $1 and leaves its exit status in $work/$1.rc.
fuzz_one() {
  local t="$1"
  local bin="$build/fuzz/${t}_fuzzer"
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  local seeds=("fuzz/corpus/$t")
  [ -d "fuzz/regressions/$t" ] && seeds+=("fuzz/regressions/$t")
  # -timeout: one input taking 5 s is a hang (the requests' own budget is 5 s).
  # -rss_limit_mb: a leak or blow-up past 2 GB is a finding, not a slow test.
  # -use_value_profile: compares steer the search (quantity and enum parsing).
  local rc=0
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    "$bin" "$work/corpus/$t" "${seeds[@]}" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
      -use_value_profile=1 -print_final_stats=1 -artifact_prefix="$work/artifacts/$t/" ${extra[@]+"${extra[@]}"} \
      >"$work/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$work/$t.rc"
}

for t in "${targets[@]}"; do
  if [ ! -x "$build/fuzz/${t}_fuzzer" ]; then
    echo "fuzz: $build/fuzz/${t}_fuzzer is missing: configure $build with -DTESSERA_FUZZ=ON and build it" >&2
    exit 2
  fi
done
mkdir -p "$work"
running=0
for t in "${targets[@]}"; do
  rm -f "$work/$t.rc"
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=()
for t in "${targets[@]}"; do
  if [ "$(cat "$work/$t.rc" 2>/dev/null || echo missing)" = 0 ]; then
    echo "fuzz: $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" | grep -o '[0-9]*$' || echo '?') inputs in ${seconds} s, no crash"
  else
    echo "fuzz: $t: FOUND A PROBLEM; last lines of $work/$t.log:"
    tail -n 30 "$work/$t.log"
    ls -1 "$work/artifacts/$t/" | sed "s|^|  saved: $work/artifacts/$t/|"
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: problems in: ${failed[*]} (reproduce: $build/fuzz/<target>_fuzzer <saved input>)"
  exit 1
fi
