"""Type stubs of the ptefs module (see the module's docstring)."""

import os
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

__version__: str

PathLike = Union[str, "os.PathLike[str]"]

class Error(Exception):
    """Any failure of ptefs; its message is the one the ptefs command prints."""

class FormatError(Error):
    """A file that is not a valid ExecuTorch file."""

    path: Optional[str]
    offset: Optional[int]

class NotFound(Error):
    """A path that is not in the tree, or a name that names no tensor."""

class SourceError(Error):
    """A source that cannot be opened or read, or changed since it was opened."""

class TensorInfo:
    path: str
    name: Optional[str]
    dtype: str
    numpy_dtype: Optional[str]
    shape: tuple
    nbytes: int
    source: str
    offset: int
    fqn: Optional[str]
    key: Optional[str]
    checkpoint_names: List[str]
    users: List[Any]
    method: Optional[str]
    links: List[str]
    npy: Optional[str]
    entry: Dict[str, Any]

class File:
    def close(self) -> None: ...
    def __enter__(self) -> "File": ...
    def __exit__(self, *exc: Any) -> None: ...
    @property
    def messages(self) -> List[str]: ...
    @property
    def sources(self) -> List[Dict[str, Any]]: ...
    def ls(self, path: str = "", recursive: bool = False) -> List[str]: ...
    def stat(self, path: str) -> Dict[str, Any]: ...
    def exists(self, path: str) -> bool: ...
    def read(self, path: str, offset: int = 0, size: Optional[int] = None) -> bytes: ...
    def json(self, path: str) -> Any: ...
    def text(self, path: str) -> str: ...
    def weights_path(self, of: str = "") -> str: ...
    def save_safetensors(self, path: Any, of: str = "") -> int: ...
    def tensors(self, method: Optional[str] = None) -> Dict[str, TensorInfo]: ...
    def tensor(self, name_or_path: str) -> TensorInfo: ...
    def numpy(self, name_or_path: str) -> np.ndarray: ...
    def torch(self, name_or_path: str) -> Any: ...
    def inspect(self, top: Optional[int] = None) -> Dict[str, Any]: ...
    def report(self, html: Optional[str] = None) -> Dict[str, Any]: ...

def open(
    source: Union[PathLike, bytes, bytearray, memoryview, Sequence[PathLike]],
    data: Union[None, PathLike, Sequence[PathLike]] = None,
    names: Optional[PathLike] = None,
    auto_data: bool = True,
    recursive: bool = False,
    profile: Optional[PathLike] = None,
    debug_buffer: Optional[PathLike] = None,
) -> File: ...
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
) -> Dict[str, Any]: ...
def main(argv: Optional[Sequence[str]] = None) -> int: ...
