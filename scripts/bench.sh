#!/usr/bin/env bash
# Measures ptefs and prints one markdown table: each measure beside an
# anchor measured in the same run, with their ratio. Medians of RUNS runs
# (default 5). Needs FUSE, jq, and squashfuse + mksquashfs
# (apt-get install squashfuse squashfs-tools; without them those anchors
# are left out). Usage: scripts/bench.sh [WORKDIR]
#
# The model is a synthetic program of 20,001 tensors and 2.2 GB (one tensor
# of 1 GiB) written by the test writer (examples/make_model.rs). Anchors:
# an ordinary directory holding the same names and sizes (empty files), the
# same directory as a squashfs image mounted with squashfuse (another FUSE
# filesystem), a direct read of the same bytes from the page cache, the same
# bytes on tmpfs, and a squashfs image holding the 1 GiB tensor
# uncompressed, mounted with squashfuse.
#
# Scripts beside this one that measure more (bench-read-modes.sh, bench-remote.sh, bench-report.sh,
# bench-scale.sh, bench-python.sh, bench-edit.sh, bench-index.sh) run too if present; they get WORKDIR and print rows of
# the same table on stdout.
#
# BASELINE=<another ptefs binary> adds its mount time of each delegated
# fixture as a second anchor; DELEGATES_ONLY=1 stops after those rows.
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-${TMPDIR:-/tmp}/ptefs-bench}
runs=${RUNS:-5}
mkdir -p "$work"
cargo build --release --quiet --example make_model --example make_package
cargo build --release --quiet
ptefs=$release/ptefs
model=$work/big.pte
mnt=$work/mnt
plain=$work/plain
mkdir -p "$mnt"
say() { echo "$*" >&2; }
mounted() { grep -q " $1 " /proc/self/mountinfo; }
mounted "$mnt" && $ptefs umount "$mnt"

now() { date +%s%N; }
# median of the arguments
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms() { awk -v n="$1" 'BEGIN {printf (n < 1e8 ? "%.1f ms" : "%.0f ms"), n/1e6}'; }
gbps() { awk -v ns="$1" -v bytes="$2" 'BEGIN {printf "%.2f GB/s", bytes/ns}'; }
# ratio of two times, as the first's share of the second's time
times() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f × its time", a/b}'; }
# ratio of two reads of the same bytes, as speeds
speed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f × its speed", b/a}'; }
rows=()
row() { rows+=("| $1 | $2 | $3 | $4 |"); }

# Mount time of real delegated programs, whose payloads are decoded while
# the tree is built: MobileNetV2 lowered to XNNPACK, and an MLP lowered to
# Core ML. The anchor of each is the same file with its backend id renamed
# (same length): ptefs then leaves the payload opaque, so the ratio is
# what decoding costs. Both are copies in the work directory, as the
# fixtures' directory holds data files that ptefs would look into.
dmnt=$work/mnt-delegate
mkdir -p "$dmnt"
mount_time() { # BINARY FILE: the time of one mount, then unmounts
  local s e; s=$(now); "$1" mount "$2" "$dmnt"; e=$(now); "$1" umount "$dmnt"; echo $((e - s))
}
for spec in "mv2_xnnpack.pte XnnpackBackend XnnpackBackenX XNNPACK" \
  "backends/coreml_mlp.pte CoreMLBackend CoreMLBackenX Core ML"; do
  read -r fixture id renamed what <<<"$spec"
  name=$(basename "$fixture")
  decoded=$work/$name
  opaque=$work/opaque-$name
  cp "tests/fixtures/$fixture" "$decoded"
  sed "s/$id/$renamed/g" "$decoded" > "$opaque"
  cat "$decoded" "$opaque" > /dev/null
  cur=(); base=(); opq=()
  for _ in $(seq "$runs"); do
    cur+=("$(mount_time "$ptefs" "$decoded")")
    opq+=("$(mount_time "$ptefs" "$opaque")")
    [[ -n ${BASELINE:-} ]] && base+=("$(mount_time "$BASELINE" "$decoded")")
  done
  c=$(median "${cur[@]}")
  o=$(median "${opq[@]}")
  row "mount $name ($what payload decoded)" "$(ms "$c")" "the same left opaque: $(ms "$o")" "$(times "$c" "$o")"
  if [[ -n ${BASELINE:-} ]]; then
    b=$(median "${base[@]}")
    row "mount $name ($what payload decoded)" "$(ms "$c")" "BASELINE build: $(ms "$b")" "$(times "$c" "$b")"
  fi
done

print_table() {
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r), $work on $(df --output=fstype "$work" | tail -1); medians of $runs runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  [[ -n $npaths ]] && echo "model: $(stat -c %s "$model") bytes, $npaths paths"
  echo
  echo "| measure | ptefs | anchor | ratio |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
}
npaths=
if [[ -n ${DELEGATES_ONLY:-} ]]; then print_table; exit 0; fi

if [[ ! -f $model ]]; then
  say "writing $model ..."
  $release/examples/make_model "$model" --tensors 20000 --tensor-bytes 57344 --big-bytes 1073741824
fi
big=methods/forward/tensors/00000.layers.18446744073709551615.weight.bin
npaths=$($ptefs ls -R "$model" | wc -l)
cat "$model" > /dev/null # the source in the page cache, as for every anchor
daemon_rss() { # PATTERN: RssAnon of the process whose command line matches
  awk '/RssAnon/ {print $2 * 1024}' "/proc/$(pgrep -f "$1" | head -1)/status"
}
mib() { awk -v b="$1" 'BEGIN {printf "%.0f MiB", b/1048576}'; }

# The anchor directory: empty files of the same names and sizes.
if [[ ! -d $plain ]]; then
  say "building the anchor directory $plain ..."
  mkdir -p "$plain.tmp"
  $ptefs ls -l -R "$model" | awk -v d="$plain.tmp" '
    $3 ~ /\/$/ { print "mkdir -p \"" d "/" substr($3, 1, length($3)-1) "\""; next }
    { print "truncate -s " $2 " \"" d "/" $3 "\"" }' | sh
  mv "$plain.tmp" "$plain"
fi
squash=
if command -v squashfuse > /dev/null && command -v mksquashfs > /dev/null; then
  squash=$work/plain.sqfs
  smnt=$work/mnt-squashfs
  mkdir -p "$smnt"
  mounted "$smnt" && umount "$smnt"
  [[ -f $squash ]] || mksquashfs "$plain" "$squash" -noappend -quiet -no-progress > /dev/null
  cat "$squash" > /dev/null
else
  say "squashfuse or mksquashfs missing: no squashfuse anchors"
fi

# Time to ready: from running the mount command to its return, the mount
# answering (ptefs mount waits for that; squashfuse is then asked once).
t=(); st=()
for _ in $(seq "$runs"); do
  s=$(now); $ptefs mount "$model" "$mnt"; e=$(now); t+=($((e - s))); $ptefs umount "$mnt"
  if [[ -n $squash ]]; then
    s=$(now); squashfuse "$squash" "$smnt"; stat "$smnt" > /dev/null; e=$(now); st+=($((e - s))); umount "$smnt"
  fi
done
m=$(median "${t[@]}")
if [[ -n $squash ]]; then
  a=$(median "${st[@]}")
  row "time to ready (mount until it answers)" "$(ms "$m")" "squashfuse of the anchor directory: $(ms "$a")" "$(times "$m" "$a")"
else
  row "time to ready (mount until it answers)" "$(ms "$m")" "" ""
fi

# Listing: the first `ls -lR` after mounting, then warm ones, and `find`.
$ptefs mount "$model" "$mnt"
[[ -n $squash ]] && squashfuse "$squash" "$smnt"
s=$(now); ls -lR "$mnt" > /dev/null; e=$(now); cold=$((e - s))
if [[ -n $squash ]]; then s=$(now); ls -lR "$smnt" > /dev/null; e=$(now); scold=$((e - s)); fi
lf=(); lp=(); ls_=(); ff=(); fp=(); fs=()
for _ in $(seq "$runs"); do
  s=$(now); ls -lR "$mnt" > /dev/null; e=$(now); lf+=($((e - s)))
  s=$(now); ls -lR "$plain" > /dev/null; e=$(now); lp+=($((e - s)))
  s=$(now); find "$mnt" | wc -l > /dev/null; e=$(now); ff+=($((e - s)))
  s=$(now); find "$plain" | wc -l > /dev/null; e=$(now); fp+=($((e - s)))
  if [[ -n $squash ]]; then
    s=$(now); ls -lR "$smnt" > /dev/null; e=$(now); ls_+=($((e - s)))
    s=$(now); find "$smnt" | wc -l > /dev/null; e=$(now); fs+=($((e - s)))
  fi
done
rss=$(daemon_rss "ptefs mount $model $mnt")
[[ -n $squash ]] && srss=$(daemon_rss "squashfuse $squash $smnt")
$ptefs umount "$mnt"
[[ -n $squash ]] && umount "$smnt"
l=$(median "${lf[@]}"); f=$(median "${ff[@]}")
row "daemon RssAnon after mounting and listing" "$(mib "$rss")" "${squash:+squashfuse: $(mib "$srss")}" "${squash:+$(awk -v a="$rss" -v b="$srss" 'BEGIN {printf "%.2f ×", a/b}')}"
[[ -n $squash ]] && row "first \`ls -lR\` after mounting" "$(ms "$cold")" "squashfuse: $(ms "$scold")" "$(times "$cold" "$scold")"
row "warm \`ls -lR\`" "$(ms "$l")" "plain directory: $(ms "$(median "${lp[@]}")")" "$(times "$l" "$(median "${lp[@]}")")"
[[ -n $squash ]] && row "warm \`ls -lR\`" "$(ms "$l")" "squashfuse: $(ms "$(median "${ls_[@]}")")" "$(times "$l" "$(median "${ls_[@]}")")"
row "\`find \| wc -l\`" "$(ms "$f")" "plain directory: $(ms "$(median "${fp[@]}")")" "$(times "$f" "$(median "${fp[@]}")")"
[[ -n $squash ]] && row "\`find \| wc -l\`" "$(ms "$f")" "squashfuse: $(ms "$(median "${fs[@]}")")" "$(times "$f" "$(median "${fs[@]}")")"

# Reading the 1 GiB tensor with cat: first right after mounting (the
# mount's page cache empty), then again. Anchors read the same bytes with
# the same 128 KiB requests: directly from the source in the page cache,
# from tmpfs (4 KiB pages, as the FUSE page cache holds), and through
# squashfuse from an uncompressed image holding the tensor alone.
offset=$($ptefs cat "$model" methods/forward/tensors/index.json | jq '.[0].source.offset')
len=$((1 << 30))
shm=/dev/shm/ptefs-bench.bin
dd if="$model" of=$shm bs=1M iflag=skip_bytes,count_bytes skip="$offset" count=$len status=none
if [[ -n $squash ]]; then
  tsquash=$work/tensor.sqfs
  tsmnt=$work/mnt-tensor
  mkdir -p "$tsmnt"
  mounted "$tsmnt" && umount "$tsmnt"
  [[ -f $tsquash ]] || mksquashfs $shm "$tsquash" -noappend -quiet -no-progress -noI -noD -noF -noX > /dev/null
  cat "$tsquash" > /dev/null
fi
# A second read moves each page to the kernel's active LRU list (the first
# marked it referenced), which costs; from the third on, pages are settled,
# as the anchors' pages, read many times, are.
first=(); again=(); third=(); direct=(); tm=(); sfirst=(); sagain=()
for _ in $(seq "$runs"); do
  $ptefs mount "$model" "$mnt"
  s=$(now); cat "$mnt/$big" > /dev/null; e=$(now); first+=($((e - s)))
  s=$(now); cat "$mnt/$big" > /dev/null; e=$(now); again+=($((e - s)))
  s=$(now); cat "$mnt/$big" > /dev/null; e=$(now); third+=($((e - s)))
  $ptefs umount "$mnt"
  s=$(now); dd if="$model" of=/dev/null bs=128K iflag=skip_bytes,count_bytes skip="$offset" count=$len status=none; e=$(now); direct+=($((e - s)))
  s=$(now); dd if=$shm of=/dev/null bs=128K status=none; e=$(now); tm+=($((e - s)))
  if [[ -n $squash ]]; then
    squashfuse "$tsquash" "$tsmnt"
    s=$(now); cat "$tsmnt/$(basename $shm)" > /dev/null; e=$(now); sfirst+=($((e - s)))
    s=$(now); cat "$tsmnt/$(basename $shm)" > /dev/null; e=$(now); sagain+=($((e - s)))
    umount "$tsmnt"
  fi
done
rm -f $shm
d=$(median "${direct[@]}"); f=$(median "${first[@]}"); a=$(median "${again[@]}"); t=$(median "${tm[@]}")
a3=$(median "${third[@]}")
row "first read of the 1 GiB tensor" "$(gbps "$f" $len)" "direct read from the page cache: $(gbps "$d" $len)" "$(speed "$f" "$d")"
[[ -n $squash ]] && row "first read of the 1 GiB tensor" "$(gbps "$f" $len)" "squashfuse, uncompressed: $(gbps "$(median "${sfirst[@]}")" $len)" "$(speed "$f" "$(median "${sfirst[@]}")")"
row "re-read (second read)" "$(gbps "$a" $len)" "direct read from the page cache: $(gbps "$d" $len)" "$(speed "$a" "$d")"
row "re-read (second read)" "$(gbps "$a" $len)" "tmpfs: $(gbps "$t" $len)" "$(speed "$a" "$t")"
[[ -n $squash ]] && row "re-read (second read)" "$(gbps "$a" $len)" "squashfuse's second read: $(gbps "$(median "${sagain[@]}")" $len)" "$(speed "$a" "$(median "${sagain[@]}")")"
row "third read" "$(gbps "$a3" $len)" "direct read from the page cache: $(gbps "$d" $len)" "$(speed "$a3" "$d")"
row "third read" "$(gbps "$a3" $len)" "tmpfs: $(gbps "$t" $len)" "$(speed "$a3" "$t")"

# weights.safetensors: reading all of it through a mount (its header, then
# every tensor's bytes back to back) beside reading every tensor's own
# .bin, warm, in the same mount; and building the tree (`ptefs ls`) beside
# building it and making the file's header (`ptefs stat` of it, which
# lays it out), and with BASELINE, beside BASELINE's build.
$ptefs mount "$model" "$mnt"
tdir=$mnt/methods/forward/tensors
mapfile -t bins < <(jq -r '.[] | select(.name != null) | .name' "$tdir/index.json")
cat "$mnt/weights.safetensors" > /dev/null
(cd "$tdir" && cat "${bins[@]}" > /dev/null)
wt=(); bt=()
for _ in $(seq "$runs"); do
  s=$(now); cat "$mnt/weights.safetensors" > /dev/null; e=$(now); wt+=($((e - s)))
  s=$(now); (cd "$tdir" && cat "${bins[@]}" > /dev/null); e=$(now); bt+=($((e - s)))
done
wsize=$(stat -c %s "$mnt/weights.safetensors")
$ptefs umount "$mnt"
w=$(median "${wt[@]}"); b=$(median "${bt[@]}")
row "read all of weights.safetensors ($(mib "$wsize")), warm" "$(gbps "$w" "$wsize")" "cat of its ${#bins[@]} tensors' .bin: $(gbps "$b" "$wsize")" "$(speed "$w" "$b")"
lt=(); st=(); bl=()
for _ in $(seq "$runs"); do
  s=$(now); $ptefs ls "$model" > /dev/null; e=$(now); lt+=($((e - s)))
  s=$(now); $ptefs stat "$model" weights.safetensors > /dev/null; e=$(now); st+=($((e - s)))
  if [[ -n ${BASELINE:-} ]]; then s=$(now); "$BASELINE" ls "$model" > /dev/null; e=$(now); bl+=($((e - s))); fi
done
l=$(median "${lt[@]}")
row "\`ptefs stat\` of weights.safetensors (build, then its header)" "$(ms "$(median "${st[@]}")")" "\`ptefs ls\` (build): $(ms "$l")" "$(times "$(median "${st[@]}")" "$l")"
[[ -n ${BASELINE:-} ]] && row "\`ptefs ls\` (build with weights.safetensors)" "$(ms "$l")" "BASELINE build: $(ms "$(median "${bl[@]}")")" "$(times "$l" "$(median "${bl[@]}")")"

# Memory after reading every file once.
$ptefs mount "$model" "$mnt"
before=$(daemon_rss "ptefs mount $model $mnt")
find "$mnt" -type f -exec cat {} + > /dev/null
after=$(daemon_rss "ptefs mount $model $mnt")
$ptefs umount "$mnt"
row "daemon RssAnon after reading every file once" "$(mib "$after")" "right after mounting: $(mib "$before")" "$(awk -v a="$after" -v b="$before" 'BEGIN {printf "%.2f ×", a/b}')"

# Mount time of a native program package of 20,000 tensors (2,000 of them
# aliases) and 1 GiB.
package=$work/big.ptn
[[ -f $package ]] || $release/examples/make_package "$package" --tensors 20000 --tensor-bytes 57344
cat "$package" > /dev/null
t=()
for _ in $(seq "$runs"); do
  s=$(now); $ptefs mount "$package" "$mnt"; e=$(now); t+=($((e - s))); $ptefs umount "$mnt"
done
row "mount of a 1.0 GB .ptn package ($($ptefs ls -R "$package" | wc -l) paths)" "$(ms "$(median "${t[@]}")")" "" ""

# ptefs diff of two files that differ only in their last tensor, beside
# cmp of the same pair (which reads up to that tensor too), both warm.
model2=$work/big-last-changed.pte
if [[ ! -f $model2 ]]; then
  say "writing $model2 ..."
  $release/examples/make_model "$model2" --tensors 20000 --tensor-bytes 57344 --big-bytes 1073741824 --last-seed 7
fi
cat "$model2" > /dev/null
dt=(); ct=()
for _ in $(seq "$runs"); do
  s=$(now); $ptefs diff "$model" "$model2" > /dev/null || true; e=$(now); dt+=($((e - s)))
  s=$(now); cmp "$model" "$model2" > /dev/null || true; e=$(now); ct+=($((e - s)))
done
row "\`ptefs diff\` of two such files differing in the last tensor" "$(ms "$(median "${dt[@]}")")" "cmp: $(ms "$(median "${ct[@]}")")" "$(times "$(median "${dt[@]}")" "$(median "${ct[@]}")")"

# ptefs check (does it load on ExecuTorch 1.5.1's runtime?) of MobileNetV2
# (XNNPACK, its payload decoded) and of the 2.2 GB program, both warm.
mv2=$work/mv2_xnnpack.pte
cp tests/fixtures/mv2_xnnpack.pte "$mv2"
for what in "MobileNetV2 (XNNPACK, 14 MB):$mv2" "the 2.2 GB program:$model"; do
  file=${what#*:}
  t=()
  for _ in $(seq "$runs"); do
    s=$(now); $ptefs check "$file" > /dev/null || true; e=$(now); t+=($((e - s)))
  done
  row "\`ptefs check\` of ${what%%:*}" "$(ms "$(median "${t[@]}")")" "" ""
done

# Rows from the other benchmark scripts, if present.
for extra in scripts/bench-read-modes.sh scripts/bench-scale.sh scripts/bench-remote.sh scripts/bench-report.sh scripts/bench-python.sh scripts/bench-edit.sh scripts/bench-index.sh; do
  [[ -x $extra ]] || continue
  say "running $extra ..."
  while IFS= read -r line; do
    if [[ $line == \|* ]]; then rows+=("$line"); fi
  done < <(RUNS=$runs "$extra" "$work")
done

print_table
