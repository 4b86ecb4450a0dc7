//! The directory tree a mount shows, built once from parsed files.
//!
//! A [`Tree`] holds every node with its exact size. A file's content is
//! either bytes rendered at build time (JSON, text, `.npy` headers) or a
//! span of a source file, which readers serve from that file's memory map.
//! Lookups are binary searches in sorted child lists; reads are index
//! arithmetic.

mod build;
pub mod names;
mod render;

pub use build::{Input, build};

use crate::format::Span;

/// An inode number. The root is 1; the rest follow in build order.
pub type Ino = u64;

/// The root directory's inode.
pub const ROOT: Ino = 1;

/// Which source file a span refers to (an index into the caller's list).
pub type SourceId = usize;

/// A node of the tree.
#[derive(Debug)]
pub struct Node {
    /// The entry's name in its parent (empty for the root).
    pub name: Box<str>,
    /// The parent directory (the root is its own parent).
    pub parent: Ino,
    /// Directory or file.
    pub kind: NodeKind,
}

/// What a node is.
#[derive(Debug)]
pub enum NodeKind {
    /// A directory with its entries sorted by name.
    Dir(Vec<Ino>),
    /// A regular file.
    File(File),
}

/// A regular file.
#[derive(Debug)]
pub struct File {
    /// The bytes.
    pub content: Content,
    /// For a tensor's files, its entry in [`Tree::tensors`].
    pub tensor: Option<u32>,
}

/// Type and shape of a tensor, shared by its `.bin` and `.npy`.
#[derive(Debug)]
pub struct TensorMeta {
    /// Element type.
    pub scalar_type: crate::schema::ScalarType,
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
    /// Rendered bytes followed by a span of a source file (`.npy`).
    Prefixed {
        /// The rendered prefix, shared by files with the same header.
        prefix: std::sync::Arc<[u8]>,
        /// Which source.
        source: SourceId,
        /// The bytes after the prefix.
        span: Span,
    },
}

impl Content {
    /// The file's size.
    pub fn len(&self) -> u64 {
        match self {
            Content::Generated(b) => b.len() as u64,
            Content::Source { span, .. } => span.len,
            Content::Prefixed { prefix, span, .. } => prefix.len() as u64 + span.len,
        }
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What `size` bytes at `offset` are made of: up to two pieces, rendered
    /// bytes first and then a span of a source. Past the end gives nothing.
    pub fn read(&self, offset: u64, size: u64) -> Piece<'_> {
        let (prefix, source): (&[u8], Option<(SourceId, Span)>) = match self {
            Content::Generated(b) => (b, None),
            Content::Source { source, span } => (&[], Some((*source, *span))),
            Content::Prefixed {
                prefix,
                source,
                span,
            } => (prefix, Some((*source, *span))),
        };
        let plen = prefix.len() as u64;
        let end = offset.saturating_add(size).min(self.len());
        let head = if offset < plen {
            &prefix[offset as usize..end.min(plen) as usize]
        } else {
            &[]
        };
        let tail = source.and_then(|(id, span)| {
            let from = offset.max(plen);
            (end > from).then(|| {
                (
                    id,
                    Span {
                        offset: span.offset + (from - plen),
                        len: end - from,
                    },
                )
            })
        });
        Piece { head, tail }
    }
}

/// A read, as rendered bytes followed by a span of a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece<'a> {
    /// Rendered bytes, possibly empty.
    pub head: &'a [u8],
    /// Source bytes after `head`.
    pub tail: Option<(SourceId, Span)>,
}

impl Piece<'_> {
    /// Total bytes.
    pub fn len(&self) -> u64 {
        self.head.len() as u64 + self.tail.map_or(0, |(_, s)| s.len)
    }

    /// True when nothing is to be read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The whole tree.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
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
                parsed,
            }],
            &[],
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
    pub fn entries(&self, ino: Ino) -> Option<&[Ino]> {
        match &self.node(ino)?.kind {
            NodeKind::Dir(entries) => Some(entries),
            NodeKind::File(_) => None,
        }
    }

    /// The name of `ino` in its directory.
    pub fn name(&self, ino: Ino) -> &str {
        self.node(ino).map_or("", |n| &n.name)
    }

    /// The entry `name` of directory `parent`.
    pub fn lookup(&self, parent: Ino, name: &[u8]) -> Option<Ino> {
        let entries = self.entries(parent)?;
        entries
            .binary_search_by(|&i| self.name(i).as_bytes().cmp(name))
            .ok()
            .map(|i| entries[i])
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
            Content::Generated(_) => return Vec::new(),
            Content::Source { source, span } | Content::Prefixed { source, span, .. } => {
                (*source, span)
            }
        };
        let mut x = Vec::with_capacity(4);
        if let Some(t) = f.tensor.and_then(|t| self.tensors.get(t as usize)) {
            x.push((
                "user.ptefs.dtype",
                crate::format::scalar::name(t.scalar_type).into_bytes(),
            ));
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

    /// The path of `ino` relative to the root.
    pub fn path(&self, ino: Ino) -> String {
        let mut parts = Vec::new();
        let mut cur = ino;
        while cur != ROOT {
            let Some(n) = self.node(cur) else { break };
            parts.push(&*n.name);
            cur = n.parent;
        }
        parts.reverse();
        parts.join("/")
    }

    /// Every inode in depth-first order with entries sorted, root first.
    pub fn walk(&self, from: Ino) -> Vec<Ino> {
        let mut out = Vec::new();
        let mut stack = vec![from];
        while let Some(ino) = stack.pop() {
            out.push(ino);
            if let Some(entries) = self.entries(ino) {
                stack.extend(entries.iter().rev());
            }
        }
        out
    }

    /// Total bytes of all files, as `du --apparent-size` would add them up.
    pub fn total_bytes(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| match &n.kind {
                NodeKind::File(f) => f.content.len(),
                NodeKind::Dir(_) => 0,
            })
            .sum()
    }
}
