//! How a mount hands a file's bytes to its readers: through the kernel's
//! page cache (each byte copied from the source's pages into the mount's,
//! then into the reader's buffer), or by direct I/O (copied once, straight
//! into the reader's buffer, and asked of the daemon on every read). Which
//! files get which, and how large a read request may be, is decided here
//! so that the mount, the command line and the tests ask one place.

use super::{BLOCK, Fs, Result};
use crate::tree::Ino;

/// The largest read request by default when reads go through the page
/// cache: 256 KiB. Readahead then asks for the next requests while the
/// reader copies the last, and a first read of a large file ran at 0.54 ×
/// a direct read of the source on an idle machine, against 0.48 × with
/// requests of 1 MiB (docs/performance.md, "Read path").
pub const CACHED_MAX_REQUEST: u32 = 256 << 10;

/// The largest read request by default when files are read directly:
/// 1 MiB, the most a kernel grants unless `fs.fuse.max_pages_limit` was
/// raised. Each of a reader's `read`s is then one round trip, and larger
/// ones are faster.
pub const DIRECT_MAX_REQUEST: u32 = 1 << 20;

/// The size from which files are read directly by default in
/// [`ReadMode::Direct`].
pub const DEFAULT_DIRECT_FROM: u64 = 1 << 20;

/// The largest read request fuser can take (its buffer's size).
pub const MAX_MAX_REQUEST: u32 = 16 << 20;

/// The smallest read request: one page.
pub const MIN_MAX_REQUEST: u32 = 4096;

/// Whether large files bypass the mount's page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Every file through the page cache, opened by the kernel alone.
    #[default]
    Cached,
    /// Files of [`ReadPolicy::direct_from`] bytes or more by direct I/O,
    /// smaller ones through the page cache.
    Direct,
}

/// How a read-only mount serves reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPolicy {
    /// Page cache or direct I/O.
    pub mode: ReadMode,
    /// With [`ReadMode::Direct`], the size from which a file is read
    /// directly.
    pub direct_from: u64,
    /// The largest read request, in bytes (a multiple of 4096 within
    /// [`MIN_MAX_REQUEST`]..=[`MAX_MAX_REQUEST`]).
    pub max_request: u32,
}

impl Default for ReadPolicy {
    fn default() -> ReadPolicy {
        ReadPolicy {
            mode: ReadMode::default(),
            direct_from: DEFAULT_DIRECT_FROM,
            max_request: CACHED_MAX_REQUEST,
        }
    }
}

impl ReadMode {
    /// The largest read request by default in this mode, on a mount that
    /// is `writable` or not (a writable mount reads every file directly).
    pub fn default_max_request(self, writable: bool) -> u32 {
        match (self, writable) {
            (ReadMode::Cached, false) => CACHED_MAX_REQUEST,
            _ => DIRECT_MAX_REQUEST,
        }
    }
}

impl ReadPolicy {
    /// Checks `max_request`: whole pages, no more than fuser's buffer.
    pub fn new(
        mode: ReadMode,
        direct_from: u64,
        max_request: u64,
    ) -> std::result::Result<Self, String> {
        let pages = max_request.is_multiple_of(u64::from(MIN_MAX_REQUEST));
        let range = u64::from(MIN_MAX_REQUEST)..=u64::from(MAX_MAX_REQUEST);
        if !pages || !range.contains(&max_request) {
            return Err(format!(
                "{max_request} bytes: give a multiple of 4K from 4K to 16M"
            ));
        }
        Ok(ReadPolicy {
            mode,
            direct_from,
            max_request: max_request as u32,
        })
    }

    /// The readahead of the mount, in KiB: four requests, so that a
    /// sequential reader finds the next megabytes asked for while it
    /// takes the last ones.
    pub fn readahead_kb(&self) -> u32 {
        self.max_request / 1024 * 4
    }

    /// The read size a file of `size` bytes asks of its readers: a whole
    /// request for files that fill one, a page for others. Readers that
    /// size their buffer by it (`cat`, `cp`, stdio) then send requests of
    /// the largest size to a file read directly, where each of their reads
    /// is one round trip to the daemon (a 1 GiB tensor read directly in
    /// reads of 128 KiB, `cat`'s own size, comes at less than half the
    /// speed it comes in reads of 1 MiB).
    pub fn io_size(&self, size: u64) -> u32 {
        if size >= u64::from(self.max_request) {
            self.max_request
        } else {
            BLOCK
        }
    }
}

/// How the kernel is to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// By itself, without asking the daemon, caching pages across opens:
    /// no open and release round trips. Once the daemon answers one open
    /// this way the kernel asks no more, so a mount gives it for every
    /// file or for none.
    ByKernel,
    /// Through the page cache, kept across opens.
    Cached,
    /// By direct I/O: every read is the daemon's, copied once into the
    /// reader's buffer.
    Direct,
}

impl Fs {
    /// Serves reads as `policy` says.
    pub fn with_read_policy(self, policy: ReadPolicy) -> Fs {
        Fs {
            read_policy: policy,
            ..self
        }
    }

    /// How reads are served.
    pub fn read_policy(&self) -> ReadPolicy {
        self.read_policy
    }

    /// Checks that file `ino` can be opened, for writing or not, and says
    /// how the kernel is to open it. A writable mount reads every file
    /// directly, so that a write through one name is read through the
    /// others at once, which the page cache of each would hide.
    pub fn opening(&self, ino: Ino, write: bool) -> Result<Opening> {
        self.open(ino, write)?;
        if self.is_writable() {
            return Ok(Opening::Direct);
        }
        Ok(match self.read_policy.mode {
            ReadMode::Cached => Opening::ByKernel,
            ReadMode::Direct if self.getattr(ino)?.size >= self.read_policy.direct_from => {
                Opening::Direct
            }
            ReadMode::Direct => Opening::Cached,
        })
    }

    /// Whether a file opened for direct I/O may still be mapped shared
    /// (`numpy.memmap`, `mmap(MAP_SHARED)`): the map then reads through
    /// the page cache. Not on a writable mount, whose shared maps would
    /// write behind the overlay's back.
    pub fn maps_direct_files(&self) -> bool {
        !self.is_writable()
    }
}
