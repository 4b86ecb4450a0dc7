#!/usr/bin/env python3
"""Writes tests/fixtures/index/: programs for the fleet queries of
docs/index.md that no other fixture covers.

    /work/et-venv/bin/python scripts/gen-index-fixtures.py   (ExecuTorch and torch)

- fp32_quantizers.pte: a linear layer whose input goes through
  quantize_per_tensor and dequantize_per_tensor, its weight left float32:
  quantization set up, the weights not stored quantized.
- zero_constant.pte: a buffer of no elements (zeros(0, 4)) beside two
  that have some: an empty constant, which the tree shows both as a
  constant buffer and as the method's tensor typing it.
"""

import pathlib

import torch
from executorch.exir import to_edge
import executorch.kernels.quantized  # noqa: F401  (registers the out variants)

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "index"


class Fp32Quantizers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        q = torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.05, 0, -128, 127, torch.int8)
        x = torch.ops.quantized_decomposed.dequantize_per_tensor(q, 0.05, 0, -128, 127, torch.int8)
        return self.fc(x)


class ZeroConstant(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("empty", torch.zeros(0, 4))
        self.register_buffer("mask", torch.tensor([True, False, True, True]))
        self.w = torch.nn.Parameter(torch.randn(4))

    def forward(self, x):
        return torch.cat([x, self.empty], 0) * self.w * self.mask


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    m = Fp32Quantizers().eval()
    ep = torch.export.export(m, (torch.randn(2, 16),))
    program = to_edge(ep).to_executorch()
    (OUT / "fp32_quantizers.pte").write_bytes(program.buffer)

    torch.manual_seed(0)
    m = ZeroConstant().eval()
    ep = torch.export.export(m, (torch.randn(2, 4),))
    (OUT / "zero_constant.pte").write_bytes(to_edge(ep).to_executorch().buffer)


if __name__ == "__main__":
    main()
