//! The write path of a writable mount: in-bounds overwrites of stored
//! tensors' bytes go into the [`Overlay`], keyed by source range so every
//! name of the same bytes reads them at once; everything else is refused
//! with a typed error (and a log line saying why). Saving writes a new
//! file with [`crate::edit::write_patched`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{Fs, FsError, Result};
use crate::edit::overlay::{Overlay, OverlayError};
use crate::edit::{self, Written};
use crate::format::Span;
use crate::tree::{Ino, ROOT, SourceId};

/// The extended attribute of the root that, set to a path, writes the
/// edited file there.
pub const COMMIT_ATTR: &[u8] = b"user.ptefs.commit";
/// The extended attribute of the root listing the changed ranges (JSON).
pub const EDITS_ATTR: &[u8] = b"user.ptefs.edits";

/// What a writable mount keeps besides its view.
#[derive(Debug)]
pub struct Writable {
    overlay: Overlay,
    /// Where to save at unmount.
    commit_at: Option<PathBuf>,
    /// Each range written and the file it was written through, in order.
    written: Mutex<Vec<(Ino, SourceId, Span)>>,
    /// What the last save through [`COMMIT_ATTR`] said.
    last_commit: Mutex<String>,
}

impl Writable {
    /// An overlay of up to `memory` bytes in memory, then in `work_dir`;
    /// saved to `commit_at` at unmount when given.
    pub fn new(memory: u64, work_dir: Option<&Path>, commit_at: Option<PathBuf>) -> Writable {
        Writable {
            overlay: Overlay::new(memory, work_dir),
            commit_at,
            written: Mutex::new(Vec::new()),
            last_commit: Mutex::new(String::new()),
        }
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

fn hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
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

    /// Checks that `ino` may be opened for writing. Opening with O_TRUNC
    /// changes nothing by itself: the file is to be overwritten in place.
    pub fn open_write(&self, ino: Ino) -> Result<()> {
        self.write_target(ino).map(|_| ()).map_err(refused)
    }

    /// Writes `data` at `offset` of file `ino`; returns the bytes written.
    pub fn write(&self, ino: Ino, offset: u64, data: &[u8]) -> Result<u32> {
        self.write_inner(ino, offset, data).map_err(refused)
    }

    fn write_inner(&self, ino: Ino, offset: u64, data: &[u8]) -> Result<u32> {
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
        let from = offset.max(hlen);
        if end > from {
            let part = &data[(from - offset) as usize..];
            let at = target.span.offset + (from - hlen);
            let source = self.source(target.source)?;
            w.overlay
                .write(target.source, source, at, part)
                .map_err(|e| match e {
                    OverlayError::Full { .. } => FsError::Full { why: e.to_string() },
                    OverlayError::Io(error) => FsError::Read {
                        source_name: source.name.clone(),
                        offset: at,
                        end: at + part.len() as u64,
                        error,
                    },
                })?;
            let span = Span {
                offset: at,
                len: part.len() as u64,
            };
            w.written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((ino, target.source, span));
        }
        Ok(data.len() as u32)
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
        let mut written = w.written.lock().unwrap_or_else(|e| e.into_inner()).clone();
        written.sort_by_key(|&(_, id, span)| (id, span.offset));
        let mut merged: Vec<(Ino, SourceId, Span)> = Vec::new();
        for (ino, id, span) in written {
            match merged.last_mut() {
                Some((_, last_id, last)) if *last_id == id && span.offset <= last.end() => {
                    last.len = last.len.max(span.end() - last.offset);
                }
                _ => merged.push((ino, id, span)),
            }
        }
        let mut rows = Vec::new();
        for (ino, id, span) in merged {
            let source = self.source(id)?;
            let mut old = Vec::with_capacity(span.len as usize);
            self.pread_plain(source, span, &mut old)?;
            let mut new = old.clone();
            w.overlay
                .apply(id, span, &mut new)
                .map_err(|error| FsError::Read {
                    source_name: source.name.clone(),
                    offset: span.offset,
                    end: span.end(),
                    error,
                })?;
            if old != new {
                rows.push(EditRow {
                    path: self.view.tree.path(ino),
                    source: source.name.clone(),
                    offset: span.offset,
                    length: span.len,
                    old_sha256: hex(&old),
                    new_sha256: hex(&new),
                });
            }
        }
        Ok(rows)
    }

    /// `span` of `source` as the source has it.
    fn pread_plain(
        &self,
        source: &crate::source::Source,
        span: Span,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        source.read_span(span, out).map_err(|error| FsError::Read {
            source_name: source.name.clone(),
            offset: span.offset,
            end: span.end(),
            error,
        })
    }

    /// Writes the edited file to `out`: the one source the edits touch,
    /// with them applied.
    pub fn commit(&self, out: &Path) -> Result<Written> {
        let w = self.writable.as_ref().ok_or(FsError::ReadOnly)?;
        let commit = |why: String| FsError::Commit { why };
        let ids = w.overlay.sources();
        let (id, edits) = match ids[..] {
            [] => (0, edit::Edits::new()),
            [id] => {
                let source = self.source(id)?;
                let edits = w
                    .overlay
                    .edits(id, source)
                    .map_err(|e| commit(e.to_string()))?;
                (id, edits)
            }
            _ => {
                let names: Vec<&str> = ids
                    .iter()
                    .map(|&i| self.view.sources[i].name.as_str())
                    .collect();
                return Err(commit(format!(
                    "the edits touch {}; one file is saved at a time",
                    names.join(" and ")
                )));
            }
        };
        let source = self.source(id)?;
        let inputs = edit::Inputs::new().sources(&self.view.sources);
        edit::save(source, edits, out, inputs).map_err(|e| commit(e.to_string()))
    }

    /// Saves to the path given at mount, if any (at unmount).
    pub fn commit_at_unmount(&self) {
        if let Some(out) = self.writable.as_ref().and_then(|w| w.commit_at.as_ref()) {
            match self.commit(out) {
                Ok(w) => log::info!("saved {} ({} bytes)", w.path.display(), w.len),
                Err(e) => log::error!("saving {} at unmount: {e}", out.display()),
            }
        }
    }

    /// The writable mount's own attributes of the root: the edits as
    /// JSON, and what the last save said.
    pub(super) fn control_attr(&self, ino: Ino, name: &[u8]) -> Option<Result<Vec<u8>>> {
        let w = self.writable.as_ref().filter(|_| ino == ROOT)?;
        if name == EDITS_ATTR {
            return Some(self.edits().and_then(|rows| {
                serde_json::to_vec(&rows).map_err(|e| FsError::Commit { why: e.to_string() })
            }));
        }
        if name == COMMIT_ATTR {
            let last = w.last_commit.lock().unwrap_or_else(|e| e.into_inner());
            return Some(Ok(last.clone().into_bytes()));
        }
        None
    }

    /// Sets an extended attribute: only [`COMMIT_ATTR`] of the root of a
    /// writable mount, which saves the edited file to the path it is set to.
    pub fn setxattr(&self, ino: Ino, name: &[u8], value: &[u8]) -> Result<()> {
        let Some(w) = self
            .writable
            .as_ref()
            .filter(|_| ino == ROOT && name == COMMIT_ATTR)
        else {
            return Err(refused(FsError::AttributesFixed {
                path: self.view.tree.path(ino),
            }));
        };
        let out = PathBuf::from(String::from_utf8_lossy(value).into_owned());
        let result = self.commit(&out);
        let said = match &result {
            Ok(written) => serde_json::json!({
                "ok": true,
                "path": written.path,
                "size": written.len,
                "ranges": written.ranges,
                "bytes": written.changed,
            }),
            Err(e) => serde_json::json!({"ok": false, "error": e.to_string()}),
        };
        *w.last_commit.lock().unwrap_or_else(|e| e.into_inner()) = said.to_string();
        result.map(|_| ()).map_err(refused)
    }
}

/// Whether a read of `span` of source `id` must go through the overlay.
pub(super) fn edited(fs: &Fs, id: SourceId, span: Span) -> bool {
    fs.overlay().is_some_and(|o| o.touches(id, span))
}
