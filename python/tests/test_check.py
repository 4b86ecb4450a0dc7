"""``File.check`` returns what ``ptefs check --json`` prints: the same
library function, against the same runtime specs."""

from __future__ import annotations

import json

import pytest

import ptefs
from conftest import fixture, run_ptefs


def test_check_is_the_commands_json():
    path = fixture("check/missing_ops.pte")
    got = ptefs.open(str(path)).check()
    cmd = run_ptefs("check", "--json", str(path))
    assert cmd.returncode == 1, cmd.stderr
    assert got == json.loads(cmd.stdout)
    assert not got["ok"]
    assert got["methods"][0]["log"][1] == "Missing operator: [1] aten::sort.values"


def test_check_adds_up_runtime_specs(tmp_path):
    spec = tmp_path / "mine.json"
    spec.write_text(json.dumps({"operators": ["ptefs::twice.out", "aten::sort.values"]}))
    f = ptefs.open(str(fixture("check/missing_ops.pte")))
    got = f.check(runtime=["executorch-1.5.1", str(spec)])
    assert got["ok"]
    assert got["runtime"]["specs"] == ["executorch-1.5.1", str(spec)]
    assert not f.check(runtime="portable", memory_limit=1)["ok"]


def test_a_hostile_spec_is_an_error_naming_it(tmp_path):
    spec = tmp_path / "bad.json"
    spec.write_bytes(b"\xff")
    with pytest.raises(ptefs.Error, match="bad.json: not a runtime spec"):
        ptefs.open(str(fixture("check/missing_ops.pte"))).check(runtime=str(spec))
