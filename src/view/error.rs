//! Why a file could not be shown.

use std::io;
use std::path::PathBuf;

use crate::format;
use crate::source::SourceError;
use crate::source::redact::shown;

/// A file that could not be shown, and why.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// It cannot be opened or is not a regular file.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A directory could not be listed.
    #[error("{}: {error}", shown(path))]
    Dir {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// It is not a valid file of any kind this reads.
    #[error("{}: {error}", shown(path))]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        error: format::Error,
    },
    /// Two files would have the same name in the tree.
    #[error(
        "{}: has the same base name as {}; each file in one tree needs its own name",
        shown(path),
        shown(other)
    )]
    SameName {
        /// The later file.
        path: PathBuf,
        /// The earlier one.
        other: PathBuf,
    },
    /// A `--names` checkpoint that cannot be read.
    #[error("{}: {error}", shown(path))]
    Names {
        /// The checkpoint.
        path: PathBuf,
        /// What is wrong.
        error: String,
    },
    /// An `--etrecord` file that is not an ETRecord.
    #[error(
        "{}: is given with --etrecord but is not an ETRecord (a zip with an ETRECORD_V0 member): {why}",
        shown(path)
    )]
    NotEtRecord {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// A `--profile` file that is not an ETDump.
    #[error(
        "{}: is given with --profile but is not an ETDump (.etdp): {why}",
        shown(path)
    )]
    NotProfile {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// A `--data` file that is not a data file.
    #[error("{}: is given with --data but is not a data file (.ptd)", shown(path))]
    NotData {
        /// The file.
        path: PathBuf,
    },
    /// Nothing to show.
    #[error("{}: holds no program, data or bundled program file", shown(path))]
    Empty {
        /// The directory (or first input).
        path: PathBuf,
    },
    /// Nothing valid to show.
    #[error(
        "{}: holds no valid program, data or bundled program file",
        shown(path)
    )]
    NoneValid {
        /// The directory (or first input).
        path: PathBuf,
    },
}
