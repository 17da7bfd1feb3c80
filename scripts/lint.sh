#!/usr/bin/env bash
# Formatting and lints, as CI checks them: cargo fmt --check, then clippy on every target and
# feature with warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --locked --all-targets --all-features -- -D warnings
