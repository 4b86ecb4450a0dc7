#!/usr/bin/env bash
# How long the daemon takes to end after `umount`: mounts a small program,
# unmounts it, and prints, for each of N runs, the time from the start of
# `umount` until the daemon has exited (its /proc entry is gone or a
# zombie) and until it has been reaped (its /proc entry is gone: its
# parent's work, which after detaching is the system's init). Needs FUSE.
# Usage: scripts/bench-umount.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
cargo build --quiet
ptefs=$PWD/target/debug/ptefs
src=$PWD/tests/fixtures/mlp.pte
mnt=$(mktemp -d "${TMPDIR:-/tmp}/ptefs-umount.XXXXXX")
now() { date +%s.%N; }
echo "| run | exited (s) | reaped (s) |"
echo "|---|---|---|"
for i in $(seq "$runs"); do
  "$ptefs" mount "$src" "$mnt"
  pid=$(pgrep -n -f -- "ptefs mount $src $mnt")
  t0=$(now)
  umount "$mnt"
  while [[ -e /proc/$pid && $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; do
    sleep 0.002
  done
  t1=$(now)
  while [[ -e /proc/$pid ]]; do sleep 0.002; done
  t2=$(now)
  printf '| %d | %.3f | %.3f |\n' "$i" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t0" | bc)"
done
rmdir "$mnt"
