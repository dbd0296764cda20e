#!/usr/bin/env bash
# Tests mirror the source tree: every product source file X.cc has
# test/X_test.cc, or a line in test/unmirrored_sources.txt saying where it is
# tested instead or why it has none. Fails, naming the file, on a source with
# neither, on a line for a source that has its test now or is gone, and on a
# line whose reason names a test path that does not exist.
#
#   scripts/check_test_mirror.sh [SOURCE_DIR]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
list=test/unmirrored_sources.txt
problems=0
report() { echo "$1" >&2; problems=$((problems + 1)); }

declare -A listed=()
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  source="${line%% | *}"
  reason="${line#* | }"
  [[ "$line" == *" | "* && -n "$reason" ]] || { report "$list: '$line' has no reason (source | reason)"; continue; }
  listed[$source]=1
  [[ -f "$source" ]] || report "$list: $source is gone; drop its line"
  [[ -f "test/${source%.cc}_test.cc" ]] && report "$list: $source has test/${source%.cc}_test.cc now; drop its line"
  for path in $(grep -o 'test/[A-Za-z0-9_/.-]*' <<<"$reason" || true); do
    [[ -e "${path%/}" ]] || report "$list: $source: the reason names $path, which does not exist"
  done
done <"$list"

while IFS= read -r source; do
  [[ -f "test/${source%.cc}_test.cc" || -n "${listed[$source]+x}" ]] && continue
  report "$source has no test/${source%.cc}_test.cc; write it, or say in $list where it is tested"
done < <(find scheduler policies k8s telemetry config extender agent sim -name '*.cc' ! -name main.cc | sort)

if ((problems > 0)); then
  echo "check_test_mirror: $problems problem(s)" >&2
  exit 1
fi
echo "check_test_mirror: every source has its test file or a listed reason (${#listed[@]} listed)"
