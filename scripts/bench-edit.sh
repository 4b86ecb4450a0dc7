#!/usr/bin/env bash
# Rows of scripts/bench.sh's table for writing new files: `ptefs set` of
# one 2 MiB tensor in a 2.1 GB program beside `cp` of the file, and
# `ptefs pack` of a 1 GiB safetensors checkpoint into a .ptd beside `cp` of
# the checkpoint. All files are in WORKDIR, warm in the page cache; each
# output is removed before the next run. Medians of RUNS runs (default 5).
# Usage: scripts/bench-edit.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-${TMPDIR:-/tmp}/ptefs-bench}
runs=${RUNS:-5}
mkdir -p "$work"
cargo build --release --quiet --example make_model
cargo build --release --quiet
ptefs=$release/ptefs
say() { echo "$*" >&2; }
now() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms() { awk -v n="$1" 'BEGIN {printf (n < 1e8 ? "%.1f ms" : "%.0f ms"), n/1e6}'; }
times() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f × its time", a/b}'; }
fsname=$(stat -f -c %T "$work")

# set: 1,024 tensors of 2 MiB, one of them replaced.
model=$work/set-2mib.pte
if [[ ! -f $model ]]; then
  say "writing $model ..."
  $release/examples/make_model "$model" --tensors 1024 --tensor-bytes 2097152 --big-bytes 0
fi
raw=$work/new-2mib.bin
head -c 2097152 /dev/urandom > "$raw"
cat "$model" > /dev/null
st=(); ct=()
for _ in $(seq "$runs"); do
  rm -f "$work/set-out.pte" "$work/cp-out.pte"
  s=$(now); $ptefs set "$model" "methods/forward/tensors/0512.layers.512.weight.bin=$raw" -o "$work/set-out.pte" > /dev/null; e=$(now); st+=($((e - s)))
  s=$(now); cp "$model" "$work/cp-out.pte"; sync "$work/cp-out.pte"; e=$(now); ct+=($((e - s)))
done
size=$(stat -c %s "$model")
s=$(median "${st[@]}"); c=$(median "${ct[@]}")
echo "| \`ptefs set\` of one 2 MiB tensor in a $(awk -v b="$size" 'BEGIN {printf "%.1f GB", b/1e9}') program ($fsname) | $(ms "$s") | \`cp\` of the file, then \`sync\` of it: $(ms "$c") | $(times "$s" "$c") |"

# pack: a program of 512 external tensors of 2 MiB, from a 1 GiB checkpoint.
prog=$work/pack-1gib.pte
[[ -f $prog ]] || $release/examples/make_model "$prog" --tensors 512 --tensor-bytes 2097152 --big-bytes 0 --external 1
ckpt=$work/pack-1gib.safetensors
if [[ ! -f $ckpt ]]; then
  say "writing $ckpt ..."
  python3 - "$ckpt" <<'PY'
import json, os, struct, sys
n, each = 512, 2097152
header = {f"model.layers.{i}.weight": {"dtype": "F32", "shape": [each // 4], "data_offsets": [i * each, (i + 1) * each]} for i in range(n)}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for i in range(n):
        f.write(os.urandom(each))
PY
fi
cat "$ckpt" > /dev/null
pt=(); ct=()
for _ in $(seq "$runs"); do
  rm -f "$work/pack-out.ptd" "$work/cp-out.safetensors"
  s=$(now); $ptefs pack --for "$prog" "$ckpt" -o "$work/pack-out.ptd" > /dev/null; e=$(now); pt+=($((e - s)))
  s=$(now); cp "$ckpt" "$work/cp-out.safetensors"; sync "$work/cp-out.safetensors"; e=$(now); ct+=($((e - s)))
done
rm -f "$work/set-out.pte" "$work/cp-out.pte" "$work/pack-out.ptd" "$work/cp-out.safetensors"
p=$(median "${pt[@]}"); c=$(median "${ct[@]}")
echo "| \`ptefs pack\` of a 1 GiB safetensors checkpoint (512 tensors) into a .ptd ($fsname) | $(ms "$p") | \`cp\` of the checkpoint, then \`sync\` of it: $(ms "$c") | $(times "$p" "$c") |"
