#!/usr/bin/env bash
# Fuzzes the format and tree layers (fuzz/fuzz_targets/open.rs), seeded
# with every fixture. cargo fuzz needs nightly features; the stable
# toolchain accepts them with RUSTC_BOOTSTRAP=1.
#   scripts/fuzz.sh [SECONDS]   (default 1800)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
corpus=fuzz/corpus/open
mkdir -p "$corpus"
cp -n tests/fixtures/*.pte tests/fixtures/*.ptd tests/fixtures/*.ptn tests/fuzz-regressions/* "$corpus"/ 2>/dev/null || true
export RUSTC_BOOTSTRAP=1
exec cargo fuzz run open "$corpus" -- \
  -max_total_time="${1:-1800}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
