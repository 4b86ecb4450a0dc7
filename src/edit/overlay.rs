//! The copy-on-write overlay a writable mount writes into.
//!
//! Edits are kept by source and byte range, in pages of the source: every
//! file that serves the same stored bytes reads them through the same
//! pages, so a write through one name is seen through every other at once.
//! Pages live in memory up to a limit, then in a file in a work directory;
//! the sources themselves are never written. Each write and each read of
//! a range holds the overlay's lock for its whole length, so a reader sees
//! a write entirely or not at all.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use super::{Edit, EditError, Edits};
use crate::format::Span;
use crate::source::Source;
use crate::tree::SourceId;

/// Bytes per page.
pub const PAGE: u64 = 4096;

/// Why a write could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    /// The memory limit is reached and there is no work directory.
    #[error(
        "the edits would take more than {limit} bytes of memory; mount with --work-dir to keep more on disk"
    )]
    Full {
        /// The limit.
        limit: u64,
    },
    /// Reading the source or the work file failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Where a page's bytes are.
#[derive(Debug)]
enum Slot {
    Memory(Box<[u8]>),
    /// At this offset of the work file.
    Spilled(u64),
}

#[derive(Debug, Default)]
struct Pages {
    map: BTreeMap<(SourceId, u64), Slot>,
    in_memory: u64,
    work: Option<(File, u64)>,
}

/// Edited pages of sources.
#[derive(Debug)]
pub struct Overlay {
    pages: RwLock<Pages>,
    limit: u64,
    work_dir: Option<PathBuf>,
}

impl Overlay {
    /// An empty overlay keeping up to `limit` bytes in memory, and the rest
    /// in a file in `work_dir` when one is given.
    pub fn new(limit: u64, work_dir: Option<&Path>) -> Overlay {
        Overlay {
            pages: RwLock::new(Pages::default()),
            limit,
            work_dir: work_dir.map(Path::to_owned),
        }
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.read_lock().map.is_empty()
    }

    fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, Pages> {
        self.pages.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_lock(&self) -> std::sync::RwLockWriteGuard<'_, Pages> {
        self.pages.write().unwrap_or_else(|e| e.into_inner())
    }

    /// True when some page of `span` of source `id` was written.
    pub fn touches(&self, id: SourceId, span: Span) -> bool {
        if span.len == 0 {
            return false;
        }
        let (first, last) = (span.offset / PAGE, (span.end() - 1) / PAGE);
        self.read_lock()
            .map
            .range((id, first)..=(id, last))
            .next()
            .is_some()
    }

    /// Writes `data` at `offset` of `source` (source `id`).
    pub fn write(
        &self,
        id: SourceId,
        source: &Source,
        offset: u64,
        data: &[u8],
    ) -> Result<(), OverlayError> {
        let mut pages = self.write_lock();
        let end = offset + data.len() as u64;
        if data.is_empty() {
            return Ok(());
        }
        // Refused whole or kept whole: room for every new page first.
        let new = (offset / PAGE..=(end - 1) / PAGE)
            .filter(|&p| !pages.map.contains_key(&(id, p)))
            .count() as u64;
        if self.work_dir.is_none() && pages.in_memory + new * PAGE > self.limit {
            return Err(OverlayError::Full { limit: self.limit });
        }
        let mut at = offset;
        while at < end {
            let page = at / PAGE;
            let start = page * PAGE;
            let stop = end.min(start + PAGE);
            let mut bytes = self.page_bytes(&pages, id, source, page)?;
            let from = (at - start) as usize;
            bytes[from..from + (stop - at) as usize]
                .copy_from_slice(&data[(at - offset) as usize..(stop - offset) as usize]);
            self.store(&mut pages, id, page, bytes)?;
            at = stop;
        }
        Ok(())
    }

    /// A page's current bytes: the overlay's, or the source's (as many as
    /// the source has in that page).
    fn page_bytes(
        &self,
        pages: &Pages,
        id: SourceId,
        source: &Source,
        page: u64,
    ) -> io::Result<Vec<u8>> {
        let len = source.opened.len.saturating_sub(page * PAGE).min(PAGE) as usize;
        match pages.map.get(&(id, page)) {
            Some(Slot::Memory(b)) => Ok(b.to_vec()),
            Some(Slot::Spilled(at)) => {
                let mut b = vec![0; len];
                let (file, _) = pages.work.as_ref().expect("spilled pages have a work file");
                file.read_exact_at(&mut b, *at)?;
                Ok(b)
            }
            None => {
                let mut b = Vec::with_capacity(len);
                source.read_span(
                    Span {
                        offset: page * PAGE,
                        len: len as u64,
                    },
                    &mut b,
                )?;
                Ok(b)
            }
        }
    }

    fn store(
        &self,
        pages: &mut Pages,
        id: SourceId,
        page: u64,
        bytes: Vec<u8>,
    ) -> Result<(), OverlayError> {
        match pages.map.get(&(id, page)) {
            Some(Slot::Memory(_)) => {
                pages.map.insert((id, page), Slot::Memory(bytes.into()));
                return Ok(());
            }
            Some(Slot::Spilled(at)) => {
                let (file, _) = pages.work.as_ref().expect("spilled pages have a work file");
                file.write_all_at(&bytes, *at)?;
                return Ok(());
            }
            None => {}
        }
        if pages.in_memory + PAGE <= self.limit {
            pages.in_memory += PAGE;
            pages.map.insert((id, page), Slot::Memory(bytes.into()));
            return Ok(());
        }
        let Some(dir) = &self.work_dir else {
            return Err(OverlayError::Full { limit: self.limit });
        };
        if pages.work.is_none() {
            // Unnamed: the pages go when the daemon does, however it ends.
            pages.work = Some((tempfile::tempfile_in(dir)?, 0));
        }
        let (file, used) = pages.work.as_mut().expect("just made");
        let at = *used;
        file.write_all_at(&bytes, at)?;
        *used += PAGE;
        pages.map.insert((id, page), Slot::Spilled(at));
        Ok(())
    }

    /// Puts the overlay's bytes over `buf`, which holds `span` of source
    /// `id` as the source has it.
    pub fn apply(&self, id: SourceId, span: Span, buf: &mut [u8]) -> io::Result<()> {
        if span.len == 0 {
            return Ok(());
        }
        let pages = self.read_lock();
        let (first, last) = (span.offset / PAGE, (span.end() - 1) / PAGE);
        for (&(_, page), slot) in pages.map.range((id, first)..=(id, last)) {
            let start = page * PAGE;
            let from = span.offset.max(start);
            let to = span.end().min(start + PAGE);
            let dst = &mut buf[(from - span.offset) as usize..(to - span.offset) as usize];
            let within = (from - start) as usize;
            match slot {
                Slot::Memory(b) => dst.copy_from_slice(&b[within..within + dst.len()]),
                Slot::Spilled(at) => {
                    let (file, _) = pages.work.as_ref().expect("spilled pages have a work file");
                    file.read_exact_at(dst, at + within as u64)?;
                }
            }
        }
        Ok(())
    }

    /// The bytes that differ from source `id` (`source`), as edits: each
    /// run of changed bytes once, whatever was written over it.
    pub fn edits(&self, id: SourceId, source: &Source) -> Result<Edits, EditError> {
        let pages = self.read_lock();
        let mut edits = Edits::new();
        let mut run: Option<Edit> = None;
        for (&(_, page), _) in pages.map.range((id, 0)..=(id, u64::MAX)) {
            let new = self
                .page_bytes(&pages, id, source, page)
                .map_err(EditError::io(&source.path))?;
            let mut old = Vec::with_capacity(new.len());
            let span = Span {
                offset: page * PAGE,
                len: new.len() as u64,
            };
            source
                .read_span(span, &mut old)
                .map_err(EditError::io(&source.path))?;
            for (i, (a, b)) in old.iter().zip(&new).enumerate() {
                let at = span.offset + i as u64;
                if a == b {
                    continue;
                }
                match &mut run {
                    Some(r) if r.span().end() == at => r.bytes.push(*b),
                    _ => {
                        if let Some(r) = run.take() {
                            edits.add(r, &source.name)?;
                        }
                        run = Some(Edit {
                            offset: at,
                            bytes: vec![*b],
                            path: String::new(),
                        });
                    }
                }
            }
        }
        if let Some(r) = run {
            edits.add(r, &source.name)?;
        }
        Ok(edits)
    }

    /// The sources with written pages.
    pub fn sources(&self) -> Vec<SourceId> {
        let mut ids: Vec<SourceId> = self.read_lock().map.keys().map(|(id, _)| *id).collect();
        ids.dedup();
        ids
    }
}
