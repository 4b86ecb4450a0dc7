#!/usr/bin/env bash
# Measures ptefs on a synthetic program of 20,001 tensors and 2.2 GB (one
# 1 GiB tensor), built with the test writer (examples/make_model.rs).
# Prints medians of RUNS runs, each with the baseline measured in the same
# run: an ordinary directory with the same files, and reading the source
# file directly. Needs FUSE. Usage: scripts/bench.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-${TMPDIR:-/tmp}/ptefs-bench}
runs=${RUNS:-5}
mkdir -p "$work"
cargo build --release --quiet --example make_model --example make_package
cargo build --release --quiet
ptefs=$PWD/target/release/ptefs
model=$work/big.pte
mnt=$work/mnt
plain=$work/plain
mkdir -p "$mnt"
grep -q " $mnt " /proc/self/mountinfo && $ptefs umount "$mnt"
if [[ ! -f $model ]]; then
  echo "writing $model ..."
  target/release/examples/make_model "$model" --tensors 20000 --tensor-bytes 57344 --big-bytes 1073741824
fi
big=methods/forward/tensors/00000.layers.18446744073709551615.weight.bin

now() { date +%s%N; }
# median of the arguments
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms() { awk -v n="$1" 'BEGIN {printf "%.1f ms", n/1e6}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a/b}'; }
mbps() { awk -v bytes="$1" -v ns="$2" 'BEGIN {printf "%.0f MB/s", bytes/(ns/1e9)/1e6}'; }
rss() { awk '/RssAnon/ {print $2 " kB"}' "/proc/$(pgrep -f "ptefs mount $model $mnt" | head -1)/status"; }
mount_() { $ptefs mount "$model" "$mnt"; }
umount_() { $ptefs umount "$mnt"; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
echo "model: $(stat -c %s "$model") bytes, $($ptefs ls -R "$model" | wc -l) paths"
cat "$model" > /dev/null # the source in the page cache, as for every baseline

# Mount time: from running `ptefs mount` to its exit, which waits for the
# mount to answer.
t=()
for _ in $(seq "$runs"); do
  s=$(now); mount_; e=$(now); t+=($((e - s))); umount_
done
echo "mount: $(ms "$(median "${t[@]}")") (median of $runs)"

# The same for a native program package of 20,000 tensors (2,000 of them
# aliases) and 1 GiB.
package=$work/big.ptn
[[ -f $package ]] || target/release/examples/make_package "$package" --tensors 20000 --tensor-bytes 57344
cat "$package" > /dev/null
t=()
for _ in $(seq "$runs"); do
  s=$(now); $ptefs mount "$package" "$mnt"; e=$(now); t+=($((e - s))); umount_
done
echo "package: $(stat -c %s "$package") bytes, $($ptefs ls -R "$package" | wc -l) paths"
echo "mount .ptn: $(ms "$(median "${t[@]}")") (median of $runs)"

# Listing, against an ordinary directory holding the same tree (empty
# files of the same sizes).
if [[ ! -d $plain ]]; then
  echo "building the baseline directory $plain ..."
  mkdir -p "$plain.tmp"
  $ptefs ls -l -R "$model" | awk -v d="$plain.tmp" '
    $3 ~ /\/$/ { print "mkdir -p \"" d "/" substr($3, 1, length($3)-1) "\""; next }
    { print "truncate -s " $2 " \"" d "/" $3 "\"" }' | sh
  mv "$plain.tmp" "$plain"
fi
mount_
s=$(now); ls -lR "$mnt" > /dev/null; e=$(now); cold=$((e - s))
lf=(); lp=(); ff=(); fp=()
for _ in $(seq "$runs"); do
  s=$(now); ls -lR "$mnt" > /dev/null; e=$(now); lf+=($((e - s)))
  s=$(now); ls -lR "$plain" > /dev/null; e=$(now); lp+=($((e - s)))
  s=$(now); n=$(find "$mnt" | wc -l); e=$(now); ff+=($((e - s)))
  s=$(now); find "$plain" | wc -l > /dev/null; e=$(now); fp+=($((e - s)))
done
echo "ls -lR: first $(ms $cold), then $(ms "$(median "${lf[@]}")"); plain directory $(ms "$(median "${lp[@]}")"): $(ratio "$(median "${lf[@]}")" "$(median "${lp[@]}")") its time"
echo "find | wc -l ($n): $(ms "$(median "${ff[@]}")"); plain directory $(ms "$(median "${fp[@]}")"): $(ratio "$(median "${ff[@]}")" "$(median "${fp[@]}")") its time"
echo "RssAnon after mount and listing: $(rss)"
umount_

# Throughput of the 1 GiB tensor: first read right after mounting (the
# mount's page cache empty), then a re-read; against reading the same byte
# range of the source directly, warm, with the same 128 KiB requests cat uses.
offset=$($ptefs cat "$model" methods/forward/tensors/index.json | jq '.[0].source.offset')
len=$((1 << 30))
first=(); again=(); direct=()
for _ in $(seq "$runs"); do
  mount_
  s=$(now); cat "$mnt/$big" > /dev/null; e=$(now); first+=($((e - s)))
  s=$(now); cat "$mnt/$big" > /dev/null; e=$(now); again+=($((e - s)))
  umount_
  s=$(now); dd if="$model" of=/dev/null bs=128K iflag=skip_bytes,count_bytes skip="$offset" count=$len status=none; e=$(now); direct+=($((e - s)))
done
d=$(median "${direct[@]}"); f=$(median "${first[@]}"); a=$(median "${again[@]}")
# The same bytes on tmpfs, whose page cache holds 4 KiB pages as FUSE's does
# (ext4 caches large folios, which copy faster).
shm=/dev/shm/ptefs-bench.bin
dd if="$model" of=$shm bs=1M iflag=skip_bytes,count_bytes skip="$offset" count=$len status=none
tm=()
for _ in $(seq "$runs"); do
  s=$(now); dd if=$shm of=/dev/null bs=128K status=none; e=$(now); tm+=($((e - s)))
done
rm -f $shm
t=$(median "${tm[@]}")
echo "direct read of the same bytes: $(mbps $len "$d"); from tmpfs: $(mbps $len "$t")"
echo "cat through the mount, first read: $(mbps $len "$f") = $(ratio "$d" "$f") direct"
echo "cat through the mount, re-read:    $(mbps $len "$a") = $(ratio "$d" "$a") direct, $(ratio "$t" "$a") tmpfs"

# Memory after reading every file once.
mount_
echo "RssAnon after mount: $(rss)"
find "$mnt" -type f -exec cat {} + > /dev/null
echo "RssAnon after reading all $(find "$mnt" -type f | wc -l) files ($(du -sb "$mnt" | cut -f1) bytes): $(rss)"
umount_

# ptefs diff of two files that differ only in their last tensor, beside
# cmp of the same pair (which reads up to that tensor too), both warm.
model2=$work/big-last-changed.pte
if [[ ! -f $model2 ]]; then
  echo "writing $model2 ..."
  target/release/examples/make_model "$model2" --tensors 20000 --tensor-bytes 57344 --big-bytes 1073741824 --last-seed 7
fi
cat "$model2" > /dev/null
dt=(); ct=()
for _ in $(seq "$runs"); do
  s=$(now); $ptefs diff "$model" "$model2" > /dev/null || true; e=$(now); dt+=($((e - s)))
  s=$(now); cmp "$model" "$model2" > /dev/null || true; e=$(now); ct+=($((e - s)))
done
echo "ptefs diff of two $(stat -c %s "$model")-byte files differing in the last tensor: $(ms "$(median "${dt[@]}")"); cmp: $(ms "$(median "${ct[@]}")"): $(ratio "$(median "${dt[@]}")" "$(median "${ct[@]}")") its time"
