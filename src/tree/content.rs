//! What a file's bytes are made of, and how a read is cut from them.

use std::borrow::Cow;

use std::ops::Deref;

use super::weights::Assembly;
use super::{Lazy, SourceId, TensorMeta};
use crate::format::Span;

/// Where a file's bytes come from.
#[derive(Debug)]
pub enum Content {
    /// Rendered when the tree was built.
    Generated(Box<[u8]>),
    /// A span of a source file.
    Source {
        /// Which source.
        source: SourceId,
        /// The bytes.
        span: Span,
    },
    /// Rendered when first needed.
    Lazy(Box<Lazy>),
    /// Rendered bytes followed by a span of a source file (`.npy`).
    Prefixed {
        /// The rendered prefix, shared by files with the same header.
        prefix: std::sync::Arc<[u8]>,
        /// Which source.
        source: SourceId,
        /// The bytes after the prefix.
        span: Span,
    },
    /// Rendered bytes followed by the bfloat16 values of a span of a
    /// source served widened to float32 (a `.npy` of bf16 scales): each
    /// value is rendered on read, so nothing is held per value.
    Widened {
        /// The rendered prefix.
        prefix: std::sync::Arc<[u8]>,
        /// Which source.
        source: SourceId,
        /// The bfloat16 values (two bytes each).
        span: Span,
    },
    /// A rendered header followed by spans of sources back to back
    /// (`weights.safetensors`), laid out when first looked at.
    Assembled(std::sync::Arc<Assembly>),
}

impl Content {
    /// The file's size (rendering a lazy file that never was).
    pub fn len(&self) -> u64 {
        match self {
            Content::Generated(b) => b.len() as u64,
            Content::Lazy(l) => l.len(),
            Content::Source { span, .. } => span.len,
            Content::Prefixed { prefix, span, .. } => prefix.len() as u64 + span.len,
            Content::Widened { prefix, span, .. } => prefix.len() as u64 + span.len / 2 * 4,
            Content::Assembled(a) => a.len(),
        }
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What `size` bytes at `offset` are made of: up to two pieces, rendered
    /// bytes first and then a span of a source (to be widened, for
    /// [`Content::Widened`]). Past the end gives nothing. An
    /// [`Content::Assembled`] file gives at most one of its parts: a read
    /// across parts gets less than asked and goes on from where it ended.
    pub fn read(&self, offset: u64, size: u64) -> Piece<'_> {
        if let Content::Assembled(a) = self {
            return a.read(offset, size);
        }
        if let Content::Lazy(l) = self {
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            return Piece {
                head: Cow::Owned(l.read(offset, size)),
                tail: None,
                widen: None,
            };
        }
        let (prefix, source, widened): (&[u8], Option<(SourceId, Span)>, bool) = match self {
            Content::Generated(b) => (b, None, false),
            Content::Lazy(_) | Content::Assembled(_) => (&[], None, false),
            Content::Source { source, span } => (&[], Some((*source, *span)), false),
            Content::Prefixed {
                prefix,
                source,
                span,
            } => (prefix, Some((*source, *span)), false),
            Content::Widened {
                prefix,
                source,
                span,
            } => (prefix, Some((*source, *span)), true),
        };
        let plen = prefix.len() as u64;
        let end = offset.saturating_add(size).min(self.len());
        let head = if offset < plen {
            &prefix[offset as usize..end.min(plen) as usize]
        } else {
            &[]
        };
        let head = Cow::Borrowed(head);
        let from = offset.max(plen);
        let Some((id, span)) = source.filter(|_| end > from) else {
            return Piece {
                head,
                tail: None,
                widen: None,
            };
        };
        let (at, len) = (from - plen, end - from);
        if !widened {
            let tail = Span {
                offset: span.offset + at,
                len,
            };
            return Piece {
                head,
                tail: Some((id, tail)),
                widen: None,
            };
        }
        // Float32 bytes at..at+len come from the bf16 values they widen.
        let (first, last) = (at / 4, (at + len).div_ceil(4));
        let tail = Span {
            offset: span.offset + first * 2,
            len: (last - first) * 2,
        };
        Piece {
            head,
            tail: Some((id, tail)),
            widen: Some(Widen { skip: at % 4, len }),
        }
    }
}

/// A read, as rendered bytes followed by a span of a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece<'a> {
    /// Rendered bytes, possibly empty: borrowed from the tree, or a copy
    /// of the part read of a lazily rendered file.
    pub head: Cow<'a, [u8]>,
    /// Source bytes after `head`.
    pub tail: Option<(SourceId, Span)>,
    /// When set, `tail` holds bfloat16 values whose float32 widening
    /// [`Widen::apply`] renders.
    pub widen: Option<Widen>,
}

/// Which bytes of the float32 widening of some bfloat16 values a read
/// wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Widen {
    /// Bytes of the first value's four to leave out.
    pub skip: u64,
    /// Bytes wanted.
    pub len: u64,
}

impl Widen {
    /// Appends the wanted bytes of the widening of `bf16` (little-endian
    /// values) to `out`. A bfloat16 is the high half of the float32 with
    /// the same value, so widening is exact.
    pub fn apply(self, bf16: &[u8], out: &mut Vec<u8>) {
        let wide = bf16
            .chunks_exact(2)
            .flat_map(|v| [0, 0, v[0], v[1]])
            .skip(self.skip as usize)
            .take(self.len as usize);
        out.extend(wide);
    }
}

impl Piece<'_> {
    /// The same piece, holding its rendered bytes.
    pub fn into_owned(self) -> Piece<'static> {
        Piece {
            head: Cow::Owned(self.head.into_owned()),
            tail: self.tail,
            widen: self.widen,
        }
    }

    /// Total bytes.
    pub fn len(&self) -> u64 {
        let tail = self.tail.map_or(0, |(_, s)| s.len);
        self.head.len() as u64 + self.widen.map_or(tail, |w| w.len)
    }

    /// True when nothing is to be read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the piece's bytes to `out`, given the bytes of its `tail`
    /// span (empty when it has none).
    pub fn assemble(&self, tail: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        match self.widen {
            Some(w) => w.apply(tail, out),
            None => out.extend_from_slice(tail),
        }
    }
}

/// A file of the tree: stored, or computed from a row.
#[derive(Debug)]
pub struct FileRef<'t> {
    /// The bytes.
    pub content: Contents<'t>,
    /// Type and shape, for a tensor's files.
    pub tensor: Option<&'t TensorMeta>,
}

/// A file's content, borrowed from the tree or made for a computed file.
#[derive(Debug)]
pub enum Contents<'t> {
    /// A stored file's.
    Stored(&'t Content),
    /// A computed file's (a span, or a span after a shared prefix).
    Made(Content),
}

impl Deref for Contents<'_> {
    type Target = Content;
    fn deref(&self) -> &Content {
        match self {
            Contents::Stored(c) => c,
            Contents::Made(c) => c,
        }
    }
}

impl<'t> Contents<'t> {
    /// What `size` bytes at `offset` are made of; see [`Content::read`].
    /// A computed file's rendered bytes (a `.npy` header) are copied, as
    /// the content they would borrow from lives only as long as this
    /// value.
    pub fn read(&self, offset: u64, size: u64) -> Piece<'t> {
        match self {
            Contents::Stored(c) => c.read(offset, size),
            Contents::Made(c) => c.read(offset, size).into_owned(),
        }
    }
}
