#!/usr/bin/env bash
# Builds the release binary the container image ships, and checks that it runs.
#
#   scripts/docker-build.sh OUT_DIR
#
# The Dockerfile's build stage runs exactly this (`RUN scripts/docker-build.sh /out`), so CI can
# build and check the same binary without Docker. Steps:
#   1. cargo build --release --locked --bin toolgate (the toolchain is rust-toolchain.toml's;
#      --locked: Cargo.lock is the truth, a build never resolves new versions);
#   2. copy the binary (from $CARGO_TARGET_DIR when set, else target/) to OUT_DIR/toolgate;
#   3. strip its symbols when `strip` is installed (else keep it as it is);
#   4. run OUT_DIR/toolgate --version and OUT_DIR/toolgate check config/demo-catalog.yaml: a
#      binary that cannot start, or cannot read the catalog the image ships, fails the build.
set -euo pipefail

if [[ $# -ne 1 || -z $1 ]]; then
    echo "usage: $0 OUT_DIR" >&2
    exit 2
fi

# OUT_DIR as given, made absolute against the caller's folder before we move to the repo root.
mkdir -p -- "$1"
out_dir=$(cd -- "$1" && pwd)
cd "$(dirname "$0")/.."
repo=$(pwd)

step() { printf 'docker-build: %s\n' "$*"; }

step "cargo build --release --locked --bin toolgate (in $repo)"
cargo build --release --locked --bin toolgate

# Where cargo put it: CARGO_TARGET_DIR (absolute, or relative to the repo root, as cargo reads
# it), else target/.
target_dir=${CARGO_TARGET_DIR:-target}
[[ $target_dir == /* ]] || target_dir="$repo/$target_dir"
built="$target_dir/release/toolgate"
if [[ ! -x $built ]]; then
    echo "docker-build: $built not found after the build" >&2
    exit 1
fi

binary="$out_dir/toolgate"
step "copy $built -> $binary"
cp -- "$built" "$binary"
chmod 0755 "$binary"

if command -v strip >/dev/null 2>&1; then
    before=$(stat -c %s "$binary")
    strip -- "$binary"
    step "strip: $before -> $(stat -c %s "$binary") bytes"
else
    step "strip: not installed, binary kept with its symbols ($(stat -c %s "$binary") bytes)"
fi

step "check: $binary --version"
"$binary" --version

step "check: $binary check config/demo-catalog.yaml"
"$binary" check config/demo-catalog.yaml

step "done: $binary"
