//! A bounded cache of fixed-size blocks of a remote object, filled by
//! range reads, with read-ahead for sequential reading.
//!
//! A read asks for the blocks it covers; the missing ones are fetched in
//! as few ranges as possible (one per run of adjacent missing blocks).
//! When a read starts where the previous one ended, the last run is
//! extended by a read-ahead window that doubles with each sequential read
//! up to [`MAX_AHEAD`], so streaming a large tensor costs few requests.
//! The least recently used blocks are dropped beyond the capacity. The
//! lock is not held while fetching: readers of other blocks go on, and two
//! readers of one missing block may both fetch it.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Block size.
pub const BLOCK: u64 = 1 << 20;
/// Default capacity (`-o cache_size=`).
pub const DEFAULT_CAPACITY: u64 = 256 << 20;
/// Largest read-ahead, in blocks.
pub const MAX_AHEAD: u64 = 16;

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
        let first = range.start / self.block;
        let last = (range.end - 1) / self.block;
        let mut have: Vec<Option<Arc<[u8]>>> = Vec::new();
        let ahead = {
            let mut s = self.lock();
            for b in first..=last {
                have.push(s.touch(b));
            }
            s.ahead = if range.start == s.last_end && range.start != 0 {
                (s.ahead * 2).clamp(1, MAX_AHEAD)
            } else {
                0
            };
            s.last_end = range.end;
            s.ahead
        };
        let blocks_total = self.len.div_ceil(self.block);
        // Runs of adjacent missing blocks; the last one gets the read-ahead.
        let mut runs: Vec<Range<u64>> = Vec::new();
        for (i, h) in have.iter().enumerate() {
            let b = first + i as u64;
            if h.is_some() {
                continue;
            }
            match runs.last_mut() {
                Some(r) if r.end == b => r.end = b + 1,
                _ => runs.push(b..b + 1),
            }
        }
        // Read-ahead beyond what the cache holds would evict itself.
        let ahead = ahead.min(self.keep_blocks().saturating_sub(last - first + 1));
        if ahead > 0 {
            let s = self.lock();
            let mut end = last + 1;
            let limit = blocks_total.min(ahead_limit.div_ceil(self.block));
            while end < limit && end <= last + ahead && !s.blocks.contains_key(&end) {
                end += 1;
            }
            drop(s);
            match runs.last_mut() {
                Some(r) if r.end == last + 1 => r.end = end,
                _ if end > last + 1 => runs.push(last + 1..end),
                _ => {}
            }
        }
        for run in runs {
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
            let mut s = self.lock();
            for (k, chunk) in data.chunks(self.block as usize).enumerate() {
                let b = run.start + k as u64;
                let block: Arc<[u8]> = chunk.into();
                if (first..=last).contains(&b) {
                    have[(b - first) as usize] = Some(block.clone());
                }
                s.insert(b, block);
            }
            let keep = self.keep_blocks();
            s.evict(keep);
        }
        for (i, h) in have.iter().enumerate() {
            let b = first + i as u64;
            let data = h.as_deref().unwrap_or_default();
            let base = b * self.block;
            let from = range.start.max(base) - base;
            let to = range.end.min(base + data.len() as u64) - base;
            out.extend_from_slice(&data[from as usize..to as usize]);
        }
        Ok(())
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
