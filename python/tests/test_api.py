"""The module's calls against the `ptefs` command's answers for the same
files: the module and the command share one library, so `ls`, `cat`,
`stat`, `inspect --json` and `diff --json` must agree exactly."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import ptefs
from conftest import FIXTURES, fixture, run_ptefs


def test_ls_read_stat_agree_with_the_command() -> None:
    with ptefs.open(fixture("mlp.pte")) as f:
        listed = run_ptefs("ls", str(fixture("mlp.pte"))).stdout.split()
        assert f.ls() == listed
        everything = run_ptefs("ls", "-R", str(fixture("mlp.pte"))).stdout.split()
        assert f.ls(recursive=True) == everything
        for path in ["program.json", "methods/forward/code.txt", "methods/forward/tensors/0.npy"]:
            cat = run_ptefs("cat", str(fixture("mlp.pte")), path, text=False)
            assert f.read(path) == cat.stdout
        assert f.read("methods/forward/tensors/0.bin", 4, 8) == f.read(
            "methods/forward/tensors/0.bin"
        )[4:12]
        assert f.json("program.json") == json.loads(f.read("program.json"))
        assert f.text("methods/forward/code.txt").startswith("# forward:")
        st = f.stat("methods/forward/tensors/0.bin")
        assert st["type"] == "file" and st["size"] == 2048
        assert st["mode"] & 0o777 == 0o444
        assert st["xattrs"]["user.ptefs.offset"] == b"2176"
        assert st["xattrs"]["user.ptefs.dtype"] == b"FLOAT"
        out = run_ptefs("stat", str(fixture("mlp.pte")), "methods/forward/tensors/0.bin").stdout
        for k, v in st["xattrs"].items():
            assert f'{k}="{v.decode()}"' in out
        assert f.stat("methods")["type"] == "directory"
        assert f.exists("methods/forward") and not f.exists("nope")


def test_inspect_is_the_commands_json() -> None:
    for name in ["mlp.pte", "mv2_xnnpack.pte", "mlp_external.pte", "mlp.ptn"]:
        with ptefs.open(fixture(name)) as f:
            got = f.inspect()
        out = run_ptefs("inspect", "--json", str(fixture(name)))
        assert out.returncode == 0, out.stderr
        assert got == json.loads(out.stdout), name
    with ptefs.open(fixture("mv2_xnnpack.pte")) as f:
        top = f.inspect(top=3)
    out = run_ptefs("inspect", "--json", "--top", "3", str(fixture("mv2_xnnpack.pte")))
    assert top == json.loads(out.stdout)
    assert len(top["largest"]) == 3


def test_diff_is_the_commands_json(tmp_path: Path) -> None:
    a, b = fixture("mlp.pte"), tmp_path / "mlp.pte"
    data = bytearray(a.read_bytes())
    data[2200] ^= 0x40  # a byte of the first constant
    b.write_bytes(bytes(data))
    got = ptefs.diff(a, b)
    out = run_ptefs("diff", "--json", str(a), str(b))
    assert out.returncode == 1
    assert got == json.loads(out.stdout)
    assert got["differ"] is True
    same = ptefs.diff(a, a)
    assert same["differ"] is False
    only = ptefs.diff(a, b, only=["tensors"], atol=1.0)
    out = run_ptefs("diff", "--json", "--only", "tensors", "--atol", "1", str(a), str(b))
    assert only == json.loads(out.stdout)
    with pytest.raises(ptefs.Error, match="no section"):
        ptefs.diff(a, b, only=["nonsense"])


def test_tensors_of_a_method_and_by_name() -> None:
    with ptefs.open(fixture("multi_method.pte")) as f:
        everything = f.tensors()
        encode = f.tensors("encode")
        decode = f.tensors("decode")
        assert encode and decode
        assert set(encode) | set(decode) <= set(everything)
        assert all(t.method == "encode" for t in encode.values())
    with ptefs.open(fixture("mlp_external.pte")) as f:
        t = f.tensor("fc1.weight")
        assert t.fqn == "fc1.weight" and t.source == "mlp_external.ptd"
        assert t.users and t.users[0]["op"] == "aten::permute_copy.out"
        a = f.numpy("fc1.weight")
        assert a.shape == (32, 16) and a.dtype == np.float32
        with pytest.raises(ptefs.NotFound):
            f.tensor("no.such.weight")


def test_data_attached_by_hand_and_auto_data(tmp_path: Path) -> None:
    pte = tmp_path / "m.pte"
    shutil.copy(fixture("mlp_external.pte"), pte)
    ptd = fixture("mlp_external.ptd")
    # Not beside it: its external tensors have no bytes.
    with ptefs.open(pte) as f:
        assert not any(t.fqn == "fc1.weight" for t in f.tensors().values())
    with ptefs.open(pte, data=ptd) as f:
        assert f.tensor("fc1.weight").source == "mlp_external.ptd"
    with ptefs.open(pte, data=[ptd]) as f:
        assert f.numpy("fc1.bias").shape == (32,)
    # Beside it: attached unless auto_data is off.
    shutil.copy(ptd, tmp_path / "m.ptd")
    with ptefs.open(pte) as f:
        assert f.tensor("fc1.weight").source == "m.ptd"
        assert any("attached" in m for m in f.messages)
    with ptefs.open(pte, auto_data=False) as f:
        assert not any(t.fqn == "fc1.weight" for t in f.tensors().values())


def test_a_profile_joined_with_its_program(tmp_path: Path) -> None:
    """The profile's tables and the tensors its run logged, as the command
    shows them, and the logged tensors as NumPy arrays equal to
    Inspector's intermediate outputs."""
    program = fixture("etdump/xnnpack_mobilenetish.pte")
    profile = fixture("etdump/xnnpack_mobilenetish_debug.etdp")
    oracle = json.loads(fixture("etdump/xnnpack_mobilenetish_debug.oracle.json").read_text())
    want = [
        d["tensor"]
        for block in oracle["inspector_event_blocks"]
        for e in block["events"]
        if e["name"] == "DELEGATE_CALL"
        for d in e["debug_data"]
    ]
    with ptefs.open(program, profile=profile) as f:
        listed = run_ptefs(
            "ls", "-R", str(program), "--profile", str(profile), "methods/forward/profile"
        ).stdout.split()
        assert f.ls("methods/forward/profile", recursive=True) == listed
        index = f.json("methods/forward/profile/outputs/index.json")
        assert [e["value"] for e in index] == [1, 2, 2]
        for e, w in zip(index, want):
            a = f.numpy("methods/forward/profile/outputs/" + e["file"])
            assert list(a.shape) == w["shape"] and a.dtype == np.float32
            assert hashlib.sha256(a.tobytes()).hexdigest() == w["sha256_f32"]
    # Away from its debug buffer: listed without files, unless it is given.
    alone = tmp_path / "run.etdp"
    shutil.copy(profile, alone)
    with ptefs.open(program, profile=alone) as f:
        assert all(e["file"] is None for e in f.json("methods/forward/profile/outputs/index.json"))
    buffer = fixture("etdump/xnnpack_mobilenetish_debug.debug.bin")
    with ptefs.open(program, profile=alone, debug_buffer=buffer) as f:
        index = f.json("methods/forward/profile/outputs/index.json")
        assert all(e["file"] for e in index)


def test_bytes_and_directories() -> None:
    raw = fixture("mlp.pte").read_bytes()
    with ptefs.open(fixture("mlp.pte")) as f, ptefs.open(raw) as g:
        assert f.ls(recursive=True) == g.ls(recursive=True)
        p = "methods/forward/tensors/2.bin"
        assert np.array_equal(f.numpy(p), g.numpy(p))
    with ptefs.open(memoryview(raw)) as g:
        assert g.inspect()["kind"] == ptefs.open(fixture("mlp.pte")).inspect()["kind"]
    with ptefs.open(FIXTURES) as d:
        names = d.ls()
        assert "mlp.pte/" in names and "mv2_xnnpack.pte/" in names
        t = d.tensor("mlp.pte/methods/forward/tensors/0.bin")
        assert t.source == "mlp.pte" and t.offset == 2176
    with ptefs.open([fixture("mlp.pte"), fixture("add.pte")]) as d:
        assert d.ls() == ["add.pte/", "mlp.pte/"]


def test_errors() -> None:
    with pytest.raises(ptefs.SourceError, match="No such file"):
        ptefs.open("/nonexistent/model.pte")
    with pytest.raises(ptefs.FormatError) as e:
        ptefs.open(FIXTURES / "state_dicts.json")
    assert "not an ExecuTorch file" in str(e.value)
    assert e.value.path.endswith("state_dicts.json")
    with ptefs.open(fixture("mlp.pte")) as f:
        with pytest.raises(ptefs.NotFound):
            f.read("no/such/file")
        with pytest.raises(ptefs.Error, match="is a directory"):
            f.read("methods")
        with pytest.raises(ptefs.Error, match="not a directory"):
            f.ls("program.json")
    f.close()
    with pytest.raises(ptefs.Error, match="closed"):
        f.ls()
    assert issubclass(ptefs.FormatError, ptefs.Error)
    assert issubclass(ptefs.NotFound, ptefs.Error)
    assert issubclass(ptefs.SourceError, ptefs.Error)


def test_help_reads_well() -> None:
    doc = ptefs.open.__doc__
    assert doc and "bytes" in doc and "Raises" in doc
    assert ptefs.File.numpy.__doc__ and "without copying" in ptefs.File.numpy.__doc__
    stub = Path(ptefs.__file__).with_name("__init__.pyi")
    assert stub.exists() and Path(ptefs.__file__).with_name("py.typed").exists()
    assert ptefs.File.report.__doc__ and "ptefs report" in ptefs.File.report.__doc__


def test_report_equals_the_command(tmp_path: Path) -> None:
    for name in ["mlp.pte", "mv2_xnnpack.pte"]:
        page = tmp_path / f"{name}.html"
        with ptefs.open(fixture(name)) as f:
            report = f.report(html=str(page))
        out = run_ptefs("report", "--json", str(fixture(name)))
        assert out.returncode == 0, out.stderr
        assert report == json.loads(out.stdout)
        assert report["total_bytes"] == fixture(name).stat().st_size
        cli_page = tmp_path / f"{name}.cli.html"
        assert run_ptefs("report", "-o", str(cli_page), str(fixture(name))).returncode == 0
        assert page.read_text() == cli_page.read_text()


def test_weights_safetensors_saves_and_loads_as_the_tensors(tmp_path: Path) -> None:
    from safetensors import safe_open
    from safetensors.numpy import load_file

    for name in ["mv2_xnnpack.pte", "mlp_external.pte", "mlp_external.ptd"]:
        with ptefs.open(fixture(name)) as f:
            assert f.weights_path() == "weights.safetensors"
            out = tmp_path / f"{name}.safetensors"
            assert f.save_safetensors(out) == f.stat("weights.safetensors")["size"]
            assert out.read_bytes() == run_ptefs("cat", str(fixture(name)), "weights.safetensors", text=False).stdout
            loaded = load_file(out)
            with safe_open(str(out), "np") as s:
                paths = json.loads(s.metadata()["ptefs.paths"])
            assert len(loaded) > 0
            for key, array in loaded.items():
                want = f.numpy(paths[key][0])
                assert array.dtype == want.dtype and np.array_equal(array, want), key
    with ptefs.open(fixture("mlp.pte")) as f, pytest.raises(ptefs.NotFound):
        f.weights_path("methods")
