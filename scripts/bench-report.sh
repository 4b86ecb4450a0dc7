#!/usr/bin/env bash
# ptefs report on bench.sh's synthetic program (20,001 tensors, 2.2 GB):
# `ptefs report --json` (sizes, duplicates, coverage, statistics of every
# tensor) beside NumPy computing min, max, mean and std of the same tensors
# memory-mapped, in the same run; and the HTML page's size and render time.
# Prints rows of bench.sh's table on stdout (bench.sh runs it); alone:
#   scripts/bench-report.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-${TMPDIR:-/tmp}/ptefs-bench}
runs=${RUNS:-5}
mkdir -p "$work"
cargo build --release --quiet --example make_model
cargo build --release --quiet
ptefs=$release/ptefs
model=$work/big.pte
if [[ ! -f $model ]]; then
  echo "writing $model ..." >&2
  $release/examples/make_model "$model" --tensors 20000 --tensor-bytes 57344 --big-bytes 1073741824
fi
now() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms() { awk -v n="$1" 'BEGIN {printf (n < 1e8 ? "%.1f ms" : "%.0f ms"), n/1e6}'; }
times() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f × its time", a/b}'; }

cat "$model" > /dev/null # in the page cache, for both
json=$work/report.json
$ptefs report --json "$model" > "$json"
# NumPy over the tensors the report lists (every stored tensor of the
# program), each a view of one memory map: the loop NumPy users write.
numpy_ns() {
  python3 - "$model" "$json" <<'PY'
import json, sys, time
import numpy as np
model, report = sys.argv[1], json.load(open(sys.argv[2]))
mm = np.memmap(model, dtype=np.uint8, mode="r")
types = {"FLOAT": "<f4", "HALF": "<f2", "DOUBLE": "<f8"}
views = [(e["offset"], e["elements"], types[e["dtype"]]) for e in report["stats"]]
np.seterr(all="ignore")  # the synthetic tensors hold NaN and Inf
t = time.perf_counter_ns()
for off, n, t_ in views:
    a = mm[off:off + n * np.dtype(t_).itemsize].view(t_)
    a.min(); a.max(); a.mean(); a.std()
print(time.perf_counter_ns() - t)
PY
}
rt=(); nt=(); pt=()
for _ in $(seq "$runs"); do
  s=$(now); $ptefs report --json "$model" > /dev/null; e=$(now); rt+=($((e - s)))
  nt+=("$(numpy_ns)")
  s=$(now); $ptefs report "$model" -o "$work/report.html"; e=$(now); pt+=($((e - s)))
done
r=$(median "${rt[@]}"); n=$(median "${nt[@]}"); p=$(median "${pt[@]}")
tensors=$(jq '.stats | length' "$json")
echo "| \`ptefs report --json\` of the 2.2 GB program ($tensors tensors' statistics, sizes, duplicates, coverage) | $(ms "$r") | NumPy min/max/mean/std of the same memmapped tensors: $(ms "$n") | $(times "$r" "$n") |"
echo "| \`ptefs report -o page.html\` of it | $(ms "$p"), $(stat -c %s "$work/report.html") bytes | \`ptefs report --json\`: $(ms "$r") | $(times "$p" "$r") |"
