#!/usr/bin/env bash
# Writes the reference pages generated from the code (docs/reference/):
# the flags of tessera-extender and tessera-node-agent from their ABSL_FLAG
# lines, and the policy file's plugins and args from the factories' getters.
#
#   scripts/generate-reference.sh [BUILD_DIR]          rewrite the pages
#   scripts/generate-reference.sh --check [BUILD_DIR]  fail, with a diff, where a page is stale
#
# BUILD_DIR (default build/) must hold the built binaries. The --check form
# is the ctest test ReferencePagesMatchTheCode.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=false
if [[ "${1:-}" == "--check" ]]; then check=true; shift; fi
build=${1:-$root/build}

pages=(
  "extender-flags.md|$build/tessera-extender --print-reference=flags"
  "node-agent-flags.md|$build/tessera-node-agent --print-reference"
  "policy-file.md|$build/tessera-extender --print-reference=policy-file"
)
stale=0
for entry in "${pages[@]}"; do
  page=${entry%%|*}
  command=${entry#*|}
  target=$root/docs/reference/$page
  generated=$(mktemp)
  $command >"$generated"
  if $check; then
    if ! diff -u "$target" "$generated"; then
      echo "docs/reference/$page is stale: run scripts/generate-reference.sh $build" >&2
      stale=1
    fi
  else
    mkdir -p "$(dirname "$target")"
    cp "$generated" "$target"
    echo "wrote docs/reference/$page"
  fi
  rm -f "$generated"
done
exit $stale
