#!/usr/bin/env bash
# Runs every check and test: formatting, lints, generated code, unit,
# integration and mount tests, then the Python package's tests (its wheel
# installed in a fresh virtual environment). Every test binary runs even when one fails,
# and the last line sums up what passed, failed and was skipped, naming the
# failed and skipped tests. Tests that need a real component (FUSE, root,
# a server, Graphviz, flatc, Chromium) skip loudly without it, and fail
# instead when PTEFS_REQUIRE_ALL=1 (or the older PTEFS_REQUIRE_FUSE=1).
# The slow tests run only with PTEFS_SLOW_TESTS=1 (as .ci/run sets); without
# it they skip loudly and the summary counts them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
cargo clippy -p ptefs-python --all-targets --quiet -- -D warnings
# The fuzz targets use the library's API; they must keep compiling.
(cd fuzz && cargo check --quiet --bins)
scripts/gen-schema.sh --check
# The portable kernels' operator list, where ExecuTorch is installed.
if python3 -c "import executorch" 2>/dev/null; then scripts/gen-portable-ops.py --check; fi
# The built-in runtime spec of `ptefs check`, against the installed runtime.
if python3 -c "import executorch.runtime" 2>/dev/null; then scripts/gen-runtime-spec.py --check; fi

log=$(mktemp)
skips=$(mktemp)
trap 'rm -f "$log" "$skips"' EXIT
set +e
PTEFS_SKIP_LOG=$skips cargo test --all-targets --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# The Python package: its own pytest run, counted in the summary.
scripts/test-python.sh -q -rfs 2>&1 | tee -a "$log"
pystatus=${PIPESTATUS[0]}
set -e
((status == 0)) && status=$pystatus
scripts/test-summary.sh "$log" "$skips" "$status"
