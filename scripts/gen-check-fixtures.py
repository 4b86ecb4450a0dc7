#!/usr/bin/env python3
"""Writes tests/fixtures/check/: small programs ExecuTorch's own runtime
refuses (or runs), each beside an oracle `<case>.oracle.json` holding what
that runtime did when loading and running it: its log lines, the error code
it returned, or the signal it died of.

    scripts/gen-check-fixtures.py      (with ExecuTorch's Python package)
    scripts/gen-check-fixtures.py refused   (only the files refused whole)
    scripts/gen-check-fixtures.py oracles   (the oracles again, no export)
    scripts/gen-check-fixtures.py arenas    (arenas.json alone)
    scripts/gen-check-fixtures.py one-liners   (my_runtime.json and .yaml alone)

The runtime runs in the python of ET_RUNTIME_PYTHON (default: this one):
with a torch that can hand it tensors, the oracles record which methods
ran as well as which loaded.

Every load runs in a subprocess, so a runtime that crashes (XNNPACK given a
program whose constants are in a data file that is not there dies of
SIGSEGV) is recorded, not fatal.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import torch
from executorch.exir import ExecutorchBackendConfig, to_edge

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/check"
BACKENDS = pathlib.Path(__file__).resolve().parent.parent.parent / "shared/fixtures/backends"

torch.manual_seed(0)

# A custom operator with the out variant ExecuTorch's memory planning needs.
LIB = torch.library.Library("ptefs", "DEF")
LIB.define("twice(Tensor x) -> Tensor")
LIB.define("twice.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
LIB.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")


def _twice_out(x, *, out):
    out.copy_(x * 2)
    return out


LIB.impl("twice.out", _twice_out, "CompositeExplicitAutograd")


class Missing(torch.nn.Module):
    """Calls a custom operator and a core ATen operator (sort) that the
    PyPI runtime has no kernel for."""

    def forward(self, x):
        y = torch.ops.ptefs.twice(x)
        return y + torch.sort(x).values


class Mlp(torch.nn.Module):
    def __init__(self, hidden=4, names=("fc1", "fc2")):
        super().__init__()
        self.names = names
        for n in names:
            setattr(self, n, torch.nn.Linear(hidden, hidden))

    def forward(self, x):
        for n in self.names:
            x = torch.relu(getattr(self, n)(x))
        return x


class Odd(torch.nn.Module):
    """Constants of 3 and 4 bytes stored before a float one: packed with
    no alignment, the float constant starts at an odd offset."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.w = torch.nn.Parameter(torch.randn(4, 4, generator=g))
        self.b = torch.nn.Parameter(torch.randn(4, generator=g))
        self.register_buffer("mask", torch.tensor([1, 0, 1], dtype=torch.uint8))
        self.register_buffer("keep", torch.tensor([1, 1, 0, 1], dtype=torch.uint8))
        self.register_buffer("scale", torch.tensor([0.5, 2.0, -1.0, 3.0]))

    def forward(self, x):
        y = x @ self.w + self.b
        return y[:, :3] * self.mask, y * self.keep * self.scale


# Segments and constants packed with no padding at all.
UNALIGNED = dict(segment_alignment=1, constant_tensor_alignment=1)


def bundle(et, model, name):
    """Writes `et` as a bundled program `<name>.bpte` with one test case:
    ones in, what PyTorch computes out."""
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    x = [torch.ones(2, 4)]
    with torch.no_grad():
        expected = model(*x)
    if isinstance(expected, torch.Tensor):
        expected = (expected,)
    case = MethodTestCase(inputs=x, expected_outputs=list(expected))
    suite = MethodTestSuite(method_name="forward", test_cases=[case])
    bundled = BundledProgram(et, [suite])
    (OUT / f"{name}.bpte").write_bytes(serialize_from_bundled_program_to_flatbuffer(bundled))


def export(model, example):
    return torch.export.export(model, example, strict=True)


def plain(model, example, external=False, **config):
    et = to_edge(export(model, example)).to_executorch(
        ExecutorchBackendConfig(external_constants=external, **config)
    )
    return et


def write(et, name):
    (OUT / f"{name}.pte").write_bytes(et.buffer)
    with tempfile.TemporaryDirectory() as d:
        et.write_tensor_data_to_file(d)
        files = sorted(pathlib.Path(d).glob("*.ptd"))
        for i, f in enumerate(files):
            target = OUT / (f"{name}.ptd" if len(files) == 1 else f"{name}.{i}.ptd")
            shutil.copy(f, target)


RUN = """
import json, sys, torch
from executorch.runtime import Runtime
pte, ptd = sys.argv[1], (sys.argv[2] or None)
if pte.endswith(".bpte"):
    # A bundled program loads through the bundled-program pybindings; its
    # methods load when first run.
    from executorch.extension.pybindings.portable_lib import (
        _load_bundled_program_from_buffer,
        _load_for_executorch_from_bundled_program,
    )
    bundled = _load_bundled_program_from_buffer(open(pte, "rb").read())
    module = _load_for_executorch_from_bundled_program(bundled)
    for name in sorted(module.method_names()):
        outputs = module.run_method(name, (torch.ones(2, 4),))
        print("loaded", name, flush=True)
        print("ran", name, flush=True)
        print("outputs", name, json.dumps([o.tolist() for o in outputs]), flush=True)
    sys.exit(0)
program = Runtime.get().load_program(pte, data_path=ptd)
for name in sorted(program.method_names):
    method = program.load_method(name)
    print("loaded", name, flush=True)
    try:
        outputs = method.execute([torch.ones(2, 4)])
        print("ran", name, flush=True)
        print("outputs", name, json.dumps([o.tolist() for o in outputs]), flush=True)
    except RuntimeError as e:
        # This torch and the runtime's pybindings may not exchange tensors.
        print("not run", name, str(e).splitlines()[0], flush=True)
"""


def oracle(name, pte, ptd=None, expected=None):
    r = subprocess.run(
        [os.environ.get("ET_RUNTIME_PYTHON", sys.executable), "-c", RUN, str(pte), str(ptd or "")],
        capture_output=True,
        text=True,
        env={**os.environ, "ET_LOG_LEVEL": "Info"},
        timeout=300,
    )
    text = r.stdout + r.stderr
    log = [
        m.group(1)
        for m in re.finditer(r"^\[[\w.]+:\d+\] (.*)$", text, re.M)
    ]
    errors = re.findall(r"error: 0x:?([0-9a-fA-F]+)", text)
    out = {
        "program": pathlib.Path(pte).name,
        "data": pathlib.Path(ptd).name if ptd else None,
        "exit": r.returncode,
        "signal": -r.returncode if r.returncode < 0 else None,
        "loaded": re.findall(r"^loaded (\S+)$", r.stdout, re.M),
        "error_code": f"0x{int(errors[0], 16):x}" if errors else None,
        "log": log,
        "ran": re.findall(r"^ran (\S+)$", r.stdout, re.M),
        "outputs": {
            m.group(1): json.loads(m.group(2))
            for m in re.finditer(r"^outputs (\S+) (.*)$", r.stdout, re.M)
        },
    }
    if expected is not None:
        # What PyTorch computes for the same input, to compare with.
        out["expected"] = {"forward": [o.tolist() for o in expected]}
    last = [line for line in text.splitlines() if line.startswith("RuntimeError")]
    out["message"] = last[-1] if last else None
    (OUT / f"{name}.oracle.json").write_text(json.dumps(out, indent=2) + "\n")
    print(name, out["exit"], out["error_code"], out["log"][:3], file=sys.stderr)


def constant_buffer():
    """../mlp.pte with its constants kept in the deprecated
    Program.constant_buffer (inside the flatbuffer) and no constant_segment,
    as programs exported before ExecuTorch 0.7 were: a runtime built without
    ET_ENABLE_DEPRECATED_CONSTANT_BUFFER refuses it at Program::load."""
    from executorch.exir._serialize import _program
    from executorch.exir._serialize._flatbuffer_program import _program_to_flatbuffer

    program = _program.deserialize_pte_binary((OUT.parent / "mlp.pte").read_bytes()).program
    assert len(program.constant_buffer) > 1
    program.constant_segment = None
    (OUT / "constant_buffer.pte").write_bytes(bytes(_program_to_flatbuffer(program).data))
    oracle("constant_buffer", OUT / "constant_buffer.pte")


def refused():
    """Files Program::load refuses whole: a .ptn package, a program whose
    root table offset (bytes 0..4) points past its end, a program with
    segments cut short of what its extended header says, and one with its
    constants in the deprecated constant_buffer."""
    constant_buffer()
    shutil.copy(OUT.parent / "tied.ptn", OUT / "tied.ptn")
    oracle("tied_ptn", OUT / "tied.ptn")
    corrupt = bytearray((OUT / "external.pte").read_bytes())
    corrupt[0:4] = (0x7FFFFFFF).to_bytes(4, "little")
    (OUT / "corrupt_root.pte").write_bytes(corrupt)
    oracle("corrupt_root", OUT / "corrupt_root.pte")
    # The XNNPACK program with its flatbuffer identifier XN01 made XN09:
    # a format version the backend does not read.
    xn = (OUT / "xnnpack_ext.pte").read_bytes()
    assert xn.count(b"XN01") == 1
    (OUT / "xnnpack_xn09.pte").write_bytes(xn.replace(b"XN01", b"XN09"))
    shutil.copy(OUT / "xnnpack_ext.ptd", OUT / "xnnpack_xn09.ptd")
    oracle("xnnpack_xn09", OUT / "xnnpack_xn09.pte", OUT / "xnnpack_xn09.ptd")
    whole = (OUT.parent / "mlp.pte").read_bytes()
    (OUT / "cut_segments.pte").write_bytes(whole[:-100])
    oracle("cut_segments", OUT / "cut_segments.pte")


def exports():
    """Writes every program and data file of the fixtures."""
    x = (torch.randn(2, 4),)
    write(plain(Missing(), x), "missing_ops")
    write(plain(Mlp(), x, external=True), "external")
    # The same names with one layer less, and with another width.
    write(plain(Mlp(names=("fc1",)), x, external=True), "external_fc1_only")
    (OUT / "external_fc1_only.pte").unlink()
    write(plain(Mlp(hidden=8), (torch.randn(2, 8),), external=True), "external_wide")
    (OUT / "external_wide.pte").unlink()
    # A real XNNPACK export whose constants are named data in a .ptd
    # (its sha256 keys), made by ExecuTorch's own flow for tests/fixtures.
    for ext in ("pte", "ptd"):
        shutil.copy(OUT.parent / f"xnnpack_external.{ext}", OUT / f"xnnpack_ext.{ext}")
    for f in ("coreml_mlp.pte", "ethosu55_mlp.pte"):
        shutil.copy(BACKENDS / f, OUT / f)
    # Constants at offsets their element type does not divide, in the
    # program and in a .ptd, and the same program exported as usual.
    ones = (torch.ones(2, 4),)
    write(plain(Odd(), ones, **UNALIGNED), "unaligned")
    write(plain(Odd(), ones, external=True, **UNALIGNED), "unaligned_ext")
    write(plain(Odd(), ones), "aligned")
    # The refused and the unaligned programs again, bundled.
    bundle(plain(Missing(), ones), Missing(), "missing_ops")
    bundle(plain(Odd(), ones, **UNALIGNED), Odd(), "unaligned")


def oracles():
    """Runs the runtime on each fixture and writes its oracle."""
    oracle("missing_ops", OUT / "missing_ops.pte")
    oracle("external", OUT / "external.pte", OUT / "external.ptd")
    oracle("external_no_ptd", OUT / "external.pte")
    oracle("external_missing_key", OUT / "external.pte", OUT / "external_fc1_only.ptd")
    oracle("external_wrong_size", OUT / "external.pte", OUT / "external_wide.ptd")
    oracle("xnnpack_ext", OUT / "xnnpack_ext.pte", OUT / "xnnpack_ext.ptd")
    oracle("xnnpack_ext_wrong_ptd", OUT / "xnnpack_ext.pte", OUT / "external.ptd")
    oracle("xnnpack_ext_no_ptd", OUT / "xnnpack_ext.pte")
    for f in ("coreml_mlp", "ethosu55_mlp"):
        oracle(f, OUT / f"{f}.pte")
    with torch.no_grad():
        expected = Odd()(torch.ones(2, 4))
    oracle("unaligned", OUT / "unaligned.pte", expected=expected)
    oracle("unaligned_ext", OUT / "unaligned_ext.pte", OUT / "unaligned_ext.ptd", expected)
    oracle("aligned", OUT / "aligned.pte", expected=expected)
    oracle("missing_ops_bpte", OUT / "missing_ops.bpte")
    oracle("unaligned_bpte", OUT / "unaligned.bpte", expected=expected)


def arenas():
    """Writes arenas.json: each method's planned memory arenas
    (non_const_buffer_sizes, entry 0 reserved) as ExecuTorch's own
    deserializer reads them from a few programs. The Python runtime cannot
    be the oracle here: it allocates planned memory itself and its
    MethodMeta does not expose the sizes."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    out = {}
    for f in ("mv2_xnnpack.pte", "multi_method.pte", "check/unaligned.pte"):
        p = deserialize_pte_binary((OUT.parent / f).read_bytes())
        p = getattr(p, "program", p)
        out[f] = {e.name: list(e.non_const_buffer_sizes) for e in p.execution_plan}
    (OUT / "arenas.json").write_text(json.dumps(out, indent=2) + "\n")


def one_liners():
    """Runs the one-liners docs/check.md gives for a spec of one's own
    runtime, as written there, and keeps what they write beside the
    fixtures (my_runtime.json, my_runtime.yaml)."""
    page = (OUT.parent.parent.parent / "docs/check.md").read_text()
    lines = [
        line.strip()
        for line in page.splitlines()
        if line.strip().startswith("python -c") and "> my_runtime." in line
    ]
    assert len(lines) == 2, lines
    python = os.environ.get("ET_RUNTIME_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory() as d:
        for line in lines:
            command = python + line[len("python"):]
            subprocess.run(["sh", "-c", command], cwd=d, check=True, timeout=300,
                           stderr=subprocess.DEVNULL)
        for f in ("my_runtime.json", "my_runtime.yaml"):
            shutil.copy(pathlib.Path(d) / f, OUT / f)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    if sys.argv[1:] == ["refused"]:
        refused()
        return
    if sys.argv[1:] == ["arenas"]:
        arenas()
        return
    if sys.argv[1:] == ["one-liners"]:
        one_liners()
        return
    if sys.argv[1:] != ["oracles"]:
        exports()
    oracles()
    refused()
    arenas()
    one_liners()


if __name__ == "__main__":
    main()
