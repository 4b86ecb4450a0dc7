//! Reading files: bytes served from a source's map where they can be,
//! assembled otherwise, and refused once their source changed.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use super::{Data, Fs, FsError, Result, write};
use crate::format::Span;
use crate::source::Source;
use crate::tree::{Content, Contents, Ino, Piece};

impl Fs {
    /// Up to `size` bytes of file `ino` from `offset`. Bytes of a source
    /// that changed since the tree was built are refused (logged once per
    /// source), never served mixed with the old tree.
    pub fn read(&self, ino: Ino, offset: u64, size: u64) -> Result<Data<'_>> {
        let content = self.content(ino)?;
        let piece = content.read(offset, size);
        self.rendered_intact(&content)?;
        rendered_whole(&content)?;
        if piece.len() < size.min(content.len().saturating_sub(offset)) {
            // Parts of an assembled file: one after another.
            return self.read_pieces(&content, offset, size).map(Data::Owned);
        }
        let Some((id, span)) = piece.tail else {
            return Ok(match piece.head {
                Cow::Borrowed(b) => Data::Rendered(b),
                Cow::Owned(v) => Data::Owned(v),
            });
        };
        let source = self.source(id)?;
        if piece.head.is_empty()
            && piece.widen.is_none()
            && !write::edited(self, id, span)
            && let Some(mapped) = source.mapped(span)
        {
            return Ok(Data::Mapped(mapped));
        }
        // Straddling a rendered prefix and source bytes, widened source
        // bytes, or a remote source: assemble them, reading a local source
        // with pread rather than touching the map.
        let mut buf = Vec::with_capacity(piece.len() as usize);
        self.assemble(&piece, (id, source), span, source_end(&content), &mut buf)?;
        Ok(Data::Owned(buf))
    }

    /// Appends `piece`, whose tail is `span` of `source`, to `out`.
    fn assemble(
        &self,
        piece: &Piece<'_>,
        (id, source): (usize, &Source),
        span: Span,
        end: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if piece.widen.is_none() {
            out.extend_from_slice(&piece.head);
            return self.pread(id, source, span, end, out);
        }
        let mut tail = Vec::with_capacity(span.len as usize);
        self.pread(id, source, span, end, &mut tail)?;
        piece.assemble(&tail, out);
        Ok(())
    }

    /// Like [`Fs::read`], but always a copy in memory, read with `pread`:
    /// for callers that process the bytes themselves.
    pub fn read_copy(&self, ino: Ino, offset: u64, size: u64) -> Result<Vec<u8>> {
        let content = self.content(ino)?;
        rendered_whole(&content)?;
        let buf = self.read_pieces(&content, offset, size)?;
        self.rendered_intact(&content)?;
        Ok(buf)
    }

    /// Up to `size` bytes of `content` from `offset`, piece after piece,
    /// read with `pread`.
    fn read_pieces(&self, content: &Contents<'_>, offset: u64, size: u64) -> Result<Vec<u8>> {
        let want = size.min(content.len().saturating_sub(offset));
        let mut buf = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
        while (buf.len() as u64) < want {
            let at = offset + buf.len() as u64;
            let piece = content.read(at, want - buf.len() as u64);
            if piece.is_empty() {
                break;
            }
            match piece.tail {
                Some((id, span)) => {
                    let source = self.source(id)?;
                    let end = source_end(content).max(span.end());
                    self.assemble(&piece, (id, source), span, end, &mut buf)?
                }
                None => buf.extend_from_slice(&piece.head),
            }
        }
        Ok(buf)
    }

    /// The content of file `ino`, ready to be read.
    pub(super) fn content(&self, ino: Ino) -> Result<Contents<'_>> {
        let tree = &self.view.tree;
        let Some(f) = tree.file(ino) else {
            return Err(match tree.is_dir(ino) {
                true => FsError::IsDir(ino),
                false => FsError::NotFound,
            });
        };
        self.renderable(&f.content, true)?;
        if let Content::Assembled(a) = &*f.content
            && let Some(why) = a.error()
        {
            return Err(FsError::TooLarge { why });
        }
        Ok(f.content)
    }

    /// Refuses to render a lazy file (to read it, or to learn its size
    /// when `reading` is false and the size is not yet known) from a
    /// source that changed since the tree was built: rendering parses the
    /// source's mapped bytes, which must still be the ones the tree was
    /// built from.
    pub(super) fn renderable(&self, content: &Content, reading: bool) -> Result<()> {
        match content {
            Content::Lazy(l) if reading || l.known_len().is_none() => {
                self.source(l.source).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    /// Checks, after a lazy file was sized or read, that its source did
    /// not change while it was rendered: a render over pages that vanished
    /// meanwhile read zeros, not the file.
    pub(super) fn rendered_intact(&self, content: &Content) -> Result<()> {
        match content {
            Content::Lazy(l) => self.source(l.source).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// Source `id`, if it is unchanged since it was opened.
    pub(super) fn source(&self, id: usize) -> Result<&Source> {
        let source = &self.view.sources[id];
        self.check_unchanged(id)?;
        Ok(source)
    }

    /// `Ok` while source `id` is unchanged; its change is logged once.
    pub(super) fn check_unchanged(&self, id: usize) -> Result<()> {
        if let Err(why) = self.view.sources[id].check_unchanged() {
            if !self.change_logged[id].swap(true, Ordering::Relaxed) {
                log::error!("{why}; reads of its bytes fail with EIO until it is remounted");
            }
            return Err(why.into());
        }
        Ok(())
    }

    /// Reads `span` of `source` (source `id`, checked unchanged) into
    /// `out`, part of a file whose bytes end at `end`.
    fn pread(
        &self,
        id: usize,
        source: &Source,
        span: Span,
        end: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let before = out.len();
        let mut read = source.read_span_within(span, end, out);
        if read.is_ok()
            && let Some(o) = self.overlay()
        {
            read = o.apply(id, span, &mut out[before..]);
        }
        // A remote source finds out it changed only by reading.
        if read.is_err() {
            self.check_unchanged(id)?;
        }
        read.map_err(|error| FsError::Read {
            source_name: source.name.clone(),
            offset: span.offset,
            end: span.end(),
            error,
        })
    }
}

/// Refuses the bytes of a rendered file that could not be made: what was
/// rendered is not the file.
pub(super) fn rendered_whole(content: &Content) -> Result<()> {
    match content {
        Content::Lazy(l) => l.failure().map_or(Ok(()), |why| {
            Err(FsError::Unrenderable {
                why: why.to_owned(),
            })
        }),
        _ => Ok(()),
    }
}

/// Where the source bytes of a file end (0 for rendered bytes).
fn source_end(content: &Content) -> u64 {
    match content {
        Content::Source { span, .. }
        | Content::Prefixed { span, .. }
        | Content::Widened { span, .. } => span.end(),
        Content::Generated(_) | Content::Lazy(_) | Content::Assembled(_) => 0,
    }
}
