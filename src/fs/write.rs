//! The write path of a writable mount: in-bounds overwrites of stored
//! tensors' bytes go into the [`Overlay`], keyed by source range so every
//! name of the same bytes reads them at once, and into its journal before
//! they are answered; everything else is refused with a typed error (and a
//! log line saying why). A file opened with `O_TRUNC` must be written whole
//! before it is closed, or its writes are dropped. Saving writes a new
//! file with [`crate::edit::save`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{Fs, FsError, Result};
use crate::edit::journal::{self, Header, Identity, JournalError};
use crate::edit::overlay::{Overlay, OverlayError, pieces};
use crate::edit::{self, Written};
use crate::format::Span;
use crate::source::Source;
use crate::tree::{Ino, ROOT, SourceId};
use crate::view::View;

/// The extended attribute of a writable mount's root that makes the
/// journal durable and says where it is and how long ([`JournalInfo`]).
pub const JOURNAL_ATTR: &[u8] = b"user.ptefs.journal";
/// The extended attribute of the root that, set to a journal length,
/// records that a commit was made from it.
pub const COMMITTED_ATTR: &[u8] = b"user.ptefs.committed";

/// What a writable mount says of its journal.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct JournalInfo {
    /// The journal file.
    pub journal: PathBuf,
    /// The bytes of it that are durable, whole records.
    pub length: u64,
    /// Where the mount saves at unmount (`--commit`).
    pub commit: Option<PathBuf>,
    /// The first source, which names the journal.
    pub source: PathBuf,
    /// True when there is nothing to save: no edits, or a commit wrote
    /// every edit the journal holds.
    pub saved: bool,
}

/// A file handle writing a file whole (opened with `O_TRUNC`).
#[derive(Debug)]
struct Rewrite {
    ino: Ino,
    size: u64,
    /// Ranges of the file written, sorted and merged.
    covered: Vec<(u64, u64)>,
}

impl Rewrite {
    fn cover(&mut self, from: u64, to: u64) {
        self.covered.push((from, to));
        self.covered.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.covered.len());
        for &(a, b) in &self.covered {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.covered = merged;
    }

    fn whole(&self) -> bool {
        self.size == 0 || self.covered == [(0, self.size)]
    }

    fn written(&self) -> u64 {
        self.covered.iter().map(|(a, b)| b - a).sum()
    }
}

/// What a writable mount keeps besides its view.
#[derive(Debug)]
pub struct Writable {
    overlay: Overlay,
    /// Where to save at unmount.
    commit_at: Option<PathBuf>,
    /// Handles writing a file whole, by handle (their journal group).
    rewrites: Mutex<HashMap<u64, Rewrite>>,
    next_group: AtomicU32,
}

/// What opening a writable mount's journal found.
#[derive(Debug)]
pub struct Opened {
    /// The mount's writable state.
    pub writable: Writable,
    /// Writes kept from an earlier mount.
    pub replayed: usize,
    /// The journal file.
    pub journal: PathBuf,
}

/// The journal header for `view`'s sources.
pub fn header_of(view: &View) -> Header {
    Header {
        sources: view.sources.iter().map(Identity::of).collect(),
    }
}

/// The journal directory under `base` of the mount of `view`: named after
/// its first source.
pub fn journal_dir(base: &Path, header: &Header) -> PathBuf {
    let first = header
        .sources
        .first()
        .map(|s| s.path.clone())
        .unwrap_or_default();
    journal::dir_for(base, &first)
}

impl Writable {
    /// The writable state of a mount of `view`, its edits journaled under
    /// `base` and replayed from an earlier mount (dropped with
    /// `discard`); saved to `commit_at` at unmount when given.
    pub fn open(
        view: &View,
        base: &Path,
        commit_at: Option<PathBuf>,
        discard: bool,
    ) -> std::result::Result<Opened, JournalError> {
        let header = header_of(view);
        let dir = journal_dir(base, &header);
        let (overlay, replayed) = Overlay::open(&dir, &header, discard)?;
        let journal = overlay.journal_path().to_owned();
        Ok(Opened {
            writable: Writable {
                overlay,
                commit_at,
                rewrites: Mutex::new(HashMap::new()),
                next_group: AtomicU32::new(1),
            },
            replayed,
            journal,
        })
    }
}

/// One changed range, as `ptefs edits` lists it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct EditRow {
    /// A tree path it was written through.
    pub path: String,
    /// The source file holding it.
    pub source: String,
    /// Offset in the source.
    pub offset: u64,
    /// Bytes.
    pub length: u64,
    /// sha256 of the source's bytes there.
    pub old_sha256: String,
    /// sha256 of the new bytes.
    pub new_sha256: String,
}

fn hex(h: Sha256) -> String {
    h.finalize().iter().map(|x| format!("{x:02x}")).collect()
}

/// The ranges of `overlay` that differ from their sources (`sources`, by
/// id), each with the first path it was written through, handed to `each`
/// in source order; read in pieces, so memory holds one piece.
pub fn edit_rows<'s>(
    overlay: &Overlay,
    sources: &dyn Fn(SourceId) -> Result<&'s Source>,
    each: &mut dyn FnMut(EditRow) -> Result<()>,
) -> Result<()> {
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for w in overlay.written() {
        let source = sources(w.source)?;
        let (mut h_old, mut h_new) = (Sha256::new(), Sha256::new());
        let mut differs = false;
        for span in pieces(w.span, 1 << 20) {
            old.clear();
            source
                .read_span(span, &mut old)
                .map_err(|error| FsError::Read {
                    source_name: source.name.clone(),
                    offset: span.offset,
                    end: span.end(),
                    error,
                })?;
            new.clone_from(&old);
            overlay
                .apply(w.source, span, &mut new)
                .map_err(|error| FsError::Journal {
                    why: format!("{}: {error}", overlay.journal_path().display()),
                    errno: libc::EIO,
                })?;
            differs |= old != new;
            h_old.update(&old);
            h_new.update(&new);
        }
        if differs {
            each(EditRow {
                path: w.path,
                source: source.name.clone(),
                offset: w.span.offset,
                length: w.span.len,
                old_sha256: hex(h_old),
                new_sha256: hex(h_new),
            })?;
        }
    }
    Ok(())
}

/// The edits of `overlay` written over their one source to `out`, as `set`
/// writes a file.
pub fn commit_overlay<'s>(
    overlay: &Overlay,
    sources: &dyn Fn(SourceId) -> Result<&'s Source>,
    names: &dyn Fn(SourceId) -> String,
    out: &Path,
    inputs: edit::Inputs<'s>,
) -> Result<Written> {
    let commit = |why: String| FsError::Commit { why };
    let ids = overlay.sources();
    let written = match ids[..] {
        [] => edit::save(sources(0)?, edit::Edits::new(), out, inputs),
        [id] => {
            let source = sources(id)?;
            edit::save(source, overlay.changes(id, source), out, inputs)
        }
        _ => {
            let names: Vec<String> = ids.iter().map(|&i| names(i)).collect();
            return Err(commit(format!(
                "the edits touch {}; one file is saved at a time",
                names.join(" and ")
            )));
        }
    };
    written.map_err(|e| commit(e.to_string()))
}

/// Logs why a write was refused, and returns the error.
fn refused(e: FsError) -> FsError {
    log::warn!("refused: {e}");
    e
}

impl Fs {
    /// The overlay, when the mount is writable.
    pub(super) fn overlay(&self) -> Option<&Overlay> {
        self.writable.as_ref().map(|w| &w.overlay)
    }

    /// True when the mount is writable.
    pub fn is_writable(&self) -> bool {
        self.writable.is_some()
    }

    /// The stored span file `ino` serves, where the mount can write it.
    fn write_target(&self, ino: Ino) -> Result<edit::Stored> {
        let tree = &self.view.tree;
        if tree.file(ino).is_none() {
            return Err(match tree.is_dir(ino) {
                true => FsError::IsDir(ino),
                false => FsError::NotFound,
            });
        }
        let path = tree.path(ino);
        if self.writable.is_none() {
            return Err(FsError::ReadOnly);
        }
        let stored = edit::stored(tree, ino, &path)
            .map_err(|e| FsError::NotStored { why: e.to_string() })?;
        let source = &self.view.sources[stored.source];
        if source.is_remote() {
            return Err(FsError::NotStored {
                why: format!("{path}: is stored in {}, a remote source", source.name),
            });
        }
        Ok(stored)
    }

    /// True when file `ino` takes writes.
    pub(super) fn takes_writes(&self, ino: Ino) -> bool {
        self.writable.is_some() && self.write_target(ino).is_ok()
    }

    /// Checks that `ino` may be opened for writing.
    pub fn open_write(&self, ino: Ino) -> Result<()> {
        self.write_target(ino).map(|_| ()).map_err(refused)
    }

    /// A handle for writing file `ino` whole (opened with `O_TRUNC`): its
    /// writes count only once every byte of the file was written through
    /// it, when it is flushed ([`Fs::flush`]).
    pub fn open_rewrite(&self, ino: Ino) -> Result<u64> {
        self.open_write(ino)?;
        let w = self.writable.as_ref().ok_or(FsError::ReadOnly)?;
        let size = self.getattr(ino)?.size;
        let group = w.next_group.fetch_add(1, Ordering::Relaxed);
        w.rewrites.lock().unwrap_or_else(|e| e.into_inner()).insert(
            u64::from(group),
            Rewrite {
                ino,
                size,
                covered: Vec::new(),
            },
        );
        Ok(u64::from(group))
    }

    /// Writes `data` at `offset` of file `ino` through handle `fh` (0, or
    /// one of [`Fs::open_rewrite`]); returns the bytes written.
    pub fn write(&self, ino: Ino, fh: u64, offset: u64, data: &[u8]) -> Result<u32> {
        self.write_inner(ino, fh, offset, data).map_err(refused)
    }

    fn write_inner(&self, ino: Ino, fh: u64, offset: u64, data: &[u8]) -> Result<u32> {
        let target = self.write_target(ino)?;
        let Some(w) = &self.writable else {
            return Err(FsError::ReadOnly);
        };
        let header = target.header.as_deref().unwrap_or(&[]);
        let hlen = header.len() as u64;
        let size = hlen + target.span.len;
        let end = offset.saturating_add(data.len() as u64);
        if end > size {
            return Err(FsError::PastEnd {
                path: self.view.tree.path(ino),
                size,
                end,
            });
        }
        // Bytes over the .npy header must be the header's own.
        if offset < hlen {
            let upto = end.min(hlen);
            let given = &data[..(upto - offset) as usize];
            if given != &header[offset as usize..upto as usize] {
                return Err(FsError::Header {
                    path: self.view.tree.path(ino),
                });
            }
        }
        let group = {
            let rewrites = w.rewrites.lock().unwrap_or_else(|e| e.into_inner());
            rewrites
                .get(&fh)
                .filter(|r| r.ino == ino)
                .map(|_| fh as u32)
        };
        let from = offset.max(hlen);
        if end > from {
            let part = &data[(from - offset) as usize..];
            let at = target.span.offset + (from - hlen);
            w.overlay
                .write(target.source, at, part, &self.view.tree.path(ino), group)
                .map_err(|e| FsError::Journal {
                    errno: e.errno(),
                    why: match &e {
                        OverlayError::Journal { .. } => format!("the edit journal: {e}"),
                        _ => e.to_string(),
                    },
                })?;
        }
        if group.is_some() {
            let mut rewrites = w.rewrites.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = rewrites.get_mut(&fh) {
                r.cover(offset, end);
            }
        }
        Ok(data.len() as u32)
    }

    /// Flushes handle `fh` at a close: a handle writing its file whole
    /// makes its writes count once every byte was written, and drops them
    /// with EINVAL otherwise.
    pub fn flush(&self, fh: u64) -> Result<()> {
        let Some(w) = &self.writable else {
            return Ok(());
        };
        let Some(r) = w
            .rewrites
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh)
        else {
            return Ok(());
        };
        let group = fh as u32;
        if !r.whole() {
            w.overlay.drop_group(group);
            return Err(refused(FsError::Partial {
                path: self.view.tree.path(r.ino),
                written: r.written(),
                size: r.size,
            }));
        }
        w.overlay.finish_group(group).map_err(|e| {
            w.overlay.drop_group(group);
            refused(FsError::Journal {
                errno: e.errno(),
                why: e.to_string(),
            })
        })
    }

    /// Makes every write answered so far durable (`fsync`): once this
    /// returns, a crash of the daemon or of the machine keeps them.
    pub fn fsync(&self) -> Result<()> {
        let Some(w) = &self.writable else {
            return Ok(());
        };
        w.overlay.sync().map(|_| ()).map_err(|e| FsError::Journal {
            errno: libc::EIO,
            why: e.to_string(),
        })
    }

    /// Sets the size of file `ino`: only to the size it has.
    pub fn set_size(&self, ino: Ino, size: u64) -> Result<super::Attr> {
        let attr = self.getattr(ino)?;
        if attr.size == size {
            return Ok(attr);
        }
        let e = match self.write_target(ino) {
            Ok(_) => FsError::Resize {
                path: self.view.tree.path(ino),
                from: attr.size,
                to: size,
            },
            Err(e) => e,
        };
        Err(refused(e))
    }

    /// Refuses a change of names (create, remove, rename, link, mkdir).
    pub fn refuse_names(&self, op: &str, name: &[u8]) -> FsError {
        refused(FsError::NamesFixed {
            op: op.to_owned(),
            name: String::from_utf8_lossy(name).into_owned(),
        })
    }

    /// Refuses a change of attributes other than the size.
    pub fn refuse_attributes(&self, ino: Ino) -> FsError {
        refused(FsError::AttributesFixed {
            path: self.view.tree.path(ino),
        })
    }

    /// The ranges written that now differ from their sources, each with
    /// the first path it was written through: overlapping and adjacent
    /// writes are one range.
    pub fn edits(&self) -> Result<Vec<EditRow>> {
        let Some(w) = &self.writable else {
            return Ok(Vec::new());
        };
        let mut rows = Vec::new();
        edit_rows(&w.overlay, &|id| self.source(id), &mut |r| {
            rows.push(r);
            Ok(())
        })?;
        Ok(rows)
    }

    /// Writes the edited file to `out`: the one source the edits touch,
    /// with them applied.
    pub fn commit(&self, out: &Path) -> Result<Written> {
        let w = self.writable.as_ref().ok_or(FsError::ReadOnly)?;
        commit_overlay(
            &w.overlay,
            &|id| self.source(id),
            &|id| self.view.sources[id].name.clone(),
            out,
            edit::Inputs::new().sources(&self.view.sources),
        )
    }

    /// At unmount: a journal whose every edit a commit wrote is removed;
    /// otherwise the edits are saved to the path given at mount, if any,
    /// and the journal removed once they are. A journal not removed keeps
    /// the edits for the next mount.
    pub fn commit_at_unmount(&self) {
        let Some(w) = &self.writable else {
            return;
        };
        let o = &w.overlay;
        let journal = o.journal_path().display().to_string();
        let done = if o.all_committed() || o.is_empty() {
            true
        } else if let Some(out) = &w.commit_at {
            match self.commit(out) {
                Ok(written) => {
                    log::info!("saved {} ({} bytes)", written.path.display(), written.len);
                    true
                }
                Err(e) => {
                    log::error!(
                        "saving {} at unmount: {e}; the edits stay in {journal}",
                        out.display()
                    );
                    false
                }
            }
        } else {
            false
        };
        if !done {
            if let Err(e) = o.sync() {
                log::error!("{e}");
            }
            log::info!("the edits stay in {journal} for the next mount of the same source");
            return;
        }
        if let Err(e) = o.remove_journal() {
            log::warn!("{journal}: cannot remove it: {e}");
        }
    }

    /// The writable mount's own attribute of the root: the journal, made
    /// durable, and where it is.
    pub(super) fn control_attr(&self, ino: Ino, name: &[u8]) -> Option<Result<Vec<u8>>> {
        let w = self.writable.as_ref().filter(|_| ino == ROOT)?;
        if name != JOURNAL_ATTR {
            return None;
        }
        let info = w.overlay.sync().map(|length| JournalInfo {
            journal: w.overlay.journal_path().to_owned(),
            length,
            commit: w.commit_at.clone(),
            source: self
                .view
                .sources
                .first()
                .map(|s| std::path::absolute(&s.path).unwrap_or_else(|_| s.path.clone()))
                .unwrap_or_default(),
            saved: w.overlay.is_empty() || w.overlay.all_committed(),
        });
        Some(match info {
            Ok(info) => Ok(serde_json::to_vec(&info).expect("the journal's info serializes")),
            Err(e) => Err(FsError::Journal {
                errno: libc::EIO,
                why: e.to_string(),
            }),
        })
    }

    /// Sets an extended attribute: only [`COMMITTED_ATTR`] of the root of
    /// a writable mount, set to the journal length a commit was made from.
    pub fn setxattr(&self, ino: Ino, name: &[u8], value: &[u8]) -> Result<()> {
        let w = self
            .writable
            .as_ref()
            .filter(|_| ino == ROOT && name == COMMITTED_ATTR);
        let length = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
        match (w, length) {
            (Some(w), Some(length)) => {
                w.overlay.committed(length);
                Ok(())
            }
            _ => Err(refused(FsError::AttributesFixed {
                path: self.view.tree.path(ino),
            })),
        }
    }
}

/// Whether a read of `span` of source `id` must go through the overlay.
pub(super) fn edited(fs: &Fs, id: SourceId, span: Span) -> bool {
    fs.overlay().is_some_and(|o| o.touches(id, span))
}
