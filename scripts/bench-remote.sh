#!/usr/bin/env bash
# Bytes a remote mount transfers: a 1 GiB program of 20,000 tensors (plus
# one of 2 MiB) served by nginx on localhost, mounted by URL, listed with
# `ls -R`, and one 2 MiB tensor read with `cat` and compared with the local
# file byte for byte. Bytes are nginx's own count ($bytes_sent, headers
# included). The anchor is the part of the file beyond the flatbuffer
# region (tensor bytes): the goal is under 1% of it for all three steps
# together. Prints markdown table rows `| measure | ptefs | anchor | ratio |`
# (scripts/bench.sh includes them). Needs FUSE and nginx (scripts/setup.sh).
# Usage: scripts/bench-remote.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-${TMPDIR:-/tmp}/ptefs-bench-remote}
mkdir -p "$work/www" "$work/nginx" "$work/mnt"
cargo build --release --quiet --example make_model
cargo build --release --quiet
ptefs=$release/ptefs
model=$work/www/remote.pte
mnt=$work/mnt
[[ -s $model ]] || $release/examples/make_model "$model" --tensors 20000 --tensor-bytes 53584 --big-bytes $((2 << 20))
grep -q " $mnt " /proc/self/mountinfo && $ptefs umount "$mnt"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
n=$work/nginx
cat > "$n/nginx.conf" <<CONF
daemon off;
master_process off;
pid $n/nginx.pid;
error_log $n/error.log;
events {}
http {
  log_format sent '\$request_method \$uri \$status \$bytes_sent';
  access_log $n/access.log sent;
  client_body_temp_path $n; proxy_temp_path $n; fastcgi_temp_path $n;
  uwsgi_temp_path $n; scgi_temp_path $n;
  server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
: > "$n/access.log"
nginx -c "$n/nginx.conf" -p "$n" &
nginx_pid=$!
trap 'grep -q " $mnt " /proc/self/mountinfo && $ptefs umount "$mnt"; kill $nginx_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break
  sleep 0.1
done
sent() { awk '{s += $NF} END {print s + 0}' "$n/access.log"; }
requests() { wc -l < "$n/access.log"; }

len=$(stat -c %s "$model")
flatbuffer=$($ptefs cat "$model" header.json | python3 -c 'import json, sys; print(json.load(sys.stdin)["extended_header"]["program_size"])')
beyond=$((len - flatbuffer))
# The 2 MiB tensor: the one file of that size among the tensors.
tensor=methods/forward/tensors/$($ptefs ls -l "$model" methods/forward/tensors | awk -v s=$((2 << 20)) '$2 == s && $3 ~ /\.bin$/ {print $3; exit}')

s=$(date +%s%N)
$ptefs mount "http://127.0.0.1:$port/remote.pte" "$mnt"
e=$(date +%s%N)
mount_bytes=$(sent)
ls -R "$mnt" > /dev/null
ls_bytes=$(sent)
cat "$mnt/$tensor" > "$work/tensor.bin"
cat_bytes=$(sent)
$ptefs cat "$model" "$tensor" | cmp - "$work/tensor.bin"
[[ $(stat -c %s "$work/tensor.bin") == $((2 << 20)) ]]
$ptefs umount "$mnt"

pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f%%", 100 * a / b}'; }
mb() { awk -v n="$1" 'BEGIN {printf "%.2f MB", n / 1e6}'; }
echo "remote program: $(mb "$len"), flatbuffer region $(mb "$flatbuffer"), $(requests) requests in all" >&2
echo "| remote: time to ready (mount by URL) | $(awk -v n=$((e - s)) 'BEGIN {printf "%.0f ms", n / 1e6}') | | |"
echo "| remote: bytes for mount | $(mb "$mount_bytes") | flatbuffer region $(mb "$flatbuffer") | $(awk -v a="$mount_bytes" -v b="$flatbuffer" 'BEGIN {printf "%.2fx", a / b}') |"
echo "| remote: bytes for ls -R after mount | $(mb $((ls_bytes - mount_bytes))) | tensor bytes $(mb "$beyond") | $(pct $((ls_bytes - mount_bytes)) "$beyond") |"
echo "| remote: bytes for mount, ls -R, cat of a 2 MiB tensor (verified) | $(mb "$cat_bytes") | tensor bytes $(mb "$beyond") | $(pct $((cat_bytes - flatbuffer)) "$beyond") beyond the flatbuffer |"
