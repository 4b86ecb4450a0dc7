//! Source files: opened once, mapped read-only, watched for changes.
//!
//! The map is the only way file bytes reach the tree. After the tree is
//! built, ptefs itself does not touch mapped bytes: the kernel copies them
//! (into a FUSE reply or to stdout), so a file truncated under a mount
//! makes that copy fail with `EFAULT` rather than killing the process with
//! `SIGBUS`. The few reads that must assemble bytes in memory use `pread`.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

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
    map: Option<Mmap>,
    /// Size, inode and times when opened.
    pub opened: Stamp,
}

/// What identifies a file's contents cheaply: size and modification time.
/// (Not the change time: deleting or renaming the file moves that, and
/// neither changes the bytes this process has open.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Bytes.
    pub len: u64,
    /// Modification time.
    pub mtime: SystemTime,
}

impl Stamp {
    fn of(m: &Metadata) -> Stamp {
        Stamp {
            len: m.len(),
            mtime: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        }
    }
}

impl Source {
    /// Opens and maps `path`. Directories and other non-regular files are
    /// refused.
    pub fn open(path: &Path) -> io::Result<Source> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                if meta.is_dir() {
                    "is a directory"
                } else {
                    "is not a regular file"
                },
            ));
        }
        let map = if meta.len() == 0 {
            None
        } else {
            // SAFETY: the map is read-only and private to this process. Another
            // process may still truncate or rewrite the file; this module's
            // contract (see above) is that after parsing, mapped bytes are only
            // handed to the kernel, which reports vanished pages as EFAULT.
            Some(unsafe { Mmap::map(&file)? })
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
        self.map.as_deref().unwrap_or(&[])
    }

    /// The mapped bytes of `span`, which must lie within the file as opened.
    pub fn slice(&self, span: Span) -> &[u8] {
        span.bytes(self.bytes())
    }

    /// `Ok` while the file still has the size and times it had when opened;
    /// otherwise a sentence saying what changed.
    pub fn check_unchanged(&self) -> Result<(), String> {
        let now = self
            .file
            .metadata()
            .map_err(|e| format!("{}: cannot stat: {e}", self.name))?;
        let now = Stamp::of(&now);
        if now.len != self.opened.len {
            return Err(format!(
                "{}: changed size from {} to {} bytes since it was opened",
                self.name, self.opened.len, now.len
            ));
        }
        if now != self.opened {
            return Err(format!("{}: was modified since it was opened", self.name));
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
        self.file.read_exact_at(&mut out[start..], span.offset)
    }
}
