#!/usr/bin/env bash
# A clone stands alone: no source, test, benchmark, build file or script reads
# the team's ../shared folder, which exists only beside our own checkouts. The
# data the tests and the simulator read is in the repository's data/
# (data/README.md; the tests find it through TESSERA_DATA_DIR).
#
#   scripts/check_standalone.sh [SOURCE_DIR]   exit 0: clean; 1: each use listed as file:line
#
# Two uses are allowed, because what they name cannot be carried and their
# callers go on without it:
#   - the real Kubernetes control plane (kube-apiserver and kube-scheduler
#     binaries, ../shared/kube): the line must name shared/kube, e.g.
#     TESSERA_KUBE_DIR="${PROJECT_SOURCE_DIR}/../shared/kube", and the tests
#     using it skip, saying why, where it is absent;
#   - benchmarks/placement.sh's default traces folder, the full set of 20 pod
#     lists where our machines keep them, else the repository's data/openb.
# Documentation (*.md) may mention the folder: README says where the larger
# optional traces come from. So may this check, its test, and
# scripts/without_shared.sh, which hides the folder from the test suite.
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root"

shared_path='\.\./shared'
shared_define='TESSERA_SHARED_DIR'

allowed() {  # FILE LINE-TEXT
  case "$2" in *shared/kube*) return 0;; esac
  case "$1" in
    ./benchmarks/placement.sh) case "$2" in *shared/data/openb*) return 0;; esac;;
  esac
  return 1
}

violations=0
while IFS= read -r hit; do
  file="${hit%%:*}"; rest="${hit#*:}"; line="${rest%%:*}"; text="${rest#*:}"
  allowed "$file" "$text" && continue
  echo "${file#./}:$line: names the team's ../shared folder, which a clone does not have: ${text#"${text%%[![:space:]]*}"}"
  violations=$((violations + 1))
done < <(find . \( -name .git -o -name 'build' -o -name 'build-*' -o -name 'cmake-build-*' -o -name .cache \
                   -o -path ./data \) -prune -o -type f ! -name '*.md' \
                 ! -path ./scripts/check_standalone.sh ! -path ./test/scripts/check_standalone_test.sh \
                 ! -path ./scripts/without_shared.sh -print0 |
         xargs -0 grep -I -n -E -H "$shared_path|$shared_define" 2>/dev/null || true)

if [ "$violations" -gt 0 ]; then
  echo "check_standalone: $violations use(s) of ../shared; put the data in data/ and read it through TESSERA_DATA_DIR (data/README.md)"
  exit 1
fi
echo "check_standalone: nothing reads ../shared"
