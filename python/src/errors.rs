//! The exceptions the module raises, and the one place that says which
//! library error becomes which. The message is the one the `ptefs` command
//! prints (without its `ptefs: ` prefix).

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::{PyErr, create_exception};

use ptefs::fs::FsError;
use ptefs::source::redact::shown;
use ptefs::view::OpenError;

create_exception!(
    ptefs,
    Error,
    PyException,
    "Any failure of ptefs; its message is the one the ptefs command prints."
);
create_exception!(
    ptefs,
    FormatError,
    Error,
    "A file that is not a valid ExecuTorch file. `path` is the file, `offset` the byte \
     offset at fault where the message names one (else None)."
);
create_exception!(
    ptefs,
    NotFound,
    Error,
    "A path that is not in the tree, or a tensor name that names no tensor."
);
create_exception!(
    ptefs,
    SourceError,
    Error,
    "A source that cannot be opened or read, or that changed since it was opened."
);

/// The exception for a failure to open what was asked for.
pub fn open_error(py: Python<'_>, e: OpenError) -> PyErr {
    match e {
        OpenError::Source(_) | OpenError::Dir { .. } => SourceError::new_err(e.to_string()),
        OpenError::Format {
            ref path,
            ref error,
        } => format_error(py, e.to_string(), Some(shown(path)), error.offset()),
        e => Error::new_err(e.to_string()),
    }
}

/// A [`FormatError`] with its `path` and `offset`.
pub fn format_error(
    py: Python<'_>,
    message: String,
    path: Option<String>,
    offset: Option<u64>,
) -> PyErr {
    let err = FormatError::new_err(message);
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short
    // of memory exhaustion, which Python reports on its own.
    let _ = value.setattr("path", path);
    let _ = value.setattr("offset", offset);
    err
}

/// The exception for a failed filesystem call on `path`.
pub fn fs_error(path: &str, e: FsError) -> PyErr {
    let message = format!("{}: {e}", ptefs::escape::escape(path));
    match e {
        FsError::NotFound => NotFound::new_err(message),
        FsError::SourceChanged(_) | FsError::Read { .. } => SourceError::new_err(message),
        _ => Error::new_err(message),
    }
}
