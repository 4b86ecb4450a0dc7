#!/usr/bin/env python3
"""Writes the fixtures of `ptefs set` and `ptefs pack` in tests/fixtures/edit/.

Four tiny programs are exported with ExecuTorch 1.5.1: a portable MLP
(`portable.pte`), the same with a constant method `get_max_seq_len`
(`constmethod.pte`), the same with its weights in a data file
(`external.pte` + `external.ptd`), and an MLP lowered to XNNPACK with its
weights in a data file (`xnnpack.pte` + `xnnpack.ptd`). Each model's weights are then
edited (deterministically) and the model exported again by ExecuTorch
itself: that file is the oracle. Committed are the original programs, the
edited weights (`<name>.<fqn>.npy`) and `<name>.oracle.json` holding the
sha256 of every file ExecuTorch wrote with the edited weights, the data
file's segments by key, and the model's outputs on a fixed input before
and after the edit (see `eager`). The edited files themselves are not
committed: the tests check that ptefs writes files with those digests.

Run with the ExecuTorch venv's python (executorch==1.5.1, torch); the
tests never run this. Its output is the same on every run.

Each oracle also holds the runtime's outputs (`runtime_outputs`,
`edited_runtime_outputs`): ExecuTorch 1.5.1's runtime run on the very
files whose digests it holds, with the same input. The runtime runs in
the python of ET_RUNTIME_PYTHON (default: this one), for a venv whose
torch can hand the runtime tensors (ExecuTorch 1.5.1 with torch 2.11
refuses them: "tensor does not have a device"):

    ET_RUNTIME_PYTHON=/path/to/venv2/bin/python scripts/make-edit-fixtures.py

The XNNPACK oracle also holds `packed_by_names`: the original and the
fine-tuned checkpoints (`xnnpack.original.safetensors`,
`xnnpack.finetuned.safetensors`, by FQN), the sha256 of the data file
`ptefs pack --for xnnpack.pte --names xnnpack.original.safetensors
xnnpack.finetuned.safetensors` writes, and the runtime's outputs running
xnnpack.pte with that very file; `xnnconv.*` hold the same for a
convolution, whose filter XNNPACK keeps OHWI (see `xnnconv`). Build ptefs
first (`cargo build`); PTEFS names another binary.
"""

import copy
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from functools import partial

import numpy as np
import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
from executorch.exir.passes.external_constants_pass import (
    delegate_external_constants_pass_unlifted,
)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "edit")
# The ptefs whose packed data file the runtime runs (see packed_by_names).
PTEFS = os.environ.get(
    "PTEFS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "debug", "ptefs")
)


def sha(b):
    return hashlib.sha256(b).hexdigest()


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def model():
    torch.manual_seed(0)
    return Mlp().eval()


def edited(m):
    """The same model with fc1.weight and fc2.bias changed."""
    e = copy.deepcopy(m)
    with torch.no_grad():
        e.fc1.weight.mul_(-0.5).add_(0.25)
        e.fc2.bias.copy_(torch.arange(4, dtype=torch.float32) / 8 - 0.2)
    return e, ["fc1.weight", "fc2.bias"]


INPUT = (torch.arange(8, dtype=torch.float32).reshape(1, 8) / 10 - 0.3,)


def export_portable(m, constant_methods=None):
    ep = torch.export.export(m, INPUT, strict=True)
    return to_edge(ep, constant_methods=constant_methods).to_executorch()


def export_external(m):
    ep = torch.export.export(m, INPUT, strict=True)
    return to_edge(ep).to_executorch(ExecutorchBackendConfig(external_constants=True))


def export_xnnpack(m, given=INPUT):
    ep = torch.export.export(m, given, strict=True)
    # Every weight of the delegate goes to the data file "model".
    unlifted = ep.module()
    delegate_external_constants_pass_unlifted(unlifted, gen_tag_fn=lambda _: "model")
    ep = torch.export.export(unlifted, given, strict=True)
    lowered = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    return lowered.to_executorch(ExecutorchBackendConfig())


def eager(m, method="forward"):
    """The model's outputs in PyTorch, beside the runtime's (see
    `runtime`), which equal them up to float rounding."""
    if method != "forward":
        return None
    with torch.no_grad():
        return [m(*INPUT).tolist()]


RUN = """
import json, sys, torch
from executorch.runtime import Runtime
pte, ptd, method, inputs = sys.argv[1], sys.argv[2] or None, sys.argv[3], json.loads(sys.argv[4])
program = Runtime.get().load_program(pte, data_path=ptd)
args = [torch.tensor(x, dtype=torch.float32) for x in inputs]
out = program.load_method(method).execute(args)
print(json.dumps([o.tolist() if isinstance(o, torch.Tensor) else o for o in out]))
"""


def runtime(pte, ptd=None, method="forward", given=None):
    """The outputs of `method` of the program `pte` (bytes) with the data
    file `ptd` (bytes), as ExecuTorch's runtime computes them for `given`
    (default INPUT; no input for a constant method)."""
    python = os.environ.get("ET_RUNTIME_PYTHON", sys.executable)
    inputs = [t.tolist() for t in (given or INPUT)] if method == "forward" else []
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "p.pte"), "wb").write(pte)
        data = ""
        if ptd is not None:
            data = os.path.join(d, "p.ptd")
            open(data, "wb").write(ptd)
        r = subprocess.run(
            [python, "-c", RUN, os.path.join(d, "p.pte"), data, method, json.dumps(inputs)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
    return json.loads(r.stdout.strip().splitlines()[-1])


def ptd_segments(ptd):
    """key -> sha256 of its segment's bytes, read with ExecuTorch's own
    deserializer."""
    from executorch.exir._serialize._cord import Cord
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    payload = FlatTensorSerializer().deserialize(Cord(ptd))
    out = {}
    for key, entry in payload.named_data.items():
        out[key] = sha(bytes(payload.buffers[entry.buffer_index]))
    return out


def save_weights(name, m, fqns):
    sd = m.state_dict()
    for f in fqns:
        np.save(os.path.join(OUT, f"{name}.{f}.npy"), sd[f].detach().numpy())


def main():
    os.makedirs(OUT, exist_ok=True)
    m = model()
    e, fqns = edited(m)
    sd = m.state_dict()

    for name, methods in [("portable", None), ("constmethod", {"get_max_seq_len": 128})]:
        before = export_portable(m, methods)
        after = export_portable(e, methods)
        open(os.path.join(OUT, f"{name}.pte"), "wb").write(before.buffer)
        save_weights(name, e, fqns)
        oracle = {
            "made_by": "scripts/make-edit-fixtures.py with executorch 1.5.1",
            "input": [t.tolist() for t in INPUT],
            "edited": {
                f: {
                    "original_sha256": sha(sd[f].detach().numpy().tobytes()),
                    "npy": f"{name}.{f}.npy",
                }
                for f in fqns
            },
            "original_sha256": sha(before.buffer),
            "edited_sha256": sha(after.buffer),
            "edited_size": len(after.buffer),
            "eager_outputs": eager(m),
            "edited_eager_outputs": eager(e),
            "runtime_outputs": runtime(before.buffer),
            "edited_runtime_outputs": runtime(after.buffer),
        }
        if methods:
            oracle["constant_methods"] = methods
            # The same program with each constant doubled, weights unedited.
            doubled = {k: v * 2 for k, v in methods.items()}
            oracle["edited_constant_methods"] = doubled
            doubled_program = export_portable(m, doubled).buffer
            oracle["edited_constants_sha256"] = sha(doubled_program)
            oracle["edited_constants_runtime_outputs"] = {
                k: runtime(doubled_program, method=k) for k in doubled
            }
        json.dump(oracle, open(os.path.join(OUT, f"{name}.oracle.json"), "w"), indent=1)

    before = export_external(m)
    after = export_external(e)
    (ptd_before,) = before._tensor_data.values()
    (ptd_after,) = after._tensor_data.values()
    ptd_before, ptd_after = bytes(ptd_before), bytes(ptd_after)
    open(os.path.join(OUT, "external.pte"), "wb").write(before.buffer)
    open(os.path.join(OUT, "external.ptd"), "wb").write(ptd_before)
    save_weights("external", e, fqns)
    oracle = {
        "made_by": "scripts/make-edit-fixtures.py with executorch 1.5.1",
        "input": [t.tolist() for t in INPUT],
        "edited": {f: {"npy": f"external.{f}.npy"} for f in fqns},
        "original_sha256": sha(before.buffer),
        "original_ptd_sha256": sha(ptd_before),
        "edited_pte_sha256": sha(after.buffer),
        "edited_ptd_sha256": sha(ptd_after),
        "edited_segments": ptd_segments(ptd_after),
        "eager_outputs": eager(m),
        "edited_eager_outputs": eager(e),
        "runtime_outputs": runtime(before.buffer, ptd_before),
        "edited_runtime_outputs": runtime(after.buffer, ptd_after),
    }
    json.dump(oracle, open(os.path.join(OUT, "external.oracle.json"), "w"), indent=1)

    before = export_xnnpack(m)
    after = export_xnnpack(e)
    (ptd_before,) = before._tensor_data.values()
    (ptd_after,) = after._tensor_data.values()
    ptd_before, ptd_after = bytes(ptd_before), bytes(ptd_after)
    open(os.path.join(OUT, "xnnpack.pte"), "wb").write(before.buffer)
    open(os.path.join(OUT, "xnnpack.ptd"), "wb").write(ptd_before)
    save_weights("xnnpack", e, fqns)
    segs_before = ptd_segments(ptd_before)
    segs_after = ptd_segments(ptd_after)
    # The delegate names each weight by the digest of its bytes: an edited
    # weight's key changes with it. Pair old and new keys by the weight
    # they hold: the unchanged ones keep theirs.
    weights = {f: sha(t.detach().numpy().tobytes()) for f, t in sd.items()}
    new_weights = {f: sha(t.detach().numpy().tobytes()) for f, t in e.state_dict().items()}
    oracle = {
        "made_by": "scripts/make-edit-fixtures.py with executorch 1.5.1",
        "input": [t.tolist() for t in INPUT],
        "edited": {
            f: {
                "original_sha256": weights[f],
                "edited_sha256": new_weights[f],
                "npy": f"xnnpack.{f}.npy",
            }
            for f in fqns
        },
        "original_sha256": sha(before.buffer),
        "original_ptd_sha256": sha(ptd_before),
        "edited_pte_sha256": sha(after.buffer),
        "edited_ptd_sha256": sha(ptd_after),
        "segments": segs_before,
        "edited_segments": segs_after,
        "eager_outputs": eager(m),
        "edited_eager_outputs": eager(e),
        "runtime_outputs": runtime(before.buffer, ptd_before),
        "edited_runtime_outputs": runtime(after.buffer, ptd_after),
    }
    oracle["packed_by_names"] = packed_by_names(m, e, before.buffer)
    json.dump(oracle, open(os.path.join(OUT, "xnnpack.oracle.json"), "w"), indent=1)
    xnnconv()


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.fc = torch.nn.Linear(16, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


CONV_INPUT = (torch.arange(48, dtype=torch.float32).reshape(1, 3, 4, 4) / 48 - 0.5,)


def xnnconv():
    """A convolution lowered to XNNPACK with its weights in a data file,
    which keeps the filter OHWI (keyed by the digest of those bytes), and
    the same model fine-tuned. Committed: the program, both checkpoints,
    and `xnnconv.oracle.json` with the runtime's outputs of ExecuTorch's
    own fine-tuned export and of the original program run with the data
    file `ptefs pack --names` writes (with its digest)."""
    torch.manual_seed(1)
    m = Conv().eval()
    e = copy.deepcopy(m)
    with torch.no_grad():
        e.conv.weight.mul_(-0.5).add_(0.1)
        e.fc.bias.copy_(torch.tensor([0.25, -0.25]))
    before = export_xnnpack(m, CONV_INPUT)
    after = export_xnnpack(e, CONV_INPUT)
    (ptd_before,) = before._tensor_data.values()
    (ptd_after,) = after._tensor_data.values()
    ptd_before, ptd_after = bytes(ptd_before), bytes(ptd_after)
    open(os.path.join(OUT, "xnnconv.pte"), "wb").write(before.buffer)
    plain = {sha(t.detach().numpy().tobytes()) for t in m.state_dict().values()}
    oracle = {
        "made_by": "scripts/make-edit-fixtures.py with executorch 1.5.1",
        "input": [t.tolist() for t in CONV_INPUT],
        "original_sha256": sha(before.buffer),
        # Keys whose bytes are no checkpoint tensor's as PyTorch lays it out.
        "permuted_keys": sorted(k for k in ptd_segments(ptd_before) if k not in plain),
        "runtime_outputs": runtime(before.buffer, ptd_before, given=CONV_INPUT),
        "edited_runtime_outputs": runtime(after.buffer, ptd_after, given=CONV_INPUT),
        "packed_by_names": packed_by_names(m, e, before.buffer, "xnnconv", CONV_INPUT),
    }
    json.dump(oracle, open(os.path.join(OUT, "xnnconv.oracle.json"), "w"), indent=1)


def packed_by_names(m, e, pte, name="xnnpack", given=INPUT):
    """`ptefs pack --for xnnpack.pte --names original finetuned`: the data
    file of the fine-tuned weights for the program exported before the
    fine-tune, whose keys are the digests of the original weights. The
    checkpoints are committed; so are the digest of what ptefs wrote and
    the runtime's outputs running the original program with it (which
    must be those of ExecuTorch's own fine-tuned export)."""
    from safetensors.torch import save_file

    names = {"original": f"{name}.original.safetensors", "finetuned": f"{name}.finetuned.safetensors"}
    for which, model in [("original", m), ("finetuned", e)]:
        sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        save_file(sd, os.path.join(OUT, names[which]))
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "packed.ptd")
        subprocess.run(
            [
                PTEFS,
                "pack",
                "--for",
                os.path.join(OUT, f"{name}.pte"),
                "--names",
                os.path.join(OUT, names["original"]),
                os.path.join(OUT, names["finetuned"]),
                "-o",
                out,
            ],
            check=True,
        )
        packed = open(out, "rb").read()
    return {
        **names,
        "ptd_sha256": sha(packed),
        "runtime_outputs": runtime(pte, packed, given=given),
    }


if __name__ == "__main__":
    sys.exit(main())
