#!/usr/bin/env bash
# Scale: a program of N tensors (default 1,000,000) of 100 KiB each over a
# sparse file (100 GiB apparent, about 100 MB on disk: the tensors are
# holes), written by examples/make_model.rs. Prints rows of the benchmark
# table (see scripts/bench.sh): time until the mount answers, the daemon's
# anonymous memory (RssAnon: mapped file pages do not count) right after,
# the first entry of a listing of the method's tensors/ (`ls -f | head -1`),
# the whole listing, `stat` of its index.json and RssAnon after those. Each
# beside the issue's target, as nothing else mounts such a file to compare
# with; a run of a fifth the size shows how the figures grow.
# Then commands on files of many small parts: a program of N tiny tensors
# (examples/make_model, --tensor-bytes 4) and an ETDump of N events
# (examples/make_profile): each command's time and peak RSS beside the
# bound every command keeps, 16 x the file + 64 MiB.
# Usage: scripts/bench-scale.sh [WORKDIR]   (SCALE_PARTS sets N, default 1,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-${TMPDIR:-/tmp}/ptefs-bench}
n=${SCALE_TENSORS:-1000000}
mkdir -p "$work"
cargo build --release --quiet --example make_model --example make_profile
cargo build --release --quiet
ptefs=$release/ptefs
now() { date +%s%N; }
ms() { awk -v n="$1" 'BEGIN {printf "%.0f ms", n/1e6}'; }

for count in $((n / 5)) "$n"; do
  model=$work/scale-$count.pte
  mnt=$work/mnt-scale
  mkdir -p "$mnt"
  grep -q " $mnt " /proc/self/mountinfo && $ptefs umount "$mnt"
  if [[ ! -f $model ]]; then
    echo "writing $model ..." >&2
    $release/examples/make_model "$model" --tensors "$count" --tensor-bytes 102400 --big-bytes 0 --zeros 1
  fi
  cat "$model" > /dev/null # the flatbuffer in the page cache (holes read as zeros)
  s=$(now); $ptefs mount "$model" "$mnt"; e=$(now)
  pid=$(pgrep -f "ptefs mount $model $mnt" | head -1)
  rss=$(awk '/RssAnon/ {printf "%.0f MiB", $2/1024}' "/proc/$pid/status")
  gib=$(awk -v b="$(stat -L -c %s "$model")" 'BEGIN {printf "%.0f GiB", b/2^30}')
  echo "| mount of a $count-tensor program ($gib sparse) | $(ms $((e - s))) | target: 2000 ms | |"
  echo "| daemon RssAnon after that mount | $rss | target: 128 MiB | |"
  s=$(now); { ls -f "$mnt/methods/forward/tensors" || true; } | head -1 > /dev/null; e=$(now)
  echo "| first entry of its tensors/ (\`ls -f \| head -1\`) | $(ms $((e - s))) | target: a few seconds | |"
  s=$(now); entries=$(ls -f "$mnt/methods/forward/tensors" | wc -l); e=$(now)
  echo "| all of its tensors/ (\`ls -f \| wc -l\`: $entries entries) | $(ms $((e - s))) | | |"
  s=$(now); size=$(stat -c %s "$mnt/methods/forward/tensors/index.json"); e=$(now)
  echo "| \`stat\` of its index.json ($((size / 1000000)) MB) | $(ms $((e - s))) | | |"
  rss=$(awk '/RssAnon/ {printf "%.0f MiB", $2/1024}' "/proc/$pid/status")
  echo "| daemon RssAnon after listing tensors/ and sizing index.json | $rss | | |"
  s=$(now); size=$(stat -c %s "$mnt/weights.safetensors"); e=$(now)
  echo "| \`stat\` of its weights.safetensors ($((size / 1000000000)) GB; lays out its header) | $(ms $((e - s))) | | |"
  rss=$(awk '/RssAnon/ {printf "%.0f MiB", $2/1024}' "/proc/$pid/status")
  echo "| daemon RssAnon after that | $rss | | |"
  $ptefs umount "$mnt"
done

parts=${SCALE_PARTS:-1000000}
# Each in a folder of its own: a profile beside a program is joined with it.
mkdir -p "$work/tiny" "$work/events"
tiny=$work/tiny/tiny-$parts.pte
events=$work/events/events-$parts.etdp
[[ -f $tiny ]] || $release/examples/make_model "$tiny" --tensors "$parts" --tensor-bytes 4 --big-bytes 0
[[ -f $events ]] || $release/examples/make_profile "$events" --events "$parts"
# 1,000 values of one 1 MiB constant buffer.
mkdir -p "$work/shared"
shared=$work/shared/shared-1000.pte
[[ -f $shared ]] || $release/examples/make_model "$shared" --tensors 1000 --tensor-bytes 1048576 --big-bytes 0 --shared 1
# One row: the command, its wall time, peak RSS and the bound for FILE.
row() {
  local file=$1
  shift
  local t tf
  tf=$(mktemp)
  /usr/bin/time -o "$tf" -f "%e %M" "$ptefs" "$@" >/dev/null 2>&1 || true
  t=$(tail -1 "$tf")
  rm -f "$tf"
  awk -v cmd="ptefs $*" -v t="$t" -v size="$(stat -c %s "$file")" 'BEGIN {
    split(t, f, " ");
    bound = 16 * size / 2^20 + 64;
    printf "| `%s` | %.1f s | %.0f MiB | %.0f MiB | %s |\n", cmd, f[1], f[2] / 1024, bound, (f[2] / 1024 <= bound) ? "within" : "OVER"
  }'
}
# One row: FILE mounted, `cat` of its file PATH, the daemon's peak RSS
# (VmHWM) against the bound.
mount_row() {
  local file=$1 path=$2 mnt=$work/mnt-parts pid s e
  mkdir -p "$mnt"
  grep -q " $mnt " /proc/self/mountinfo && $ptefs umount "$mnt"
  $ptefs mount "$file" "$mnt"
  pid=$(pgrep -f "ptefs mount $file $mnt" | head -1)
  s=$(now); cat "$mnt/$path" > /dev/null; e=$(now)
  awk -v path="$path" -v ms=$(((e - s) / 1000000)) -v size="$(stat -c %s "$file")" \
    -v hwm="$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")" 'BEGIN {
    bound = 16 * size / 2^20 + 64;
    printf "| `cat MOUNT/%s` (daemon VmHWM) | %.1f s | %.0f MiB | %.0f MiB | %s |\n", path, ms / 1000, hwm / 1024, bound, (hwm / 1024 <= bound) ? "within" : "OVER"
  }'
  $ptefs umount "$mnt"
}
echo
echo "| command ($parts parts) | time | peak RSS | bound | |"
echo "|---|---|---|---|---|"
for cmd in "ls -R" "ls -lR" "inspect" "report --json" "cat FILE report/size.json" "cat FILE methods/forward/plan.json" "cat FILE constants/index.json"; do
  read -ra words <<<"${cmd/FILE/$tiny}"
  [[ $cmd == cat* ]] || words+=("$tiny")
  row "$tiny" "${words[@]}"
done
mount_row "$tiny" report/size.json
for cmd in "ls" "ls -lR" "inspect" "cat FILE runs/0/events.json" "cat FILE trace.json"; do
  read -ra words <<<"${cmd/FILE/$events}"
  [[ $cmd == cat* ]] || words+=("$events")
  row "$events" "${words[@]}"
done
echo
echo "| command (1,000 values of one buffer) | time | peak RSS | bound | |"
echo "|---|---|---|---|---|"
for cmd in "ls -R" "ls -lR" "report --json"; do
  read -ra words <<<"$cmd"
  row "$shared" "${words[@]}" "$shared"
done
