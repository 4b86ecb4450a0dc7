//! The directory tree a mount shows, built once from parsed files.
//!
//! A [`Tree`] holds a node per directory and per file, except where a
//! directory's entries would number in the millions: a method's tensors,
//! their value indices and a program's constant buffers are computed from
//! compact rows ([`table`]), their files given inodes derived from the
//! rows' positions. A file's content is bytes rendered at build time
//! (small JSON, `.npy` headers), bytes rendered when first looked at
//! ([`lazy`]: the large JSON and text files), or a span of a source file,
//! which readers serve from that file's memory map. Lookups are binary
//! searches in sorted child lists or arithmetic on row positions; reads
//! are index arithmetic.

mod content;
mod delegate_dir;
pub mod file_names;
mod layout;
pub mod lazy;
mod listing;
mod node;
pub mod render;
pub mod report_files;
pub mod table;
mod walk;
pub mod weights;

use std::borrow::Cow;

/// What parsing and building a file's tree read of it (for sources that
/// fetch ranges).
pub use crate::delegate::payload_fetch::needed as fetch_plan;
pub use content::{Content, Contents, FileRef, Piece, Widen};
pub use delegate_dir::DelegateDir;
pub use layout::{
    AttachedProfile, DebugBuffer, Input, Options, build, build_with, build_with_names,
};
pub use lazy::{Lazy, SharedBytes};
pub use listing::{Entries, Listed};
pub use node::{Child, Dtype, File, Node, NodeKind, TensorMeta};
pub use walk::Walk;

use table::{ConstantsTable, Listing, TensorTable};

/// An inode number. The root is 1; stored nodes follow in build order,
/// then the ranges of computed files.
pub type Ino = u64;

/// The root directory's inode.
pub const ROOT: Ino = 1;

/// Which source file a span refers to (an index into the caller's list).
pub type SourceId = usize;

/// The whole tree.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    /// Names beyond the first of files that have several, by inode.
    extra_links: std::collections::HashMap<Ino, u32>,
    /// Tensor types and shapes, for extended attributes.
    tensors: std::sync::Arc<[TensorMeta]>,
    /// Methods' tensor files, computed from rows.
    tables: Vec<TensorTable>,
    /// Programs' constant buffers, computed.
    constants: Vec<ConstantsTable>,
    /// Directories with computed entries.
    listings: foldhash::HashMap<Ino, Listing>,
    /// Files of named data with no tensor layout (delegates' blobs).
    named_blobs: foldhash::HashSet<Ino>,
    /// Source base names by [`SourceId`].
    source_names: Vec<String>,
    /// Delegates' directories, by inode.
    delegate_dirs: foldhash::HashMap<Ino, std::sync::Arc<DelegateDir>>,
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

    /// The stored node with inode `ino`.
    fn node(&self, ino: Ino) -> Option<&Node> {
        usize::try_from(ino)
            .ok()?
            .checked_sub(1)
            .and_then(|i| self.nodes.get(i))
    }

    /// Number of inodes, stored and computed.
    pub fn len(&self) -> usize {
        let computed = self.tables.iter().map(|t| t.end() - t.base);
        let constants = self.constants.iter().map(|c| c.end() - c.base);
        self.nodes.len() + computed.chain(constants).sum::<u64>() as usize
    }

    /// Always false: there is at least the root.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// True when `ino` is a directory or a file of the tree.
    pub fn exists(&self, ino: Ino) -> bool {
        self.node(ino).is_some() || self.computed_file(ino).is_some()
    }

    /// The file `ino`; `None` for a directory or no such inode.
    pub fn file(&self, ino: Ino) -> Option<FileRef<'_>> {
        if let Some(n) = self.node(ino) {
            return match &n.kind {
                NodeKind::File(f) => Some(FileRef {
                    content: Contents::Stored(&f.content),
                    tensor: f.tensor.and_then(|t| self.tensors.get(t as usize)),
                }),
                NodeKind::Dir(_) => None,
            };
        }
        let (content, tensor) = self.computed_file(ino)?;
        Some(FileRef {
            content: Contents::Made(content),
            tensor: tensor.and_then(|t| self.tensors.get(t as usize)),
        })
    }

    /// A computed file's content and tensor type.
    fn computed_file(&self, ino: Ino) -> Option<(Content, Option<u32>)> {
        if let Some(t) = self.table_of(ino) {
            return t.file(ino);
        }
        Some((self.constants_of(ino)?.file(ino)?, None))
    }

    /// A computed file's directory and first name.
    fn computed_name(&self, ino: Ino) -> Option<(Ino, String)> {
        if let Some(t) = self.table_of(ino) {
            return Some((t.dir, t.name(ino)?));
        }
        let c = self.constants_of(ino)?;
        Some((c.dir, c.first_name(ino)?))
    }

    /// True when `ino` is one of a program's constant buffers
    /// (`constants/<i>.bin`): stored bytes that may be typed by several
    /// tensors at once, or by none.
    pub fn is_constant_buffer(&self, ino: Ino) -> bool {
        self.constants_of(ino).is_some()
    }

    /// True when `ino` is a named blob with no tensor layout (a
    /// program's `named/<key>.bin`, a data file's `tensors/<key>.bin` of
    /// such a key): one value, whose layout only the delegate reading it
    /// knows.
    pub fn is_named_blob(&self, ino: Ino) -> bool {
        self.named_blobs.contains(&ino)
    }

    fn table_of(&self, ino: Ino) -> Option<&TensorTable> {
        self.tables
            .iter()
            .find(|t| (t.base..t.end()).contains(&ino))
    }

    fn constants_of(&self, ino: Ino) -> Option<&ConstantsTable> {
        self.constants
            .iter()
            .find(|c| (c.base..c.end()).contains(&ino))
    }

    /// The entries of directory `ino` in name order; `None` for a file.
    pub fn entries(&self, ino: Ino) -> Option<Entries<'_>> {
        self.entries_from(ino, 0)
    }

    /// The entries of directory `ino` from position `at` on (a
    /// [`Listed::next`] of an earlier listing, or 0).
    pub fn entries_from(&self, ino: Ino, at: u64) -> Option<Entries<'_>> {
        let NodeKind::Dir(stored) = &self.node(ino)?.kind else {
            return None;
        };
        let computed = self.listings.get(&ino).copied();
        Some(Entries::new(self, stored, computed, at))
    }

    pub(super) fn computed_slots(&self, listing: Listing) -> u64 {
        match listing {
            Listing::Tensors(t) => self.tables.get(t).map_or(0, TensorTable::slots),
            Listing::Values(t) => self.tables.get(t).map_or(0, TensorTable::value_slots),
            Listing::Constants(c) => self.constants.get(c).map_or(0, ConstantsTable::slots),
        }
    }

    pub(super) fn computed_at(&self, listing: Listing, at: u64) -> Option<table::Computed> {
        match listing {
            Listing::Tensors(t) => self.tables.get(t)?.entry_at(at),
            Listing::Values(t) => self.tables.get(t)?.value_at(at),
            Listing::Constants(c) => self.constants.get(c)?.entry_at(at),
        }
    }

    /// The directory holding the first name of `ino` (the root is its own
    /// parent).
    pub fn parent(&self, ino: Ino) -> Option<Ino> {
        match self.node(ino) {
            Some(n) => Some(n.parent),
            None => self.computed_file(ino).and_then(|_| {
                let t = self.table_of(ino).map(|t| t.dir);
                t.or_else(|| self.constants_of(ino).map(|c| c.dir))
            }),
        }
    }

    /// The first name of `ino` (empty for the root).
    pub fn name(&self, ino: Ino) -> Cow<'_, str> {
        if ino == ROOT {
            return Cow::Borrowed("");
        }
        let Some(n) = self.node(ino) else {
            return Cow::Owned(self.computed_name(ino).map(|f| f.1).unwrap_or_default());
        };
        match &self.node(n.parent).map(|p| &p.kind) {
            Some(NodeKind::Dir(entries)) => {
                Cow::Borrowed(entries.get(n.slot as usize).map_or("", |e| &e.name))
            }
            _ => Cow::Borrowed(""),
        }
    }

    /// How many names `ino` has: 1 for most files, more for files whose
    /// bytes appear at several paths; for a directory, 2 plus its
    /// subdirectories, as on disk (computed entries are all files).
    pub fn nlink(&self, ino: Ino) -> u32 {
        if let Some(NodeKind::Dir(entries)) = self.node(ino).map(|n| &n.kind) {
            let subdirs = entries.iter().filter(|e| self.is_dir(e.ino)).count();
            return 2 + subdirs as u32;
        }
        let extra = self
            .tables
            .iter()
            .find_map(|t| t.extra_names(ino))
            .or_else(|| self.extra_links.get(&ino).copied());
        1 + extra.unwrap_or(0)
    }

    /// True for a directory.
    pub fn is_dir(&self, ino: Ino) -> bool {
        matches!(self.node(ino).map(|n| &n.kind), Some(NodeKind::Dir(_)))
    }

    /// The entry `name` of directory `parent`.
    pub fn lookup(&self, parent: Ino, name: &[u8]) -> Option<Ino> {
        let NodeKind::Dir(entries) = &self.node(parent)?.kind else {
            return None;
        };
        if let Ok(i) = entries.binary_search_by(|e| e.name.as_bytes().cmp(name)) {
            return Some(entries[i].ino);
        }
        match *self.listings.get(&parent)? {
            Listing::Tensors(t) => self.tables.get(t)?.lookup(name),
            Listing::Values(t) => self.tables.get(t)?.value_lookup(name),
            Listing::Constants(c) => self.constants.get(c)?.lookup(name),
        }
    }

    /// The name of source `id`, as the tree shows it.
    pub fn source_name(&self, id: SourceId) -> &str {
        self.source_names.get(id).map_or("", String::as_str)
    }

    /// Type and shape of file `ino`, if it holds a tensor.
    pub fn tensor_meta(&self, ino: Ino) -> Option<&TensorMeta> {
        self.file(ino)?.tensor
    }

    /// The `user.ptefs.*` extended attributes of file `ino`, sorted by
    /// name: where its bytes come from and, for tensors, type and shape.
    pub fn xattrs(&self, ino: Ino) -> Vec<(&'static str, Vec<u8>)> {
        let Some(f) = self.file(ino) else {
            return Vec::new();
        };
        let (source, span) = match &*f.content {
            Content::Generated(_) | Content::Lazy(_) | Content::Assembled(_) => {
                return Vec::new();
            }
            Content::Source { source, span }
            | Content::Prefixed { source, span, .. }
            | Content::Widened { source, span, .. } => (*source, *span),
        };
        let mut x = Vec::with_capacity(4);
        if let Some(t) = f.tensor {
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
        self.resolve_from(ROOT, path)
    }

    /// The node at `path` relative to directory `dir` (empty is `dir`).
    pub fn resolve_from(&self, dir: Ino, path: &str) -> Option<Ino> {
        path.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .try_fold(dir, |ino, c| {
                if c == ".." {
                    self.parent(ino)
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
            let Some(parent) = self.parent(cur) else {
                break;
            };
            parts.push(self.name(cur));
            cur = parent;
        }
        parts.reverse();
        parts.join("/")
    }

    /// The delegate whose directory `dir` is, if it is one.
    pub fn delegate_dir(&self, dir: Ino) -> Option<&std::sync::Arc<DelegateDir>> {
        self.delegate_dirs.get(&dir)
    }

    /// Every path under `from` in depth-first order with entries sorted,
    /// `from` itself first, each with the inode it names. A file with
    /// several names appears once per name.
    pub fn walk(&self, from: Ino) -> Walk<'_> {
        Walk::new(self, from)
    }

    /// Total bytes of all files, as `du --apparent-size` would add them
    /// up; a lazy file that was never rendered counts as empty, as
    /// rendering every file to answer `df` would defeat their laziness
    /// (and so does a `weights.safetensors` never looked at).
    pub fn total_bytes(&self) -> u64 {
        let stored: u64 = self
            .nodes
            .iter()
            .map(|n| match &n.kind {
                NodeKind::File(File {
                    content: Content::Lazy(l),
                    ..
                }) => l.known_len().unwrap_or(0),
                NodeKind::File(File {
                    content: Content::Assembled(a),
                    ..
                }) => a.known_len().unwrap_or(0),
                NodeKind::File(f) => f.content.len(),
                NodeKind::Dir(_) => 0,
            })
            .sum();
        let tables: u64 = self.tables.iter().map(TensorTable::total_bytes).sum();
        let constants: u64 = self.constants.iter().map(ConstantsTable::total_bytes).sum();
        stored + tables + constants
    }
}
