//! Edits of stored bytes, and the writer that turns a source plus edits
//! (or a program plus a checkpoint) into a new, validated file.
//!
//! An edit is keyed by the byte range of the source it replaces, never by
//! the path it was made through: every name of the same stored bytes (a
//! method's tensor, `constants/<i>`, `named/<key>`) sees it. Sources are
//! never opened for writing; a new file is written beside its destination
//! and renamed over it only once it has been read back and validated, and
//! only over a destination that may be replaced (see [`destination`]).

pub mod cast;
pub mod checksums;
pub mod destination;
pub mod from_weights;
pub mod journal;
pub mod npy;
pub mod output;
pub mod overlay;
pub mod pack;
pub mod ptd;
pub mod ranges;
pub mod scalar;
pub mod target;
mod unnamed;
pub mod value;

pub use destination::Inputs;
pub use output::{Written, save, write_patched};
pub use ranges::{Changes, Edit, Edits};
pub use target::{Stored, stored};

use std::path::PathBuf;

/// Why an edit or an output cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The tree path names no file whose bytes are stored as they are
    /// served.
    #[error("{path}: {why}")]
    NotStored {
        /// The tree path.
        path: String,
        /// What the file is instead.
        why: String,
    },
    /// New bytes that do not fit the tensor they replace.
    #[error("{path}: {why}")]
    Mismatch {
        /// The tree path (and what was given for it).
        path: String,
        /// What differs.
        why: String,
    },
    /// Two edits of the same stored bytes disagree.
    #[error(
        "{first} and {second} are the same stored bytes ({source_name} bytes {offset}..{end}) and are given different values"
    )]
    Conflict {
        /// The first path.
        first: String,
        /// The second path.
        second: String,
        /// The source holding the bytes.
        source_name: String,
        /// Where the overlap starts.
        offset: u64,
        /// One past where it ends.
        end: u64,
    },
    /// An edit of bytes past the end of the source.
    #[error("{source_name}: an edit of bytes {offset}..{end} lies past its end ({len} bytes)")]
    PastEnd {
        /// The source.
        source_name: String,
        /// Where the edit starts.
        offset: u64,
        /// One past where it ends.
        end: u64,
        /// The source's size.
        len: u64,
    },
    /// Reading an input or writing the output failed.
    #[error("{}: {error}", crate::source::redact::shown(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The source changed since it was read.
    #[error(
        "{}: changed since it was opened; nothing was written",
        crate::source::redact::shown(path)
    )]
    Changed {
        /// The source.
        path: PathBuf,
    },
    /// The source changed while the new file was being made from it.
    #[error(
        "{}: changed while it was copied; nothing was written",
        crate::source::redact::shown(path)
    )]
    ChangedWhileCopied {
        /// The source.
        path: PathBuf,
    },
    /// An output that must not be replaced by the file written.
    #[error("{}: {why}; nothing was written", crate::source::redact::shown(path))]
    Refused {
        /// The output.
        path: PathBuf,
        /// What it is, and why that forbids replacing it.
        why: String,
    },
    /// The written file does not open as a valid file of its kind.
    #[error(
        "{}: the new file does not validate, so it was not written: {error}",
        crate::source::redact::shown(path)
    )]
    Invalid {
        /// The destination.
        path: PathBuf,
        /// What the reader said.
        error: String,
    },
    /// An input that cannot be opened.
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    /// A packed data file cannot be made.
    #[error("{0}")]
    Pack(String),
}

impl EditError {
    /// An I/O error about `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> EditError {
        let path = path.into();
        move |error| EditError::Io { path, error }
    }
}

/// Results of this module.
pub type Result<T> = std::result::Result<T, EditError>;
