#!/usr/bin/env bash
# Builds ptefs and installs it as $PREFIX/bin/ptefs (default /usr/local),
# where mount.fuse3 finds it for `mount -t fuse.ptefs` and /etc/fstab.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${PREFIX:-/usr/local}
cargo build --release --quiet
install -D -m 755 target/release/ptefs "$prefix/bin/ptefs"
echo "installed $prefix/bin/ptefs"
