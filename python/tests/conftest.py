"""Shared helpers of the Python tests: where the fixtures are, the installed
`ptefs` command, and nginx serving the fixtures over HTTP with ranges."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"

# Tests needing a real component (FUSE, nginx, ...), like the Rust ones,
# may be required rather than skipped; PTEFS_REQUIRE_FUSE is the older name.
REQUIRE = any(os.environ.get(v) == "1" for v in ("PTEFS_REQUIRE_ALL", "PTEFS_REQUIRE_FUSE"))


def fixture(name: str) -> Path:
    return FIXTURES / name


def ptefs_command() -> str:
    """The `ptefs` script installed beside this interpreter."""
    exe = Path(sys.executable).parent / "ptefs"
    if not exe.exists():
        found = shutil.which("ptefs")
        assert found, "the ptefs command is not installed"
        return found
    return str(exe)


def run_ptefs(*args: str, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("text", True)
    return subprocess.run([ptefs_command(), *args], capture_output=True, timeout=120, **kw)


def skip_or_fail(why: str) -> None:
    if REQUIRE:
        pytest.fail(f"PTEFS_REQUIRE_ALL=1 but {why}")
    pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx (Debian's, one process in the foreground) serving a directory."""

    def __init__(self, root: Path) -> None:
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.port = _free_port()
        conf = (
            f"daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n"
            "events {}\nhttp {\n"
            f"  access_log {d}/access.log;\n  client_body_temp_path {d};\n  proxy_temp_path {d};\n"
            f"  fastcgi_temp_path {d};\n  uwsgi_temp_path {d};\n  scgi_temp_path {d};\n"
            f"  server {{ listen 127.0.0.1:{self.port}; root {root}; }}\n}}\n"
        )
        Path(d, "nginx.conf").write_text(conf)
        self.proc = subprocess.Popen(
            ["nginx", "-c", f"{d}/nginx.conf", "-p", d],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start")
                time.sleep(0.05)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.dir.cleanup()


@pytest.fixture(scope="session")
def nginx():
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        skip_or_fail("nginx is missing (scripts/setup.sh installs it)")
    server = Nginx(FIXTURES)
    yield server
    server.stop()
