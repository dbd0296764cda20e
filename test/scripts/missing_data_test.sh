#!/usr/bin/env bash
# Without its data a test fails and says which file it missed; it never
# crashes (a clone without the trace once crashed sim_tests with a SEGFAULT).
# Runs every suite whose source reads data/ (through test/testing/data_files.h)
# with TESSERA_DATA_DIR naming a folder that does not exist, and checks that
#   - no test binary dies of a signal or an abort,
#   - each binary has failures (its data tests did read data/), and
#   - every failed test's output names a path inside the missing folder.
#
#   test/scripts/missing_data_test.sh SOURCE_DIR TEST_BINARY_DIR
set -euo pipefail
src="$1"
bin="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
missing="$tmp/no-data"
fail() { echo "FAIL: $*"; exit 1; }

# area -> gtest filter of the suites in its sources that read data/.
declare -A filters=()
while IFS= read -r file; do
  rel="${file#"$src"/test/}"
  area="${rel%%/*}"
  while IFS= read -r suite; do
    filters[$area]+="${filters[$area]:+:}$suite.*:*/$suite.*"
  done < <(grep -oE '^TEST(_F|_P)?\([A-Za-z0-9_]+,' "$file" | sed -E 's/^TEST(_F|_P)?\(//; s/,$//' | sort -u)
done < <(grep -rlE 'OpenbPath|FixturePath|DataPath|ReadDataFile' "$src/test" --include='*.cc' | grep -v "^$src/test/testing/" | sort)
[ "${#filters[@]}" -gt 0 ] || fail "found no test that reads data/"

for area in $(printf '%s\n' "${!filters[@]}" | sort); do
  binary="$bin/${area}_tests"
  [ -x "$binary" ] || fail "$binary is not built"
  rc=0
  TESSERA_DATA_DIR="$missing" timeout 300 "$binary" --gtest_filter="${filters[$area]}" >"$tmp/$area.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    fail "${area}_tests passed without data/: its data tests read something else"
  elif [ "$rc" -ne 1 ]; then
    tail -n 30 "$tmp/$area.log"
    fail "${area}_tests died (exit $rc) without data/ instead of failing the test that needs it"
  fi
  # The failed tests whose own output never names the missing folder.
  unnamed="$(awk -v missing="$missing/" '
    /^\[ RUN      \] / { test = $4; named = 0; next }
    index($0, missing) { named = 1 }
    /^\[  FAILED  \] .* \([0-9]+ ms\)$/ { if (!named) print $4 }
  ' "$tmp/$area.log")"
  if [ -n "$unnamed" ]; then
    cat "$tmp/$area.log"
    fail "in ${area}_tests these tests failed without naming the file they missed: $unnamed"
  fi
  echo "${area}_tests: $(grep -c '^\[  FAILED  \] .* ([0-9]* ms)$' "$tmp/$area.log") test(s) failed, each naming its missing file"
done
echo "missing_data_test: no crash, every failure named its file"
