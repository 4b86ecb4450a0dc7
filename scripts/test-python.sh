#!/usr/bin/env bash
# Builds the Python wheel (module and `ptefs` command) with maturin,
# installs it into a fresh virtual environment, and runs the Python tests
# (python/tests) there from a directory outside the checkout, with no Rust
# toolchain on PATH. The wheel is built with the dev profile, whose
# dependencies the Rust tests have already built; PTEFS_WHEEL_PROFILE=wheel
# tests the lean profile that scripts/build-wheel.sh ships.
# Usage: scripts/test-python.sh [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
maturin build --quiet --profile "${PTEFS_WHEEL_PROFILE:-dev}" --out "$work/dist" >&2
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$work"/dist/ptefs-*.whl pytest safetensors
# PATH without any directory that holds cargo or rustc.
path=$work/venv/bin
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [[ -x $d/cargo || -x $d/rustc || -z $d ]] && continue
  path=$path:$d
done
cd "$work"
PATH=$path PTEFS_WHEEL_TEST=1 "$work/venv/bin/python" -m pytest -p no:cacheprovider \
  --rootdir "$repo/python/tests" "$repo/python/tests" "$@"
