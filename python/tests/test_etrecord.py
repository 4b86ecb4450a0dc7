"""ETRecords through the Python module: the tree the command shows, the
state dict as arrays equal to torch.load's, the join with the program, and
the diff of two as the command makes it."""

from __future__ import annotations

import hashlib
import json

import pytest

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


def test_diff_of_two_etrecords_is_the_commands_json() -> None:
    # The grown MLP: l2.bias[0] made 0.25 larger and a layer l3 added; the
    # oracle names what parse_etrecord and torch.load read of the change.
    a = fixture("etrecord/portable_mlp.etrecord")
    b = fixture("etrecord/portable_mlp_grown.etrecord")
    oracle = json.loads(fixture("etrecord/portable_mlp_grown.oracle.json").read_text())
    got = ptefs.diff(a, b)
    out = run_ptefs("diff", "--json", str(a), str(b))
    assert out.returncode == 1, out.stderr
    assert got == json.loads(out.stdout)
    assert got["differ"] is True
    assert sorted(g["name"] for g in got["graphs"]) == sorted(oracle["nodes"])
    for g in got["graphs"]:
        want = oracle["nodes"][g["name"]]
        assert sorted(n["name"] for n in g["nodes_added"]) == sorted(want["added"])
        assert {c["name"] for c in g["nodes_changed"]} == set(want["changed"])
        (bias,) = g["tensors"]["changed"]
        assert bias["a"]["name"] == "state_dict/l2.bias"
        assert bias["elements"]["differing"] == 1
    # The tolerance reaches the tensors: 0.25 apart is within atol 0.3.
    loose = ptefs.diff(a, b, atol=0.3)
    out = run_ptefs("diff", "--json", "--atol", "0.3", str(a), str(b))
    assert loose == json.loads(out.stdout)
    assert all(g["tensors"]["changed"] == [] for g in loose["graphs"])
    assert all(g["tensors"]["within_tolerance"] == 1 for g in loose["graphs"])
    same = ptefs.diff(a, a)
    assert same == json.loads(run_ptefs("diff", "--json", str(a), str(a)).stdout)
    assert same["differ"] is False and same["graphs"] == []


def test_diff_of_an_etrecord_with_a_program_names_both() -> None:
    a = fixture("etrecord/portable_mlp.etrecord")
    b = fixture("etdump/portable_mlp.pte")
    want = (
        f"{a} is an ETRecord and {b} is a program: "
        "an ETRecord is compared only with another ETRecord"
    )
    with pytest.raises(ptefs.Error) as e:
        ptefs.diff(a, b)
    assert str(e.value) == want
    out = run_ptefs("diff", "--json", str(a), str(b))
    assert (out.returncode, out.stdout, out.stderr) == (2, "", f"ptefs: {want}\n")
    with pytest.raises(ptefs.Error, match="two ETRecords are compared whole"):
        ptefs.diff(a, a, only=["tensors"])
