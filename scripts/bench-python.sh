#!/usr/bin/env bash
# Rows of scripts/bench.sh's table for the Python module: `ptefs.open` and
# one tensor's sum, against ExecuTorch's `deserialize_pte_binary` and the
# same sum, and against safetensors' `safe_open` + `get_tensor` + the same
# sum on the same tensors saved as one safetensors file. Files: the
# MobileNetV2 fixture (its largest XNNPACK weight) and WORKDIR/big.pte (the
# benchmark program of scripts/bench.sh: a 56 KiB tensor and the 1 GiB one).
# The module is the wheel of scripts/build-wheel.sh, in a virtual
# environment of WORKDIR with NumPy and safetensors. EXECUTORCH_PYTHON (a
# Python with executorch installed; default /work/venv-vendor/bin/python)
# gives the ExecuTorch anchors; without it they are left out. The 2.2 GB
# program is deserialized by ExecuTorch once (RUNS_SLOW, default 1). The
# MobileNetV2 rows take RUNS_SMALL runs (default 101): each takes about a
# millisecond, and a median of few such runs moves with the machine's load.
# Each pair of files compared is dropped from the page cache and read back
# whole first, so that both are cached alike.
# Usage: scripts/bench-python.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-${TMPDIR:-/tmp}/ptefs-bench}
runs=${RUNS:-5}
mkdir -p "$work"
say() { echo "$*" >&2; }
ms() { awk -v n="$1" 'BEGIN {printf (n < 1e8 ? "%.1f ms" : "%.0f ms"), n/1e6}'; }
times() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f × its time", a/b}'; }

venv=$work/venv-python
wheel=$(scripts/build-wheel.sh "$work/wheels" | tail -1 | cut -d: -f1)
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
"$venv/bin/pip" install --quiet --disable-pip-version-check numpy safetensors
py=$venv/bin/python
bench=$PWD/scripts/bench_python.py
et=${EXECUTORCH_PYTHON:-/work/venv-vendor/bin/python}
"$et" -c 'import executorch' 2>/dev/null || { say "no executorch: no ExecuTorch anchors"; et=; }

# MobileNetV2: its largest XNNPACK weight, by path and by named-data key.
mv2=$PWD/tests/fixtures/mv2_xnnpack.pte
read -r path key < <("$py" -c '
import sys, ptefs
f = ptefs.open(sys.argv[1])
t = max(f.tensors().values(), key=lambda t: t.nbytes)
print(t.path, t.key)' "$mv2")
st=$work/mv2_xnnpack.safetensors
[[ -f $st ]] || "$py" "$bench" save "$mv2" "$st"
"$py" "$bench" settle "$mv2" "$st"
small_runs=${RUNS_SMALL:-101}
p=$("$py" "$bench" ptefs "$mv2" "$path" "$small_runs")
what="\`ptefs.open\` + sum of one tensor: mv2_xnnpack.pte, its largest weight"
if [[ -n $et ]]; then
  e=$("$et" "$bench" executorch "$mv2" "$key" "$small_runs" 2>/dev/null)
  echo "| $what | $(ms "$p") | ExecuTorch \`deserialize_pte_binary\` + the same sum: $(ms "$e") | $(times "$p" "$e") |"
fi
s=$("$py" "$bench" safetensors "$st" "$path" "$small_runs")
echo "| $what | $(ms "$p") | safetensors \`safe_open\` + \`get_tensor\` + the same sum: $(ms "$s") | $(times "$p" "$s") |"
# Where each way's time goes (to stderr: not rows of the table), and
# where ptefs's open goes, in Rust.
cargo build --release --quiet --example open_phases
$release/examples/open_phases "$mv2" >&2
"$py" "$bench" phases "$mv2" "$st" "$path" "$small_runs" | while read -r way o a m c; do
  say "$(awk -v w="$way" -v o="$o" -v a="$a" -v m="$m" -v c="$c" 'BEGIN {
    printf "mv2_xnnpack.pte, %s (ms): open %.3f, array %.3f, sum %.3f, close %.3f", w, o/1e6, a/1e6, m/1e6, c/1e6}')"
done

# The 2.2 GB program of scripts/bench.sh, when it was written.
big=$work/big.pte
if [[ ! -f $big ]]; then
  say "no $big (scripts/bench.sh writes it): no rows for it"
  exit 0
fi
bst=$work/big.safetensors
[[ -f $bst ]] || { say "writing $bst ..."; "$py" "$bench" save "$big" "$bst"; }
"$py" "$bench" settle "$big" "$bst"
small=methods/forward/tensors/00001.layers.0.weight.bin
large=methods/forward/tensors/00000.layers.18446744073709551615.weight.bin
for spec in "$small 56 KiB" "$large 1 GiB"; do
  read -r tensor size <<<"$spec"
  what="\`ptefs.open\` + sum of one tensor: the 2.2 GB program, a $size tensor"
  p=$("$py" "$bench" ptefs "$big" "$tensor" "$runs")
  s=$("$py" "$bench" safetensors "$bst" "$tensor" "$runs")
  echo "| $what | $(ms "$p") | safetensors \`safe_open\` + \`get_tensor\` + the same sum: $(ms "$s") | $(times "$p" "$s") |"
done
if [[ -n $et ]]; then
  # ExecuTorch restores the constant segment as the program's constant
  # buffers, copying the whole file into Python objects.
  buffer=$("$py" -c 'import sys, ptefs; print(ptefs.open(sys.argv[1]).tensor(sys.argv[2]).entry["buffer_index"])' "$big" "$large")
  e=$("$et" "$bench" executorch "$big" "const:$buffer" "${RUNS_SLOW:-1}" 2>/dev/null || echo)
  p=$("$py" "$bench" ptefs "$big" "$large" "$runs")
  [[ -n $e ]] && echo "| \`ptefs.open\` + sum of one tensor: the 2.2 GB program, the 1 GiB tensor | $(ms "$p") | ExecuTorch \`deserialize_pte_binary\` + the same sum: $(ms "$e") | $(times "$p" "$e") |"
fi
