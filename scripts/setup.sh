#!/usr/bin/env bash
# Installs what ptefs's tests and demo need beyond the Rust toolchain:
# fuse3 (fusermount3), attr (getfattr), jq, graphviz (dot, to check that
# graph.dot files render), nginx (an HTTP server with range support for the
# remote-source tests), openssl (their htpasswd lines), Chromium and
# websockets (to open the report page in a browser), NumPy, PyYAML,
# DuckDB and PySpark with a Java runtime (to query the catalog `ptefs
# index` writes, as two engines), moto's S3 server
# (with boto3), maturin and pytest for the Python
# package, and inferno (inferno-flamegraph, to check that modules.folded
# renders).
# Idempotent.
set -euo pipefail
need=()
command -v fusermount3 >/dev/null || need+=(fuse3)
command -v getfattr >/dev/null || need+=(attr)
command -v jq >/dev/null || need+=(jq)
command -v dot >/dev/null || need+=(graphviz)
command -v nginx >/dev/null || need+=(nginx-light)
command -v openssl >/dev/null || need+=(openssl)
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need+=(chromium)
command -v java >/dev/null || need+=(default-jre-headless)
if ((${#need[@]})); then
  if [[ $(id -u) == 0 ]]; then
    echo "setup: apt-get install ${need[*]}" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: please install ${need[*]} (e.g. sudo apt-get install ${need[*]})" >&2
  fi
fi
if ! python3 -c "import numpy" 2>/dev/null; then
  echo "setup: pip install numpy" >&2
  python3 -m pip install --quiet numpy
fi
if ! python3 -c "import safetensors" 2>/dev/null; then
  echo "setup: pip install safetensors" >&2
  python3 -m pip install --quiet safetensors
fi
if ! python3 -c "import websockets" 2>/dev/null; then
  echo "setup: pip install websockets" >&2
  python3 -m pip install --quiet websockets
fi
if ! python3 -c "import yaml" 2>/dev/null; then
  echo "setup: pip install pyyaml" >&2
  python3 -m pip install --quiet pyyaml
fi
if ! python3 -c "import duckdb" 2>/dev/null; then
  echo "setup: pip install duckdb" >&2
  python3 -m pip install --quiet duckdb
fi
if ! python3 -c "import pyspark" 2>/dev/null; then
  echo "setup: pip install pyspark" >&2
  python3 -m pip install --quiet pyspark
fi
if ! command -v moto_server >/dev/null || ! python3 -c "import boto3" 2>/dev/null; then
  echo "setup: pip install 'moto[server]'" >&2
  python3 -m pip install --quiet 'moto[server]'
fi
if ! command -v inferno-flamegraph >/dev/null; then
  echo "setup: cargo install inferno" >&2
  cargo install --quiet --locked inferno --no-default-features --features cli
fi
if ! command -v maturin >/dev/null || ! python3 -c "import pytest" 2>/dev/null; then
  echo "setup: pip install maturin pytest" >&2
  python3 -m pip install --quiet 'maturin>=1.9,<2' pytest
fi
