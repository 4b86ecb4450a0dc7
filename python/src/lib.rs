//! `ptefs._ptefs`: the native part of the `ptefs` Python package, a thin
//! layer over the ptefs library. Files are opened, parsed and laid out by
//! [`ptefs::view::View`] and served by [`ptefs::fs::Fs`], exactly as the
//! mount and the `ls`/`cat`/`stat` commands serve them; reports are the
//! library's serialisable values, handed over as JSON. Nothing here parses
//! a file format. The Python package (`python/ptefs/`) builds the public
//! API (`ptefs.open`, NumPy arrays) on these few calls.
//!
//! The GIL is released while files are opened, parsed, laid out, read or
//! compared; every library error becomes a `ptefs.Error` subclass.

mod errors;
mod memory;
mod reports;
mod tensors;
mod tree;

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the `ptefs` command line `args` (the program's name first) in this
/// process and returns its exit status; `mount` forks its daemon from here.
#[pyfunction]
fn main(py: Python<'_>, args: Vec<OsString>) -> i32 {
    py.detach(|| ptefs::cli::main_with_args(args))
}

/// The name under `by-name/` of checkpoint key `key`.
#[pyfunction]
fn by_name(key: &str) -> String {
    ptefs::tree::file_names::by_name(key)
}

/// The module.
#[pymodule]
fn _ptefs(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", py.get_type::<errors::Error>())?;
    m.add("FormatError", py.get_type::<errors::FormatError>())?;
    m.add("NotFound", py.get_type::<errors::NotFound>())?;
    m.add("SourceError", py.get_type::<errors::SourceError>())?;
    m.add_class::<tree::Tree>()?;
    m.add_class::<memory::Memory>()?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(by_name, m)?)?;
    m.add_function(wrap_pyfunction!(reports::diff, m)?)?;
    Ok(())
}
