#!/usr/bin/env bash
# Builds the manylinux wheel of the Python package (the `ptefs` module and
# command, abi3: one wheel for CPython 3.10 and later) with the lean
# `wheel` profile (stripped, thin LTO) into DIR (default target/wheels),
# tagged with the oldest manylinux its glibc symbols allow,
# and prints its path, size and build time.
# Usage: scripts/build-wheel.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/wheels}
command -v maturin >/dev/null || python3 -m pip install --quiet 'maturin>=1.9,<2'
start=$(date +%s)
maturin build --profile wheel --out "$out" >&2
end=$(date +%s)
wheel=$(ls -t "$out"/ptefs-*.whl | head -1)
echo "$wheel: $(stat -c %s "$wheel") bytes, built in $((end - start)) s"
