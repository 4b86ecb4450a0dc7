#!/usr/bin/env bash
# Times opening and listing an ETRecord of MobileNetV2: `ptefs ls -R` of the
# whole tree (median of RUNS runs, default 5) and what it reads, against
# `cat` of the file (every byte read) as the anchor. The ETRecord is made
# once into WORKDIR by ExecuTorch's generate_etrecord (to_edge with
# generate_etrecord=True), from torchvision's MobileNetV2 layer for layer
# (written out below, as the venv has no torchvision), XNNPACK-lowered.
# Needs the ExecuTorch venv (ET_PYTHON, default /work/et-venv/bin/python).
# Usage: scripts/bench-etrecord.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
release=${CARGO_TARGET_DIR:-$PWD/target}/release
work=${1:-$(mktemp -d)}
runs=${RUNS:-5}
py=${ET_PYTHON:-/work/et-venv/bin/python}
bin=${PTEFS:-$release/ptefs}
[[ -x $bin ]] || cargo build --release --quiet --bin ptefs
record=$work/mv2.etrecord
if [[ ! -f $record ]]; then
  "$py" - "$record" >&2 <<'PY'
import sys, torch
from torch import nn
from executorch.exir import to_edge_transform_and_lower
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

def cbr(i, o, k=3, s=1, g=1):
    return nn.Sequential(nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o), nn.ReLU6())

class Block(nn.Module):
    def __init__(self, i, o, s, t):
        super().__init__()
        h = i * t
        layers = ([cbr(i, h, 1)] if t != 1 else []) + [cbr(h, h, 3, s, h), nn.Conv2d(h, o, 1, bias=False), nn.BatchNorm2d(o)]
        self.conv = nn.Sequential(*layers)
        self.res = s == 1 and i == o
    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)

class MobileNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
        layers, i = [cbr(3, 32, 3, 2)], 32
        for t, c, n, s in cfg:
            for k in range(n):
                layers.append(Block(i, c, s if k == 0 else 1, t)); i = c
        layers.append(cbr(i, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, 1000))
    def forward(self, x):
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))

m = MobileNetV2().eval()
x = (torch.randn(1, 3, 224, 224),)
edge = to_edge_transform_and_lower(torch.export.export(m, x), partitioner=[XnnpackPartitioner()], generate_etrecord=True)
et = edge.to_executorch()
et.get_etrecord().save(sys.argv[1])
PY
fi
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
cat "$record" >/dev/null
ls_ms=$(for _ in $(seq "$runs"); do ms "$bin" ls -R "$record"; done | median)
cat_ms=$(for _ in $(seq "$runs"); do ms cat "$record"; done | median)
entries=$("$bin" ls -R "$record" | wc -l)
size=$(stat -c %s "$record")
echo "| measure | ms (median of $runs) |"
echo "|---|---|"
echo "| ptefs ls -R of MobileNetV2's ETRecord ($size bytes, $entries entries) | $ls_ms |"
echo "| anchor: cat of the same file (page cache) | $cat_ms |"
