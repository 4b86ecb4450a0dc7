//! Source files: opened once, mapped read-only, watched for changes.
//!
//! The map is the only way file bytes reach the tree. After the tree is
//! built, ptefs itself does not touch mapped bytes: the kernel copies them
//! (into a FUSE reply or to stdout), so a file truncated under a mount
//! makes that copy fail with `EFAULT` rather than killing the process with
//! `SIGBUS`. The few reads that must assemble bytes in memory use `pread`.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use std::sync::Arc;

use memmap2::Mmap;

use crate::format::Span;

/// An open, mapped source file.
#[derive(Debug)]
pub struct Source {
    /// The path it was opened by.
    pub path: PathBuf,
    /// The base name shown in the tree.
    pub name: String,
    file: File,
    map: Option<Arc<Mmap>>,
    /// Identity, size, times and mode when opened.
    pub opened: Stamp,
}

/// What identifies a file's contents cheaply, with its owner and mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Bytes.
    pub len: u64,
    /// Modification time, seconds and nanoseconds.
    pub mtime: (i64, i64),
    /// Change time, seconds and nanoseconds.
    pub ctime: (i64, i64),
    /// Names the file has.
    pub nlink: u64,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Type and permission bits.
    pub mode: u32,
}

impl Stamp {
    fn of(m: &Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            nlink: m.nlink(),
            uid: m.uid(),
            gid: m.gid(),
            mode: m.mode(),
        }
    }

    /// The modification time.
    pub fn mtime(&self) -> SystemTime {
        let (s, ns) = self.mtime;
        let ns = Duration::from_nanos(ns.clamp(0, 999_999_999) as u64);
        match u64::try_from(s) {
            Ok(s) => SystemTime::UNIX_EPOCH + Duration::from_secs(s) + ns,
            Err(_) => SystemTime::UNIX_EPOCH - Duration::from_secs(s.unsigned_abs()) + ns,
        }
    }
}

/// Why a source cannot be used, or no longer matches its tree.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Opening or reading its status failed.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// Not a regular file (after following symbolic links).
    #[error("{path}: is {what}, not a regular file")]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a directory", "a FIFO", ...).
        what: &'static str,
    },
    /// Its size changed since it was opened.
    #[error("{name}: changed size from {from} to {to} bytes since it was opened")]
    Resized {
        /// The source's name.
        name: String,
        /// Size when opened.
        from: u64,
        /// Size now.
        to: u64,
    },
    /// Its contents may have changed since it was opened.
    #[error("{name}: was modified since it was opened ({what} changed)")]
    Modified {
        /// The source's name.
        name: String,
        /// Which of its times moved.
        what: &'static str,
    },
}

/// What a file that is not a regular file is, for messages.
fn describe(t: std::fs::FileType) -> &'static str {
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

impl Source {
    /// Opens and maps `path`, which must be a regular file (symbolic links
    /// are followed).
    pub fn open(path: &Path) -> Result<Source, SourceError> {
        let (file, meta) = open_regular(path)?;
        let map = if meta.len() == 0 {
            None
        } else {
            // SAFETY: the map is read-only and private to this process. Another
            // process may still truncate or rewrite the file; this module's
            // contract (see above) is that after parsing, mapped bytes are only
            // handed to the kernel, which reports vanished pages as EFAULT.
            Some(Arc::new(unsafe { Mmap::map(&file) }.map_err(|error| {
                SourceError::Io {
                    path: path.to_owned(),
                    error,
                }
            })?))
        };
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(Source {
            path: path.to_owned(),
            name,
            file,
            map,
            opened: Stamp::of(&meta),
        })
    }

    /// The whole file as mapped.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().map_or(&[], |m| &m[..])
    }

    /// The whole file as mapped, shared with the files of the tree that are
    /// rendered from it when first read.
    pub fn shared_map(&self) -> Option<Arc<Mmap>> {
        self.map.clone()
    }

    /// The mapped bytes of `span`, which must lie within the file as opened.
    pub fn slice(&self, span: Span) -> &[u8] {
        span.bytes(self.bytes())
    }

    /// `Ok` while the open file still has the identity, size and times it
    /// had when opened (to the nanosecond). The change time also moves when
    /// the file is renamed, chmod-ed or deleted; a deleted file (no names
    /// left) can no longer be rewritten, so there a moved change time alone
    /// is not taken for a change: a mount keeps serving a deleted source.
    pub fn check_unchanged(&self) -> Result<(), SourceError> {
        let now = self.file.metadata().map_err(|error| SourceError::Io {
            path: self.path.clone(),
            error,
        })?;
        let (was, now) = (self.opened, Stamp::of(&now));
        let modified = |what| SourceError::Modified {
            name: self.name.clone(),
            what,
        };
        if now.len != was.len {
            return Err(SourceError::Resized {
                name: self.name.clone(),
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
