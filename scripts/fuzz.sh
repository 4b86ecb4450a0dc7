#!/usr/bin/env bash
# Fuzzes the format and tree layers (fuzz/fuzz_targets/open.rs), or the
# fetch plans of remote sources (fuzz_targets/fetch_plan.rs), or ETDumps
# joined with programs (fuzz_targets/profile_join.rs), or the safe pickle
# reader (fuzz_targets/pickle.rs, also seeded with tests/fixtures/pickle), seeded with
# every fixture (ETDumps included) and tests/fuzz-seeds (writer-made files
# for what the fixtures lack, e.g. XNNPACK payload layouts). cargo fuzz needs nightly
# features; the stable toolchain accepts them with RUSTC_BOOTSTRAP=1.
#   scripts/fuzz.sh [SECONDS [TARGET]]   (default 1800 open)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
target=${2:-open}
corpus=fuzz/corpus/$target
mkdir -p "$corpus"
cp -n tests/fixtures/*.pte tests/fixtures/*.ptd tests/fixtures/etdump/*.etdp tests/fixtures/backends/*.pte tests/fixtures/backends/*.ptd tests/fixtures/*.ptn tests/fixtures/pickle/*.pkl tests/fixtures/etrecord/*.etrecord tests/fixtures/etrecord/hostile/*.etrecord tests/fuzz-regressions/* tests/fuzz-seeds/* "$corpus"/ 2>/dev/null || true
export RUSTC_BOOTSTRAP=1
exec cargo fuzz run "$target" "$corpus" -- \
  -max_total_time="${1:-1800}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
