#!/usr/bin/env bash
# ptefs index against what a user writes today, in the same run: the
# catalog of 1,000 small programs (scripts/gen-fleet.sh) beside the shell
# loop `for f in ...; do ptefs check --json "$f"; ptefs inspect --json
# "$f"; done`; the 2.2 GB program of bench.sh and a program of 1,000,000
# tensors indexed, with their peak memory beside the bound (16 × the
# flatbuffer + 64 MiB); and the rows per second DuckDB reads from a
# catalog, for the record. Prints rows of bench.sh's table on stdout
# (bench.sh runs it); alone:
#   scripts/bench-index.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-${TMPDIR:-/tmp}/ptefs-bench}
runs=${RUNS:-5}
mkdir -p "$work"
cargo build --release --quiet --example make_model
cargo build --release --quiet
ptefs=$release/ptefs
now() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms() { awk -v n="$1" 'BEGIN {printf (n < 1e8 ? "%.1f ms" : "%.0f ms"), n/1e6}'; }
times() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f × its time", a/b}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.0f MiB", b/1048576}'; }

fleet=$work/fleet
[[ -f $fleet/fleet-0999.pte ]] || scripts/gen-fleet.sh "$fleet" 1000
cat "$fleet"/*.pte > /dev/null
ti=() tl=()
for _ in $(seq "$runs"); do
  rm -rf "$work/catalog"
  s=$(now); $ptefs index "$fleet" -o "$work/catalog" 2> /dev/null; e=$(now); ti+=($((e - s)))
  s=$(now)
  for f in "$fleet"/*.pte; do
    $ptefs check --json "$f" > /dev/null; $ptefs inspect --json "$f" > /dev/null
  done
  e=$(now); tl+=($((e - s)))
done
echo "| \`ptefs index\` of 1,000 programs ($(nproc) jobs) | $(ms "$(median "${ti[@]}")") | the shell loop of \`check --json\` and \`inspect --json\`: $(ms "$(median "${tl[@]}")") | $(times "$(median "${ti[@]}")" "$(median "${tl[@]}")") |"

# Peak memory of one file's index beside its bound.
big=$work/big.pte
[[ -f $big ]] || $release/examples/make_model "$big" --tensors 20000 --tensor-bytes 57344 --big-bytes 1073741824
many=$work/million.pte
[[ -f $many ]] || $release/examples/make_model "$many" --tensors 1000000 --tensor-bytes 16 --big-bytes 0
for what in "the 2.2 GB program:$big" "the 1,000,000-tensor program:$many"; do
  file=${what#*:}
  rm -rf "$work/catalog-one"
  fb=$(python3 -c "import struct,sys; print(struct.unpack_from('<Q', open(sys.argv[1], 'rb').read(24), 16)[0])" "$file")
  s=$(now)
  rss=$( { /usr/bin/time -f '%M' "$ptefs" index "$file" -o "$work/catalog-one" --jobs 1 2>&1 >/dev/null; } | tail -1)
  e=$(now)
  bound=$((16 * fb + (64 << 20)))
  echo "| \`ptefs index\` of $what: peak RSS ($(ms $((e - s)))) | $(mib $((rss * 1024))) | bound 16 × flatbuffer + 64 MiB: $(mib "$bound") | $(awk -v a="$((rss * 1024))" -v b="$bound" 'BEGIN {printf "%.2f × the bound", a/b}') |"
done

# DuckDB reading the tensors of the 1,000,000-tensor program's catalog.
if python3 -c "import duckdb" 2> /dev/null; then
  rate=$(python3 - "$work/catalog-one" <<'PY'
import sys, time, duckdb
glob = sys.argv[1] + "/tensors/*.parquet"
n = duckdb.sql(f"select count(*) from '{glob}'").fetchall()[0][0]
best = None
for _ in range(3):
    s = time.perf_counter()
    duckdb.sql(f"select dtype, count(*), sum(nbytes) from '{glob}' group by dtype").fetchall()
    t = time.perf_counter() - s
    best = t if best is None else min(best, t)
print(f"{n} {n / best:.0f}")
PY
)
  echo "| DuckDB \`group by dtype\` over the tensors table (${rate%% *} rows) | $(awk -v r="${rate##* }" 'BEGIN {printf "%.1f M rows/s", r/1e6}') | | |"
fi
