#!/usr/bin/env bash
# Runs every check and test: formatting, lints, generated code, unit,
# integration and mount tests. Mount tests skip loudly without FUSE unless
# PTEFS_REQUIRE_FUSE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
scripts/gen-schema.sh --check
cargo test --all-targets
