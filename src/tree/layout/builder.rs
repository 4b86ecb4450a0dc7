//! The builder of a tree: its nodes, the directories being filled, and
//! the files it hands out (stored bytes, computed tables, files rendered
//! when first read), each set of bytes served once under every name.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use super::index_entry::TensorShape;
use super::{AttachedProfile, Origin};
use crate::format::{Parsed, ProgramFile, Span, scalar};
use crate::meta::checkpoint::{Checkpoint, Digest32};
use crate::tree::file_names::DirNames;
use crate::tree::lazy::{self, RenderCache, SharedBytes};
use crate::tree::render::{self, npy};
use crate::tree::report_files::{ReportFile, ReportMaker};
use crate::tree::table::{ConstantsTable, Listing, TensorTable};
use crate::tree::{
    Child, Content, Dtype, File, Ino, Node, NodeKind, ROOT, SourceId, TensorMeta, Tree,
};

/// A directory being filled, with the names handed out in it so far.
pub(super) struct Dir {
    pub(super) ino: Ino,
    pub(super) names: DirNames,
}

/// Where the inodes of computed files start while building: `finish`
/// moves them to follow the stored nodes.
pub(super) const PROVISIONAL: Ino = 1 << 62;

/// A tree being built: its nodes so far, and what the files to come need.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) nodes: Vec<Node>,
    pub(super) tensors: Vec<TensorMeta>,
    /// Each distinct type and shape's index in `tensors`.
    pub(super) metas: foldhash::HashMap<MetaKey, u32>,
    /// Methods' tensor files and programs' constants, computed from rows.
    pub(super) tables: Vec<TensorTable>,
    pub(super) constants: Vec<ConstantsTable>,
    /// Directories with computed entries.
    pub(super) listings: foldhash::HashMap<Ino, Listing>,
    /// Files of named data with no tensor layout.
    pub(super) named_blobs: foldhash::HashSet<Ino>,
    /// Provisional inodes handed out so far (from [`PROVISIONAL`]).
    pub(super) computed: Ino,
    pub(super) warnings: Vec<String>,
    pub(super) source_names: HashMap<SourceId, String>,
    /// Bytes of each source, for lazily rendered files.
    pub(super) source_bytes: HashMap<SourceId, SharedBytes>,
    /// Where lazily rendered files keep their bytes.
    pub(super) cache: Option<std::sync::Arc<RenderCache>>,
    /// Every `.npy` header handed out so far.
    pub(super) npy_headers: foldhash::HashSet<Arc<[u8]>>,
    /// Files by the source bytes they serve, so that the same bytes seen at
    /// another path become another name of the same file.
    pub(super) by_bytes: foldhash::HashMap<BytesKey, Ino>,
    pub(super) extra_links: HashMap<Ino, u32>,
    /// Delegates' directories, by inode.
    pub(super) delegate_dirs: foldhash::HashMap<Ino, std::sync::Arc<crate::tree::DelegateDir>>,
    /// Checkpoint keys by the digest of their bytes (`--names`).
    pub(super) names: Option<HashMap<Digest32, Vec<String>>>,
    /// The checkpoint, for keys matched through a permutation.
    pub(super) checkpoint: Option<Checkpoint>,
    /// Checkpoint keys found so far in the program being built, with the
    /// file holding their bytes, for its `by-name/`.
    pub(super) by_name: Vec<(String, Ino)>,
    /// Per ETDump source, its debug buffer's source and length.
    pub(super) debug_buffers: HashMap<SourceId, (SourceId, u64)>,
    /// The profile joined with every program shown.
    pub(super) profile: Option<AttachedProfile>,
    /// The source of the ETRecord joined with every program shown.
    pub(super) etrecord: Option<SourceId>,
    /// What of the tree being built was not made and why, for its
    /// README.txt.
    pub(super) not_made: Vec<String>,
    /// The ETRecord joined so far, by method, or why it cannot be.
    pub(super) joined: HashMap<String, Result<Arc<Vec<crate::join::etrecord::SourceRow>>, String>>,
    /// Renders `report/` files, when the tree has them.
    pub(super) reports: Option<ReportMaker>,
    /// The tree being built, once it is: what its `report/` files are
    /// computed from.
    pub(super) me: std::sync::Weak<Tree>,
    /// The attached data files, for reports.
    pub(super) report_data: Vec<ReportFile>,
    /// The `weights.safetensors` files to assemble once the tree is
    /// built, with the directories they are at the root of.
    pub(super) weights: Vec<super::weights::Pending>,
    /// Tensors whose bytes are not there (external tensors without their
    /// data file), for `weights.safetensors` to list.
    pub(super) missing_weights: Vec<super::weights::Absent>,
    /// Keys of named data and data file entries, by their bytes.
    pub(super) weight_keys: foldhash::HashMap<(SourceId, u64, u64), Box<str>>,
}

/// A tensor type, shape and dim order.
pub(super) type MetaKey = (Dtype, Arc<[i64]>, Option<Arc<[u8]>>);

/// Source, offset, length and prefix length of a file's bytes.
pub(super) type BytesKey = (SourceId, u64, u64, usize);

/// What identifies the bytes of a file for sharing: `None` for rendered
/// files and empty spans, which are never shared.
pub(super) fn bytes_key(content: &Content) -> Option<BytesKey> {
    match content {
        Content::Source { source, span } => Some((*source, span.offset, span.len, 0)),
        Content::Prefixed {
            prefix,
            source,
            span,
        }
        | Content::Widened {
            prefix,
            source,
            span,
        } => Some((*source, span.offset, span.len, prefix.len())),
        Content::Generated(_) | Content::Lazy(_) | Content::Assembled(_) => None,
    }
    .filter(|k| k.2 > 0)
}

impl Builder {
    pub(super) fn finish(mut self) -> Tree {
        // Sort each directory by name. A node's first name is the entry
        // made with it: in its parent, at the position `push` noted.
        for dir in 1..=self.nodes.len() as Ino {
            let NodeKind::Dir(entries) = &mut self.nodes[dir as usize - 1].kind else {
                continue;
            };
            let mut entries = std::mem::take(entries);
            let first: Vec<bool> = entries
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let n = self.nodes.get((e.ino as usize).wrapping_sub(1));
                    n.is_some_and(|n| n.parent == dir && n.slot as usize == i && e.ino != dir)
                })
                .collect();
            let mut order: Vec<u32> = (0..entries.len() as u32).collect();
            order.sort_by(|&a, &b| {
                entries[a as usize]
                    .name
                    .as_bytes()
                    .cmp(entries[b as usize].name.as_bytes())
            });
            for (pos, &i) in order.iter().enumerate() {
                if first[i as usize] {
                    self.nodes[entries[i as usize].ino as usize - 1].slot = pos as u32;
                }
            }
            let mut taken: Vec<Option<Child>> = entries.drain(..).map(Some).collect();
            let sorted: Vec<Child> = order
                .iter()
                .filter_map(|&i| taken[i as usize].take())
                .collect();
            if let NodeKind::Dir(e) = &mut self.nodes[dir as usize - 1].kind {
                *e = sorted;
            }
        }
        self.relocate();
        let tensors: Arc<[TensorMeta]> = std::mem::take(&mut self.tensors).into();
        self.assemble_weights(&tensors);
        let count = self.source_names.keys().max().map_or(0, |m| m + 1);
        let mut source_names = vec![String::new(); count];
        for (id, name) in self.source_names {
            source_names[id] = name;
        }
        Tree {
            nodes: self.nodes,
            extra_links: self.extra_links,
            tensors,
            tables: self.tables,
            constants: self.constants,
            listings: self.listings,
            named_blobs: self.named_blobs,
            source_names,
            delegate_dirs: self.delegate_dirs,
            warnings: self.warnings,
        }
    }

    /// The index in `tensors` of a type and shape, recorded once.
    pub(super) fn meta_of(&mut self, dtype: Dtype, sizes: Arc<[i64]>) -> u32 {
        self.meta_ordered(dtype, sizes, None)
    }

    /// [`meta_of`](Self::meta_of) for a tensor stored in `dim_order`
    /// (`None`, or the default order, when outermost first).
    pub(super) fn meta_ordered(
        &mut self,
        dtype: Dtype,
        sizes: Arc<[i64]>,
        dim_order: Option<Arc<[u8]>>,
    ) -> u32 {
        let default = |o: &Arc<[u8]>| o.iter().enumerate().all(|(i, &d)| d as usize == i);
        let dim_order = dim_order.filter(|o| !default(o));
        let next = self.tensors.len() as u32;
        let key = (dtype, sizes, dim_order);
        if let Some(&i) = self.metas.get(&key) {
            return i;
        }
        self.tensors.push(TensorMeta {
            dtype,
            sizes: key.1.clone(),
            dim_order: key.2.clone(),
        });
        self.metas.insert(key, next);
        next
    }

    /// The path of directory `ino` built so far, for messages.
    pub(super) fn path_of(&self, mut ino: Ino) -> String {
        let mut parts = Vec::new();
        while ino != ROOT {
            let Some(node) = self.nodes.get(ino as usize - 1) else {
                break;
            };
            let name = match &self.nodes[node.parent as usize - 1].kind {
                NodeKind::Dir(entries) => entries.iter().find(|e| e.ino == ino).map(|e| &*e.name),
                NodeKind::File(_) => None,
            };
            parts.push(name.unwrap_or("?"));
            ino = node.parent;
        }
        parts.reverse();
        parts.join("/")
    }

    /// Adds `name` to directory `parent` as a name of `ino`.
    pub(super) fn add_entry(&mut self, parent: Ino, name: Box<str>, ino: Ino) {
        if let Some(Node {
            kind: NodeKind::Dir(entries),
            ..
        }) = self.nodes.get_mut(parent as usize - 1)
        {
            entries.push(Child { name, ino });
        }
    }

    pub(super) fn push(&mut self, parent: Ino, name: String, kind: NodeKind) -> Ino {
        let ino = self.nodes.len() as Ino + 1;
        // Where the first name stands among the parent's entries so far;
        // `finish` follows it through the sort.
        let mut slot = 0;
        if ino != ROOT {
            if let Some(Node {
                kind: NodeKind::Dir(entries),
                ..
            }) = self.nodes.get(parent as usize - 1)
            {
                slot = entries.len() as u32;
            }
            self.add_entry(parent, name.into_boxed_str(), ino);
        }
        self.nodes.push(Node { parent, slot, kind });
        ino
    }

    pub(super) fn dir(&mut self, parent: Ino, name: String) -> Dir {
        Dir {
            ino: self.push(parent, name, NodeKind::Dir(Vec::new())),
            names: DirNames::default(),
        }
    }

    /// A subdirectory whose name is fixed by the layout.
    pub(super) fn subdir(&mut self, parent: &mut Dir, name: &str) -> Dir {
        let name = parent.names.unique(name, "");
        self.dir(parent.ino, name)
    }

    /// Adds file `name` to `dir`. Source bytes already served by another
    /// file (same range, same rendered prefix, no conflicting tensor type)
    /// make `name` another name of that file. Returns the file's inode.
    pub(super) fn file(
        &mut self,
        dir: Ino,
        name: String,
        content: Content,
        tensor: Option<u32>,
    ) -> Ino {
        let key = bytes_key(&content);
        if let Some(key) = key {
            if let Some(&ino) = self.by_bytes.get(&key)
                && self.same_file(ino, &content, tensor)
            {
                self.add_link(dir, name.into_boxed_str(), ino);
                return ino;
            }
            let ino = self.push(dir, name, NodeKind::File(File { content, tensor }));
            self.by_bytes.entry(key).or_insert(ino);
            return ino;
        }
        self.push(dir, name, NodeKind::File(File { content, tensor }))
    }

    /// Whether file `ino` can stand for `content` typed as `tensor`; takes
    /// on the tensor type if it had none.
    pub(super) fn same_file(&mut self, ino: Ino, content: &Content, tensor: Option<u32>) -> bool {
        if ino >= PROVISIONAL {
            return self.same_computed(ino, content, tensor);
        }
        let Some(Node {
            kind: NodeKind::File(f),
            ..
        }) = self.nodes.get_mut(ino as usize - 1)
        else {
            return false;
        };
        let prefix = |c: &Content| match c {
            Content::Prefixed { prefix, .. } => Some((false, prefix.clone())),
            Content::Widened { prefix, .. } => Some((true, prefix.clone())),
            _ => None,
        };
        if prefix(&f.content) != prefix(content) {
            return false;
        }
        let meta = |t: Option<u32>| t.and_then(|t| self.tensors.get(t as usize));
        match (f.tensor, tensor) {
            (Some(a), Some(b)) => {
                let (a, b) = (meta(Some(a)), meta(Some(b)));
                a.zip(b)
                    .is_some_and(|(a, b)| a.dtype.same_type(b.dtype) && a.sizes == b.sizes)
            }
            (None, Some(_)) => {
                f.tensor = tensor;
                true
            }
            _ => true,
        }
    }

    /// [`same_file`](Self::same_file) for a computed file, which keeps
    /// the type it has.
    pub(super) fn same_computed(&self, ino: Ino, content: &Content, tensor: Option<u32>) -> bool {
        let theirs = self
            .tables
            .iter()
            .find_map(|t| t.identity(ino))
            .unwrap_or_default();
        let prefix = match content {
            Content::Prefixed { prefix, .. } => Some(prefix),
            Content::Widened { .. } => return false,
            _ => None,
        };
        theirs.prefix == prefix
            && (theirs.meta.is_none() || tensor.is_none() || theirs.meta == tensor)
    }

    pub(super) fn add_link(&mut self, dir: Ino, name: Box<str>, target: Ino) {
        self.count_name(target);
        self.add_entry(dir, name, target);
    }

    /// Counts a further name of `ino`.
    pub(super) fn count_name(&mut self, ino: Ino) {
        if !self.tables.iter_mut().any(|t| t.add_name(ino)) {
            *self.extra_links.entry(ino).or_default() += 1;
        }
    }

    pub(super) fn generated(&mut self, dir: &mut Dir, name: &str, bytes: Box<[u8]>) {
        let name = dir.names.unique(name, "");
        self.file(dir.ino, name, Content::Generated(bytes), None);
    }

    /// `name` holding `v` as JSON. Should rendering fail, the file holds
    /// `{"error": ...}` instead and the tree's warnings say so.
    pub(super) fn json(&mut self, dir: &mut Dir, name: &str, v: &impl serde::Serialize) {
        let bytes = render::json(v).unwrap_or_else(|e| {
            self.warnings.push(format!(
                "{}: cannot render {name}: {e}",
                self.path_of(dir.ino)
            ));
            render::json(&serde_json::json!({ "error": e.to_string() })).unwrap_or_default()
        });
        self.generated(dir, name, bytes);
    }

    /// `name`, rendered by `render` from the bytes of the program that
    /// `origin` locates (a bundled program's inner program included) when
    /// first looked at. The program is parsed again for each render.
    pub(super) fn lazy_program(
        &mut self,
        dir: &mut Dir,
        name: &str,
        origin: Origin,
        program_len: usize,
        render: impl Fn(&ProgramFile<'_>, &mut dyn Write) -> io::Result<()> + Send + Sync + 'static,
    ) {
        let shift = origin.shift as usize;
        self.lazy(
            dir,
            name,
            origin.source,
            Box::new(move |bytes, out| {
                let window = bytes.get(shift..shift.saturating_add(program_len));
                match window.map(crate::format::parse) {
                    Some(Ok(Parsed::Program(p))) => render(&p, out),
                    Some(Err(e)) => Err(crate::tree::lazy::failed(e)),
                    _ => Err(crate::tree::lazy::failed(
                        "the program is no longer where it was",
                    )),
                }
            }),
        );
    }

    /// `name`, rendered by `render` from source `source`'s bytes when first
    /// looked at. Returns the name it got.
    pub(super) fn lazy(
        &mut self,
        dir: &mut Dir,
        name: &str,
        source: SourceId,
        render: lazy::Renderer,
    ) -> String {
        let name = dir.names.unique(name, "");
        let (Some(bytes), Some(cache)) = (self.source_bytes.get(&source), &self.cache) else {
            // Only trees built without their sources' bytes get here.
            let text = format!("cannot render {name}: the source's bytes are not at hand\n");
            self.file(
                dir.ino,
                name.clone(),
                Content::Generated(text.into_bytes().into()),
                None,
            );
            return name;
        };
        let content = Content::Lazy(Box::new(cache.file(source, bytes.clone(), render)));
        self.file(dir.ino, name.clone(), content, None);
        name
    }

    /// `<stem>.bin`, a raw range of a source. Returns its name.
    pub(super) fn raw(&mut self, dir: &mut Dir, stem: &str, origin: Origin, span: Span) -> String {
        let name = dir.names.unique(stem, ".bin");
        self.file(dir.ino, name.clone(), origin.content(span), None);
        name
    }

    /// `<stem>.bin`, a named blob of a source (named data with no tensor
    /// layout). Returns its name and inode.
    pub(super) fn named_blob(
        &mut self,
        dir: &mut Dir,
        stem: &str,
        origin: Origin,
        span: Span,
    ) -> (String, Ino) {
        let name = dir.names.unique(stem, ".bin");
        let ino = self.file(dir.ino, name.clone(), origin.content(span), None);
        self.named_blobs.insert(ino);
        (name, ino)
    }

    /// `<stem>.bin` and, where NumPy can describe it, `<stem>.npy`. A
    /// tensor without a span (no data vector, no bytes) gets empty contents.
    pub(super) fn tensor_files(
        &mut self,
        dir: &mut Dir,
        stem: &str,
        origin: Origin,
        span: Option<Span>,
        shape: &TensorShape,
    ) -> (String, Option<String>) {
        let content = |header: Option<Arc<[u8]>>| match (span, header) {
            (Some(span), None) => origin.content(span),
            (Some(span), Some(prefix)) => Content::Prefixed {
                prefix,
                source: origin.source,
                span: origin.shifted(span),
            },
            (None, header) => Content::Generated(header.as_deref().unwrap_or_default().into()),
        };
        let header = self.npy_header(shape);
        let meta = Some(self.meta_ordered(
            Dtype::Scalar(shape.scalar_type),
            shape.sizes.clone(),
            Some(shape.dim_order.clone()),
        ));
        let Some(header) = header else {
            let name = dir.names.unique(stem, ".bin");
            self.file(dir.ino, name.clone(), content(None), meta);
            return (name, None);
        };
        let mut names = dir.names.unique_family(stem, &[".bin", ".npy"]).into_iter();
        let (bin, npy) = (
            names.next().unwrap_or_default(),
            names.next().unwrap_or_default(),
        );
        self.file(dir.ino, bin.clone(), content(None), meta);
        self.file(dir.ino, npy.clone(), content(Some(header)), meta);
        (bin, Some(npy))
    }

    /// The `.npy` header of a tensor: one copy per distinct header, as
    /// most tensors of a file share their type and shape with others.
    pub(super) fn npy_header(&mut self, shape: &TensorShape) -> Option<Arc<[u8]>> {
        let header = scalar::numpy(shape.scalar_type)
            .and_then(|np| npy::header(np.descr, &shape.physical()))?;
        if let Some(h) = self.npy_headers.get(&header[..]) {
            return Some(h.clone());
        }
        let header: Arc<[u8]> = header.into();
        self.npy_headers.insert(header.clone());
        Some(header)
    }
}
