"""ExecuTorch files (.pte, .ptd, .bpte, .ptn, .etdp) opened lazily from Python.

``ptefs.open(source)`` reads a program, data file, bundled program, native
program package or ETDump profile — a local path, a directory of them, an
http(s)://, s3://, gs:// or az:// URL, or bytes — and shows it as the same
read-only tree that ``ptefs mount`` and ``ptefs ls`` show. Tensors come back
as NumPy arrays that view the file's memory map without copying::

    import ptefs
    with ptefs.open("model.pte") as f:
        for path, t in f.tensors().items():
            print(path, t.dtype, t.shape, t.offset)
        w = f.numpy("methods/forward/tensors/0.bin")

Everything is parsed by the ptefs library (Rust) that the ``ptefs`` command
uses; this package adds no parser of its own. The GIL is released while files
are opened, parsed and read.

Errors are :class:`Error` subclasses: :class:`FormatError` (an invalid file,
with ``path`` and ``offset``), :class:`NotFound` (no such path or tensor) and
:class:`SourceError` (a file that cannot be opened or read, or changed).
"""

from __future__ import annotations

import io
import json as _json
import os
import sys
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _ptefs
from ._ptefs import Error, FormatError, NotFound, SourceError

__all__ = [
    "open",
    "diff",
    "main",
    "File",
    "TensorInfo",
    "Error",
    "FormatError",
    "NotFound",
    "SourceError",
    "__version__",
]

__version__: str = _ptefs.__version__

PathLike = Union[str, "os.PathLike[str]"]


def _path(p: Any) -> str:
    return os.fspath(p)


class TensorInfo:
    """One stored tensor: where its bytes are and what the file says of it.

    Attributes:
        path: the tree path naming it (its ``.bin``), the key of
            :meth:`File.tensors`.
        name: its name where the file records one (FQN, named-data or
            checkpoint key), else ``None``.
        dtype: the element type in the vocabulary of what stores it
            (``"FLOAT"``, ``"BFLOAT16"``, ``"xnn_datatype_qint8"``); ``None``
            for a data file's untyped blob (its array is raw bytes).
        numpy_dtype: the NumPy type string of :meth:`File.numpy`'s array
            (raw bits as unsigned integers where NumPy has no such type:
            bfloat16, float8), or ``None``.
        shape: logical sizes (a delegate weight's own dims); ``None`` for an
            untyped blob.
        nbytes: bytes stored.
        source: the name of the file holding the bytes.
        offset: the byte offset of the first byte in that file.
        fqn: the fully qualified name the program records, or ``None``.
        key: the named-data, ``.ptd`` or ``.ptn`` key, or ``None``.
        checkpoint_names: keys of the ``names=`` checkpoint with these bytes.
        users: the instructions (or delegate nodes) that use it.
        method: the method whose tree holds it, or ``None``.
        links: every path of the same bytes in the tree.
        entry: its whole ``index.json`` entry (``{}`` where none lists it).
    """

    __slots__ = (
        "path",
        "name",
        "dtype",
        "numpy_dtype",
        "shape",
        "nbytes",
        "source",
        "offset",
        "fqn",
        "key",
        "checkpoint_names",
        "users",
        "method",
        "links",
        "npy",
        "entry",
        "_ino",
    )

    def __init__(self, raw: Dict[str, Any]) -> None:
        entry = raw.get("entry") or {}
        self.path: str = raw["path"]
        self.dtype: Optional[str] = raw["dtype"]
        self.shape: Optional[tuple] = None if raw["shape"] is None else tuple(raw["shape"])
        self._ino: int = raw["ino"]
        self.nbytes: int = raw["nbytes"]
        self.source: str = raw["source"]
        self.offset: int = raw["offset"]
        self.links: List[str] = raw["links"]
        self.npy: Optional[str] = raw["npy"]
        self.entry: Dict[str, Any] = entry
        self.fqn: Optional[str] = entry.get("fqn")
        self.key: Optional[str] = entry.get("key")
        self.checkpoint_names: List[str] = entry.get("checkpoint_names") or []
        self.users: List[Any] = entry.get("users") or entry.get("used_by") or []
        self.numpy_dtype: Optional[str] = entry.get("numpy_dtype")
        parts = self.path.split("/")
        self.method: Optional[str] = (
            parts[parts.index("methods") + 1]
            if "methods" in parts[:-1] and parts.index("methods") + 1 < len(parts) - 1
            else None
        )
        self.name: Optional[str] = (
            self.fqn
            or self.key
            or (self.checkpoint_names[0] if self.checkpoint_names else None)
        )

    def __repr__(self) -> str:
        shape = "" if self.shape is None else "[" + ", ".join(str(d) for d in self.shape) + "]"
        named = f" {self.name!r}" if self.name else ""
        return (
            f"<TensorInfo {self.path}{named} {self.dtype or 'bytes'}{shape} "
            f"{self.nbytes} bytes at {self.source}:{self.offset}>"
        )


class _ArrayView:
    """What a zero-copy array is made from: the mapped bytes, described by
    ``__array_interface__``. It holds the map open; arrays keep it as their
    ``.base``."""

    __slots__ = ("__array_interface__", "memory")

    def __init__(self, memory: "_ptefs.Memory", dtype: Any, shape: tuple) -> None:
        self.memory = memory
        self.__array_interface__ = {
            "version": 3,
            "data": (memory.address, True),  # read-only
            "shape": shape,
            "typestr": dtype.str,
            "descr": dtype.descr,
        }


def _npy_header(prefix: bytes):
    import numpy as np

    buf = io.BytesIO(prefix)
    version = np.lib.format.read_magic(buf)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf)
    return tuple(shape), fortran, dtype


class File:
    """Files opened by :func:`open`: their tree, tensors and reports.

    Paths are tree paths relative to the root, ``/``-separated, as
    ``ptefs ls`` prints them (``""`` is the root). Use it as a context
    manager, or call :meth:`close`; arrays made by :meth:`numpy` stay valid
    after closing (each keeps its map).
    """

    def __init__(self, tree: "_ptefs.Tree", keep: Any = None) -> None:
        self._tree: Optional[_ptefs.Tree] = tree
        self._keep = keep
        self._tensors: Optional[Dict[str, TensorInfo]] = None

    # -- lifetime -----------------------------------------------------------
    def close(self) -> None:
        """Drops the tree (arrays already made keep their own maps)."""
        self._tree = None
        self._tensors = None
        if self._keep is not None:
            os.close(self._keep)
            self._keep = None

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    @property
    def tree(self) -> "_ptefs.Tree":
        if self._tree is None:
            raise Error("the file is closed")
        return self._tree

    def __repr__(self) -> str:
        if self._tree is None:
            return "<ptefs.File closed>"
        names = ", ".join(s[0] for s in self._tree.sources())
        return f"<ptefs.File {names}>"

    # -- the tree -----------------------------------------------------------
    @property
    def messages(self) -> List[str]:
        """Warnings and notes from opening (what ``ptefs`` prints on stderr)."""
        return self.tree.messages()

    @property
    def sources(self) -> List[Dict[str, Any]]:
        """The files opened: ``name``, ``path`` (URLs redacted), ``size``, ``remote``."""
        return [
            {"name": n, "path": p, "size": s, "remote": r}
            for n, p, s, r in self.tree.sources()
        ]

    def ls(self, path: str = "", recursive: bool = False) -> List[str]:
        """Names in directory ``path`` (sorted), or with ``recursive`` every
        path under it, relative to the root; directories end with ``/``."""
        path = path.strip("/")
        if recursive:
            return [p + "/" if d else p for p, d in self.tree.walk(path) if p != path]
        return [n + "/" if d else n for n, d in self.tree.listdir(path)]

    def stat(self, path: str) -> Dict[str, Any]:
        """``type`` (``"file"``/``"directory"``), ``size``, ``mode``
        (``st_mode``), ``nlink``, ``ino``, ``uid``, ``gid`` and ``xattrs``
        (the ``user.ptefs.*`` attributes: ``offset``, ``source``, and for
        tensors ``dtype`` and ``shape``; values as bytes)."""
        return self.tree.stat(path.strip("/"))

    def exists(self, path: str) -> bool:
        """True when ``path`` is in the tree."""
        try:
            self.tree.stat(path.strip("/"))
            return True
        except NotFound:
            return False

    def read(self, path: str, offset: int = 0, size: Optional[int] = None) -> bytes:
        """The bytes of file ``path`` (or ``size`` of them from ``offset``), as
        ``ptefs cat`` writes them."""
        return self.tree.read(path.strip("/"), offset, size)

    def json(self, path: str) -> Any:
        """File ``path`` (one of the tree's ``.json`` files) parsed."""
        return _json.loads(self.read(path))

    def text(self, path: str) -> str:
        """File ``path`` decoded as UTF-8 (``code.txt``, ``README.txt``)."""
        return self.read(path).decode("utf-8")

    # -- weights ------------------------------------------------------------
    def weights_path(self, of: str = "") -> str:
        """The tree path of ``weights.safetensors``, every stored tensor of a
        program or data file as one safetensors file: the one at directory
        ``of`` (the root by default), or of the program under it (a bundled
        program's ``program/``)."""
        of = of.strip("/")
        for d in (of, f"{of}/program" if of else "program"):
            path = f"{d}/weights.safetensors" if d else "weights.safetensors"
            if self.exists(path):
                return path
        raise NotFound(f"{of or '(the root)'}: no weights.safetensors (not a program or data file)")

    def save_safetensors(self, path: Any, of: str = "") -> int:
        """Writes ``weights.safetensors`` (see :meth:`weights_path`) to file
        ``path`` in pieces of 64 MiB, so that weights larger than memory can
        be saved; returns the bytes written. Any safetensors reader loads
        it: ``safetensors.numpy.load_file(path)``."""
        src = self.weights_path(of)
        size = self.stat(src)["size"]
        done = 0
        with io.open(_path(path), "wb") as out:
            while done < size:
                chunk = self.read(src, done, min(64 << 20, size - done))
                if not chunk:
                    raise Error(f"{src}: ended at byte {done} of {size}")
                out.write(chunk)
                done += len(chunk)
        return done

    # -- tensors ------------------------------------------------------------
    def tensors(self, method: Optional[str] = None) -> Dict[str, TensorInfo]:
        """Every stored tensor once, by tree path: program constants, external
        tensors, ``.ptd`` entries, ``.ptn`` keys, decoded delegate weights
        (with the delegate's own dims and dtype), bundled test-set values.
        With ``method``, those of that method's tree only."""
        if self._tensors is None:
            raw = _json.loads(self.tree.tensors_json())
            self._tensors = {r["path"]: TensorInfo(r) for r in raw}
        if method is None:
            return dict(self._tensors)
        prefix = f"methods/{method}/"
        return {
            p: t for p, t in self._tensors.items() if p.startswith(prefix) or f"/{prefix}" in p
        }

    def tensor(self, name_or_path: str) -> TensorInfo:
        """The tensor at a tree path (any of its links, ``.bin`` or ``.npy``),
        or named ``name_or_path`` (FQN, key, checkpoint name) when that names
        one tensor's bytes."""
        tensors = self.tensors()
        p = name_or_path.strip("/")
        if p in tensors:
            return tensors[p]
        by_ino = self._by_ino()
        if self.exists(p):
            t = by_ino.get(self.tree.stat(p)["ino"])
            if t is not None:
                return t
            for t in tensors.values():
                if t.npy == p:
                    return t
        # A checkpoint key: by-name/ links it to the file holding its bytes.
        linked = "by-name/" + _ptefs.by_name(name_or_path)
        if self.exists(linked):
            t = by_ino.get(self.tree.stat(linked)["ino"])
            if t is not None:
                return t
        found = [
            t
            for t in tensors.values()
            if name_or_path in (t.fqn, t.key) or name_or_path in t.checkpoint_names
        ]
        places = {(t.source, t.offset, t.nbytes) for t in found}
        if len(places) == 1:
            return found[0]
        if len(places) > 1:
            raise Error(
                f"{name_or_path!r} names {len(places)} different tensors: "
                + ", ".join(t.path for t in found)
            )
        raise NotFound(f"{name_or_path}: no such tensor or path")

    def _by_ino(self) -> Dict[int, TensorInfo]:
        return {t._ino: t for t in self.tensors().values()}

    def numpy(self, name_or_path: str):
        """The tensor as a read-only NumPy array.

        ``name_or_path`` is a tree path (``.npy``, ``.bin`` or any link such as
        ``methods/forward/values/3``) or a name :meth:`tensor` accepts. For
        bytes stored contiguously in a local file the array views the file's
        memory map without copying (its ``.base`` keeps the map alive); bytes
        that are computed (bfloat16 scales widened to float32) or remote are
        copied. Types NumPy lacks (bfloat16, float8) come as their raw bits
        (``uint16``, ``uint8``); a tensor NumPy cannot describe at all comes
        as its raw bytes (``uint8``).
        """
        path = name_or_path.strip("/")
        if path.endswith((".npy", ".bin")):
            # The common case in one call: a tensor file NumPy can view.
            view = self.tree.npy_view(path)
            if view is not None:
                array = self._view(*view)
                if array is not None:
                    return array
        npy = None
        if path.endswith(".npy") and self.exists(path):
            npy = path
        elif path.endswith(".bin") and self.exists(path[:-4] + ".npy"):
            twin = path[:-4] + ".npy"
            if self.tree.stat(twin)["xattrs"].get("user.ptefs.offset") == self.tree.stat(
                path
            )["xattrs"].get("user.ptefs.offset"):
                npy = twin
        raw = None
        if npy is None:
            t = self.tensor(name_or_path)
            npy = t.npy
            raw = t.path
        if npy is None:
            return self._array(raw, typed=False)
        return self._array(npy, typed=True)

    @staticmethod
    def _view(descr: str, shape: tuple, fortran: bool, memory: "_ptefs.Memory"):
        """The array over ``memory`` a ``.npy`` header describes, or None
        when its bytes are not exactly what the header needs."""
        import numpy

        dtype = numpy.dtype(descr)
        shape = tuple(shape)
        if memory.nbytes == 0 or memory.nbytes != dtype.itemsize * _count(shape):
            return None
        if fortran:
            a = numpy.asarray(_ArrayView(memory, dtype, (memory.nbytes // dtype.itemsize,)))
            return a.reshape(shape, order="F")
        return numpy.asarray(_ArrayView(memory, dtype, shape))

    def _array(self, path: str, typed: bool):
        """File ``path`` as an array: a ``.npy`` when ``typed``, else raw bytes."""
        import numpy

        mapped = self.tree.mapped(path)
        if not typed:
            # Raw bytes: no type NumPy knows.
            if mapped is not None:
                return numpy.asarray(_ArrayView(mapped[1], numpy.dtype("u1"), (mapped[1].nbytes,)))
            return numpy.frombuffer(self.read(path), dtype="u1")
        if mapped is not None:
            prefix, memory = mapped
            shape, fortran, dtype = _npy_header(prefix)
            if memory.nbytes == 0 or memory.nbytes != dtype.itemsize * _count(shape):
                return numpy.load(io.BytesIO(self.read(path)), allow_pickle=False)
            if fortran:
                a = numpy.asarray(_ArrayView(memory, dtype, (memory.nbytes // dtype.itemsize,)))
                return a.reshape(shape, order="F")
            return numpy.asarray(_ArrayView(memory, dtype, shape))
        a = numpy.load(io.BytesIO(self.read(path)), allow_pickle=False)
        a.flags.writeable = False
        return a

    def torch(self, name_or_path: str):
        """The tensor as a ``torch.Tensor`` sharing :meth:`numpy`'s memory
        (read-only: do not write to it); bfloat16 as ``torch.bfloat16``.
        Needs torch installed."""
        import torch

        a = self.numpy(name_or_path)
        t = self.tensor(name_or_path)
        import warnings

        with warnings.catch_warnings():
            # The array is read-only; torch warns that it cannot enforce that.
            warnings.simplefilter("ignore", UserWarning)
            out = torch.from_numpy(a)
        if t.dtype.upper() in ("BFLOAT16", "BF16") and out.dtype == torch.uint16:
            out = out.view(torch.bfloat16)
        elif t.dtype.upper() in ("BFLOAT16", "BF16") and out.dtype == torch.int16:
            out = out.view(torch.bfloat16)
        return out

    # -- reports ------------------------------------------------------------
    def inspect(self, top: Optional[int] = None) -> Dict[str, Any]:
        """What ``ptefs inspect --json [--top N]`` prints for the (first) file,
        as a dict: methods, operators, tensors, segments, delegates,
        composition."""
        return _json.loads(self.tree.inspect_json(top))

    def check(
        self,
        runtime: Union[None, str, Sequence[str]] = None,
        memory_limit: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Will the (first) file load and run on ``runtime``? The dict ``ptefs
        check --json`` prints: ``ok``, each method's verdict with the
        runtime's own log lines and error code, ``problems`` and
        ``warnings``. ``runtime`` is a built-in spec name
        (``executorch-1.5.1``, the default, or ``portable``), a spec file's
        path, or a list of them, which add up."""
        specs = [runtime] if isinstance(runtime, str) else list(runtime or [])
        return _json.loads(self.tree.check_json(specs, memory_limit))

    def report(self, html: Optional[str] = None) -> Dict[str, Any]:
        """The size, coverage and statistics report: the dict ``ptefs report
        --json`` prints (``total_bytes``, ``by_dtype``, ``by_layer``,
        ``by_backend``, ``duplicates``, ``coverage``, ``quantization``,
        ``stats``, ``memory``). With ``html``, also writes the self-contained
        page ``ptefs report -o`` writes to that path. Reads every byte of the
        files (a remote file is fetched whole).
        """
        text, page = self.tree.report_json(html is not None)
        if html is not None and page is not None:
            with io.open(html, "w", encoding="utf-8") as out:
                out.write(page)
        return _json.loads(text)


def _count(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def open(
    source: Union[PathLike, bytes, bytearray, memoryview, Sequence[PathLike]],
    data: Union[None, PathLike, Sequence[PathLike]] = None,
    names: Optional[PathLike] = None,
    auto_data: bool = True,
    recursive: bool = False,
    profile: Optional[PathLike] = None,
    debug_buffer: Optional[PathLike] = None,
    etrecord: Optional[PathLike] = None,
) -> File:
    """Opens ExecuTorch files and lays them out as ptefs's tree.

    Args:
        source: a ``.pte``, ``.ptd``, ``.bpte``, ``.ptn`` or ``.etdp`` file or an ETRecord, a
            directory of them (each shown in a directory of its own), an
            http(s)://, s3://, gs:// or az:// URL of one, a list of these, or
            the bytes of one file (any bytes-like object; copied once into
            an anonymous memory file).
        data: a ``.ptd`` path (or a list of them) whose tensors and named
            blobs the programs may use, as ``--data``.
        names: a checkpoint (safetensors, or JSON ``{name: sha256}``) whose
            keys name the tensors holding their bytes, as ``--names``.
        auto_data: attach the ``.ptd`` files beside a program that hold data
            it needs, and the only ``.etdp`` beside it that profiles it
            (``--no-auto-data`` turns this off).
        recursive: descend into subdirectories of directory sources.
        profile: an ETDump (``.etdp``) of a run of the program, joined with
            its instructions under ``methods/<m>/profile/``, as
            ``--profile``.
        debug_buffer: the debug buffer the run wrote beside its ETDump, as
            ``--debug-buffer``; by default ``<name>.debug.bin`` beside it.
            The tensors the run logged are then
            ``methods/<m>/profile/outputs/<run>/*.npy``.
        etrecord: the program's ETRecord, joined with its instructions
            (``methods/<m>/source.tsv``, and module paths and source lines
            in ``code.txt``), as ``--etrecord``; by default
            ``<stem>.etrecord`` or ``etrecord.bin`` beside it.

    Returns:
        a :class:`File`; use it as a context manager.

    Raises:
        FormatError: a file is not a valid ExecuTorch file (``offset`` says
            where, when the message names one).
        SourceError: a file cannot be opened or read.
        Error: anything else the ``ptefs`` command would report.
    """
    if data is None:
        data_list: List[str] = []
    elif isinstance(data, (str, bytes, os.PathLike)):
        data_list = [_path(data)]
    else:
        data_list = [_path(d) for d in data]
    name_path = None if names is None else _path(names)
    keep = None
    if isinstance(source, (bytes, bytearray, memoryview)):
        keep = os.memfd_create("ptefs", os.MFD_CLOEXEC)
        with memoryview(source) as view, os.fdopen(os.dup(keep), "wb") as f:
            f.write(view.cast("B"))
        inputs = [f"/proc/self/fd/{keep}"]
        auto_data = False
    elif isinstance(source, (str, os.PathLike)):
        inputs = [_path(source)]
    else:
        inputs = [_path(s) for s in source]
    try:
        tree = _ptefs.Tree(
            inputs,
            data_list,
            name_path,
            auto_data,
            recursive,
            None if profile is None else _path(profile),
            None if debug_buffer is None else _path(debug_buffer),
            None if etrecord is None else _path(etrecord),
        )
    except Error as e:
        if keep is not None:
            os.close(keep)
            # Bytes have no name: say so rather than name the memory file.
            e.args = tuple(str(a).replace(inputs[0], "<bytes>") for a in e.args)
            if getattr(e, "path", None) == inputs[0]:
                e.path = "<bytes>"
        raise
    except BaseException:
        if keep is not None:
            os.close(keep)
        raise
    return File(tree, keep)


def diff(
    a: PathLike,
    b: PathLike,
    data: Union[None, PathLike, Sequence[PathLike]] = None,
    names: Optional[PathLike] = None,
    auto_data: bool = True,
    only: Optional[Sequence[str]] = None,
    atol: float = 0.0,
    rtol: float = 0.0,
    threshold: float = 10.0,
    program: Optional[PathLike] = None,
) -> Dict[str, Any]:
    """Compares two files as ``ptefs diff --json`` does and returns its report.

    Two ETRecords are compared graph by graph (nodes added, removed or
    changed, state-dict and constant tensors), as the command compares them;
    an ETRecord and a file of another kind raise ``ptefs.Error``.

    Two ETDumps (``.etdp``) are compared as a speed report: per instruction
    and per operator the mean time per call in ``a`` (the baseline) and
    ``b``, B - A and B / A (``method_execute``, ``instructions``,
    ``operators``); ``report["exceeded"]`` is true where the command exits
    with 1, when ``b`` is slower than ``a`` by more than ``threshold``
    anywhere. ``data``, ``names``, ``only``, ``atol`` and ``rtol`` do not
    apply to them.

    Args:
        a, b: the two files (paths or URLs); ``b`` is the reference.
        data: ``.ptd`` files attached to both, as ``--data``.
        names: a checkpoint naming tensors, as ``--names``.
        auto_data: attach the data files found beside each.
        only: sections to compare (``file``, ``methods``, ``io``,
            ``instructions``, ``memory``, ``delegates``, ``tensors``);
            not for two ETRecords, which are compared whole.
        atol, rtol: elements within ``atol + rtol * |b|`` count as equal.
        threshold: for two ETDumps, as ``--threshold``: the slowdown, in
            percent of ``a``'s time, beyond which a row is slower.
        program: for two ETDumps, as ``--program``: the program that ran
            (a ``.pte`` or ``.bpte`` path), whose operators name the
            instructions; without it they are named by their kernels'
            events. With files that are not two ETDumps it raises
            ``ptefs.Error``.

    Returns:
        the report as a dict; ``report["differ"]`` says whether they differ
        (``report["exceeded"]`` for two ETDumps).
    """
    if data is None:
        data_list: List[str] = []
    elif isinstance(data, (str, bytes, os.PathLike)):
        data_list = [_path(data)]
    else:
        data_list = [_path(d) for d in data]
    out, _differ = _ptefs.diff(
        _path(a),
        _path(b),
        data_list,
        None if names is None else _path(names),
        auto_data,
        list(only or []),
        float(atol),
        float(rtol),
        float(threshold),
        None if program is None else _path(program),
    )
    return _json.loads(out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the ``ptefs`` command (every subcommand, ``mount`` included) in
    this process with ``argv`` (default: ``sys.argv``) and returns its exit
    status. The ``ptefs`` script the wheel installs calls this."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["ptefs"]
    args[0] = "ptefs"
    sys.stdout.flush()
    sys.stderr.flush()
    return _ptefs.main(args)
