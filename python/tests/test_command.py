"""The installed wheel: the `ptefs` command it brings (the same command
line, every subcommand, mount included), and the module used from a
directory outside the checkout, with no Rust toolchain on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ptefs
from conftest import REPO, fixture, ptefs_command, run_ptefs, skip_or_fail


def test_the_module_is_the_installed_one_and_no_toolchain_is_needed() -> None:
    if os.environ.get("PTEFS_WHEEL_TEST") != "1":
        skip_or_fail("not run from an installed wheel (scripts/test-python.sh)")
    assert shutil.which("cargo") is None and shutil.which("rustc") is None
    assert REPO not in Path(ptefs.__file__).resolve().parents


def test_version_and_help() -> None:
    out = run_ptefs("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"ptefs {ptefs.__version__}"
    out = run_ptefs("--help")
    for sub in ["mount", "umount", "ls", "cat", "stat", "inspect", "diff"]:
        assert sub in out.stdout
    out = run_ptefs("lss", str(fixture("mlp.pte")))
    assert out.returncode == 2 and "ls" in out.stderr


def test_a_script_run_outside_the_checkout() -> None:
    script = (
        "import sys, ptefs\n"
        "f = ptefs.open(sys.argv[1])\n"
        "a = f.numpy('methods/forward/tensors/0.bin')\n"
        "print(ptefs.__file__)\n"
        "print(a.shape, a.dtype, len(f.tensors()))\n"
    )
    with tempfile.TemporaryDirectory() as d:
        Path(d, "look.py").write_text(script)
        out = subprocess.run(
            [sys.executable, "look.py", str(fixture("mlp.pte"))],
            cwd=d,
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            timeout=60,
        )
    assert out.returncode == 0, out.stderr
    where, shape = out.stdout.splitlines()
    assert REPO not in Path(where).resolve().parents or os.environ.get("PTEFS_WHEEL_TEST") != "1"
    assert shape == "(32, 16) float32 4"


def test_ls_cat_and_exit_statuses() -> None:
    out = run_ptefs("ls", str(fixture("mlp.pte")), "methods/forward")
    assert out.returncode == 0 and "code.txt" in out.stdout.split()
    out = run_ptefs("cat", str(fixture("mlp.pte")), "nope")
    assert out.returncode == 1
    assert ptefs.main(["ptefs", "ls", str(fixture("add.pte")), "nope"]) == 1


def fuse_available() -> bool:
    return Path("/dev/fuse").exists() and shutil.which("fusermount3") is not None


def test_mount_from_the_installed_command() -> None:
    """`ptefs mount` forks its daemon from the Python process the script
    runs in; the mount serves the tree until `ptefs umount`."""
    if not fuse_available():
        skip_or_fail("FUSE is not available (no /dev/fuse or fusermount3)")
    with tempfile.TemporaryDirectory() as mnt:
        out = run_ptefs("mount", str(fixture("mv2_xnnpack.pte")), mnt)
        assert out.returncode == 0, out.stderr
        try:
            with ptefs.open(fixture("mv2_xnnpack.pte")) as f:
                assert sorted(os.listdir(mnt)) == sorted(n.rstrip("/") for n in f.ls())
                p = "methods/forward/code.txt"
                assert Path(mnt, p).read_bytes() == f.read(p)
                t = next(iter(f.tensors().values()))
                assert Path(mnt, t.path).read_bytes() == f.numpy(t.path).tobytes()
            assert os.path.ismount(mnt)
        finally:
            out = run_ptefs("umount", mnt)
        assert out.returncode == 0, out.stderr
        deadline = time.monotonic() + 10
        while os.path.ismount(mnt) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.ismount(mnt)
