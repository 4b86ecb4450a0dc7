#!/usr/bin/env bash
# Builds ptefs, mounts the bundled example model and looks around.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet
export PATH="$PWD/target/release:$PATH"
model=tests/fixtures/mlp.pte
run() { echo "\$ $1"; eval "$1"; echo; }
run "ptefs inspect $model"
mnt=$(mktemp -d)
echo "\$ ptefs mount $model $mnt"
if ptefs mount $model "$mnt"; then
  trap 'ptefs umount "$mnt"; rmdir "$mnt"' EXIT
  cd "$mnt"
  run "ls -l"
  run "ls methods/forward/tensors"
  run "cat methods/forward/code.txt"
  run "jq -c '.[] | {name, scalar_type, sizes, nbytes}' methods/forward/tensors/index.json"
  run "python3 -c \"import numpy; print(numpy.load('methods/forward/tensors/3.npy', mmap_mode='r'))\""
  run "getfattr -d methods/forward/tensors/0.bin"
  cd - >/dev/null
else
  echo "(no FUSE here: the same tree offline)"
  run "ptefs ls -l $model"
  run "ptefs cat $model methods/forward/code.txt"
fi
cat <<MSG

ptefs is built at $PWD/target/release/ptefs. To run it by name:
  export PATH="$PWD/target/release:\$PATH"    # in this shell
  scripts/install.sh                          # or install it as /usr/local/bin/ptefs
MSG
