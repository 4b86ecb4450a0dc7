//! The directory tree a mount shows, built once from parsed files.
//!
//! A [`Tree`] holds every node. A file's content is bytes rendered at
//! build time (small JSON, `.npy` headers), bytes rendered when first
//! looked at ([`lazy`]: the large JSON and text files), or a span of a
//! source file, which readers serve from that file's memory map. Lookups
//! are binary searches in sorted child lists; reads are index arithmetic.

mod build;
pub mod lazy;
pub mod names;
pub mod render;

use std::borrow::Cow;

/// What parsing and building a file's tree read of it (for sources that
/// fetch ranges).
pub use crate::delegate::fetch::needed as fetch_plan;
pub use build::{Input, build, build_with_names};
pub use lazy::{Lazy, SharedBytes};

use crate::format::Span;

/// An inode number. The root is 1; the rest follow in build order.
pub type Ino = u64;

/// The root directory's inode.
pub const ROOT: Ino = 1;

/// Which source file a span refers to (an index into the caller's list).
pub type SourceId = usize;

/// A node of the tree: a directory or a file. A file may have several names
/// (hard links: the same bytes seen at two paths); its first name is the
/// one [`Tree::path`] gives.
#[derive(Debug)]
pub struct Node {
    /// The directory holding the node's first name (the root is its own
    /// parent).
    pub parent: Ino,
    /// Where that name stands among the parent's entries.
    slot: u32,
    /// Directory or file.
    pub kind: NodeKind,
}

/// A name in a directory.
#[derive(Debug)]
pub struct Entry {
    /// The name.
    pub name: Box<str>,
    /// What it names.
    pub ino: Ino,
}

/// What a node is.
#[derive(Debug)]
pub enum NodeKind {
    /// A directory with its entries sorted by name.
    Dir(Vec<Entry>),
    /// A regular file.
    File(File),
}

/// A regular file.
#[derive(Debug)]
pub struct File {
    /// The bytes.
    pub content: Content,
    /// For a tensor's files, its entry in the tree's tensor table ([`Tree::tensor_meta`]).
    pub tensor: Option<u32>,
}

/// A tensor file's element type, in the vocabulary of what stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// A program or data file tensor (`FLOAT`).
    Scalar(crate::schema::ScalarType),
    /// An XNNPACK delegate's value (`xnn_datatype_fp32`).
    Xnnpack(crate::schema::xnnpack::XNNDatatype),
    /// A fixed name (`float32` for quantization scales).
    Named(&'static str),
}

impl Dtype {
    /// The name the extended attributes and reports show.
    pub fn name(self) -> String {
        match self {
            Dtype::Scalar(t) => crate::format::scalar::name(t),
            Dtype::Xnnpack(t) => crate::delegate::xnnpack::datatype::name(t),
            Dtype::Named(n) => n.to_owned(),
        }
    }
}

/// Type and shape of a tensor, shared by its `.bin` and `.npy`.
#[derive(Debug)]
pub struct TensorMeta {
    /// Element type.
    pub dtype: Dtype,
    /// Logical sizes (shared with the tensor's other files and values).
    pub sizes: std::sync::Arc<[i64]>,
}

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
        }
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What `size` bytes at `offset` are made of: up to two pieces, rendered
    /// bytes first and then a span of a source (to be widened, for
    /// [`Content::Widened`]). Past the end gives nothing.
    pub fn read(&self, offset: u64, size: u64) -> Piece<'_> {
        if let Content::Lazy(l) = self {
            let bytes = l.rendered();
            let start = offset.min(bytes.len() as u64) as usize;
            let end = offset.saturating_add(size).min(bytes.len() as u64) as usize;
            return Piece {
                head: Cow::Owned(bytes[start..end].to_vec()),
                tail: None,
                widen: None,
            };
        }
        let (prefix, source, widened): (&[u8], Option<(SourceId, Span)>, bool) = match self {
            Content::Generated(b) => (b, None, false),
            Content::Lazy(_) => (&[], None, false),
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

/// The whole tree.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    /// Names beyond the first of files that have several, by inode.
    extra_links: std::collections::HashMap<Ino, u32>,
    /// Tensor types and shapes, for extended attributes.
    tensors: Vec<TensorMeta>,
    /// Source base names by [`SourceId`].
    source_names: Vec<String>,
    /// Non-fatal notes gathered while building (missing external tensors,
    /// identifiers this reader does not know), one sentence each.
    pub warnings: Vec<String>,
}

impl Tree {
    /// The tree of one file held in memory, shown under `name`; its spans
    /// refer to `bytes` as source 0.
    pub fn from_bytes(name: &str, bytes: &[u8]) -> crate::format::Result<Tree> {
        let parsed = crate::format::parse(bytes)?;
        Ok(build(
            &[Input {
                name: name.to_owned(),
                source: 0,
                bytes: std::sync::Arc::new(bytes.to_vec()),
                parsed,
            }],
            &[],
            false,
        ))
    }

    /// The node with inode `ino`.
    pub fn node(&self, ino: Ino) -> Option<&Node> {
        usize::try_from(ino)
            .ok()?
            .checked_sub(1)
            .and_then(|i| self.nodes.get(i))
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: there is at least the root.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The entries of directory `ino`, sorted by name; `None` for a file.
    pub fn entries(&self, ino: Ino) -> Option<&[Entry]> {
        match &self.node(ino)?.kind {
            NodeKind::Dir(entries) => Some(entries),
            NodeKind::File(_) => None,
        }
    }

    /// The first name of `ino` (empty for the root).
    pub fn name(&self, ino: Ino) -> &str {
        if ino == ROOT {
            return "";
        }
        self.node(ino)
            .and_then(|n| self.entries(n.parent)?.get(n.slot as usize))
            .map_or("", |e| &e.name)
    }

    /// How many names `ino` has: 1 for most files, more for files whose
    /// bytes appear at several paths; for a directory, 2 plus its
    /// subdirectories, as on disk.
    pub fn nlink(&self, ino: Ino) -> u32 {
        match self.entries(ino) {
            Some(entries) => {
                let subdirs = entries.iter().filter(|e| self.is_dir(e.ino)).count();
                2 + subdirs as u32
            }
            None => 1 + self.extra_links.get(&ino).copied().unwrap_or(0),
        }
    }

    /// True for a directory.
    pub fn is_dir(&self, ino: Ino) -> bool {
        self.entries(ino).is_some()
    }

    /// The entry `name` of directory `parent`.
    pub fn lookup(&self, parent: Ino, name: &[u8]) -> Option<Ino> {
        let entries = self.entries(parent)?;
        entries
            .binary_search_by(|e| e.name.as_bytes().cmp(name))
            .ok()
            .map(|i| entries[i].ino)
    }

    /// The name of source `id`, as the tree shows it.
    pub fn source_name(&self, id: SourceId) -> &str {
        self.source_names.get(id).map_or("", String::as_str)
    }

    /// Type and shape of file `ino`, if it holds a tensor.
    pub fn tensor_meta(&self, ino: Ino) -> Option<&TensorMeta> {
        match &self.node(ino)?.kind {
            NodeKind::File(f) => self.tensors.get(f.tensor? as usize),
            NodeKind::Dir(_) => None,
        }
    }

    /// The `user.ptefs.*` extended attributes of file `ino`, sorted by
    /// name: where its bytes come from and, for tensors, type and shape.
    pub fn xattrs(&self, ino: Ino) -> Vec<(&'static str, Vec<u8>)> {
        let Some(Node {
            kind: NodeKind::File(f),
            ..
        }) = self.node(ino)
        else {
            return Vec::new();
        };
        let (source, span) = match &f.content {
            Content::Generated(_) | Content::Lazy(_) => return Vec::new(),
            Content::Source { source, span }
            | Content::Prefixed { source, span, .. }
            | Content::Widened { source, span, .. } => (*source, span),
        };
        let mut x = Vec::with_capacity(4);
        if let Some(t) = f.tensor.and_then(|t| self.tensors.get(t as usize)) {
            x.push(("user.ptefs.dtype", t.dtype.name().into_bytes()));
            let dims: Vec<String> = t.sizes.iter().map(i64::to_string).collect();
            x.push((
                "user.ptefs.shape",
                format!("[{}]", dims.join(", ")).into_bytes(),
            ));
        }
        x.push(("user.ptefs.offset", span.offset.to_string().into_bytes()));
        let name = self.source_names.get(source).map_or("", String::as_str);
        x.push(("user.ptefs.source", name.as_bytes().to_vec()));
        x.sort_by_key(|(k, _)| *k);
        x
    }

    /// The node at `path` (`a/b/c`, relative to the root; empty is the root).
    pub fn resolve(&self, path: &str) -> Option<Ino> {
        path.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .try_fold(ROOT, |ino, c| {
                if c == ".." {
                    self.node(ino).map(|n| n.parent)
                } else {
                    self.lookup(ino, c.as_bytes())
                }
            })
    }

    /// The path of the first name of `ino`, relative to the root.
    pub fn path(&self, ino: Ino) -> String {
        let mut parts = Vec::new();
        let mut cur = ino;
        while cur != ROOT {
            let Some(n) = self.node(cur) else { break };
            parts.push(self.name(cur));
            cur = n.parent;
        }
        parts.reverse();
        parts.join("/")
    }

    /// Every path under `from` in depth-first order with entries sorted,
    /// `from` itself first, each with the inode it names. A file with
    /// several names appears once per name.
    pub fn walk(&self, from: Ino) -> Walk<'_> {
        Walk {
            tree: self,
            first: Some((self.path(from), from)),
            stack: Vec::new(),
        }
    }

    /// Total bytes of all files, as `du --apparent-size` would add them
    /// up; a lazy file that was never rendered counts as empty, as
    /// rendering every file to answer `df` would defeat their laziness.
    pub fn total_bytes(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| match &n.kind {
                NodeKind::File(File {
                    content: Content::Lazy(l),
                    ..
                }) => l.known_len().unwrap_or(0),
                NodeKind::File(f) => f.content.len(),
                NodeKind::Dir(_) => 0,
            })
            .sum()
    }
}

/// Every path under an inode, depth first in name order: see
/// [`Tree::walk`]. It holds one path per directory level, so walking a
/// large tree costs no more memory than its deepest path.
#[derive(Debug)]
pub struct Walk<'t> {
    tree: &'t Tree,
    first: Option<(String, Ino)>,
    /// Per directory being walked: its path, its entries, the next one.
    stack: Vec<(String, &'t [Entry], usize)>,
}

impl Iterator for Walk<'_> {
    type Item = (String, Ino);

    fn next(&mut self) -> Option<(String, Ino)> {
        if let Some((path, ino)) = self.first.take() {
            if let Some(entries) = self.tree.entries(ino) {
                self.stack.push((path.clone(), entries, 0));
            }
            return Some((path, ino));
        }
        loop {
            let (dir, entries, next) = self.stack.last_mut()?;
            let Some(e) = entries.get(*next) else {
                self.stack.pop();
                continue;
            };
            *next += 1;
            let path = if dir.is_empty() {
                e.name.to_string()
            } else {
                format!("{dir}/{}", e.name)
            };
            if let Some(sub) = self.tree.entries(e.ino) {
                self.stack.push((path.clone(), sub, 0));
            }
            return Some((path, e.ino));
        }
    }
}
