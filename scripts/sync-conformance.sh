#!/usr/bin/env bash
# Refreshes tests/conformance/ from the team's shared cases (../shared/conformance), when the
# repository sits beside them. The tests only ever read the copy in the repository, so that a
# plain clone builds and passes on its own; tests/it/conformance_core.rs fails while the copy
# differs from the shared cases it can see.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=../shared/conformance
if [ ! -d "$shared" ]; then
  echo "no $shared beside the repository: nothing to sync" >&2
  exit 1
fi
rm -f tests/conformance/*.json
cp "$shared"/*.json tests/conformance/
git status --short tests/conformance
