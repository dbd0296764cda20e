#!/usr/bin/env bash
# README command (2): install, build and run the whole test suite — once in a
# normal build (g++), once under AddressSanitizer + UndefinedBehaviorSanitizer
# (clang, whose build also yields the libFuzzer targets) — smoke-run the
# benchmarks (correctness only; timings are reported by hand) and run each
# fuzz target for a few seconds. Tests and benchmarks run with the team's
# shared folder beside the checkout hidden (scripts/without_shared.sh), as a
# user's clone has none: the data they read is in data/.
#
#   TESSERA_SKIP_SANITIZERS=1   skip the clang sanitizer build, its tests and the fuzzing
#   TESSERA_SKIP_FUZZ=1         skip only the fuzzing
#   TESSERA_FUZZ_SECONDS=N      seconds per fuzz target (default 10; thirteen targets)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

scripts/install-deps.sh
scripts/install-helm.sh

# ccache, where installed, makes a re-run compile only what changed.
# Paths relative to the checkout and no working directory in the hash, so
# that a fresh clone elsewhere (CI's) hits what this machine compiled before.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
fi

echo "== build (optimised, no debug info) and test"
# -O2 as RelWithDebInfo, without -g: debug info is a third of the compile
# time on 2 cores, and a test that crashes is rerun under ASan below with
# line tables anyway.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  ${launcher[@]+"${launcher[@]}"} >/dev/null
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
    "$b" --benchmark_filter="(/|nodes:)100(/|\$)" --benchmark_min_time=0.01 >/dev/null
  done'

if [ "${TESSERA_SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== build with clang, ASan+UBSan and libFuzzer coverage, and test"
  # One build for both: the libraries carry libFuzzer's coverage hooks, which
  # the test binaries leave to ASan's runtime, and fuzz/ links libFuzzer.
  # Line tables (file:line in ASan's reports) rather than full debug info: cheaper to compile.
  cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -gline-tables-only" \
    -DCMAKE_CXX_COMPILER=clang++-14 \
    -DTESSERA_SANITIZE=ON -DTESSERA_FUZZ=ON -DTESSERA_BUILD_BENCHMARKS=OFF ${launcher[@]+"${launcher[@]}"} >/dev/null
  cmake --build build-sanitize -j"$jobs"
  # The whole-trace replays (label replay: 8000+ pods through every plugin)
  # take minutes unoptimised under ASan; the smaller sim tests (label unit)
  # run the same code on small inputs here, and the replays themselves run
  # in the build above. The
  # control-plane tests (label control-plane) run in the build above only:
  # under ASan they would add a minute of mostly etcd and API-server time,
  # and the code they reach in Tessera (watch, API client, bind) runs under
  # ASan here against the fake API server (integration_tests). The source
  # check ran above (a sanitizer adds nothing to a grep); the missing-data
  # run stays, as ASan sees a bad read that does not crash.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    scripts/without_shared.sh ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -LE 'control-plane|replay' \
      -E '^StandaloneTest\.NothingReadsTheSharedFolder'

  if [ "${TESSERA_SKIP_FUZZ:-0}" != "1" ]; then
    echo "== fuzz each target for ${TESSERA_FUZZ_SECONDS:-10} s"
    scripts/fuzz.sh -b build-sanitize -t "${TESSERA_FUZZ_SECONDS:-10}"
  fi
fi
echo "== all tests passed"
