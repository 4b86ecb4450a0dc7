//! Lays out the tree from parsed files, as docs/tree.md
//! documents it.

mod bundled;
mod data;
mod delegate;
mod delegate_layout;
mod etrecord;
mod index_entry;
mod meta;
mod package;
mod profile;
mod program;
mod program_profile;
mod tables;
mod tensor_index;

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use super::file_names::{DirNames, encode};
use super::lazy::{self, RenderCache, SharedBytes};
use super::render::{self, npy};
use super::report_files::{ReportFile, ReportInputs, ReportMaker};
use super::table::{ConstantsTable, Listing, TensorTable};
use super::{Content, Dtype, Entry, File, Ino, Node, NodeKind, ROOT, SourceId, TensorMeta, Tree};
use crate::format::{DataFile, Parsed, ProgramFile, Span, scalar};
use crate::meta::checkpoint::{Checkpoint, Digest32};
use index_entry::TensorShape;
pub use program_profile::AttachedProfile;

/// A parsed file to show, with the name it is shown under.
#[derive(Debug)]
pub struct Input<'a> {
    /// The file's base name (`mlp.pte`).
    pub name: String,
    /// Which source it is, for [`Content::Source`].
    pub source: SourceId,
    /// The source's bytes, which lazily rendered files are rendered from.
    pub bytes: SharedBytes,
    /// The parsed file.
    pub parsed: Parsed<'a>,
}

/// Builds the tree. One input is shown at the root unless `one_dir_each`;
/// otherwise each gets a directory named by its base name. Every data file
/// in `attached` supplies external tensors and named blobs to every
/// program.
pub fn build(inputs: &[Input<'_>], attached: &[Input<'_>], one_dir_each: bool) -> Tree {
    build_with_names(inputs, attached, one_dir_each, None)
}

/// [`build`], with the keys of a checkpoint (`--names`) shown under
/// `by-name/` and in `index.json` wherever a tensor holds their bytes.
pub fn build_with_names(
    inputs: &[Input<'_>],
    attached: &[Input<'_>],
    one_dir_each: bool,
    names: Option<&Checkpoint>,
) -> Tree {
    let options = Options {
        one_dir_each,
        names,
        ..Options::default()
    };
    build_with(inputs, attached, &options)
}

/// The debug buffer of an ETDump: the file whose byte ranges its debug
/// tensors are.
#[derive(Debug, Clone)]
pub struct DebugBuffer {
    /// The ETDump's source.
    pub of: SourceId,
    /// The buffer's source.
    pub source: SourceId,
    /// Its length.
    pub len: u64,
    /// Its base name.
    pub name: String,
}

/// What a tree shows beyond its inputs and the data attached to them.
#[derive(Default, Clone, Copy)]
pub struct Options<'o, 'a> {
    /// Each input in a directory of its own (more than one input, or a
    /// directory given).
    pub one_dir_each: bool,
    /// A checkpoint's keys (`--names`), under `by-name/` and in
    /// `index.json`.
    pub names: Option<&'o Checkpoint>,
    /// The debug buffers of ETDumps.
    pub debug: &'o [DebugBuffer],
    /// A profile (an ETDump) joined with every program shown.
    pub profile: Option<&'o Input<'a>>,
    /// An ETRecord joined with every program shown.
    pub etrecord: Option<&'o Input<'a>>,
    /// What renders the `report/` directory of each program, bundled
    /// program and package, when first read; none without it.
    pub reports: Option<ReportMaker>,
}

/// The tree of `inputs` with `attached` data, showing what `options` add.
pub fn build_with(inputs: &[Input<'_>], attached: &[Input<'_>], options: &Options<'_, '_>) -> Tree {
    let Options {
        one_dir_each,
        names,
        debug,
        profile,
        etrecord,
        reports,
    } = *options;
    let data: Vec<Attached<'_, '_>> = attached
        .iter()
        .filter_map(|i| match &i.parsed {
            Parsed::Data(d) => Some(Attached {
                name: &i.name,
                source: i.source,
                file: d,
            }),
            _ => None,
        })
        .collect();
    let mut b = Builder {
        names: names.map(|c| {
            c.index()
                .into_iter()
                .map(|(d, keys)| (d, keys.into_iter().map(str::to_owned).collect()))
                .collect()
        }),
        checkpoint: names.cloned(),
        cache: Some(RenderCache::new(lazy::CACHE_BUDGET)),
        debug_buffers: debug.iter().map(|d| (d.of, (d.source, d.len))).collect(),
        profile: profile.map(|i| AttachedProfile {
            source: i.source,
            name: i.name.clone(),
        }),
        etrecord: etrecord.map(|i| i.source),
        reports,
        report_data: attached
            .iter()
            .filter(|i| matches!(i.parsed, Parsed::Data(_)))
            .map(|i| ReportFile {
                name: i.name.clone(),
                source: i.source,
                bytes: i.bytes.clone(),
            })
            .collect(),
        ..Builder::default()
    };
    for i in inputs.iter().chain(attached).chain(profile).chain(etrecord) {
        b.source_names.insert(i.source, i.name.clone());
        b.source_bytes.insert(i.source, i.bytes.clone());
    }
    for d in debug {
        b.source_names.insert(d.source, d.name.clone());
    }
    let root = b.push(ROOT, String::new(), NodeKind::Dir(Vec::new()));
    if let ([only], false) = (inputs, one_dir_each) {
        b.input(root, only, &data);
    } else {
        // A name with `/` (a file found in a subdirectory, `a/m.pte`)
        // is shown in directories of those names.
        let mut dirs: HashMap<String, Dir> = HashMap::new();
        dirs.insert(
            String::new(),
            Dir {
                ino: root,
                names: DirNames::default(),
            },
        );
        for input in inputs {
            let mut parts: Vec<&str> = input.name.split('/').filter(|p| !p.is_empty()).collect();
            let last = parts.pop().unwrap_or("");
            let mut at = String::new();
            for part in parts {
                let inner = format!("{at}/{part}");
                if !dirs.contains_key(&inner) {
                    let Some(parent) = dirs.get_mut(&at) else {
                        break;
                    };
                    let dir = b.subdir(parent, &encode(part));
                    dirs.insert(inner.clone(), dir);
                }
                at = inner;
            }
            let Some(parent) = dirs.get_mut(&at) else {
                continue;
            };
            let name = parent.names.unique(&encode(last), "");
            let ino = b.dir(parent.ino, name).ino;
            b.input(ino, input, &data);
        }
    }
    b.finish()
}

/// A data file attached to programs.
struct Attached<'i, 'a> {
    name: &'i str,
    source: SourceId,
    file: &'i DataFile<'a>,
}

/// Where a file's bytes are, as seen from the tree: which source, and where
/// the file starts in it (non-zero for a program inside a bundled program).
#[derive(Clone, Copy)]
struct Origin {
    source: SourceId,
    shift: u64,
}

impl Origin {
    fn content(self, span: Span) -> Content {
        Content::Source {
            source: self.source,
            span: self.shifted(span),
        }
    }
    fn shifted(self, span: Span) -> Span {
        Span {
            offset: span.offset + self.shift,
            len: span.len,
        }
    }
}

/// A directory being filled, with the names handed out in it so far.
struct Dir {
    ino: Ino,
    names: DirNames,
}

/// Where the inodes of computed files start while building: `finish`
/// moves them to follow the stored nodes.
const PROVISIONAL: Ino = 1 << 62;

#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    tensors: Vec<TensorMeta>,
    /// Each distinct type and shape's index in `tensors`.
    metas: foldhash::HashMap<(Dtype, Arc<[i64]>), u32>,
    /// Methods' tensor files and programs' constants, computed from rows.
    tables: Vec<TensorTable>,
    constants: Vec<ConstantsTable>,
    /// Directories with computed entries.
    listings: foldhash::HashMap<Ino, Listing>,
    /// Provisional inodes handed out so far (from [`PROVISIONAL`]).
    computed: Ino,
    warnings: Vec<String>,
    source_names: HashMap<SourceId, String>,
    /// Bytes of each source, for lazily rendered files.
    source_bytes: HashMap<SourceId, SharedBytes>,
    /// Where lazily rendered files keep their bytes.
    cache: Option<std::sync::Arc<RenderCache>>,
    /// Every `.npy` header handed out so far.
    npy_headers: foldhash::HashSet<Arc<[u8]>>,
    /// Files by the source bytes they serve, so that the same bytes seen at
    /// another path become another name of the same file.
    by_bytes: foldhash::HashMap<BytesKey, Ino>,
    extra_links: HashMap<Ino, u32>,
    /// Checkpoint keys by the digest of their bytes (`--names`).
    names: Option<HashMap<Digest32, Vec<String>>>,
    /// The checkpoint, for keys matched through a permutation.
    checkpoint: Option<Checkpoint>,
    /// Checkpoint keys found so far in the program being built, with the
    /// file holding their bytes, for its `by-name/`.
    by_name: Vec<(String, Ino)>,
    /// Per ETDump source, its debug buffer's source and length.
    debug_buffers: HashMap<SourceId, (SourceId, u64)>,
    /// The profile joined with every program shown.
    profile: Option<AttachedProfile>,
    /// The source of the ETRecord joined with every program shown.
    etrecord: Option<SourceId>,
    /// Renders `report/` files, when the tree has them.
    reports: Option<ReportMaker>,
    /// The attached data files, for reports.
    report_data: Vec<ReportFile>,
}

/// Source, offset, length and prefix length of a file's bytes.
type BytesKey = (SourceId, u64, u64, usize);

impl Builder {
    fn finish(mut self) -> Tree {
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
            let mut taken: Vec<Option<Entry>> = entries.drain(..).map(Some).collect();
            let sorted: Vec<Entry> = order
                .iter()
                .filter_map(|&i| taken[i as usize].take())
                .collect();
            if let NodeKind::Dir(e) = &mut self.nodes[dir as usize - 1].kind {
                *e = sorted;
            }
        }
        self.relocate();
        let count = self.source_names.keys().max().map_or(0, |m| m + 1);
        let mut source_names = vec![String::new(); count];
        for (id, name) in self.source_names {
            source_names[id] = name;
        }
        Tree {
            nodes: self.nodes,
            extra_links: self.extra_links,
            tensors: self.tensors,
            tables: self.tables,
            constants: self.constants,
            listings: self.listings,
            source_names,
            warnings: self.warnings,
        }
    }

    /// The index in `tensors` of a type and shape, recorded once.
    fn meta_of(&mut self, dtype: Dtype, sizes: Arc<[i64]>) -> u32 {
        let next = self.tensors.len() as u32;
        let key = (dtype, sizes);
        if let Some(&i) = self.metas.get(&key) {
            return i;
        }
        self.tensors.push(TensorMeta {
            dtype,
            sizes: key.1.clone(),
        });
        self.metas.insert(key, next);
        next
    }

    /// The path of directory `ino` built so far, for messages.
    fn path_of(&self, mut ino: Ino) -> String {
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
    fn add_entry(&mut self, parent: Ino, name: Box<str>, ino: Ino) {
        if let Some(Node {
            kind: NodeKind::Dir(entries),
            ..
        }) = self.nodes.get_mut(parent as usize - 1)
        {
            entries.push(Entry { name, ino });
        }
    }

    fn push(&mut self, parent: Ino, name: String, kind: NodeKind) -> Ino {
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

    fn dir(&mut self, parent: Ino, name: String) -> Dir {
        Dir {
            ino: self.push(parent, name, NodeKind::Dir(Vec::new())),
            names: DirNames::default(),
        }
    }

    /// A subdirectory whose name is fixed by the layout.
    fn subdir(&mut self, parent: &mut Dir, name: &str) -> Dir {
        let name = parent.names.unique(name, "");
        self.dir(parent.ino, name)
    }

    /// Adds file `name` to `dir`. Source bytes already served by another
    /// file (same range, same rendered prefix, no conflicting tensor type)
    /// make `name` another name of that file. Returns the file's inode.
    fn file(&mut self, dir: Ino, name: String, content: Content, tensor: Option<u32>) -> Ino {
        let key = tables::bytes_key(&content);
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
    fn same_file(&mut self, ino: Ino, content: &Content, tensor: Option<u32>) -> bool {
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
    fn same_computed(&self, ino: Ino, content: &Content, tensor: Option<u32>) -> bool {
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

    fn add_link(&mut self, dir: Ino, name: Box<str>, target: Ino) {
        self.count_name(target);
        self.add_entry(dir, name, target);
    }

    /// Counts a further name of `ino`.
    fn count_name(&mut self, ino: Ino) {
        if !self.tables.iter_mut().any(|t| t.add_name(ino)) {
            *self.extra_links.entry(ino).or_default() += 1;
        }
    }

    fn generated(&mut self, dir: &mut Dir, name: &str, bytes: Box<[u8]>) {
        let name = dir.names.unique(name, "");
        self.file(dir.ino, name, Content::Generated(bytes), None);
    }

    /// `name` holding `v` as JSON. Should rendering fail, the file holds
    /// `{"error": ...}` instead and the tree's warnings say so.
    fn json(&mut self, dir: &mut Dir, name: &str, v: &impl serde::Serialize) {
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
    fn lazy_program(
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
                    Some(Err(e)) => writeln!(out, "cannot render: {e}"),
                    _ => writeln!(out, "cannot render: the program is no longer where it was"),
                }
            }),
        );
    }

    /// `name`, rendered by `render` from source `source`'s bytes when first
    /// looked at. Returns the name it got.
    fn lazy(
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
    fn raw(&mut self, dir: &mut Dir, stem: &str, origin: Origin, span: Span) -> String {
        let name = dir.names.unique(stem, ".bin");
        self.file(dir.ino, name.clone(), origin.content(span), None);
        name
    }

    /// `<stem>.bin` and, where NumPy can describe it, `<stem>.npy`. A
    /// tensor without a span (no data vector, no bytes) gets empty contents.
    fn tensor_files(
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
        let meta = Some(self.meta_of(Dtype::Scalar(shape.scalar_type), shape.sizes.clone()));
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
    fn npy_header(&mut self, shape: &TensorShape) -> Option<Arc<[u8]>> {
        let header = scalar::numpy(shape.scalar_type)
            .and_then(|np| npy::header(np.descr, &shape.physical()))?;
        if let Some(h) = self.npy_headers.get(&header[..]) {
            return Some(h.clone());
        }
        let header: Arc<[u8]> = header.into();
        self.npy_headers.insert(header.clone());
        Some(header)
    }

    fn input(&mut self, root: Ino, input: &Input<'_>, data: &[Attached<'_, '_>]) {
        for w in input.parsed.warnings() {
            self.warnings.push(format!("{}: {w}", input.name));
        }
        let mut dir = Dir {
            ino: root,
            names: DirNames::default(),
        };
        let origin = Origin {
            source: input.source,
            shift: 0,
        };
        match &input.parsed {
            Parsed::Program(p) => self.program(&mut dir, &input.name, origin, p, data),
            Parsed::Data(d) => self.data(&mut dir, origin, d),
            Parsed::Bundled(b) => self.bundled(&mut dir, &input.name, origin, b, data),
            Parsed::Package(p) => self.package(&mut dir, origin, p),
            Parsed::Profile(p) => self.profile(&mut dir, origin, p),
            Parsed::EtRecord(r) => self.etrecord(&mut dir, origin, r),
        }
        if matches!(
            input.parsed,
            Parsed::Program(_) | Parsed::Bundled(_) | Parsed::Package(_)
        ) {
            self.report_dir(&mut dir, input);
        }
    }

    /// `report/`, whose files are rendered by the builder's report maker
    /// when first read (all from one report, computed once).
    fn report_dir(&mut self, dir: &mut Dir, input: &Input<'_>) {
        let Some(maker) = self.reports else {
            return;
        };
        let files = maker();
        let inputs = Arc::new(ReportInputs {
            shown: ReportFile {
                name: input.name.clone(),
                source: input.source,
                bytes: input.bytes.clone(),
            },
            attached: self.report_data.clone(),
            names: self.checkpoint.clone(),
        });
        let mut sub = self.subdir(dir, "report");
        for name in super::report_files::FILES {
            let (files, inputs) = (files.clone(), inputs.clone());
            self.lazy(
                &mut sub,
                name,
                input.source,
                Box::new(move |_, out| files.render(&inputs, name, out)),
            );
        }
    }
}
