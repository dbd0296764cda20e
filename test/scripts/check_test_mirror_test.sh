#!/usr/bin/env bash
# scripts/check_test_mirror.sh must pass on the tree and name a new source
# without a test, and a listed source that has its test now.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash "$src/scripts/check_test_mirror.sh" "$src" >/dev/null || fail "the tree itself fails the check"
copy() {
  rm -rf "$tmp/tree"; mkdir -p "$tmp/tree"
  for d in scheduler policies k8s telemetry config extender agent sim test; do cp -r "$src/$d" "$tmp/tree/"; done
}
copy
echo 'int f() { return 1; }' >"$tmp/tree/policies/new_policy.cc"
if out="$(bash "$src/scripts/check_test_mirror.sh" "$tmp/tree" 2>&1)"; then fail "a source without a test was accepted"; fi
grep -q "policies/new_policy.cc has no test/policies/new_policy_test.cc" <<<"$out" || fail "not named: $out"
copy
touch "$tmp/tree/test/k8s/internal/json_test.cc"
if out="$(bash "$src/scripts/check_test_mirror.sh" "$tmp/tree" 2>&1)"; then fail "a needless line was accepted"; fi
grep -q "k8s/internal/json.cc has test/k8s/internal/json_test.cc now" <<<"$out" || fail "not named: $out"
echo "check_test_mirror_test: every case behaved"
