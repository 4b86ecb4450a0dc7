"""Invalid files, as the Rust tests make them (tests/bad_input.rs), and every
input the fuzzer ever crashed on: each open raises a ptefs.Error subclass
with the message the command prints (a FormatError with its offset where the
message names one), or opens cleanly; nothing panics across the boundary."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import ptefs
from conftest import REPO, fixture, run_ptefs


def mlp() -> bytearray:
    return bytearray(fixture("mlp.pte").read_bytes())


def patched(at: int, value: int) -> bytes:
    f = mlp()
    f[at : at + 8] = struct.pack("<Q", value)
    return bytes(f)


def cases() -> list:
    f = mlp()
    ptd = bytearray(fixture("mlp_external.ptd").read_bytes())
    ptd[16:24] = struct.pack("<Q", 2**64 - 5)
    small = mlp()
    small[12:16] = struct.pack("<I", 8)
    root = mlp()
    root[0:4] = struct.pack("<I", 0xFFF0)
    garbled = mlp()
    garbled[64:400] = b"\xff" * 336
    last = len(f) - 10
    png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89"
    st = struct.pack("<Q", 16) + b'{"a":{}}        '
    return [
        ("empty.pte", b"", ["0 bytes, too short"], None),
        ("three.pte", b"ET1", ["3 bytes, too short"], None),
        ("notes.txt", b"hello, this is text\n", ["not an ExecuTorch file", '"o, t"'], None),
        ("pic.png", png, ["not an ExecuTorch file", "0x0d0a1a0a"], None),
        ("m.vgf", b"VGF1" + b"\0" * 60, ["it looks like a VGF file"], None),
        ("w.safetensors", st, ["it looks like a safetensors file", "--names"], None),
        ("m.gguf", b"GGUF\x03" + b"\0" * 7, ["it looks like a GGUF model"], None),
        ("header.pte", bytes(f[:20]), ["extended header at byte 8 is cut off"], 8),
        ("header2.pte", bytes(f[:36]), ["extended header length (bytes 12..16) is 32"], None),
        ("flatbuffer.pte", bytes(f[:1000]), ["program size (bytes 16..24) is 2152"], None),
        ("segment.pte", bytes(f[:last]), ["segment data size", f"past the end of the file at {last}"], None),
        ("size.pte", patched(16, 1 << 40), ["program size (bytes 16..24) is 1099511627776"], None),
        ("base.pte", patched(24, 1 << 40), ["segment base offset (bytes 24..32)"], None),
        ("overflow.pte", patched(32, 2**64 - 101), ["segment data size", "overflows"], None),
        ("len.pte", bytes(small), ["below the minimum 24"], None),
        ("x.ptd", bytes(ptd), ["flatbuffer end", "overflows"], None),
        ("root.pte", bytes(root), ["program flatbuffer (bytes 0..2152) fails verification"], None),
        ("garbled.pte", bytes(garbled), ["fails verification"], None),
    ]


@pytest.mark.parametrize("name,data,says,offset", cases(), ids=lambda c: c if isinstance(c, str) else "")
def test_invalid_files_raise_the_commands_error(tmp_path: Path, name, data, says, offset) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ptefs.FormatError) as e:
        ptefs.open(path)
    message = str(e.value)
    for s in says:
        assert s in message
    assert e.value.path == str(path)
    if offset is not None:
        assert e.value.offset == offset
    out = run_ptefs("ls", str(path))
    assert out.returncode == 2
    assert out.stderr.strip() == f"ptefs: {message}"
    # The same bytes given as bytes fail the same way.
    with pytest.raises(ptefs.FormatError) as e:
        ptefs.open(data)
    assert str(e.value) == message.replace(str(path), "<bytes>")
    assert e.value.path == "<bytes>"


def test_every_fuzz_finding_opens_or_fails_cleanly() -> None:
    found = sorted((REPO / "tests" / "fuzz-regressions").iterdir())
    assert found
    for path in found:
        try:
            with ptefs.open(path) as f:
                for p in f.ls(recursive=True):
                    if not p.endswith("/"):
                        try:
                            f.read(p)
                        except ptefs.Error:
                            pass
                f.tensors()
        except ptefs.Error as e:
            assert "\n" not in str(e)


@pytest.mark.parametrize("name", ["mlp.pte", "mv2_xnnpack.pte", "mlp.ptn", "mlp_external.ptd", "quant_xnnpack.pte"])
def test_truncations_and_flips_never_panic(name: str) -> None:
    """Each fixture cut short at many points, and with bytes flipped: a tree
    whose tensors can be listed and read, or an Error."""
    whole = fixture(name).read_bytes()
    n = len(whole)
    cuts = sorted({n * k // 23 for k in range(23)} | {8, 16, 24, 32, 40, 64})
    variants = [whole[:c] for c in cuts if c < n]
    for k in range(1, 16):
        b = bytearray(whole)
        at = (n * k) // 16 - 1
        b[at] ^= 0xFF
        variants.append(bytes(b))
    for v in variants:
        try:
            with ptefs.open(v) as f:
                for t in f.tensors().values():
                    try:
                        f.numpy(t.path).sum()
                    except ptefs.Error:
                        pass
        except ptefs.Error:
            pass
