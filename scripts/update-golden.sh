#!/usr/bin/env bash
# Rewrites the golden files from what the code answers now, for a change that
# is meant to move them: the extender's answers to the recorded kube-scheduler
# requests (test/golden/*.json) and the seed-42 replay of every placement
# policy (test/golden/replay/). Review the diff (git diff test/golden) before
# committing it: it is the change's effect, in the form a reviewer reads.
#
#   scripts/update-golden.sh [BUILD_DIR]     (default build/, already built)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
export TESSERA_UPDATE_GOLDEN=1
"$build/test/extender_tests" --gtest_filter='GoldenAnswers.*'
"$build/test/sim_replay_tests" --gtest_filter='ReducedRunTest.SeedFortyTwo*'
git -C "$root" status --short test/golden
