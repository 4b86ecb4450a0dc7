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
            FsError::ReadOnly => libc::EROFS,
            FsError::NotExecutable => libc::EACCES,
            FsError::NoAttribute => libc::ENODATA,
            FsError::UnsupportedAttribute => libc::EOPNOTSUPP,
            FsError::SourceChanged(_) | FsError::Read { .. } => libc::EIO,
        }
    }
}

/// Result of a filesystem call.
pub type Result<T> = std::result::Result<T, FsError>;
