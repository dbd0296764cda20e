#!/usr/bin/env bash
# scripts/check_docs.sh must pass on the tree and fail, naming the file and
# line, on a broken link, a broken anchor and a README over 300 lines.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash "$src/scripts/check_docs.sh" "$src" >/dev/null || fail "the tree's own docs break the check"

copy_docs() {
  rm -rf "$tmp/tree"; mkdir -p "$tmp/tree"
  cp -r "$src/README.md" "$src/ARCHITECTURE.md" "$src/docs" "$tmp/tree/"
}
expect_problem() {  # FILE LINE-TO-APPEND WORDS-IN-MESSAGE
  copy_docs
  printf '%s\n' "$2" >> "$tmp/tree/$1"
  if out="$(bash "$src/scripts/check_docs.sh" "$tmp/tree" 2>&1)"; then fail "$1 with '$2' was accepted"; fi
  grep -q "$1:[0-9]*: .*$3" <<<"$out" || fail "the message does not name $1 and '$3': $out"
}
expect_problem docs/README.md "[gone](concepts/no-such-page.md)" "broken link"
expect_problem README.md "[gone](docs/getting-started.md#no-such-heading)" "broken anchor"
expect_problem docs/operations/install.md "[here](#nowhere)" "broken anchor"

copy_docs
for _ in $(seq 300); do echo >> "$tmp/tree/README.md"; done
if out="$(bash "$src/scripts/check_docs.sh" "$tmp/tree" 2>&1)"; then fail "a README over 300 lines was accepted"; fi
grep -q "more than 300" <<<"$out" || fail "the message does not say the limit: $out"
echo "check_docs_test: every case behaved"
