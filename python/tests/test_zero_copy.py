"""Arrays of tensors stored contiguously in a local file are views of the
file's memory map: their memory is the mapping of the file at the tensor's
offset (from /proc/self/maps), they share memory with every other array of
the same bytes, they are read-only, and a 1 GiB tensor's array costs no
anonymous memory. Computed and remote bytes are copies."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ptefs
from conftest import fixture


def mapping_of(address: int):
    """(path, file offset of `address`) of the mapping holding `address`."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= address < end:
                path = fields[5].strip() if len(fields) > 5 else ""
                return path, int(fields[2], 16) + (address - start)
    return None, None


def test_arrays_are_the_files_mapped_bytes() -> None:
    path = fixture("mv2_xnnpack.pte")
    with ptefs.open(path) as f:
        tensors = f.tensors()
        assert len(tensors) > 50
        for t in tensors.values():
            if t.nbytes == 0:
                continue
            a = f.numpy(t.path)
            mapped, offset = mapping_of(a.ctypes.data)
            assert mapped == str(path.resolve()), t.path
            assert offset == t.offset, t.path
            assert not a.flags.writeable and not a.flags.owndata
            assert a.nbytes == t.nbytes
            with pytest.raises(ValueError):
                a.flat[0] = 0


def test_arrays_of_the_same_bytes_share_memory_and_keep_the_map() -> None:
    with ptefs.open(fixture("mlp.pte")) as f:
        a = f.numpy("methods/forward/tensors/0.npy")
        b = f.numpy("constants/1.bin")  # raw bytes of the same tensor
        c = f.numpy("methods/forward/values/0")
    assert np.shares_memory(a, c)
    assert np.shares_memory(a, b)  # the constant buffer holding it
    assert b.nbytes == a.nbytes
    # The tree is closed; the arrays hold the map through their base.
    assert a.base is not None and a.base.memory.nbytes == 2048
    assert float(np.abs(a).sum()) > 0
    assert np.array_equal(a, np.frombuffer(fixture("mlp.pte").read_bytes()[2176:4224], "<f4").reshape(32, 16))


def test_quantization_scales_are_listed_and_viewed() -> None:
    """quant_xnnpack's per-channel scales: each listed from its weight's
    entry, a float32 view of the bytes the weight's entry says."""
    with ptefs.open(fixture("quant_xnnpack.pte")) as f:
        tensors = f.tensors()
        weights = [t for t in tensors.values() if t.entry.get("scales")]
        assert weights
        raw = fixture("quant_xnnpack.pte").read_bytes()
        for w in weights:
            s = w.entry["scales"]
            d = w.path.rsplit("/", 1)[0]
            t = tensors[f"{d}/{s['name']}"]
            assert t.offset == s["source"]["offset"] and t.nbytes == s["nbytes"]
            a = f.numpy(t.path)
            assert a.dtype == np.dtype(s["numpy_dtype"]) and a.size == s["count"]
            assert a.tobytes() == raw[t.offset : t.offset + t.nbytes]
            assert mapping_of(a.ctypes.data)[1] == t.offset


def rss_anon() -> int:
    with open("/proc/self/status") as s:
        for line in s:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon")


@pytest.fixture(scope="module")
def big_package(tmp_path_factory) -> Path:
    """mlp.ptn with a 1 GiB float32 tensor `big` added to its safetensors."""
    src = zipfile.ZipFile(fixture("mlp.ptn"))
    st = src.read("program.safetensors")
    (n,) = struct.unpack("<Q", st[:8])
    header = json.loads(st[8 : 8 + n])
    data = st[8 + n :]
    big = 1 << 30
    start = len(data)  # safetensors allows no gap between tensors
    header["big"] = {"dtype": "F32", "shape": [big // 4], "data_offsets": [start, start + big]}
    text = json.dumps(header).encode()
    text += b" " * ((-len(text)) % 8)
    out = tmp_path_factory.mktemp("big") / "big.ptn"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for info in src.infolist():
            if info.filename != "program.safetensors":
                z.writestr(info, src.read(info.filename))
        with z.open("program.safetensors", "w", force_zip64=True) as w:
            w.write(struct.pack("<Q", len(text)) + text + data)
            chunk = np.arange(1 << 22, dtype="<f4").tobytes()  # 16 MiB
            for _ in range(big // len(chunk)):
                w.write(chunk)
    return out


def test_a_1gib_tensor_costs_no_memory(big_package: Path) -> None:
    with ptefs.open(big_package) as f:
        t = f.tensor("big")
        assert t.nbytes == 1 << 30
        before = rss_anon()
        a = f.numpy("big")
        grown = rss_anon() - before
        assert a.nbytes == 1 << 30 and a.dtype == np.float32
        assert grown < 5 << 20, f"RssAnon grew by {grown} bytes"
        mapped, offset = mapping_of(a.ctypes.data)
        assert mapped == str(big_package.resolve()) and offset == t.offset
        # Values: the 16 MiB pattern repeated.
        assert a[5] == 5.0 and a[(1 << 22) + 7] == 7.0 and a[-1] == (1 << 22) - 1
