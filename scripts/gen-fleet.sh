#!/usr/bin/env bash
# Writes N small programs (default 1000) into DIR, for indexing a fleet in
# tests and benchmarks: fleet-0000.pte, ..., each one method of 8 float
# tensors of 8 KiB (about 68 KiB a file), the last with a pattern of its
# own, so that no two files are equal. tests/it/remote.rs writes the same
# programs with the same writer.
#   scripts/gen-fleet.sh DIR [N]
set -euo pipefail
dir=${1:?usage: gen-fleet.sh DIR [N]}
n=${2:-1000}
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
make_model=$release/examples/make_model
[[ -x $make_model ]] || cargo build --release --quiet --example make_model
mkdir -p "$dir"
for ((i = 0; i < n; i++)); do
  "$make_model" "$(printf '%s/fleet-%04d.pte' "$dir" "$i")" \
    --tensors 8 --tensor-bytes 8192 --big-bytes 0 --last-seed $((1000 + i))
done
