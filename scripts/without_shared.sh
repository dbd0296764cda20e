#!/usr/bin/env bash
# Runs a command the way a clone without the team's ../shared folder would see
# the machine: in a private mount namespace where every entry of ../shared but
# kube/ is empty. kube/ stays, because the real control plane (kube-apiserver
# and kube-scheduler binaries) cannot be carried and its tests skip without it;
# everything else the tests need is in data/. scripts/test.sh runs the suite
# and the benchmarks through this, so a test that still reads ../shared fails
# here as it would in a user's clone, at no extra cost.
#
#   scripts/without_shared.sh COMMAND [ARG...]
#
# Runs COMMAND as it is, saying so, where there is no ../shared (nothing to
# hide) or where unprivileged user and mount namespaces are not allowed (some
# containers); check_standalone.sh, a ctest test, still holds the line there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$(dirname "$root")/shared"

if [ ! -d "$shared" ]; then
  exec "$@"
fi
if ! unshare --user --map-root-user --mount true 2>/dev/null; then
  echo "without_shared: cannot hide $shared here (no user and mount namespaces); running with it visible" >&2
  exec "$@"
fi
exec unshare --user --map-root-user --mount bash -c '
  set -euo pipefail
  shared="$1"; shift
  for entry in "$shared"/*; do
    [ -e "$entry" ] || continue
    [ "$(basename "$entry")" = kube ] && continue
    if [ -d "$entry" ]; then mount -t tmpfs -o ro,size=4k tmpfs "$entry"; else mount --bind /dev/null "$entry"; fi
  done
  echo "without_shared: $shared hidden but for kube/" >&2
  exec "$@"' bash "$shared" "$@"
