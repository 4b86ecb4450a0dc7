//! A local source file: opened once, mapped read-only, watched for
//! changes through its status.
//!
//! The map is how file bytes reach the tree. Served bytes are copied by
//! the kernel (into a FUSE reply or to stdout), so a file truncated under
//! a mount makes that copy fail with `EFAULT`; reads that assemble bytes
//! in memory use `pread`. What ptefs reads through the map itself
//! (parsing, rendering) is guarded ([`super::guard`]): a vanished page
//! reads as zeros and marks the file as changed.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::Path;

use std::sync::Arc;

use memmap2::Mmap;

use super::guard::GuardedMap;

use super::{SourceError, Stamp};
use crate::format::Span;

/// An open, mapped local file.
#[derive(Debug)]
pub struct LocalFile {
    file: File,
    map: Option<Arc<GuardedMap>>,
}

/// What a file that is not a regular file is, for messages.
pub fn describe(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading if it is a regular file (following symbolic
/// links), without ever blocking: a FIFO or device is refused, not waited
/// on.
pub fn open_regular(path: &Path) -> Result<(File, Metadata), SourceError> {
    let io = |error| SourceError::Io {
        path: path.to_owned(),
        error,
    };
    // Look before opening: opening some devices has effects of its own.
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(SourceError::NotRegular {
            path: path.to_owned(),
            what: describe(meta.file_type()),
        });
    }
    // O_NONBLOCK: the path may have become a FIFO since it was looked at.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(SourceError::NotRegular {
            path: path.to_owned(),
            what: describe(meta.file_type()),
        });
    }
    Ok((file, meta))
}

impl LocalFile {
    /// Opens and maps `path`, which must be a regular file (symbolic links
    /// are followed), with its status when opened.
    pub fn open(path: &Path) -> Result<(LocalFile, Stamp), SourceError> {
        let (file, meta) = open_regular(path)?;
        let map = if meta.len() == 0 {
            None
        } else {
            // SAFETY: the map is read-only and private to this process. Another
            // process may still truncate or rewrite the file: the kernel
            // reports pages that vanish under its own copies as EFAULT, and
            // the guard answers those under this process's reads (see above).
            let map = unsafe { Mmap::map(&file) }.map_err(|error| SourceError::Io {
                path: path.to_owned(),
                error,
            })?;
            Some(Arc::new(GuardedMap::new(map)))
        };
        Ok((LocalFile { file, map }, Stamp::of(&meta)))
    }

    /// The whole file as mapped.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().map_or(&[], |m| &m[..])
    }

    /// The map, shared.
    pub fn shared_map(&self) -> Option<Arc<GuardedMap>> {
        self.map.clone()
    }

    /// `Ok` while the open file still has the identity, size and times it
    /// had when opened (to the nanosecond). The change time also moves when
    /// the file is renamed, chmod-ed or deleted; a deleted file (no names
    /// left) can no longer be rewritten, so there a moved change time alone
    /// is not taken for a change: a mount keeps serving a deleted source.
    pub fn check_unchanged(&self, path: &Path, name: &str, was: Stamp) -> Result<(), SourceError> {
        let now = self.file.metadata().map_err(|error| SourceError::Io {
            path: path.to_owned(),
            error,
        })?;
        let now = Stamp::of(&now);
        let modified = |what| SourceError::Modified {
            name: name.to_owned(),
            what,
        };
        if now.len != was.len {
            return Err(SourceError::Resized {
                name: name.to_owned(),
                from: was.len,
                to: now.len,
            });
        }
        if (now.dev, now.ino) != (was.dev, was.ino) {
            return Err(modified("identity"));
        }
        if now.mtime != was.mtime {
            return Err(modified("modification time"));
        }
        if now.ctime != was.ctime && now.nlink > 0 {
            return Err(modified("change time"));
        }
        // Truncated and grown back, with its times put back, in between.
        if self.map.as_ref().is_some_and(|m| m.faults() > 0) {
            return Err(SourceError::Vanished {
                name: name.to_owned(),
            });
        }
        Ok(())
    }

    /// Reads `span` with `pread`, which fails cleanly where the mapping
    /// would fault.
    pub fn read_span(&self, span: Span, out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        let len =
            usize::try_from(span.len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        out.resize(start + len, 0);
        let read = self.file.read_exact_at(&mut out[start..], span.offset);
        if read.is_err() {
            out.truncate(start);
        }
        read
    }
}
