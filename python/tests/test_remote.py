"""The module on URLs served by nginx (with ranges): the same tree, tensors
and values as the local file, the values copied (nothing is mapped)."""

from __future__ import annotations

import hashlib

import numpy as np

import ptefs
from conftest import fixture


def test_a_program_over_http_equals_the_local_file(nginx) -> None:
    url = nginx.url("mv2_xnnpack.pte")
    with ptefs.open(url) as remote, ptefs.open(fixture("mv2_xnnpack.pte")) as local:
        assert remote.sources[0]["remote"] is True
        assert remote.ls(recursive=True) == local.ls(recursive=True)
        rt, lt = remote.tensors(), local.tensors()
        assert rt.keys() == lt.keys()
        for path, t in lt.items():
            r = rt[path]
            assert (r.offset, r.nbytes, r.dtype, r.shape) == (t.offset, t.nbytes, t.dtype, t.shape)
        for path in list(lt)[:10]:
            a, b = remote.numpy(path), local.numpy(path)
            assert np.array_equal(a, b)
            assert a.flags.owndata or not isinstance(a.base, type(b.base))
            assert not a.flags.writeable
        assert remote.inspect()["program"] == local.inspect()["program"]
        assert remote.read("program.json") == local.read("program.json")


def test_a_package_and_a_data_file_over_http(nginx) -> None:
    with ptefs.open(nginx.url("mlp.ptn")) as f, ptefs.open(fixture("mlp.ptn")) as g:
        for path, t in g.tensors().items():
            assert hashlib.sha256(f.numpy(path).tobytes()).digest() == hashlib.sha256(
                g.numpy(path).tobytes()
            ).digest()
    with ptefs.open(nginx.url("mlp_external.pte"), data=nginx.url("mlp_external.ptd")) as f:
        assert f.tensor("fc1.weight").source == "mlp_external.ptd"
        assert f.numpy("fc1.weight").shape == (32, 16)


def test_diff_over_http(nginx) -> None:
    report = ptefs.diff(nginx.url("mlp.pte"), fixture("mlp.pte"))
    assert report["differ"] is False


def test_a_missing_url_is_a_source_error(nginx) -> None:
    try:
        ptefs.open(nginx.url("no-such.pte"))
    except ptefs.SourceError as e:
        assert "404" in str(e) or "not found" in str(e).lower()
    else:
        raise AssertionError("opened a missing URL")
