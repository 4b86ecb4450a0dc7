//! Sources: where the bytes of the files shown come from. A local file is
//! mapped ([`local`]); a remote object (`https://`, `s3://`, `gs://`,
//! `az://`) is read by byte ranges ([`remote`]) through a bounded block
//! cache ([`cache`]). The rest of the program sees one [`Source`]: its
//! name, a [`Stamp`] for change detection, the bytes parsing looked at, and
//! [`Source::read_span`] for everything read later.

pub mod guard;
mod local;
pub mod redact;
pub mod remote;

use std::fs::Metadata;
use std::io;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use local::LocalFile;
pub use local::{describe as describe_type, open_regular};
use remote::RemoteFile;

use crate::format::{Ranges, Span};

/// A shared handle on the bytes parsing saw: a local file's map or a
/// remote object's image.
#[derive(Debug, Clone)]
pub enum MappedBytes {
    /// A local file's map.
    Map(Arc<guard::GuardedMap>),
    /// A remote object's image.
    Image(Arc<memmap2::MmapMut>),
    /// An empty file.
    Empty,
}

impl AsRef<[u8]> for MappedBytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            MappedBytes::Map(m) => m,
            MappedBytes::Image(m) => m,
            MappedBytes::Empty => &[],
        }
    }
}

/// An open source: a mapped local file or a remote object.
#[derive(Debug)]
pub struct Source {
    /// The path it was opened by, or its URL [`redact`]ed.
    pub path: PathBuf,
    /// The base name shown in the tree.
    pub name: String,
    /// Identity, size, times and mode when opened.
    pub opened: Stamp,
    backing: Backing,
}

#[derive(Debug)]
enum Backing {
    Local(LocalFile),
    Remote(Box<RemoteFile>),
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
    pub(crate) fn of(m: &Metadata) -> Stamp {
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
    #[error("{}: {error}", redact::shown(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// Not a regular file (after following symbolic links).
    #[error("{}: is {what}, not a regular file", redact::shown(path))]
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
    /// Pages of its map vanished while they were read: it was truncated
    /// since it was opened, even if it has its old size and times again.
    #[error("{name}: was truncated since it was opened (pages read from it vanished)")]
    Vanished {
        /// The source's name.
        name: String,
    },
    /// A remote object that cannot be reached, read or used.
    #[error("{url}: {error}")]
    Remote {
        /// The URL, [`redact`]ed.
        url: String,
        /// What went wrong, with the source's secrets scrubbed.
        error: String,
    },
}

/// The name a source is shown by in the tree: a path's last component
/// (the path itself when it has none), a URL's last path segment (see
/// [`remote::base_name`]).
pub fn base_name(path: &Path) -> String {
    if let Some(url) = path.to_str().filter(|p| remote::is_url(p)) {
        return remote::base_name(url);
    }
    path.file_name()
        .map_or_else(|| redact::shown(path), |n| n.to_string_lossy().into_owned())
}

impl Source {
    /// Opens `path`: a URL that [`remote::is_url`] accepts is a remote
    /// object (only its size and identity are read here; see
    /// [`Source::prefetch`]), anything else a local regular file, mapped
    /// (symbolic links are followed).
    pub fn open(path: &Path) -> Result<Source, SourceError> {
        let name = base_name(path);
        let (backing, opened) = match path.to_str().filter(|p| remote::is_url(p)) {
            Some(url) => {
                let (r, stamp) = RemoteFile::open(url)?;
                (Backing::Remote(Box::new(r)), stamp)
            }
            None => {
                let (l, stamp) = LocalFile::open(path)?;
                (Backing::Local(l), stamp)
            }
        };
        // A remote source keeps its URL (and its credentials) to itself.
        let path = match &backing {
            Backing::Remote(r) => PathBuf::from(r.shown()),
            Backing::Local(_) => path.to_owned(),
        };
        Ok(Source {
            path,
            name,
            opened,
            backing,
        })
    }

    /// True for a remote object.
    pub fn is_remote(&self) -> bool {
        matches!(self.backing, Backing::Remote(_))
    }

    /// A remote object's entity tag, when its server gives one.
    pub fn etag(&self) -> Option<&str> {
        match &self.backing {
            Backing::Local(_) => None,
            Backing::Remote(r) => r.etag(),
        }
    }

    /// The bytes parsing sees: the whole file for a local source; for a
    /// remote one, an image of the object's full length holding what
    /// [`Source::prefetch`] fetched (zeros elsewhere).
    pub fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Local(l) => l.bytes(),
            Backing::Remote(r) => r.image(),
        }
    }

    /// A handle on [`Source::bytes`] that stays valid while it is held:
    /// what the tree's files rendered when first read parse again.
    pub fn shared(&self) -> MappedBytes {
        match &self.backing {
            Backing::Local(l) => l.shared_map().map_or(MappedBytes::Empty, MappedBytes::Map),
            Backing::Remote(r) => r
                .shared_image()
                .map_or(MappedBytes::Empty, MappedBytes::Image),
        }
    }

    /// The mapped bytes of `span` of a local source (which must lie within
    /// the file as opened), for zero-copy reads; `None` for a remote one,
    /// which is read with [`Source::read_span`].
    pub fn mapped(&self, span: Span) -> Option<&[u8]> {
        match &self.backing {
            Backing::Local(l) => Some(span.bytes(l.bytes())),
            Backing::Remote(_) => None,
        }
    }

    /// Fetches what parsing needs of a remote source: `plan` is asked,
    /// with the bytes fetched so far, which ranges it still needs, until it
    /// needs nothing more. Nothing to do for a local source.
    pub fn prefetch(
        &mut self,
        plan: impl Fn(&[u8], &Ranges) -> Vec<Range<u64>>,
    ) -> Result<(), SourceError> {
        match &mut self.backing {
            Backing::Local(_) => Ok(()),
            Backing::Remote(r) => r.prefetch(plan),
        }
    }

    /// Fetches all of a remote source into its image, for work that reads
    /// every byte (`diff`, `--names` hashing). Nothing to do for a local
    /// source.
    pub fn fetch_whole(&mut self) -> Result<(), SourceError> {
        let len = self.opened.len;
        self.prefetch(|_, _| std::iter::once(0..len).collect())
    }

    /// Bounds a remote source's block cache to `bytes`.
    pub fn set_cache_size(&self, bytes: u64) {
        if let Backing::Remote(r) = &self.backing {
            r.set_cache_size(bytes);
        }
    }

    /// Closes a remote source's connections and its runtime's threads (the
    /// next read opens them again): a process about to fork holds none.
    pub fn disconnect(&self) {
        if let Backing::Remote(r) = &self.backing {
            r.disconnect();
        }
    }

    /// Byte ranges (whole pages) of a remote source's image that parsing
    /// read but nothing fetched: where it took zeros for the file's bytes.
    /// Empty for a local source, and whenever the fetch plan was complete.
    pub fn unfetched_reads(&self) -> Vec<Range<u64>> {
        match &self.backing {
            Backing::Local(_) => Vec::new(),
            Backing::Remote(r) => r.unfetched_reads(),
        }
    }

    /// Bytes fetched from a remote source so far (0 for a local one).
    pub fn fetched_bytes(&self) -> u64 {
        match &self.backing {
            Backing::Local(_) => 0,
            Backing::Remote(r) => r.fetched_bytes(),
        }
    }

    /// `Ok` while the source still is what was opened: for a local file,
    /// the same identity, size and times (see [`local`]); for a remote
    /// object, no read has yet found its ETag or modification time moved.
    pub fn check_unchanged(&self) -> Result<(), SourceError> {
        match &self.backing {
            Backing::Local(l) => l.check_unchanged(&self.path, &self.name, self.opened),
            Backing::Remote(r) => r.check_unchanged(&self.name),
        }
    }

    /// Appends the bytes of `span` to `out`; fails cleanly (a local file
    /// read with `pread` rather than through the map, a remote one through
    /// its cache with bounded retries).
    pub fn read_span(&self, span: Span, out: &mut Vec<u8>) -> io::Result<()> {
        self.read_span_within(span, span.end(), out)
    }

    /// [`Source::read_span`] of part of a file that ends at offset `end`:
    /// a remote source reading in order reads ahead up to there, and not
    /// into the bytes of other files.
    pub fn read_span_within(&self, span: Span, end: u64, out: &mut Vec<u8>) -> io::Result<()> {
        match &self.backing {
            Backing::Local(l) => l.read_span(span, out),
            Backing::Remote(r) => r.read_span(span, end, out),
        }
    }
}
