"""Every tensor of every fixture with an oracle, read through the module,
against what ExecuTorch's own deserializer and exporter recorded: the
SHA-256 of each tensor's bytes, its type, shape and file offset
(`tests/fixtures/*.oracle.jsonl`, beside each fixture, written by
ExecuTorch's Python), and the
SHA-256 of each state-dict tensor torch saved (`state_dicts.json`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import ptefs
from conftest import FIXTURES


def sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def rows(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


ORACLE = ".oracle.jsonl"
XNNPACK_ORACLE = ".xnnpack.oracle.jsonl"

PROGRAMS = sorted(
    p.name[: -len(ORACLE)]
    for p in FIXTURES.glob(f"*.pte{ORACLE}")
    if (FIXTURES / p.name[: -len(ORACLE)]).exists()
)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_tensors_equal_executorchs(name: str) -> None:
    """Each tensor value with stored bytes: the array's bytes hash as
    ExecuTorch's deserializer's, at its file offset, with its type and
    shape; tensors() lists each once."""
    expected = [r for r in rows(FIXTURES / f"{name}{ORACLE}") if "plan" in r]
    checked = 0
    with ptefs.open(FIXTURES / name) as f:
        tensors = f.tensors()
        for r in expected:
            path = f"methods/{r['plan']}/values/{r['value']}"
            if "sha256" not in r:
                # External: the bytes are in the .ptd, checked below with
                # its own oracle; the program still names the tensor.
                assert r["where"] == "external"
                t = f.tensor(path)
                assert t.fqn == r["fqn"]
                assert t.source == name.replace(".pte", ".ptd")
                continue
            a = f.numpy(path)
            assert sha(a) == r["sha256"], path
            assert a.nbytes == r["nbytes"]
            t = f.tensor(path)
            assert t.path in tensors
            assert t.offset == r["file_offset"], path
            assert t.dtype == r["dtype"]
            assert list(t.shape) == r["sizes"]
            assert t.nbytes == r["nbytes"]
            assert t.source == name
            checked += 1
    assert checked or all("sha256" not in r for r in expected)


def test_data_file_tensors_equal_executorchs() -> None:
    for oracle in FIXTURES.glob(f"*.ptd{ORACLE}"):
        name = oracle.name[: -len(ORACLE)]
        if not (FIXTURES / name).exists():
            continue
        entries = [r for r in rows(oracle) if "named" in r]
        with ptefs.open(FIXTURES / name) as f:
            tensors = f.tensors()
            assert len(tensors) == len(entries)
            for r in entries:
                t = f.tensor(r["named"])
                assert t.key == r["named"]
                assert t.offset == r["file_offset"]
                assert t.nbytes == r["nbytes"]
                # A blob without a tensor layout has no type: raw bytes.
                assert t.dtype == r["dtype"]
                assert (None if t.shape is None else list(t.shape)) == r["sizes"]
                assert sha(f.numpy(r["named"])) == r["sha256"]


@pytest.mark.parametrize(
    "name", sorted(p.name[: -len(ORACLE)] for p in FIXTURES.glob(f"*.ptn{ORACLE}"))
)
def test_package_tensors_equal_the_exporters(name: str) -> None:
    oracle = [r for r in rows(FIXTURES / f"{name}{ORACLE}") if "key" in r]
    with ptefs.open(FIXTURES / name) as f:
        tensors = f.tensors()
        keys = {t.key for t in tensors.values()}
        assert keys == {r["key"] for r in oracle}
        for r in oracle:
            t = f.tensor(f"tensors/{r['key']}.bin")
            assert t.offset == r["offset_in_file"]
            assert t.nbytes == r["nbytes"]
            assert list(t.shape) == r["shape"]
            assert sha(f.numpy(f"tensors/{r['key']}.bin")) == r["sha256"]


@pytest.mark.parametrize(
    "name", sorted(p.name[: -len(XNNPACK_ORACLE)] for p in FIXTURES.glob(f"*{XNNPACK_ORACLE}"))
)
def test_delegate_weights_equal_executorchs(name: str) -> None:
    """XNNPACK weights decoded with the delegate's own dims and datatype."""
    if not (FIXTURES / name).exists():
        pytest.skip(f"{name} is not among the repository's fixtures")
    expected = [r for r in rows(FIXTURES / f"{name}{XNNPACK_ORACLE}") if "value" in r]
    with ptefs.open(FIXTURES / name) as f:
        tensors = f.tensors()
        for r in expected:
            d = f"methods/{r['method']}/delegates"
            (delegate,) = [n for n in f.ls(d) if n.startswith(f"{r['delegate']}-")]
            weights = f"{d}/{delegate}xnnpack/weights"
            (entry,) = [e for e in f.json(f"{weights}/index.json") if e["value_id"] == r["value"]]
            path = f"{weights}/{entry['name']}"
            t = f.tensor(path)
            assert t.path in tensors
            assert t.dtype == r["datatype"]
            assert list(t.shape) == r["dims"]
            assert t.nbytes == r["nbytes"]
            if r.get("source"):
                assert t.offset == r["source"]["offset"]
            a = f.numpy(path)
            assert hashlib.sha256(a.tobytes()).hexdigest() == r["sha256"]


def test_state_dict_tensors_by_checkpoint_name(tmp_path: Path) -> None:
    """Each program's state dict as torch saved it, given as `names=`: every
    key found names bytes whose hash is the state dict's."""
    state_dicts = json.loads((FIXTURES / "state_dicts.json").read_text())
    found = 0
    for model, sd in state_dicts.items():
        state = sd.get("state") or {}
        if not state or not (FIXTURES / sd["pte"]).exists():
            continue
        names = tmp_path / f"{model}.json"
        names.write_text(json.dumps({k: v["sha256"] for k, v in state.items()}))
        with ptefs.open(FIXTURES / sd["pte"], names=names) as f:
            report = f.inspect()["checkpoint"]
            assert report["keys"] == len(state)
            matched = set(state) - set(report["unmatched"])
            for key in matched:
                t = f.tensor(key)
                assert sha(f.numpy(key)) == state[key]["sha256"]
                # A delegate may store the weight in its own layout: the
                # same elements, its own dims.
                assert np.prod(t.shape) == np.prod(state[key]["shape"])
                found += 1
    assert found > 0
