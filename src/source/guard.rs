//! Mapped source pages that vanish while ptefs itself reads them.
//!
//! A source truncated under ptefs loses the pages past its new end, and a
//! read of one through the map raises `SIGBUS`. The kernel's own copies
//! (a FUSE reply, `ptefs cat`'s writes) fail cleanly with `EFAULT`, but
//! parsing at open, rendering a file when first read and decoding a
//! delegate payload read mapped bytes in this process. So every map of a
//! local source is registered here, and a `SIGBUS` handler installed once
//! per process answers a fault within a registered map by putting a page
//! of zeros where the vanished page was and counting the fault against
//! that map. The read that faulted goes on over zeros (the parsers take
//! any bytes, so that costs time, not safety), and whoever started it
//! asks [`faults`] afterwards and reports the source as changed instead of
//! showing what it read.
//!
//! Faults are answered only while guarded: in a command or daemon, which
//! call [`guard_whole_process`], or on a thread inside a [`Section`] (the
//! library's own reads, as the Python module makes them). A fault anywhere
//! else, such as NumPy reading an array over a truncated map, is handed to
//! the disposition the process had before, as with any mapped file.
//!
//! Cost: one `sigaction` per process, an atomic store when a map is made
//! and dropped, a thread-local increment per section and an atomic load
//! per [`faults`] check; nothing at all on the path of a read that does
//! not fault.

use std::cell::Cell;
use std::ops::Deref;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use memmap2::Mmap;

/// How many maps can be guarded at once; a map made while all are taken
/// is served unguarded (and logged).
const SLOTS: usize = 4096;

/// A registered map: its address range and the faults answered in it.
struct Slot {
    /// First byte, or 0 when the slot is free ([`TAKEN`] while it is being
    /// filled in).
    start: AtomicUsize,
    len: AtomicUsize,
    faults: AtomicU64,
}

const TAKEN: usize = usize::MAX;

static REGISTRY: [Slot; SLOTS] = [const {
    Slot {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        faults: AtomicU64::new(0),
    }
}; SLOTS];

/// One past the highest slot ever used: the handler scans no further.
static HIGH: AtomicUsize = AtomicUsize::new(0);

/// Set by commands and the daemon: every fault in a registered map is
/// theirs to answer.
static WHOLE_PROCESS: AtomicBool = AtomicBool::new(false);

/// The page size, read once before the handler is installed.
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// What `SIGBUS` did before the handler was installed.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

thread_local! {
    /// Open [`Section`]s on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// A read-only map of a local source whose vanished pages read as zeros
/// (counted by [`faults`]) instead of killing the process.
#[derive(Debug)]
pub struct GuardedMap {
    map: Mmap,
    slot: Option<usize>,
}

impl GuardedMap {
    /// Guards `map` (installing the handler on first use).
    pub fn new(map: Mmap) -> GuardedMap {
        install();
        let slot = register(map.as_ptr() as usize, map.len());
        if slot.is_none() {
            log::warn!(
                "more than {SLOTS} maps are open; a source truncated while one of the others \
                 is parsed may stop the process"
            );
        }
        GuardedMap { map, slot }
    }

    /// Faults answered in this map so far (0 while it is intact).
    pub fn faults(&self) -> u64 {
        self.slot
            .map_or(0, |i| REGISTRY[i].faults.load(Ordering::Acquire))
    }
}

impl Deref for GuardedMap {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl AsRef<[u8]> for GuardedMap {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        // Before the map is unmapped: its addresses may then be reused by
        // memory that must never be replaced with zeros.
        if let Some(i) = self.slot {
            REGISTRY[i].start.store(0, Ordering::Release);
        }
    }
}

/// Faults answered so far in the registered map holding `bytes`; 0 for
/// bytes outside every registered map (a buffer, a remote image).
pub fn faults(bytes: &[u8]) -> u64 {
    slot_of(bytes.as_ptr() as usize).map_or(0, |i| REGISTRY[i].faults.load(Ordering::Acquire))
}

/// Answers faults in registered maps on every thread from now on: for a
/// process whose every read of a map is ptefs's own.
pub fn guard_whole_process() {
    install();
    WHOLE_PROCESS.store(true, Ordering::Release);
}

/// While alive, faults in registered maps on this thread are answered.
#[derive(Debug)]
pub struct Section(());

impl Section {
    /// Opens a section on this thread.
    pub fn new() -> Section {
        install();
        DEPTH.with(|d| d.set(d.get() + 1));
        Section(())
    }
}

impl Default for Section {
    fn default() -> Section {
        Section::new()
    }
}

impl Drop for Section {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Takes a free slot for `start..start + len`.
fn register(start: usize, len: usize) -> Option<usize> {
    if start == 0 || len == 0 {
        return None;
    }
    for (i, slot) in REGISTRY.iter().enumerate() {
        if slot
            .start
            .compare_exchange(0, TAKEN, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            slot.len.store(len, Ordering::Relaxed);
            slot.faults.store(0, Ordering::Relaxed);
            HIGH.fetch_max(i + 1, Ordering::AcqRel);
            // Published last: the handler reads `len` only after seeing it.
            slot.start.store(start, Ordering::Release);
            return Some(i);
        }
    }
    None
}

/// The registered map holding `addr`. Called from the signal handler:
/// atomics only.
fn slot_of(addr: usize) -> Option<usize> {
    let high = HIGH.load(Ordering::Acquire);
    REGISTRY[..high].iter().position(|slot| {
        let start = slot.start.load(Ordering::Acquire);
        start != 0
            && start != TAKEN
            && addr >= start
            && addr - start < slot.len.load(Ordering::Relaxed)
    })
}

/// Installs the handler, once per process.
fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if let Ok(page) = usize::try_from(page)
            && page.is_power_of_two()
        {
            PAGE.store(page, Ordering::Relaxed);
        }
        // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, empty
        // mask, no flags); the fields that matter are then set.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        // SAFETY: both pointers are valid for the call; the handler only
        // uses atomics and async-signal-safe system calls.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: see above; sigemptyset initialises the mask in place.
        let ok = unsafe {
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0
        };
        if ok {
            let _ = PREVIOUS.set(previous);
        } else {
            log::warn!(
                "cannot install a SIGBUS handler: {}",
                std::io::Error::last_os_error()
            );
        }
    });
}

/// The `SIGBUS` handler (see the module's documentation).
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo.
    let addr = unsafe { (*info).si_addr() } as usize;
    let guarded = WHOLE_PROCESS.load(Ordering::Acquire) || DEPTH.with(|d| d.get()) > 0;
    if guarded && let Some(i) = slot_of(addr) {
        let page = addr & !(PAGE.load(Ordering::Relaxed) - 1);
        // SAFETY: the page lies within a map this process made and still
        // holds (its slot is freed before it is unmapped, and the thread
        // that faulted is reading it); replacing it with a private page of
        // zeros changes what reads of it see, not which memory is mapped
        // there.
        let done = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                PAGE.load(Ordering::Relaxed),
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if done != libc::MAP_FAILED {
            REGISTRY[i].faults.fetch_add(1, Ordering::AcqRel);
            return;
        }
    }
    // Not ours: put back what was there before and return, so that the
    // access faults again into it (by default, ending the process).
    if let Some(previous) = PREVIOUS.get() {
        // SAFETY: `previous` is the disposition sigaction returned.
        unsafe { libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A file of `pages` pages of `fill`, mapped and guarded.
    fn mapped(pages: usize, fill: u8) -> (tempfile::NamedTempFile, GuardedMap) {
        let page = PAGE.load(Ordering::Relaxed).max(4096);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![fill; pages * page]).unwrap();
        f.flush().unwrap();
        // SAFETY: the test owns the file; it truncates it on purpose.
        let map = unsafe { Mmap::map(f.as_file()) }.unwrap();
        (f, GuardedMap::new(map))
    }

    #[test]
    fn a_vanished_page_reads_as_zeros_and_is_counted() {
        let (f, map) = mapped(4, 7);
        let page = PAGE.load(Ordering::Relaxed);
        assert_eq!(faults(&map), 0);
        f.as_file().set_len(page as u64).unwrap();
        let sum: u64 = {
            let _s = Section::new();
            map.iter().map(|&b| u64::from(b)).sum()
        };
        assert_eq!(sum, 7 * page as u64, "the page still there, then zeros");
        assert_eq!(map.faults(), 3, "one fault per vanished page");
        assert_eq!(faults(&map[page * 2..]), 3, "found by any address in it");
    }

    #[test]
    fn bytes_outside_every_map_have_no_faults() {
        assert_eq!(faults(&[1, 2, 3]), 0);
        let (_f, map) = mapped(1, 1);
        let start = map.as_ptr() as usize;
        drop(map);
        assert_eq!(slot_of(start), None, "a dropped map is forgotten");
    }
}
