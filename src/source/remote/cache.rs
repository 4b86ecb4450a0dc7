//! A bounded cache of fixed-size blocks of a remote object, filled by
//! range reads, with read-ahead for sequential reading.
//!
//! A read asks for the blocks it covers; the missing ones are fetched in
//! as few ranges as possible (one per run of adjacent missing blocks).
//! When a read starts where the previous one ended, the last run is
//! extended by a read-ahead window that doubles with each sequential read
//! up to [`MAX_AHEAD`], so streaming a large tensor costs few requests.
//! The least recently used blocks are dropped beyond the capacity. The
//! lock is not held while fetching: readers of other blocks go on, and a
//! reader of a block another reader is fetching waits for that fetch
//! rather than asking for the block again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Block size.
pub const BLOCK: u64 = 1 << 20;
/// Default capacity (`-o cache_size=`).
pub const DEFAULT_CAPACITY: u64 = 256 << 20;
/// Largest read-ahead, in blocks.
pub const MAX_AHEAD: u64 = 16;

/// One block's bytes.
type Block = Arc<[u8]>;

/// Fetches the bytes of a range of the object (exactly that many).
pub type Fetch<'a> = &'a dyn Fn(Range<u64>) -> io::Result<Vec<u8>>;

/// The cache of one object.
#[derive(Debug)]
pub struct BlockCache {
    len: u64,
    block: u64,
    capacity: AtomicU64,
    fetched: AtomicU64,
    state: Mutex<State>,
    /// Signalled when blocks stop loading.
    loaded: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Block index to its bytes and when it was last used.
    blocks: HashMap<u64, (Arc<[u8]>, u64)>,
    /// Last use to block index, oldest first.
    lru: BTreeMap<u64, u64>,
    tick: u64,
    /// Where the last read ended, and the read-ahead it earned.
    last_end: u64,
    ahead: u64,
    /// Blocks some reader is fetching.
    loading: HashSet<u64>,
}

impl State {
    fn touch(&mut self, b: u64) -> Option<Arc<[u8]>> {
        self.tick += 1;
        let tick = self.tick;
        let (data, used) = self.blocks.get_mut(&b)?;
        self.lru.remove(used);
        *used = tick;
        self.lru.insert(tick, b);
        Some(data.clone())
    }

    fn insert(&mut self, b: u64, data: Arc<[u8]>) {
        self.tick += 1;
        if let Some((_, used)) = self.blocks.insert(b, (data, self.tick)) {
            self.lru.remove(&used);
        }
        self.lru.insert(self.tick, b);
    }

    fn evict(&mut self, keep: u64) {
        while self.blocks.len() as u64 > keep {
            let Some((_, b)) = self.lru.pop_first() else {
                break;
            };
            self.blocks.remove(&b);
        }
    }
}

impl BlockCache {
    /// A cache of an object of `len` bytes in blocks of `block` bytes,
    /// holding at most `capacity` bytes (at least one block).
    pub fn new(len: u64, block: u64, capacity: u64) -> BlockCache {
        BlockCache {
            len,
            block: block.max(1),
            capacity: AtomicU64::new(capacity),
            fetched: AtomicU64::new(0),
            state: Mutex::default(),
            loaded: Condvar::new(),
        }
    }

    /// Changes the capacity; takes effect at the next read.
    pub fn set_capacity(&self, capacity: u64) {
        self.capacity.store(capacity, Ordering::Relaxed);
    }

    /// Bytes fetched so far.
    pub fn fetched(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere leaves the maps consistent: use them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn keep_blocks(&self) -> u64 {
        (self.capacity.load(Ordering::Relaxed) / self.block).max(1)
    }

    /// Appends bytes `range` of the object to `out`, fetching missing
    /// blocks with `fetch`; read-ahead stops at the block holding byte
    /// `ahead_limit` (the end of the file being read). A range past the
    /// end is an error.
    pub fn read(
        &self,
        range: Range<u64>,
        ahead_limit: u64,
        out: &mut Vec<u8>,
        fetch: Fetch<'_>,
    ) -> io::Result<()> {
        if range.end > self.len || range.start > range.end {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "bytes {}..{} lie beyond the object's {} bytes",
                    range.start, range.end, self.len
                ),
            ));
        }
        if range.is_empty() {
            return Ok(());
        }
        let blocks = range.start / self.block..(range.end - 1) / self.block + 1;
        let (mut have, runs) = self.plan(&range, blocks.clone(), ahead_limit);
        let mut failed = None;
        for run in runs {
            // Every run is finished (its blocks no longer loading), even
            // after a failure, so that waiting readers go on.
            if failed.is_some() {
                self.finish(run, None);
                continue;
            }
            match self.fetch_run(run.clone(), fetch) {
                Ok(data) => self.finish(run, Some(data)),
                Err(e) => {
                    self.finish(run, None);
                    failed = Some(e);
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        for (b, h) in blocks.clone().zip(have.iter_mut()) {
            if h.is_none() {
                *h = Some(self.wait_for(b, fetch)?);
            }
        }
        for (b, h) in blocks.zip(&have) {
            let data = h.as_deref().unwrap_or_default();
            let base = b * self.block;
            let from = range.start.max(base) - base;
            let to = range.end.min(base + data.len() as u64) - base;
            out.extend_from_slice(&data[from as usize..to as usize]);
        }
        Ok(())
    }

    /// The blocks of `blocks` held, and the runs of blocks to fetch (marked
    /// loading): the missing ones no other reader is fetching, the last
    /// run extended by the read-ahead a read in order has earned.
    fn plan(
        &self,
        range: &Range<u64>,
        blocks: Range<u64>,
        ahead_limit: u64,
    ) -> (Vec<Option<Block>>, Vec<Range<u64>>) {
        let mut s = self.lock();
        let have: Vec<Option<Block>> = blocks.clone().map(|b| s.touch(b)).collect();
        s.ahead = if range.start == s.last_end && range.start != 0 {
            (s.ahead * 2).clamp(1, MAX_AHEAD)
        } else {
            0
        };
        s.last_end = range.end;
        let mut runs: Vec<Range<u64>> = Vec::new();
        let add = |runs: &mut Vec<Range<u64>>, b: u64| match runs.last_mut() {
            Some(r) if r.end == b => r.end = b + 1,
            _ => runs.push(b..b + 1),
        };
        for (b, h) in blocks.clone().zip(&have) {
            if h.is_none() && !s.loading.contains(&b) {
                add(&mut runs, b);
            }
        }
        // Read-ahead beyond what the cache holds would evict itself.
        let ahead = s
            .ahead
            .min(self.keep_blocks().saturating_sub(blocks.end - blocks.start));
        let limit = self
            .len
            .div_ceil(self.block)
            .min(ahead_limit.div_ceil(self.block));
        let mut b = blocks.end;
        while b < limit && b < blocks.end + ahead {
            if s.blocks.contains_key(&b) || s.loading.contains(&b) {
                break;
            }
            add(&mut runs, b);
            b += 1;
        }
        for r in &runs {
            s.loading.extend(r.clone());
        }
        (have, runs)
    }

    /// The bytes of the blocks of `run`, from one request.
    fn fetch_run(&self, run: Range<u64>, fetch: Fetch<'_>) -> io::Result<Vec<u8>> {
        let bytes = run.start * self.block..(run.end * self.block).min(self.len);
        let want = bytes.end - bytes.start;
        let data = fetch(bytes.clone())?;
        if data.len() as u64 != want {
            return Err(io::Error::other(format!(
                "asked for bytes {}..{} and got {} bytes",
                bytes.start,
                bytes.end,
                data.len()
            )));
        }
        self.fetched.fetch_add(want, Ordering::Relaxed);
        Ok(data)
    }

    /// Stores the blocks of `run` (none when fetching failed), no longer
    /// loading, and wakes whoever waits for them.
    fn finish(&self, run: Range<u64>, data: Option<Vec<u8>>) {
        let mut s = self.lock();
        if let Some(data) = data {
            for (b, chunk) in run.clone().zip(data.chunks(self.block as usize)) {
                s.insert(b, chunk.into());
            }
            s.evict(self.keep_blocks());
        }
        for b in run {
            s.loading.remove(&b);
        }
        drop(s);
        self.loaded.notify_all();
    }

    /// Block `b`, which another reader is fetching: once it is done, from
    /// the cache, or fetched here when that failed or it is gone again.
    fn wait_for(&self, b: u64, fetch: Fetch<'_>) -> io::Result<Arc<[u8]>> {
        let mut s = self.lock();
        while s.loading.contains(&b) {
            s = self.loaded.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if let Some(data) = s.touch(b) {
            return Ok(data);
        }
        drop(s);
        let data: Arc<[u8]> = self.fetch_run(b..b + 1, fetch)?.into();
        self.lock().insert(b, data.clone());
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// An object of `len` bytes whose byte i is i mod 251, with a log of
    /// the ranges fetched.
    fn object(len: u64) -> (Vec<u8>, RefCell<Vec<Range<u64>>>) {
        (
            (0..len).map(|i| (i % 251) as u8).collect(),
            RefCell::default(),
        )
    }

    fn read(c: &BlockCache, obj: &[u8], log: &RefCell<Vec<Range<u64>>>, r: Range<u64>) -> Vec<u8> {
        let fetch = |x: Range<u64>| {
            log.borrow_mut().push(x.clone());
            Ok(obj[x.start as usize..x.end as usize].to_vec())
        };
        let mut out = Vec::new();
        c.read(r, u64::MAX, &mut out, &fetch).unwrap();
        out
    }

    #[test]
    fn reads_are_exact_and_blocks_are_reused() {
        let (obj, log) = object(10_000);
        let c = BlockCache::new(10_000, 1000, 100_000);
        assert_eq!(read(&c, &obj, &log, 1500..2700), obj[1500..2700]);
        assert_eq!(*log.borrow(), vec![1000..3000]);
        assert_eq!(read(&c, &obj, &log, 1000..1100), obj[1000..1100]);
        assert_eq!(log.borrow().len(), 1, "served from the cache");
        assert_eq!(read(&c, &obj, &log, 9990..10_000), obj[9990..]);
        assert_eq!(log.borrow()[1], 9000..10_000, "the last block is short");
        assert_eq!(c.fetched(), 3000);
    }

    #[test]
    fn sequential_reads_fetch_ahead_and_capacity_evicts() {
        let (obj, log) = object(100_000);
        let c = BlockCache::new(100_000, 1000, 4000);
        let mut all = Vec::new();
        for at in (0..20_000).step_by(500) {
            all.extend(read(&c, &obj, &log, at..at + 500));
        }
        assert_eq!(all, obj[..20_000]);
        // 20 blocks in far fewer requests than blocks.
        assert!(log.borrow().len() < 10, "{:?}", log.borrow());
        assert!(c.lock().blocks.len() <= 4);
        // Evicted blocks are fetched again.
        let before = log.borrow().len();
        read(&c, &obj, &log, 0..10);
        assert_eq!(log.borrow().len(), before + 1);
    }

    #[test]
    fn read_ahead_stops_at_the_end_of_the_file_read() {
        let (obj, log) = object(100_000);
        let c = BlockCache::new(100_000, 1000, 100_000);
        let fetch = |x: Range<u64>| {
            log.borrow_mut().push(x.clone());
            Ok(obj[x.start as usize..x.end as usize].to_vec())
        };
        let mut out = Vec::new();
        for at in (10_000..15_000).step_by(500) {
            c.read(at..at + 500, 15_000, &mut out, &fetch).unwrap();
        }
        assert_eq!(out, obj[10_000..15_000]);
        assert_eq!(c.fetched(), 5000, "{:?}", log.borrow());
    }

    #[test]
    fn concurrent_readers_of_a_block_fetch_it_once() {
        use std::sync::atomic::AtomicUsize;
        let (obj, _) = object(10_000);
        let c = BlockCache::new(10_000, 1000, 100_000);
        let calls = AtomicUsize::new(0);
        let fetch = |x: Range<u64>| {
            calls.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_millis(200));
            Ok(obj[x.start as usize..x.end as usize].to_vec())
        };
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let mut out = Vec::new();
                    c.read(2100..2200, 2200, &mut out, &fetch).unwrap();
                    assert_eq!(out, obj[2100..2200]);
                });
            }
        });
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert_eq!(c.fetched(), 1000);
    }

    #[test]
    fn errors_pass_through_and_bounds_are_checked() {
        let c = BlockCache::new(100, 10, 1000);
        let fail = |_: Range<u64>| Err(io::Error::other("gone"));
        let mut out = Vec::new();
        assert_eq!(
            c.read(0..5, 5, &mut out, &fail).unwrap_err().to_string(),
            "gone"
        );
        assert!(c.read(90..101, 101, &mut out, &fail).is_err());
        let short = |_: Range<u64>| Ok(vec![0; 3]);
        assert!(c.read(0..5, 5, &mut out, &short).is_err());
        assert!(out.is_empty());
    }
}
