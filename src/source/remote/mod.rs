//! A remote object read by byte ranges.
//!
//! Opening asks the server for the object's size, ETag and modification
//! time and pins them: every later range read is conditional on the ETag
//! (`If-Match`, or `If-Unmodified-Since` without one), so a changed object
//! makes reads fail rather than mix new bytes into the old tree. Parsing
//! sees an image of the object's full length, an anonymous mapping that
//! costs nothing where it is not written, holding the ranges a fetch plan
//! asked for. Reads after that go through a [`BlockCache`].
//!
//! The object store client is asynchronous; each source keeps a small
//! runtime of its own and blocks on it from the calling thread. Every
//! request is bounded (timeouts, few retries, an overall limit), so a
//! server that stops answering makes a read fail within seconds.

pub mod cache;
mod client;
pub mod credentials;
pub mod limits;
pub mod prefix;
mod store;

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use memmap2::{Advice, MmapMut, MmapOptions};

use super::redact::{Secrets, redact};
use super::{SourceError, Stamp};
use crate::format::{Ranges, Span};
use cache::{BLOCK, BlockCache, DEFAULT_CAPACITY};
use client::{Client, GetError, Pin};
pub use store::{base_name, is_url};

/// Fetches are whole pages of this size (or a multiple: checking
/// residency uses the system's page size).
const PAGE: u64 = 4096;

/// Rounds a fetch plan may take before it is refused as not converging.
const PLAN_ROUNDS: usize = 64;

/// One remote object as connecting to it takes, and as it is shown.
pub struct Target {
    /// The URL as given.
    url: String,
    /// The URL [`redact`]ed: how it is shown.
    pub shown: String,
    /// For `http(s)`, the URL without user info and the credentials that
    /// go with it.
    access: Option<credentials::Access>,
    /// Every secret of the source, to scrub from messages.
    pub secrets: Secrets,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.shown)
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// `url` with its credentials (for `http(s)`, from the URL, headers
    /// and `~/.netrc`; see [`credentials`]).
    pub fn of(url: &str) -> Result<Target, SourceError> {
        let shown = redact(url);
        let url = &store::with_lower_scheme(url);
        let access = if url.starts_with("http://") || url.starts_with("https://") {
            let access = credentials::Access::of(url).map_err(|error| SourceError::Remote {
                url: shown.clone(),
                error: Secrets::of_url(url).scrub(&error.to_string()),
            })?;
            Some(access)
        } else {
            None
        };
        let secrets = access
            .as_ref()
            .map_or_else(|| Secrets::of_url(url), |a| a.secrets.clone());
        Ok(Target {
            url: url.to_owned(),
            shown,
            access,
            secrets,
        })
    }

    /// Where the `Authorization` header sent comes from, if one is.
    pub fn authorization(&self) -> Option<&'static str> {
        self.access.as_ref().and_then(|a| a.authorization)
    }

    fn error(&self, error: String) -> SourceError {
        SourceError::Remote {
            url: self.shown.clone(),
            error: self.secrets.scrub(&error),
        }
    }
}

/// An open remote object.
#[derive(Debug)]
pub struct RemoteFile {
    target: Arc<Target>,
    pin: Pin,
    /// Connected lazily, dropped by [`RemoteFile::disconnect`].
    client: Mutex<Option<Arc<Client>>>,
    /// Shared with the tree's files rendered when first read, once built.
    image: Option<Arc<MmapMut>>,
    have: Ranges,
    cache: BlockCache,
    changed: AtomicBool,
}

/// What a HEAD request says of the object at `url`: its size, its
/// modification time and its entity tag.
pub fn stamp_of(url: &str) -> Result<(u64, SystemTime, Option<String>), SourceError> {
    let target = Target::of(url)?;
    let client = Client::connect(&target).map_err(|e| target.error(e))?;
    let pin = client.head().map_err(|e| target.error(e.to_string()))?;
    Ok((pin.len, pin.last_modified, pin.e_tag))
}

impl RemoteFile {
    /// Asks for the object's size and identity; fetches nothing else.
    pub fn open(url: &str) -> Result<(RemoteFile, Stamp), SourceError> {
        let target = Arc::new(Target::of(url)?);
        let error = |error: String| target.error(error);
        let client = Arc::new(Client::connect(&target).map_err(error)?);
        let pin = client.head().map_err(|e| error(e.to_string()))?;
        let image = if pin.len == 0 {
            None
        } else {
            let len = usize::try_from(pin.len)
                .map_err(|_| error(format!("is {} bytes, too large to map", pin.len)))?;
            let map = MmapOptions::new()
                .len(len)
                .no_reserve_swap()
                .map_anon()
                .map_err(|e| error(format!("mapping an image of {len} bytes: {e}")))?;
            // Pages stay 4 KiB, so that residency shows which pages parsing
            // touched (see `unfetched_reads`); advice only, so a refusal
            // changes nothing else.
            let _ = map.advise(Advice::NoHugePage);
            Some(Arc::new(map))
        };
        let stamp = Stamp {
            dev: 0,
            ino: 0,
            len: pin.len,
            mtime: pin.mtime(),
            ctime: pin.mtime(),
            nlink: 1,
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            mode: libc::S_IFREG | 0o444,
        };
        let file = RemoteFile {
            target: target.clone(),
            cache: BlockCache::new(pin.len, BLOCK, DEFAULT_CAPACITY),
            pin,
            client: Mutex::new(Some(client)),
            image,
            have: Ranges::default(),
            changed: AtomicBool::new(false),
        };
        Ok((file, stamp))
    }

    /// The object's entity tag, when its server gives one.
    pub fn etag(&self) -> Option<&str> {
        self.pin.e_tag.as_deref()
    }

    /// How the source is shown: its URL [`redact`]ed.
    pub fn shown(&self) -> &str {
        &self.target.shown
    }

    /// The image parsing sees.
    pub fn image(&self) -> &[u8] {
        self.image.as_deref().map_or(&[], |m| &m[..])
    }

    /// The image, shared.
    pub fn shared_image(&self) -> Option<Arc<MmapMut>> {
        self.image.clone()
    }

    fn client(&self) -> Result<Arc<Client>, String> {
        let mut slot = self.client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = &*slot {
            return Ok(c.clone());
        }
        let c = Arc::new(Client::connect(&self.target)?);
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Drops the client (connections and runtime); the next read connects
    /// again.
    pub fn disconnect(&self) {
        let old = self.client.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(old);
    }

    /// Bytes `range` of the object as it was opened.
    fn get(&self, range: Range<u64>) -> io::Result<Vec<u8>> {
        let client = self.client().map_err(io::Error::other)?;
        match client.get(range, &self.pin) {
            Ok(bytes) => Ok(bytes),
            Err(GetError::Changed(why)) => {
                self.changed.store(true, Ordering::Relaxed);
                Err(io::Error::other(format!(
                    "changed since it was opened ({why})"
                )))
            }
            Err(GetError::Other(e)) => Err(io::Error::other(e)),
        }
    }

    /// Fetches into the image what `plan` asks for, until it asks for
    /// nothing new.
    pub fn prefetch(
        &mut self,
        plan: impl Fn(&[u8], &Ranges) -> Vec<Range<u64>>,
    ) -> Result<(), SourceError> {
        let target = self.target.clone();
        let error = |error: String| target.error(error);
        let len = self.pin.len;
        // Whole pages, so that a page is either fetched or not and the
        // pages parsing touched tell exactly what it read unfetched
        // (see `unfetched_reads`).
        let pages = |r: &Range<u64>| {
            let start = r.start.min(len) / PAGE * PAGE;
            start..r.end.min(len).div_ceil(PAGE).saturating_mul(PAGE).min(len)
        };
        for _ in 0..PLAN_ROUNDS {
            let mut missing: Vec<Range<u64>> = plan(self.image(), &self.have)
                .iter()
                .flat_map(|r| self.have.missing(&pages(r)))
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            missing.sort_by_key(|r| r.start);
            for r in coalesce(missing) {
                let bytes = self.get(r.clone()).map_err(|e| error(e.to_string()))?;
                let image = self.image_mut().map_err(error)?;
                image[r.start as usize..r.end as usize].copy_from_slice(&bytes);
                self.have.insert(r);
            }
        }
        Err(error(format!(
            "reading its structure took more than {PLAN_ROUNDS} rounds of range requests"
        )))
    }

    /// The image, to write fetched bytes into. A tree built from it (whose
    /// files rendered when first read share it) may still read it: then
    /// the fetched pages are copied into a new image that this file alone
    /// holds, and the tree keeps the old one, which nothing writes.
    fn image_mut(&mut self) -> Result<&mut MmapMut, String> {
        let Some(image) = self.image.as_mut() else {
            return Err("is empty: there is nothing to fetch".into());
        };
        if Arc::get_mut(image).is_none() {
            let mut copy = MmapOptions::new()
                .len(image.len())
                .no_reserve_swap()
                .map_anon()
                .map_err(|e| format!("mapping an image of {} bytes: {e}", image.len()))?;
            let _ = copy.advise(Advice::NoHugePage);
            for r in self.have.ranges() {
                let r = r.start as usize..r.end as usize;
                copy[r.clone()].copy_from_slice(&image[r]);
            }
            *image = Arc::new(copy);
        }
        Arc::get_mut(image).ok_or_else(|| "its image is shared".into())
    }

    /// Ranges of whole pages of the image that were read (by parsing)
    /// but never fetched: there parsing took zeros for the file's bytes. A
    /// page of an anonymous mapping becomes resident when first touched,
    /// reading included (it then maps the zero page), so `mincore` tells
    /// the pages touched; those overlapping no fetched range were only
    /// read. Fetches are whole pages, so each page is fetched or not.
    pub fn unfetched_reads(&self) -> Vec<Range<u64>> {
        let Some(map) = &self.image else {
            return Vec::new();
        };
        // SAFETY: sysconf has no preconditions.
        let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            p if p > 0 => p as usize,
            _ => return Vec::new(),
        };
        let mut resident = vec![0u8; map.len().div_ceil(page)];
        // SAFETY: the address and length are those of a live mapping this
        // value owns (page aligned, as mappings are), and `resident` has
        // one byte per page of it, as mincore writes.
        let rc = unsafe {
            libc::mincore(
                map.as_ptr().cast_mut().cast(),
                map.len(),
                resident.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Vec::new();
        }
        let mut out: Vec<Range<u64>> = Vec::new();
        for (i, r) in resident.iter().enumerate() {
            let pages = (i * page) as u64..((i + 1) * page).min(map.len()) as u64;
            if r & 1 == 0 || self.have.missing(&pages) != [pages.clone()] {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.end == pages.start => last.end = pages.end,
                _ => out.push(pages),
            }
        }
        out
    }

    /// See [`super::Source::set_cache_size`].
    pub fn set_cache_size(&self, bytes: u64) {
        self.cache.set_capacity(bytes);
    }

    /// Bytes fetched so far: for parsing and through the cache.
    pub fn fetched_bytes(&self) -> u64 {
        self.have.total() + self.cache.fetched()
    }

    /// `Err` once a read found the object changed.
    pub fn check_unchanged(&self, name: &str) -> Result<(), SourceError> {
        if self.changed.load(Ordering::Relaxed) {
            return Err(SourceError::Modified {
                name: name.to_owned(),
                what: self.pin.identity(),
            });
        }
        Ok(())
    }

    /// Appends the bytes of `span` to `out`, through the cache, reading
    /// ahead no further than `ahead_limit`.
    pub fn read_span(&self, span: Span, ahead_limit: u64, out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        let read = self
            .cache
            .read(span.offset..span.end(), ahead_limit, out, &|r| self.get(r));
        if read.is_err() {
            out.truncate(start);
        }
        read
    }
}

/// Ranges sorted by start, with those closer than a small gap merged: one
/// request is cheaper than two for a few KiB in between.
fn coalesce(sorted: Vec<Range<u64>>) -> Vec<Range<u64>> {
    const GAP: u64 = 64 << 10;
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in sorted {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(GAP) => {
                last.end = last.end.max(r.end);
            }
            _ => out.push(r),
        }
    }
    out
}

impl Pin {
    fn mtime(&self) -> (i64, i64) {
        let t = self.last_modified;
        match t.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => (d.as_secs() as i64, i64::from(d.subsec_nanos())),
            Err(_) => (0, 0),
        }
    }
}
