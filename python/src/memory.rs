//! A span of a local source's memory map, held open for as long as Python
//! holds it: what zero-copy NumPy arrays view.

use pyo3::prelude::*;

use ptefs::source::MappedBytes;

/// Bytes of a mapped local file, kept mapped while this object lives. The
/// Python package wraps it in an object with `__array_interface__`, whose
/// arrays keep it (and so the map) alive as their `.base`.
#[pyclass(frozen, module = "ptefs._ptefs")]
pub struct Memory {
    map: MappedBytes,
    offset: usize,
    len: usize,
}

impl Memory {
    /// `len` bytes at `offset` of `map`, or `None` when they are not all
    /// within it (a file shorter than the tree says is read, not viewed).
    pub fn new(map: MappedBytes, offset: u64, len: u64) -> Option<Memory> {
        let offset = usize::try_from(offset).ok()?;
        let len = usize::try_from(len).ok()?;
        map.as_ref().get(offset..offset.checked_add(len)?)?;
        Some(Memory { map, offset, len })
    }
}

#[pymethods]
impl Memory {
    /// The address of the first byte, for `__array_interface__`.
    #[getter]
    fn address(&self) -> usize {
        // In bounds: checked when made, and the map never changes length.
        self.map.as_ref()[self.offset..].as_ptr() as usize
    }

    /// The number of bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.len
    }

    /// The byte offset of the first byte in the source file.
    #[getter]
    fn offset(&self) -> usize {
        self.offset
    }

    fn __len__(&self) -> usize {
        self.len
    }

    fn __repr__(&self) -> String {
        format!(
            "<ptefs mapped bytes {}..{}>",
            self.offset,
            self.offset + self.len
        )
    }
}
