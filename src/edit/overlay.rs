//! The copy-on-write overlay a writable mount writes into.
//!
//! Edits are kept by source and byte range: every file that serves the
//! same stored bytes reads them through the same ranges, so a write
//! through one name is seen through every other at once. The new bytes
//! live in the [`Journal`] only (the overlay holds where they are), so a
//! write is kept once its record is appended, and memory holds no edited
//! bytes. Each write and each read of a range holds the overlay's lock for
//! its whole length, so a reader sees a write entirely or not at all.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::RwLock;

use super::journal::{self, Header, Journal, JournalError, Record};
use super::{Changes, Edit, EditError};
use crate::format::Span;
use crate::source::Source;
use crate::tree::SourceId;

/// Why a write could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    /// The journal could not take the write (a full disk: ENOSPC).
    #[error("{path}: {error}")]
    Journal {
        /// The journal.
        path: String,
        /// What the system said.
        error: io::Error,
    },
    /// An earlier failure to make the journal durable: nothing more is
    /// taken, as what it holds is no longer known.
    #[error("{0}")]
    Broken(String),
    /// The overlay was opened only to read a journal.
    #[error("the journal is open only for reading")]
    ReadOnly,
}

impl OverlayError {
    /// The errno to answer with: ENOSPC for a full disk, EIO otherwise.
    pub fn errno(&self) -> i32 {
        match self {
            OverlayError::Journal { error, .. } if error.raw_os_error() == Some(libc::ENOSPC) => {
                libc::ENOSPC
            }
            OverlayError::Journal { error, .. } if error.raw_os_error() == Some(libc::EDQUOT) => {
                libc::EDQUOT
            }
            _ => libc::EIO,
        }
    }
}

/// Bytes held in the journal at `at`, for `len` bytes of a source.
#[derive(Debug, Clone, Copy)]
struct Extent {
    len: u64,
    at: u64,
}

/// A run of written bytes, and the tree path it was written through.
#[derive(Debug, Clone)]
pub struct Written {
    /// The tree path.
    pub path: String,
    /// The source.
    pub source: SourceId,
    /// The range of the source.
    pub span: Span,
}

#[derive(Debug, Default)]
struct State {
    /// By source and start offset; never overlapping.
    extents: BTreeMap<(SourceId, u64), Extent>,
    /// Writes of groups not yet written whole.
    pending: HashMap<u32, Vec<(Written, u64)>>,
    /// Each range written, in order.
    written: Vec<Written>,
    journal: Option<Journal>,
    broken: Option<String>,
    /// The journal length a commit was made from.
    committed: Option<u64>,
}

/// Edited ranges of sources, their bytes in a journal.
#[derive(Debug)]
pub struct Overlay {
    state: RwLock<State>,
    /// The journal file, for reading edited bytes.
    file: File,
    path: std::path::PathBuf,
}

impl Overlay {
    /// The overlay of journal directory `dir` for the sources of `header`,
    /// with the edits it already holds (none with `discard`). Returns it
    /// and the number of earlier writes found.
    pub fn open(
        dir: &Path,
        header: &Header,
        discard: bool,
    ) -> Result<(Overlay, usize), JournalError> {
        let (journal, records) = Journal::open(dir, header, discard)?;
        let path = journal.path().to_owned();
        let file = journal
            .file()
            .try_clone()
            .map_err(|error| JournalError::Io {
                path: path.clone(),
                error,
            })?;
        let mut state = State::default();
        let found = replay(&mut state, records);
        state.journal = Some(journal);
        Ok((
            Overlay {
                state: RwLock::new(state),
                file,
                path,
            },
            found,
        ))
    }

    /// The overlay the journal at `path` holds up to byte `upto`, read
    /// only (as `ptefs commit` and `ptefs edits` read a mount's), with
    /// the header naming its sources.
    pub fn read(path: &Path, upto: Option<u64>) -> Result<(Overlay, Header), JournalError> {
        let (header, records, file) = journal::read(path, upto)?;
        let mut state = State::default();
        replay(&mut state, records);
        Ok((
            Overlay {
                state: RwLock::new(state),
                file,
                path: path.to_owned(),
            },
            header,
        ))
    }

    /// The journal file.
    pub fn journal_path(&self) -> &Path {
        &self.path
    }

    fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_lock(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.read_lock().extents.is_empty()
    }

    /// True when some byte of `span` of source `id` was written.
    pub fn touches(&self, id: SourceId, span: Span) -> bool {
        span.len > 0
            && overlapping(&self.read_lock().extents, id, span)
                .next()
                .is_some()
    }

    /// Writes `data` at `offset` of source `id`, through tree path `path`,
    /// pending in `group` when given. Kept whole once its record is in the
    /// journal, or not at all.
    pub fn write(
        &self,
        id: SourceId,
        offset: u64,
        data: &[u8],
        path: &str,
        group: Option<u32>,
    ) -> Result<(), OverlayError> {
        if data.is_empty() {
            return Ok(());
        }
        let mut state = self.write_lock();
        if let Some(why) = &state.broken {
            return Err(OverlayError::Broken(why.clone()));
        }
        let journal = state.journal.as_mut().ok_or(OverlayError::ReadOnly)?;
        let at = journal
            .append_write(id, offset, path, data, group)
            .map_err(|error| OverlayError::Journal {
                path: self.path.display().to_string(),
                error,
            })?;
        let w = Written {
            path: path.to_owned(),
            source: id,
            span: Span {
                offset,
                len: data.len() as u64,
            },
        };
        match group {
            Some(g) => state.pending.entry(g).or_default().push((w, at)),
            None => place(&mut state, w, at),
        }
        Ok(())
    }

    /// Makes pending `group`'s writes count, as one.
    pub fn finish_group(&self, group: u32) -> Result<(), OverlayError> {
        let mut state = self.write_lock();
        if let Some(why) = &state.broken {
            return Err(OverlayError::Broken(why.clone()));
        }
        let journal = state.journal.as_mut().ok_or(OverlayError::ReadOnly)?;
        journal
            .append_done(group)
            .map_err(|error| OverlayError::Journal {
                path: self.path.display().to_string(),
                error,
            })?;
        for (w, at) in state.pending.remove(&group).unwrap_or_default() {
            place(&mut state, w, at);
        }
        Ok(())
    }

    /// Forgets pending `group`'s writes: their records stay in the journal
    /// but never count.
    pub fn drop_group(&self, group: u32) {
        self.write_lock().pending.remove(&group);
    }

    /// Makes every write kept so far durable. A failure is final: the
    /// kernel may have dropped what it could not write, so the journal
    /// takes nothing more.
    pub fn sync(&self) -> Result<u64, OverlayError> {
        let mut state = self.write_lock();
        if let Some(why) = &state.broken {
            return Err(OverlayError::Broken(why.clone()));
        }
        let journal = state.journal.as_ref().ok_or(OverlayError::ReadOnly)?;
        let end = journal.end();
        match journal.sync() {
            Ok(()) => Ok(end),
            Err(error) => {
                let why = format!(
                    "{}: making the edits durable failed ({error}); the mount takes no more writes",
                    self.path.display()
                );
                log::error!("{why}");
                state.broken = Some(why.clone());
                Err(OverlayError::Broken(why))
            }
        }
    }

    /// Records that a commit was made from the first `len` bytes of the
    /// journal.
    pub fn committed(&self, len: u64) {
        self.write_lock().committed = Some(len);
    }

    /// True when a commit was made from the journal as it is now.
    pub fn all_committed(&self) -> bool {
        let state = self.read_lock();
        let end = state.journal.as_ref().map(Journal::end);
        state.pending.is_empty() && end.is_some() && state.committed == end
    }

    /// Removes the journal (its edits were written elsewhere). The overlay
    /// takes no more writes.
    pub fn remove_journal(&self) -> io::Result<()> {
        let mut state = self.write_lock();
        state.broken = Some("the journal was removed".to_owned());
        match state.journal.take() {
            Some(j) => j.remove(),
            None => Ok(()),
        }
    }

    /// Puts the overlay's bytes over `buf`, which holds `span` of source
    /// `id` as the source has it.
    pub fn apply(&self, id: SourceId, span: Span, buf: &mut [u8]) -> io::Result<()> {
        if span.len == 0 {
            return Ok(());
        }
        let state = self.read_lock();
        for (start, e) in overlapping(&state.extents, id, span) {
            let from = span.offset.max(start);
            let to = span.end().min(start + e.len);
            let dst = &mut buf[(from - span.offset) as usize..(to - span.offset) as usize];
            self.file.read_exact_at(dst, e.at + (from - start))?;
        }
        Ok(())
    }

    /// The ranges written, each with the path it was first written
    /// through: overlapping and adjacent writes are one range.
    pub fn written(&self) -> Vec<Written> {
        let mut written = self.read_lock().written.clone();
        written.sort_by_key(|w| (w.source, w.span.offset));
        let mut merged: Vec<Written> = Vec::new();
        for w in written {
            match merged.last_mut() {
                Some(last) if last.source == w.source && w.span.offset <= last.span.end() => {
                    last.span.len = last.span.len.max(w.span.end() - last.span.offset);
                }
                _ => merged.push(w),
            }
        }
        merged
    }

    /// The bytes that differ from source `id` (`source`), as edits read
    /// from the journal a piece at a time when a writer asks for them:
    /// each run of changed bytes once, whatever was written over it.
    pub fn changes<'a>(&'a self, id: SourceId, source: &'a Source) -> Changed<'a> {
        Changed {
            overlay: self,
            id,
            source,
        }
    }

    /// The sources with written bytes.
    pub fn sources(&self) -> Vec<SourceId> {
        let mut ids: Vec<SourceId> = self.read_lock().extents.keys().map(|(id, _)| *id).collect();
        ids.dedup();
        ids
    }
}

/// The changed bytes of one source of an [`Overlay`], as [`Changes`]:
/// pieces of at most 1 MiB, so memory holds one piece (and the source's
/// and the overlay's bytes for it) whatever the edits' size.
pub struct Changed<'a> {
    overlay: &'a Overlay,
    id: SourceId,
    source: &'a Source,
}

impl Changes for Changed<'_> {
    fn each(
        &self,
        f: &mut dyn FnMut(&Edit, bool) -> Result<(), EditError>,
    ) -> Result<(), EditError> {
        let (overlay, id, source) = (self.overlay, self.id, self.source);
        let spans: Vec<Span> = {
            let state = overlay.read_lock();
            overlapping(
                &state.extents,
                id,
                Span {
                    offset: 0,
                    len: u64::MAX,
                },
            )
            .map(|(offset, e)| Span { offset, len: e.len })
            .collect()
        };
        let (mut old, mut new) = (Vec::new(), Vec::new());
        let mut piece = Edit {
            offset: 0,
            bytes: Vec::new(),
            path: String::new(),
        };
        // Where the last piece given ended: a run that goes on from there
        // carries its range on.
        let mut end = None;
        for whole in spans {
            for span in pieces(whole, 1 << 20) {
                old.clear();
                source
                    .read_span(span, &mut old)
                    .map_err(EditError::io(&source.path))?;
                new.clone_from(&old);
                overlay
                    .apply(id, span, &mut new)
                    .map_err(EditError::io(&overlay.path))?;
                let mut i = 0;
                while i < new.len() {
                    if old[i] == new[i] {
                        i += 1;
                        continue;
                    }
                    let from = i;
                    while i < new.len() && old[i] != new[i] {
                        i += 1;
                    }
                    piece.offset = span.offset + from as u64;
                    piece.bytes.clear();
                    piece.bytes.extend_from_slice(&new[from..i]);
                    f(&piece, end == Some(piece.offset))?;
                    end = Some(span.offset + i as u64);
                }
            }
        }
        Ok(())
    }
}

/// `span` in pieces of at most `size` bytes.
pub fn pieces(span: Span, size: u64) -> impl Iterator<Item = Span> {
    (0..span.len.div_ceil(size)).map(move |i| {
        let offset = span.offset + i * size;
        Span {
            offset,
            len: size.min(span.end() - offset),
        }
    })
}

/// The extents of source `id` that overlap `span`, with their starts.
fn overlapping(
    extents: &BTreeMap<(SourceId, u64), Extent>,
    id: SourceId,
    span: Span,
) -> impl Iterator<Item = (u64, Extent)> + '_ {
    let end = span.offset.saturating_add(span.len);
    // The extent starting before the span may reach into it.
    let before = extents
        .range((id, 0)..(id, span.offset))
        .next_back()
        .filter(|((_, s), e)| s + e.len > span.offset);
    before
        .into_iter()
        .chain(extents.range((id, span.offset)..(id, end)))
        .map(|(&(_, s), e)| (s, *e))
}

/// Puts a write whose bytes are at `at` of the journal over the extents.
fn place(state: &mut State, w: Written, at: u64) {
    let (id, span) = (w.source, w.span);
    let old: Vec<(u64, Extent)> = overlapping(&state.extents, id, span).collect();
    for (start, e) in old {
        state.extents.remove(&(id, start));
        // What is left of it on either side.
        if start < span.offset {
            let len = span.offset - start;
            state.extents.insert((id, start), Extent { len, at: e.at });
        }
        let end = start + e.len;
        if end > span.end() {
            let cut = span.end() - start;
            state.extents.insert(
                (id, span.end()),
                Extent {
                    len: end - span.end(),
                    at: e.at + cut,
                },
            );
        }
    }
    state
        .extents
        .insert((id, span.offset), Extent { len: span.len, at });
    state.written.push(w);
}

/// Applies `records` read back from a journal; returns the writes that
/// count.
fn replay(state: &mut State, records: Vec<Record>) -> usize {
    let mut found = 0;
    for r in records {
        match r {
            Record::Write {
                source,
                offset,
                len,
                at,
                path,
                group,
            } => {
                let w = Written {
                    path,
                    source,
                    span: Span { offset, len },
                };
                match group {
                    Some(g) => state.pending.entry(g).or_default().push((w, at)),
                    None => {
                        place(state, w, at);
                        found += 1;
                    }
                }
            }
            Record::Done(g) => {
                for (w, at) in state.pending.remove(&g).unwrap_or_default() {
                    place(state, w, at);
                    found += 1;
                }
            }
        }
    }
    // Groups never finished were not written whole: they never count.
    state.pending.clear();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::journal::Identity;

    #[test]
    fn later_writes_cover_earlier_ones_and_pending_groups_count_once_done() {
        let dir = tempfile::tempdir().unwrap();
        let header = Header {
            sources: vec![Identity {
                path: "/s".into(),
                len: 64,
                mtime: (0, 0),
                sample_sha256: String::new(),
            }],
        };
        let (o, found) = Overlay::open(dir.path(), &header, false).unwrap();
        assert_eq!(found, 0);
        o.write(0, 4, b"aaaaaaaa", "p", None).unwrap();
        o.write(0, 6, b"bb", "p", None).unwrap();
        o.write(0, 20, b"cc", "q", Some(1)).unwrap();
        let span = Span { offset: 0, len: 24 };
        let mut buf = vec![b'.'; 24];
        o.apply(0, span, &mut buf).unwrap();
        assert_eq!(&buf, b"....aabbaaaa............");
        o.finish_group(1).unwrap();
        o.write(0, 22, b"dd", "q", Some(2)).unwrap();
        let mut buf = vec![b'.'; 24];
        o.apply(0, span, &mut buf).unwrap();
        assert_eq!(&buf, b"....aabbaaaa........cc..");
        o.sync().unwrap();
        drop(o);
        // Group 2 was never finished: it does not come back.
        let (o, found) = Overlay::open(dir.path(), &header, false).unwrap();
        assert_eq!(found, 3);
        let mut buf = vec![b'.'; 24];
        o.apply(0, span, &mut buf).unwrap();
        assert_eq!(&buf, b"....aabbaaaa........cc..");
        let w: Vec<(String, u64, u64)> = o
            .written()
            .into_iter()
            .map(|w| (w.path, w.span.offset, w.span.len))
            .collect();
        assert_eq!(w, vec![("p".into(), 4, 8), ("q".into(), 20, 2)]);
    }
}
