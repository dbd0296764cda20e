#!/usr/bin/env bash
# README command (2): install, build and run the whole test suite — once in a
# normal build, once under AddressSanitizer + UndefinedBehaviorSanitizer — and
# smoke-run the benchmarks (correctness only; timings are reported by hand).
# Tests and benchmarks run with the team's shared folder beside the checkout
# hidden (scripts/without_shared.sh), as a user's clone has none: the data
# they read is in data/.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

scripts/install-deps.sh

echo "== build (RelWithDebInfo) and test"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
# With CI=true a missing control plane fails the control-plane tests instead
# of skipping them (test/testing/control_plane.h); this guards the other way
# they could go unseen: not being registered at all.
if [ "${CI:-}" = true ]; then
  listed="$(ctest --test-dir build -N -L control-plane)"
  grep -q 'Total Tests: [1-9]' <<<"$listed" || { echo "CI=true but no test has the label control-plane" >&2; exit 1; }
fi
scripts/without_shared.sh ctest --test-dir build --output-on-failure -j"$jobs"

echo "== benchmark smoke run (100 nodes, minimal time)"
scripts/without_shared.sh bash -c '
  set -euo pipefail
  for b in build/benchmarks/*_benchmark; do
    [ -x "$b" ] || continue
    "$b" --benchmark_filter="/100\$" --benchmark_min_time=0.01 >/dev/null
  done'

if [ "${TESSERA_SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== build with ASan+UBSan and test"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  # The whole-trace replays (8000+ pods through every plugin) take minutes
  # unoptimised under ASan; the smaller sim tests run the same code on small
  # inputs here, and the replays themselves run in the build above. The
  # control-plane tests (label control-plane) run in the build above only:
  # under ASan they would add a minute of mostly etcd and API-server time,
  # and the code they reach in Tessera (watch, API client, bind) runs under
  # ASan here against the fake API server (integration_tests). The source
  # check ran above (a sanitizer adds nothing to a grep); the missing-data
  # run stays, as ASan sees a bad read that does not crash.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    scripts/without_shared.sh ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE control-plane \
      -E '^(ReducedRunTest\.|ReplayTest\.TheMemoGivesWhatEvaluatingEveryNodeGives$|StandaloneTest\.NothingReadsTheSharedFolder)'
fi
echo "== all tests passed"
