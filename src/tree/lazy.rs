//! Files rendered when first looked at rather than when the tree is built.
//!
//! The large rendered files of a tree (a method's `plan.json` and
//! `code.txt`, a delegate's `graph.json`) cost most of the time and memory
//! a build would otherwise spend up front, although most mounts never
//! read them. A [`Lazy`] file holds a renderer instead of bytes: the first
//! `stat` or read renders it and notes its size; the bytes stay in a
//! [`RenderCache`] shared by the tree, which drops the least recently used
//! files beyond its budget, to be rendered again when read again.
//!
//! A renderer works from its source's bytes, parsing again what it needs
//! (with the same verification as the first parse), so the tree keeps no
//! borrowed views and a render sees exactly the bytes the tree was built
//! from as long as the source is unchanged, which the filesystem checks
//! before asking.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, OnceLock};

use crate::source::guard;

/// What holds a source's bytes: a memory map, or a buffer.
pub trait SourceBytes: AsRef<[u8]> + fmt::Debug + Send + Sync {}

impl<T: AsRef<[u8]> + fmt::Debug + Send + Sync> SourceBytes for T {}

/// A source's bytes, shared by the lazy files rendered from them.
pub type SharedBytes = Arc<dyn SourceBytes>;

/// Renders a file from its source's bytes into a writer: a buffer to read
/// from, or a counter when only the size is wanted, so that `stat` of a
/// large file costs time but no memory. Rendering is deterministic, so a
/// file's size never depends on when it is rendered. A renderer that
/// cannot make its file returns the reason (see [`failed`]), before
/// writing anything: the file then reads as an error, never as a message
/// posing as its content.
pub type Renderer = Box<dyn Fn(&[u8], &mut dyn Write) -> io::Result<()> + Send + Sync>;

/// The error a renderer returns when its file cannot be made: `what`
/// says why, naming what it was made from.
pub fn failed(what: impl fmt::Display) -> io::Error {
    io::Error::other(what.to_string())
}

/// How many rendered bytes a tree keeps in memory by default.
pub const CACHE_BUDGET: usize = 64 << 20;

/// Rendered files beyond this size go to a temporary file.
const SPILL_AT: usize = 16 << 20;

/// How many bytes of temporary files a tree keeps.
const DISK_BUDGET: u64 = 4 << 30;

/// A file rendered on demand.
pub struct Lazy {
    /// Which of the tree's sources it is rendered from.
    pub source: super::SourceId,
    bytes: SharedBytes,
    render: Renderer,
    size: OnceLock<u64>,
    /// Why it could not be rendered, once it was found not to be.
    failure: OnceLock<String>,
    /// Its key in the cache.
    id: u32,
    cache: Arc<RenderCache>,
}

impl fmt::Debug for Lazy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lazy")
            .field("source", &self.source)
            .field("size", &self.size.get())
            .finish_non_exhaustive()
    }
}

impl Lazy {
    /// The file's size, found by rendering it if that was never done: a
    /// small file is kept (it is likely to be read next), a large one only
    /// counted.
    pub fn len(&self) -> u64 {
        if let Some(&len) = self.size.get() {
            return len;
        }
        if let Some(b) = self.cache.get(self.id) {
            return *self.size.get_or_init(|| b.len());
        }
        let mut out = Capped::default();
        let intact = self.render_into(&mut out);
        if out.len > SPILL_AT {
            crate::allocator::release_free();
        }
        if !intact {
            // Rendered over vanished pages: a size of nothing real, kept
            // nowhere (the source now fails every check).
            return out.len as u64;
        }
        if let Some(bytes) = out.kept {
            self.cache.put(self.id, Held::Memory(Arc::new(bytes)));
        }
        *self.size.get_or_init(|| out.len as u64)
    }

    /// True for a file that renders to nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Renders into `out`; false when pages of the source vanished
    /// meanwhile (see [`crate::source::guard`]), so that what was written
    /// is not the file.
    fn render_into(&self, out: &mut dyn Write) -> bool {
        let bytes = (*self.bytes).as_ref();
        let _guarded = guard::Section::new();
        let before = guard::faults(bytes);
        // A source rewritten in place between the verification a renderer
        // starts with and its reads can send those reads out of bounds:
        // a panic here must not end a daemon serving other files.
        let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (self.render)(bytes, &mut *out)
        }));
        match rendered {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                if self.failure.set(e.to_string()).is_ok() {
                    log::error!("a file cannot be rendered: {e}");
                }
            }
            Err(_) => {
                if (self.failure)
                    .set("its renderer panicked".to_owned())
                    .is_ok()
                {
                    log::error!("rendering a file failed: its renderer panicked");
                }
            }
        }
        guard::faults(bytes) == before
    }

    /// Why the file could not be rendered, once a render found it could
    /// not: reads of it then fail.
    pub fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// The size if known without rendering.
    pub fn known_len(&self) -> Option<u64> {
        self.size.get().copied()
    }

    /// The whole rendered file, from the cache or rendered now.
    pub fn rendered(&self) -> Vec<u8> {
        self.read(0, self.len() as usize)
    }

    /// Up to `size` bytes from `offset`: from the cache, or rendered now
    /// and kept there. A failure to read back a temporary file is logged
    /// and gives a short read.
    pub fn read(&self, offset: u64, size: usize) -> Vec<u8> {
        let held = match self.cache.get(self.id) {
            Some(held) => held,
            None => {
                let (held, intact) = self.render_held();
                if intact {
                    let _ = self.size.set(held.len());
                    self.cache.put(self.id, held.clone());
                }
                held
            }
        };
        let start = offset.min(held.len());
        let end = offset.saturating_add(size as u64).min(held.len());
        match held {
            Held::Memory(b) => b[start as usize..end as usize].to_vec(),
            Held::Disk(f, _) => {
                let mut out = vec![0; (end - start) as usize];
                match f.read_exact_at(&mut out, start) {
                    Ok(()) => out,
                    Err(e) => {
                        log::error!("reading back a rendered file failed: {e}");
                        Vec::new()
                    }
                }
            }
        }
    }

    /// Renders the file into memory, or into a temporary file once it
    /// grows past [`SPILL_AT`]; with whether the source stayed intact.
    fn render_held(&self) -> (Held, bool) {
        let mut out = Spool::default();
        let intact = self.render_into(&mut out);
        if out.disk.is_some() {
            crate::allocator::release_free();
        }
        match out.finish() {
            Ok(held) => (held, intact),
            Err(e) => {
                // No room for a temporary file: hold it in memory instead.
                log::warn!(
                    "cannot write a rendered file to a temporary file ({e}); keeping it in memory"
                );
                let mut bytes = Vec::new();
                let intact = self.render_into(&mut bytes);
                (Held::Memory(Arc::new(bytes)), intact)
            }
        }
    }
}

/// A rendered file as the cache holds it.
#[derive(Debug, Clone)]
enum Held {
    /// In memory.
    Memory(Arc<Vec<u8>>),
    /// In an unlinked temporary file of that many bytes.
    Disk(Arc<File>, u64),
}

impl Held {
    fn len(&self) -> u64 {
        match self {
            Held::Memory(b) => b.len() as u64,
            Held::Disk(_, len) => *len,
        }
    }

    /// Bytes of memory and of disk it takes.
    fn cost(&self) -> (usize, u64) {
        match self {
            Held::Memory(b) => (b.len(), 0),
            Held::Disk(_, len) => (0, *len),
        }
    }
}

/// A writer that keeps what is written in memory up to [`SPILL_AT`] bytes
/// and moves it to a temporary file beyond.
#[derive(Default)]
struct Spool {
    memory: Vec<u8>,
    disk: Option<(BufWriter<File>, u64)>,
    failed: Option<io::Error>,
}

impl Spool {
    fn finish(self) -> io::Result<Held> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match self.disk {
            None => Ok(Held::Memory(Arc::new(self.memory))),
            Some((w, len)) => {
                let file = w.into_inner().map_err(|e| e.into_error())?;
                Ok(Held::Disk(Arc::new(file), len))
            }
        }
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.failed.is_some() {
            return Ok(buf.len());
        }
        if self.disk.is_none() && self.memory.len() + buf.len() > SPILL_AT {
            let spilled = tempfile::tempfile().and_then(|f| {
                let mut w = BufWriter::with_capacity(1 << 20, f);
                w.write_all(&self.memory)?;
                Ok(w)
            });
            match spilled {
                Ok(w) => {
                    self.disk = Some((w, self.memory.len() as u64));
                    self.memory = Vec::new();
                }
                Err(e) => {
                    // Rendering goes on to its end; `finish` reports.
                    self.failed = Some(e);
                    return Ok(buf.len());
                }
            }
        }
        match &mut self.disk {
            None => self.memory.extend_from_slice(buf),
            Some((w, len)) => {
                if let Err(e) = w.write_all(buf) {
                    self.failed = Some(e);
                }
                *len += buf.len() as u64;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer that keeps what is written while it is small and only counts
/// it beyond that.
#[derive(Default)]
struct Capped {
    kept: Option<Vec<u8>>,
    len: usize,
}

impl Capped {
    /// Files up to this size are kept when only their size was asked for.
    const KEEP: usize = 1 << 20;
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.len += buf.len();
        if self.len > Self::KEEP {
            self.kept = None;
        } else if self.len == buf.len() {
            self.kept = Some(buf.to_vec());
        } else if let Some(k) = &mut self.kept {
            k.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Rendered files kept in memory, least recently used dropped first once
/// their bytes exceed the budget. The file just rendered is kept even when
/// it alone exceeds the budget, so a sequential read of it renders it once.
#[derive(Debug)]
pub struct RenderCache {
    budget: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    files: HashMap<u32, Held>,
    /// Keys from least to most recently used.
    order: VecDeque<u32>,
    /// Bytes held in memory.
    held: usize,
    /// Bytes held in temporary files.
    spilled: u64,
    next_id: u32,
}

impl RenderCache {
    /// A cache keeping up to `budget` rendered bytes.
    pub fn new(budget: usize) -> Arc<RenderCache> {
        Arc::new(RenderCache {
            budget,
            inner: Mutex::default(),
        })
    }

    /// A lazy file of source `source` rendered by `render` from `bytes`.
    pub fn file(
        self: &Arc<Self>,
        source: super::SourceId,
        bytes: SharedBytes,
        render: Renderer,
    ) -> Lazy {
        let id = {
            let mut inner = self.lock();
            inner.next_id += 1;
            inner.next_id
        };
        Lazy {
            source,
            bytes,
            render,
            size: OnceLock::new(),
            failure: OnceLock::new(),
            id,
            cache: self.clone(),
        }
    }

    /// Bytes currently held.
    pub fn held(&self) -> usize {
        self.lock().held
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A render that panicked leaves nothing half-done in the cache.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, id: u32) -> Option<Held> {
        let mut inner = self.lock();
        let b = inner.files.get(&id).cloned()?;
        inner.touch(id);
        Some(b)
    }

    fn put(&self, id: u32, held: Held) {
        let mut inner = self.lock();
        inner.add(&held, true);
        if let Some(old) = inner.files.insert(id, held) {
            inner.add(&old, false);
        }
        inner.touch(id);
        while (inner.held > self.budget || inner.spilled > DISK_BUDGET) && inner.order.len() > 1 {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some(old) = inner.files.remove(&oldest) {
                inner.add(&old, false);
            }
        }
    }
}

impl Inner {
    /// Counts `held` in (or, `false`, out of) what the cache holds.
    fn add(&mut self, held: &Held, add: bool) {
        let (memory, disk) = held.cost();
        if add {
            self.held += memory;
            self.spilled += disk;
        } else {
            self.held -= memory;
            self.spilled -= disk;
        }
    }

    /// Marks `id` as the most recently used. The cache holds few files
    /// (its budget is in megabytes of rendered text), so a scan is cheap.
    fn touch(&mut self, id: u32) {
        if self.order.back() != Some(&id) {
            self.order.retain(|&k| k != id);
            self.order.push_back(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(cache: &Arc<RenderCache>, len: usize, calls: Arc<Mutex<u32>>) -> Lazy {
        let bytes: SharedBytes = Arc::new(vec![7u8; 4]);
        cache.file(
            0,
            bytes,
            Box::new(move |b, out| {
                *calls.lock().unwrap() += 1;
                let bytes: Vec<u8> = b.iter().copied().cycle().take(len).collect();
                out.write_all(&bytes)
            }),
        )
    }

    #[test]
    fn renders_once_while_cached_and_again_after_eviction() {
        let cache = RenderCache::new(100);
        let calls = Arc::new(Mutex::new(0));
        let a = file(&cache, 60, calls.clone());
        let b = file(&cache, 60, calls.clone());
        assert_eq!(a.len(), 60);
        assert_eq!(cache.held(), 60, "a small file is kept once sized");
        assert_eq!(&a.rendered()[..], &[7u8; 60][..]);
        assert_eq!(a.len(), 60);
        assert_eq!(*calls.lock().unwrap(), 1, "a sized and read: one render");
        assert_eq!(b.rendered().len(), 60);
        assert_eq!(cache.held(), 60, "a was dropped to make room for b");
        assert_eq!(a.rendered().len(), 60);
        assert_eq!(*calls.lock().unwrap(), 3, "a rendered again");
    }

    #[test]
    fn a_large_file_is_counted_not_kept_when_sized() {
        let cache = RenderCache::new(1 << 30);
        let calls = Arc::new(Mutex::new(0));
        let big = file(&cache, Capped::KEEP + 1, calls.clone());
        assert_eq!(big.len(), Capped::KEEP as u64 + 1);
        assert_eq!(cache.held(), 0);
        assert_eq!(big.rendered().len(), Capped::KEEP + 1);
        assert_eq!(*calls.lock().unwrap(), 2);
    }

    #[test]
    fn a_file_too_large_to_hold_is_read_back_from_disk() {
        let cache = RenderCache::new(1 << 30);
        let calls = Arc::new(Mutex::new(0));
        let len = SPILL_AT + 12_345;
        let big = file(&cache, len, calls.clone());
        // The renderer cycles the four source bytes 7, 7, 7, 7; make them
        // distinct by position instead to catch misplaced reads.
        let big = {
            let _ = big;
            let bytes: SharedBytes = Arc::new((0..=255u8).collect::<Vec<u8>>());
            let calls = calls.clone();
            cache.file(
                0,
                bytes,
                Box::new(move |b, out| {
                    *calls.lock().unwrap() += 1;
                    let all: Vec<u8> = b.iter().copied().cycle().take(len).collect();
                    out.write_all(&all)
                }),
            )
        };
        assert_eq!(big.read(0, 4), vec![0, 1, 2, 3]);
        assert_eq!(cache.held(), 0, "nothing of it in memory");
        assert_eq!(big.len(), len as u64, "sized by the render that read it");
        let at = SPILL_AT as u64 + 10;
        let want: Vec<u8> = (at..at + 300).map(|i| (i % 256) as u8).collect();
        assert_eq!(big.read(at, 300), want);
        assert_eq!(
            big.read(len as u64 - 2, 100).len(),
            2,
            "a short read at the end"
        );
        assert!(big.read(len as u64 + 5, 10).is_empty());
        assert_eq!(*calls.lock().unwrap(), 1, "rendered once");
    }

    #[test]
    fn a_file_larger_than_the_budget_stays_until_the_next() {
        let cache = RenderCache::new(10);
        let calls = Arc::new(Mutex::new(0));
        let big = file(&cache, 50, calls.clone());
        big.rendered();
        big.rendered();
        assert_eq!(*calls.lock().unwrap(), 1);
        assert_eq!(cache.held(), 50);
        let small = file(&cache, 5, calls.clone());
        small.rendered();
        assert_eq!(cache.held(), 5);
    }
}
