#!/usr/bin/env bash
# Every ctest test of a build carries exactly one of the four labels
# (test/CMakeLists.txt): unit, integration, replay, control-plane. A test
# with none would run only in a full run; one with two would run twice in a
# run by kind.
#
#   scripts/check_test_labels.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check_test_labels.sh BUILD_DIR}
labels=(unit integration replay control-plane)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "  Test #12: Name" lines of `ctest -N`, as names.
names() { ctest --test-dir "$build" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p' | sort; }

names >"$tmp/all"
: >"$tmp/labelled"
for label in "${labels[@]}"; do
  names -L "^${label}\$" | tee -a "$tmp/labelled" >"$tmp/$label"
  echo "$(wc -l <"$tmp/$label") $label"
done
sort "$tmp/labelled" -o "$tmp/labelled"
status=0
unlabelled=$(comm -23 "$tmp/all" <(sort -u "$tmp/labelled"))
if [[ -n "$unlabelled" ]]; then
  echo "tests with none of the labels ${labels[*]}:" >&2
  echo "$unlabelled" >&2
  status=1
fi
twice=$(uniq -d "$tmp/labelled")
if [[ -n "$twice" ]]; then
  echo "tests with more than one of the labels:" >&2
  echo "$twice" >&2
  status=1
fi
(( status == 0 )) && echo "check_test_labels: all $(wc -l <"$tmp/all") tests have exactly one label"
exit $status
