"""ETRecords through the Python module: the tree the command shows, the
state dict as arrays equal to torch.load's, and the join with the program."""

from __future__ import annotations

import hashlib
import json

import ptefs
from conftest import fixture, run_ptefs


def test_an_etrecord_opens_as_the_command_shows_it() -> None:
    path = fixture("etrecord/xnnpack_mobilenetish.etrecord")
    oracle = json.loads(fixture("etrecord/xnnpack_mobilenetish.oracle.json").read_text())
    with ptefs.open(path) as f:
        assert f.ls("", recursive=True) == run_ptefs("ls", "-R", str(path)).stdout.split()
        tensors = oracle["members"]["exported_program_state_dict"]["tensors"]
        for fqn, t in tensors.items():
            a = f.numpy(f"graphs/exported_program/state_dict/{fqn}.npy")
            assert list(a.shape) == t["shape"], fqn
            assert hashlib.sha256(a.tobytes()).hexdigest() == t["sha256"], fqn


def test_a_program_with_its_etrecord_has_source_tsv() -> None:
    program = fixture("etdump/portable_mlp.pte")
    etrecord = fixture("etrecord/portable_mlp.etrecord")
    with ptefs.open(program, etrecord=etrecord) as f:
        got = f.read("methods/forward/source.tsv")
    want = run_ptefs(
        "cat", str(program), "methods/forward/source.tsv", "--etrecord", str(etrecord)
    ).stdout
    assert got.decode() == want
    assert "instruction\t2\t2\taten_relu_default\t. (__main__.MLP)\t" in want
