"""The diff of two ETDumps through the Python module: the speed report
``ptefs diff --json`` prints, with the command's threshold and program."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ptefs
from conftest import fixture, run_ptefs

BASE = fixture("etdump/portable_mlp.etdp")
# The portable profile with the first run's first addmm 0.3 ms longer
# (tests/it/etdump_join.rs makes it): its mean over three runs rises by
# 0.1 ms, from 0.078153 ms.
SLOW = fixture("etdump/slowed/slow.etdp")
PROGRAM = fixture("etdump/portable_mlp.pte")


def command(*args: Path | str) -> tuple[int, dict]:
    out = run_ptefs("diff", "--json", *map(str, args))
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, json.loads(out.stdout)


def test_diff_of_two_etdumps_with_the_program_is_the_commands_json() -> None:
    got = ptefs.diff(BASE, SLOW, program=PROGRAM)
    code, want = command("--program", PROGRAM, BASE, SLOW)
    assert got == want
    assert (code, got["exceeded"]) == (1, True)
    assert (got["program"], got["method"]) == ("portable_mlp.pte", "forward")
    slower = [r for r in got["instructions"] if r["exceeds"]]
    assert [(r["key"], r["name"]) for r in slower] == [("0:1", "aten::addmm.out")]
    assert slower[0]["mean_ms_a"] == pytest.approx(0.078153, abs=1e-6)
    assert slower[0]["delta_ms"] == pytest.approx(0.1, abs=1e-9)
    assert [r["key"] for r in got["operators"] if r["exceeds"]] == ["aten::addmm.out"]


def test_diff_of_two_etdumps_without_the_program_names_kernel_events() -> None:
    got = ptefs.diff(BASE, SLOW)
    code, want = command(BASE, SLOW)
    assert got == want
    assert (code, got["exceeded"]) == (1, True)
    assert got["program"] is None
    names = {r["name"] for r in got["instructions"]}
    assert "native_call_addmm.out" in names
    assert "aten::addmm.out" not in names


def test_threshold_decides_exceeded_as_it_decides_the_exit_status() -> None:
    # 0.1 ms on 0.078153 ms is +128 %: beyond 100 %, within 1000 %.
    for threshold, code in [(100, 1), (1000, 0)]:
        got = ptefs.diff(BASE, SLOW, threshold=threshold, program=PROGRAM)
        want = command("--threshold", str(threshold), "--program", PROGRAM, BASE, SLOW)
        assert (want[0], got) == (code, want[1])
        assert got["threshold"] == threshold / 100
        assert got["exceeded"] is (code == 1)
        assert any(r["exceeds"] for r in got["instructions"]) is (code == 1)
    # The same profile twice is slower nowhere, even at a threshold of 0.
    same = ptefs.diff(BASE, BASE, threshold=0)
    assert (0, same) == command("--threshold", "0", BASE, BASE)
    assert same["exceeded"] is False


def test_a_wrong_program_or_threshold_is_the_commands_error() -> None:
    data = fixture("mlp_external.ptd")
    cases = [
        (
            dict(program=data),
            [BASE, SLOW],
            ["--program", data],
            f"{data}: is not a program (.pte)",
        ),
        (
            dict(program=PROGRAM),
            [BASE, PROGRAM],
            ["--program", PROGRAM],
            "program is for comparing two ETDumps (.etdp)",
        ),
        (
            dict(threshold=-1),
            [BASE, SLOW],
            ["--threshold=-1"],
            "threshold must be a number at or above 0",
        ),
    ]
    for kw, files, flags, message in cases:
        with pytest.raises(ptefs.Error) as e:
            ptefs.diff(*files, **kw)
        assert str(e.value) == message
        out = run_ptefs("diff", *map(str, flags + files))
        assert out.returncode == 2
        # The command names its flags with their dashes.
        assert out.stderr in (f"ptefs: {message}\n", f"ptefs: --{message}\n")
