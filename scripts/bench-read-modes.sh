#!/usr/bin/env bash
# The read path of a mount in each read mode: the first read and the
# re-read of a 1 GiB tensor, of a 2 MiB tensor and of 1,000 small tensors
# (4 KiB each) by cat, dd bs=1M, numpy.fromfile and numpy.memmap + sum, each
# beside the same tool reading the same bytes from the source file in the
# same run. Prints rows of bench.sh's table: medians of RUNS runs (default
# 3), the ratio as the mount's speed over the source's, with its minimum.
# Usage: scripts/bench-read-modes.sh [WORKDIR]; PTEFS=<binary> to use
# another build; MODES="cached cached,1M direct" and
# WORKLOADS="1GiB 2MiB small" to pick variants and workloads.
#
# Each first read is made on a fresh mount (its page cache empty) with the
# source in the page cache, as the source is for its direct read: both
# are warm the same way. The re-read follows at once on the same mount.
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-${TMPDIR:-/tmp}/ptefs-bench}
runs=${RUNS:-3}
mkdir -p "$work"
if [[ -z ${PTEFS:-} ]]; then
  cargo build --release --quiet --example make_model
  cargo build --release --quiet
  PTEFS=$release/ptefs
fi
ptefs=$PTEFS
py=${PYTHON:-python3}
say() { echo "$*" >&2; }
now() { date +%s%N; }
mnt=$work/mnt-read-modes
mkdir -p "$mnt"
grep -q " $mnt " /proc/self/mountinfo && $ptefs umount "$mnt"

# One program: a 1 GiB tensor and 1,000 of 4 KiB; another: one of 2 MiB.
big=$work/read-big.pte
two=$work/read-2m.pte
[[ -f $big ]] || $release/examples/make_model "$big" --tensors 1000 --tensor-bytes 4096 --big-bytes 1073741824
[[ -f $two ]] || $release/examples/make_model "$two" --tensors 1 --tensor-bytes 2097152 --big-bytes 0
cat "$big" "$two" > /dev/null

# name:offset:length of each tensor file of SOURCE, in index order.
tensors() {
  $ptefs cat "$1" methods/forward/tensors/index.json |
    jq -r '.[] | "\(.name):\(.source.offset):\(.nbytes)"'
}
mapfile -t big_tensors < <(tensors "$big")
mapfile -t two_tensors < <(tensors "$two")
tensor_dir=methods/forward/tensors

# Reads by TOOL of SPECS (path:offset:length), in ns.
read_specs() { # TOOL SPEC...
  local tool=$1 s e
  shift
  case $tool in
    cat | dd)
      local bs=128K
      [[ $tool == dd ]] && bs=1M
      s=$(now)
      for spec in "$@"; do
        IFS=: read -r path off len <<<"$spec"
        if [[ $tool == cat && $off == 0 && $len == $(stat -c %s "$path") ]]; then
          cat "$path"
        else
          dd if="$path" bs=$bs iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none
        fi
      done > /dev/null
      e=$(now)
      echo $((e - s))
      ;;
    fromfile | mmap) $py scripts/bench_read_modes.py "$tool" "$@" ;;
  esac
}

# The workloads: name, source, and which tensors.
workload_specs() { # WHICH ROOT SOURCE: specs of the files under ROOT, or of the source
  local which=$1 root=$2 src=$3 list
  case $which in
    1GiB) list=("${big_tensors[0]}") ;;
    2MiB) list=("${two_tensors[0]}") ;;
    small) list=("${big_tensors[@]:1}") ;;
  esac
  for t in "${list[@]}"; do
    IFS=: read -r name off len <<<"$t"
    if [[ -n $root ]]; then
      echo "$root/$tensor_dir/$name:0:$len"
    else
      echo "$src:$off:$len"
    fi
  done
}
source_of() { case $1 in 2MiB) echo "$two" ;; *) echo "$big" ;; esac; }
what_of() {
  case $1 in
    1GiB) echo "the 1 GiB tensor" ;;
    2MiB) echo "a 2 MiB tensor" ;;
    small) echo "1,000 tensors of 4 KiB" ;;
  esac
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
minimum() { printf '%s\n' "$@" | sort -g | head -1; }
# a speed for large reads, the time for the small files
shown() { awk -v ns="$1" -v bytes="$2" 'BEGIN {if (bytes >= 1e8) printf "%.2f GB/s", bytes/ns; else printf "%.1f ms", ns/1e6}'; }

modes=${MODES:-"cached cached,1M direct"}
for which in ${WORKLOADS:-1GiB 2MiB small}; do
  src=$(source_of $which)
  mapfile -t from_source < <(workload_specs $which "" "$src")
  bytes=0
  for s in "${from_source[@]}"; do bytes=$((bytes + ${s##*:})); done
  for tool in cat dd fromfile mmap; do
    # Runs take the modes in turn, so that a drift of the machine's speed
    # during the run (it is several per cent on a VM) touches each alike.
    declare -A first=() again=() base=() rf=() ra=()
    for _ in $(seq "$runs"); do
      for mode in $modes; do
        args=(--read-mode "${mode%%,*}")
        [[ $mode == *,* ]] && args+=(--max-request "${mode#*,}")
        $ptefs mount "${args[@]}" "$src" "$mnt"
        mapfile -t mounted < <(workload_specs $which "$mnt" "$src")
        b=$(read_specs $tool "${from_source[@]}")
        f=$(read_specs $tool "${mounted[@]}")
        a=$(read_specs $tool "${mounted[@]}")
        $ptefs umount "$mnt"
        first[$mode]+="$f "; again[$mode]+="$a "; base[$mode]+="$b "
        rf[$mode]+="$(awk -v a="$f" -v b="$b" 'BEGIN {print b/a}') "
        ra[$mode]+="$(awk -v a="$a" -v b="$b" 'BEGIN {print b/a}') "
      done
    done
    for mode in $modes; do
      # shellcheck disable=SC2086 # the lists are space-separated numbers
      d=$(median ${base[$mode]})
      for pass in first again; do
        if [[ $pass == first ]]; then t=${first[$mode]}; r=${rf[$mode]}; label="first read"; else t=${again[$mode]}; r=${ra[$mode]}; label="re-read"; fi
        # shellcheck disable=SC2086
        echo "| --read-mode $mode: $label of $(what_of $which), $tool | $(shown "$(median $t)" $bytes) | the source's bytes, $tool: $(shown "$d" $bytes) | $(awk -v m="$(median $r)" -v n="$(minimum $r)" 'BEGIN {printf "%.2f × (min %.2f)", m, n}') |"
      done
    done
  done
done
