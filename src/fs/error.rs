//! What a filesystem call can fail with, and the one place that says which
//! errno each failure is.

use crate::tree::Ino;

/// Why a filesystem call failed.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// No such inode, or no such name in a directory.
    #[error("no such file or directory")]
    NotFound,
    /// A directory operation on a file.
    #[error("inode {0} is not a directory")]
    NotDir(Ino),
    /// A file operation on a directory.
    #[error("inode {0} is a directory")]
    IsDir(Ino),
    /// Anything that would write.
    #[error("the tree is read-only")]
    ReadOnly,
    /// A write to a file that serves no stored tensor as it is stored
    /// (rendered files, segments, payloads), or to a remote source.
    #[error("{why}")]
    NotStored {
        /// What the file is.
        why: String,
    },
    /// A write past a file's end.
    #[error("{path}: a write up to byte {end} goes past its end ({size} bytes)")]
    PastEnd {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// Where the write would end.
        end: u64,
    },
    /// A change of a file's size.
    #[error("{path}: its size is {from} bytes and cannot become {to}")]
    Resize {
        /// The file.
        path: String,
        /// The size it has.
        from: u64,
        /// The size asked for.
        to: u64,
    },
    /// A write that changes a `.npy` header.
    #[error("{path}: a write changes its .npy header (dtype, shape and layout stay as stored)")]
    Header {
        /// The file.
        path: String,
    },
    /// Creating, removing or renaming a name.
    #[error("{op} {name:?}: the tree's names are fixed")]
    NamesFixed {
        /// The operation.
        op: String,
        /// The name.
        name: String,
    },
    /// A change of mode, owner or times.
    #[error("{path}: only a file's bytes can change, not its mode, owner or times")]
    AttributesFixed {
        /// The file.
        path: String,
    },
    /// The edit journal could not take a write or make it durable.
    #[error("{why}")]
    Journal {
        /// Why.
        why: String,
        /// ENOSPC or EDQUOT for a full disk, EIO otherwise.
        errno: i32,
    },
    /// A file opened with `O_TRUNC` closed before it was written whole.
    #[error(
        "{path}: opened to be written whole (O_TRUNC), but closed with {written} of its {size} bytes written; the writes are dropped"
    )]
    Partial {
        /// The file.
        path: String,
        /// Bytes written.
        written: u64,
        /// Its size.
        size: u64,
    },
    /// Saving the edited file failed.
    #[error("saving: {why}")]
    Commit {
        /// Why.
        why: String,
    },
    /// Execute permission on a file: nothing here runs.
    #[error("files in the tree are not executable")]
    NotExecutable,
    /// An extended attribute the file does not have.
    #[error("no such extended attribute")]
    NoAttribute,
    /// An extended attribute namespace the tree keeps nothing in: all but
    /// `user.*` (no security labels, no ACLs).
    #[error("extended attributes of this namespace are not supported")]
    UnsupportedAttribute,
    /// The source file changed since the tree was built, so its bytes no
    /// longer match the tree.
    #[error(transparent)]
    SourceChanged(#[from] crate::source::SourceError),
    /// A file that cannot be made within its format's limits (a
    /// `weights.safetensors` of too many tensors, or too large a header).
    #[error("{why}")]
    TooLarge {
        /// What is too large.
        why: String,
    },
    /// A rendered file that cannot be made from its source.
    #[error("cannot render this file: {why}")]
    Unrenderable {
        /// Why.
        why: String,
    },
    /// Reading the source failed.
    #[error("{source_name}: reading bytes {offset}..{end}: {error}")]
    Read {
        /// The source's name.
        source_name: String,
        /// First byte asked for.
        offset: u64,
        /// One past the last byte.
        end: u64,
        /// What the system said.
        error: std::io::Error,
    },
}

impl FsError {
    /// The errno a kernel request answers with.
    pub fn errno(&self) -> i32 {
        match self {
            FsError::NotFound => libc::ENOENT,
            FsError::NotDir(_) => libc::ENOTDIR,
            FsError::IsDir(_) => libc::EISDIR,
            FsError::ReadOnly | FsError::NotStored { .. } => libc::EROFS,
            FsError::PastEnd { .. } | FsError::TooLarge { .. } => libc::EFBIG,
            FsError::Resize { .. } | FsError::Header { .. } | FsError::Partial { .. } => {
                libc::EINVAL
            }
            FsError::NamesFixed { .. } | FsError::AttributesFixed { .. } => libc::EPERM,
            FsError::Journal { errno, .. } => *errno,
            FsError::Commit { .. } => libc::EIO,
            FsError::NotExecutable => libc::EACCES,
            FsError::NoAttribute => libc::ENODATA,
            FsError::UnsupportedAttribute => libc::EOPNOTSUPP,
            FsError::SourceChanged(_) | FsError::Read { .. } | FsError::Unrenderable { .. } => {
                libc::EIO
            }
        }
    }
}

/// Result of a filesystem call.
pub type Result<T> = std::result::Result<T, FsError>;
