//! Lays out the tree of LAYOUT.md from parsed files.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::names::{DirNames, encode, padded};
use super::render::{self, code_txt, flatc_json, npy, readme};
use super::{Content, File, Ino, Node, NodeKind, ROOT, SourceId, Tree};
use crate::format::{
    BundledFile, BundledTensor, DataFile, Parsed, ProgramFile, Span, TensorData, TestValue, scalar,
};
use crate::schema::ScalarType;

/// A parsed file to show, with the name it is shown under.
#[derive(Debug)]
pub struct Input<'a> {
    /// The file's base name (`mlp.pte`).
    pub name: String,
    /// Which source it is, for [`Content::Source`].
    pub source: SourceId,
    /// The parsed file.
    pub parsed: Parsed<'a>,
}

/// Builds the tree. One input is shown at the root; several get one
/// directory each, named by their base names. Every data file in `attached`
/// supplies external tensors and named blobs to every program.
pub fn build(inputs: &[Input<'_>], attached: &[Input<'_>]) -> Tree {
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
    let mut b = Builder::default();
    let root = b.dir_node(ROOT, String::new());
    if let [only] = inputs {
        b.input(root, only, &data);
    } else {
        let mut names = DirNames::default();
        for input in inputs {
            let dir = b.dir(root, names.unique(&encode(&input.name), ""));
            b.input(dir.ino, input, &data);
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

/// One file's bytes as seen from the tree: which source, and where the
/// file starts in it (non-zero for a program inside a bundled program).
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

/// Element type, logical sizes and dim order of a tensor file.
struct TensorShape<'t> {
    scalar_type: ScalarType,
    sizes: &'t [i64],
    dim_order: &'t [u8],
}

impl TensorShape<'_> {
    /// The sizes as laid out in memory: logical sizes in dim order, when the
    /// dim order is a permutation; otherwise the logical sizes.
    fn physical(&self) -> Vec<u64> {
        let logical: Vec<u64> = self.sizes.iter().map(|&s| s.max(0) as u64).collect();
        let mut seen = vec![false; logical.len()];
        let permutation = self.dim_order.len() == logical.len()
            && self.dim_order.iter().all(|&d| {
                let d = d as usize;
                d < seen.len() && !std::mem::replace(&mut seen[d], true)
            });
        if permutation {
            self.dim_order
                .iter()
                .map(|&d| logical[d as usize])
                .collect()
        } else {
            logical
        }
    }

    /// The `index.json` fields describing the type and shape.
    fn describe(&self, entry: &mut Map<String, Value>) {
        entry.insert("scalar_type".into(), json!(scalar::name(self.scalar_type)));
        let np = scalar::numpy(self.scalar_type);
        entry.insert("numpy_dtype".into(), json!(np.map(|n| n.descr)));
        entry.insert("raw_bits".into(), json!(np.is_some_and(|n| n.raw_bits)));
        entry.insert("sizes".into(), json!(self.sizes));
        entry.insert("dim_order".into(), json!(self.dim_order));
        entry.insert("npy_shape".into(), json!(self.physical()));
    }

    fn xattrs(&self, source_name: &str, offset: u64) -> Vec<(&'static str, Box<[u8]>)> {
        let mut x = raw_xattrs(source_name, offset);
        x.push((
            "user.ptefs.dtype",
            scalar::name(self.scalar_type).into_bytes().into(),
        ));
        let shape: Vec<String> = self.sizes.iter().map(i64::to_string).collect();
        x.push((
            "user.ptefs.shape",
            format!("[{}]", shape.join(", ")).into_bytes().into(),
        ));
        x.sort_by_key(|(k, _)| *k);
        x
    }
}

fn raw_xattrs(source_name: &str, offset: u64) -> Vec<(&'static str, Box<[u8]>)> {
    vec![
        ("user.ptefs.offset", offset.to_string().into_bytes().into()),
        ("user.ptefs.source", source_name.as_bytes().into()),
    ]
}

/// A directory being filled, with the names handed out in it so far.
struct Dir {
    ino: Ino,
    names: DirNames,
}

#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    warnings: Vec<String>,
    /// Source names by id, for extended attributes.
    source_names: HashMap<SourceId, String>,
}

impl Builder {
    fn finish(mut self) -> Tree {
        for node in &mut self.nodes {
            if let NodeKind::Dir(entries) = &mut node.kind {
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            }
        }
        Tree {
            nodes: self.nodes,
            warnings: self.warnings,
        }
    }

    fn push(&mut self, parent: Ino, name: String, kind: NodeKind) -> Ino {
        let ino = self.nodes.len() as Ino + 1;
        if ino != ROOT
            && let Some(Node {
                kind: NodeKind::Dir(entries),
                ..
            }) = self.nodes.get_mut(parent as usize - 1)
        {
            entries.push((name.clone().into_boxed_str(), ino));
        }
        self.nodes.push(Node {
            name: name.into_boxed_str(),
            parent,
            kind,
        });
        ino
    }

    fn dir_node(&mut self, parent: Ino, name: String) -> Ino {
        self.push(parent, name, NodeKind::Dir(Vec::new()))
    }

    fn dir(&mut self, parent: Ino, name: String) -> Dir {
        Dir {
            ino: self.dir_node(parent, name),
            names: DirNames::default(),
        }
    }

    /// A subdirectory whose name is fixed by the layout.
    fn subdir(&mut self, parent: &mut Dir, name: &str) -> Dir {
        let name = parent.names.unique(name, "");
        self.dir(parent.ino, name)
    }

    fn file(
        &mut self,
        dir: Ino,
        name: String,
        content: Content,
        xattrs: Vec<(&'static str, Box<[u8]>)>,
    ) {
        self.push(dir, name, NodeKind::File(File { content, xattrs }));
    }

    fn generated(&mut self, dir: &mut Dir, name: &str, bytes: Box<[u8]>) {
        let name = dir.names.unique(name, "");
        self.file(dir.ino, name, Content::Generated(bytes), Vec::new());
    }

    fn json(&mut self, dir: &mut Dir, name: &str, v: &Value) {
        self.generated(dir, name, render::json(v));
    }

    /// A raw file with a fixed name in the layout.
    fn raw(&mut self, dir: &mut Dir, stem: &str, origin: Origin, span: Span) -> String {
        let name = dir.names.unique(stem, ".bin");
        let x = raw_xattrs(
            &self.source_names[&origin.source],
            origin.shifted(span).offset,
        );
        self.file(dir.ino, name.clone(), origin.content(span), x);
        name
    }

    /// `<stem>.bin` and, where NumPy can describe it, `<stem>.npy`.
    /// Returns both names.
    fn tensor_files(
        &mut self,
        dir: &mut Dir,
        stem: &str,
        origin: Origin,
        span: Span,
        shape: &TensorShape<'_>,
    ) -> (String, Option<String>) {
        let header = scalar::numpy(shape.scalar_type)
            .and_then(|np| npy::header(np.descr, &shape.physical()));
        let xattrs = || {
            shape.xattrs(
                &self.source_names[&origin.source],
                origin.shifted(span).offset,
            )
        };
        match header {
            Some(header) => {
                let names = dir.names.unique_family(stem, &[".bin", ".npy"]);
                let (bin, npy) = (names[0].clone(), names[1].clone());
                let x = xattrs();
                self.file(dir.ino, bin.clone(), origin.content(span), x.clone());
                let content = Content::Prefixed {
                    prefix: header.into_boxed_slice(),
                    source: origin.source,
                    span: origin.shifted(span),
                };
                self.file(dir.ino, npy.clone(), content, x);
                (bin, Some(npy))
            }
            None => {
                let name = dir.names.unique(stem, ".bin");
                let x = xattrs();
                self.file(dir.ino, name.clone(), origin.content(span), x);
                (name, None)
            }
        }
    }

    fn input(&mut self, root: Ino, input: &Input<'_>, data: &[Attached<'_, '_>]) {
        self.source_names.insert(input.source, input.name.clone());
        for d in data {
            self.source_names.insert(d.source, d.name.to_owned());
        }
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
        }
    }

    fn program(
        &mut self,
        root: &mut Dir,
        file_name: &str,
        origin: Origin,
        p: &ProgramFile<'_>,
        data: &[Attached<'_, '_>],
    ) {
        self.generated(root, "README.txt", readme::PROGRAM.as_bytes().into());
        self.json(root, "header.json", &program_header(p));

        let seg_max = p.segments.len().saturating_sub(1) as u64;
        let seg_path = |i: usize| format!("segments/{}.bin", padded(i as u64, seg_max));
        self.json(root, "program.json", &program_summary(p, origin, &seg_path));

        let mut methods = self.subdir(root, "methods");
        for m in &p.methods {
            let name = methods.names.unique(&encode(m.name), "");
            let mut mdir = self.dir(methods.ino, name.clone());
            let base = format!("methods/{name}");

            let mut tdir = self.subdir(&mut mdir, "tensors");
            let max_value = m.tensors.iter().map(|t| t.value_index).max().unwrap_or(0) as u64;
            let mut index = Vec::new();
            let mut paths: BTreeMap<usize, String> = BTreeMap::new();
            let mut warned: HashSet<&str> = HashSet::new();
            for t in &m.tensors {
                let shape = TensorShape {
                    scalar_type: t.scalar_type,
                    sizes: &t.sizes,
                    dim_order: &t.dim_order,
                };
                let mut entry = Map::new();
                let (found, source_file) = match &t.data {
                    TensorData::External { key } => {
                        match data.iter().find_map(|d| {
                            d.file
                                .entries
                                .iter()
                                .find(|e| e.key == *key)
                                .map(|e| (d, e.span))
                        }) {
                            Some((d, span)) if span.len >= t.nbytes => (
                                Some((
                                    Origin {
                                        source: d.source,
                                        shift: 0,
                                    },
                                    Span {
                                        len: t.nbytes,
                                        ..span
                                    },
                                )),
                                Some(d.name),
                            ),
                            Some((d, span)) => {
                                self.warnings.push(format!(
                                    "{file_name}: method {:?} value {}: {:?} in {} has {} bytes, the tensor needs {}",
                                    m.name, t.value_index, key, d.name, span.len, t.nbytes
                                ));
                                (None, None)
                            }
                            None => {
                                if warned.insert(key) {
                                    let hint = if data.is_empty() {
                                        "no data file is attached (--data)"
                                    } else {
                                        "no attached data file has that key"
                                    };
                                    self.warnings.push(format!(
                                        "{file_name}: method {:?}: external tensor {key:?} (value {}) is missing: {hint}",
                                        m.name, t.value_index
                                    ));
                                }
                                (None, None)
                            }
                        }
                    }
                    other => (other.span().map(|s| (origin, s)), None),
                };
                let mut stem = padded(t.value_index as u64, max_value);
                if let Some(fqn) = t.fqn {
                    stem = format!("{stem}.{}", encode(fqn));
                }
                match found {
                    Some((o, span)) => {
                        let (bin, npy) = self.tensor_files(&mut tdir, &stem, o, span, &shape);
                        paths.insert(t.value_index, format!("{base}/tensors/{bin}"));
                        entry.insert("name".into(), json!(bin));
                        entry.insert("npy".into(), json!(npy));
                        entry.insert("value_index".into(), json!(t.value_index));
                        entry.insert("fqn".into(), json!(t.fqn));
                        shape.describe(&mut entry);
                        entry.insert("nbytes".into(), json!(t.nbytes));
                        entry.insert(
                            "source".into(),
                            json!({"file": source_file, "offset": o.shifted(span).offset}),
                        );
                    }
                    None => {
                        entry.insert("value_index".into(), json!(t.value_index));
                        entry.insert("fqn".into(), json!(t.fqn));
                        shape.describe(&mut entry);
                        entry.insert("nbytes".into(), json!(t.nbytes));
                        entry.insert("missing".into(), json!(true));
                    }
                }
                entry.insert("location".into(), json!(t.data.location()));
                match &t.data {
                    TensorData::Constant { buffer_index, .. } => {
                        entry.insert("buffer_index".into(), json!(buffer_index));
                    }
                    TensorData::MutableInitialState {
                        table,
                        buffer_index,
                        ..
                    } => {
                        entry.insert("mutable_data_segments_index".into(), json!(table));
                        entry.insert("buffer_index".into(), json!(buffer_index));
                    }
                    TensorData::External { key } => {
                        entry.insert("key".into(), json!(key));
                    }
                }
                index.push(Value::Object(entry));
            }
            self.json(&mut tdir, "index.json", &Value::Array(index));

            let mut ddir = self.subdir(&mut mdir, "delegates");
            let max_del = m.delegates.len().saturating_sub(1) as u64;
            for d in &m.delegates {
                let stem = format!("{}-{}", padded(d.index as u64, max_del), encode(d.id));
                let name = ddir.names.unique(&stem, "");
                let mut one = self.dir(ddir.ino, name);
                self.raw(&mut one, "processed", origin, d.processed);
                let specs: Vec<Value> = d
                    .compile_specs
                    .iter()
                    .map(
                        |(k, v)| json!({"key": k, "value": v, "text": std::str::from_utf8(v).ok()}),
                    )
                    .collect();
                self.json(&mut one, "compile_specs.json", &Value::Array(specs));
            }

            let mut plan = flatc_json::plan(m.plan);
            if let Some(values) = plan.get_mut("values").and_then(Value::as_array_mut) {
                for (i, path) in &paths {
                    if let Some(Value::Object(val)) =
                        values.get_mut(*i).and_then(|v| v.get_mut("val"))
                    {
                        val.insert("ptefs_path".into(), json!(path));
                    }
                }
            }
            self.json(&mut mdir, "plan.json", &plan);
            self.generated(
                &mut mdir,
                "code.txt",
                code_txt::render(m.plan).into_bytes().into(),
            );
        }

        let mut cdir = self.subdir(root, "constants");
        let max_c = p.constants.len().saturating_sub(1) as u64;
        for (i, span) in p.constants.iter().enumerate() {
            if let Some(span) = span {
                self.raw(&mut cdir, &padded(i as u64, max_c), origin, *span);
            }
        }

        let mut ndir = self.subdir(root, "named");
        let mut nindex = Vec::new();
        for n in &p.named {
            let name = self.raw(&mut ndir, &encode(n.key), origin, n.span);
            nindex.push(json!({
                "name": name,
                "key": n.key,
                "segment_index": n.segment_index,
                "nbytes": n.span.len,
                "source": {"file": null, "offset": origin.shifted(n.span).offset},
                "location": "named",
            }));
        }
        for d in data {
            for e in &d.file.entries {
                let o = Origin {
                    source: d.source,
                    shift: 0,
                };
                let name = self.raw(&mut ndir, &encode(e.key), o, e.span);
                nindex.push(json!({
                    "name": name,
                    "key": e.key,
                    "segment_index": e.segment_index,
                    "nbytes": e.span.len,
                    "source": {"file": d.name, "offset": e.span.offset},
                    "location": "named",
                }));
            }
        }
        self.json(&mut ndir, "index.json", &Value::Array(nindex));

        let mut sdir = self.subdir(root, "segments");
        for (i, span) in p.segments.iter().enumerate() {
            self.raw(&mut sdir, &padded(i as u64, seg_max), origin, *span);
        }
    }

    fn data(&mut self, root: &mut Dir, origin: Origin, d: &DataFile<'_>) {
        self.generated(root, "README.txt", readme::DATA.as_bytes().into());
        let h = &d.header;
        self.json(
            root,
            "header.json",
            &json!({
                "kind": "data",
                "file_size": d.bytes.len(),
                "root_offset": h.root_offset,
                "identifier": String::from_utf8_lossy(&h.magic),
                "header_magic": String::from_utf8_lossy(&h.header_magic),
                "header_length": h.length,
                "padded_header_size": h.padded_header_size,
                "flatbuffer_size": h.flatbuffer_size,
                "segment_base_offset": h.segment_base_offset,
                "segment_data_size": h.segment_data_size,
            }),
        );

        let mut tdir = self.subdir(root, "tensors");
        let mut index = Vec::new();
        let mut paths = Vec::new();
        for e in &d.entries {
            let mut entry = Map::new();
            let stem = encode(e.key);
            let bin = match &e.layout {
                Some(l) => {
                    let shape = TensorShape {
                        scalar_type: l.scalar_type,
                        sizes: &l.sizes,
                        dim_order: &l.dim_order,
                    };
                    let (bin, npy) = self.tensor_files(&mut tdir, &stem, origin, e.span, &shape);
                    entry.insert("name".into(), json!(bin));
                    entry.insert("npy".into(), json!(npy));
                    entry.insert("key".into(), json!(e.key));
                    shape.describe(&mut entry);
                    bin
                }
                None => {
                    let name = self.raw(&mut tdir, &stem, origin, e.span);
                    entry.insert("name".into(), json!(name));
                    entry.insert("key".into(), json!(e.key));
                    name
                }
            };
            paths.push(format!("tensors/{bin}"));
            entry.insert("segment_index".into(), json!(e.segment_index));
            entry.insert("nbytes".into(), json!(e.span.len));
            entry.insert(
                "source".into(),
                json!({"file": null, "offset": e.span.offset}),
            );
            entry.insert(
                "location".into(),
                json!(if e.layout.is_some() {
                    "tensor"
                } else {
                    "named"
                }),
            );
            index.push(Value::Object(entry));
        }
        self.json(&mut tdir, "index.json", &Value::Array(index));

        let mut ft = flatc_json::flat_tensor(d.flat);
        if let Some(named) = ft.get_mut("named_data").and_then(Value::as_array_mut) {
            for (n, path) in named.iter_mut().zip(paths) {
                if let Value::Object(n) = n {
                    n.insert("ptefs_path".into(), json!(path));
                }
            }
        }
        self.json(root, "flat_tensor.json", &ft);

        let mut sdir = self.subdir(root, "segments");
        let seg_max = d.segments.len().saturating_sub(1) as u64;
        for (i, span) in d.segments.iter().enumerate() {
            self.raw(&mut sdir, &padded(i as u64, seg_max), origin, *span);
        }
    }

    fn bundled(
        &mut self,
        root: &mut Dir,
        file_name: &str,
        origin: Origin,
        b: &BundledFile<'_>,
        data: &[Attached<'_, '_>],
    ) {
        self.generated(root, "README.txt", readme::BUNDLED.as_bytes().into());
        self.json(
            root,
            "header.json",
            &json!({
                "kind": "bundled_program",
                "file_size": b.bytes.len(),
                "identifier": String::from_utf8_lossy(&b.bytes[4..8]),
                "version": b.bundled.version(),
                "program": {"offset": b.program_span.offset, "size": b.program_span.len},
            }),
        );
        let mut pdir = self.subdir(root, "program");
        let inner = Origin {
            source: origin.source,
            shift: origin.shift + b.program_span.offset,
        };
        self.program(&mut pdir, file_name, inner, &b.program, data);

        let mut sets = self.subdir(root, "testsets");
        for (method, cases) in &b.suites {
            let name = sets.names.unique(&encode(method), "");
            let mut mdir = self.dir(sets.ino, name);
            let max_case = cases.len().saturating_sub(1) as u64;
            for (c, case) in cases.iter().enumerate() {
                let name = mdir.names.unique(&padded(c as u64, max_case), "");
                let mut cdir = self.dir(mdir.ino, name);
                let mut index = Vec::new();
                for (role, values) in [
                    ("input", &case.inputs),
                    ("expected", &case.expected_outputs),
                ] {
                    let max_v = values.len().saturating_sub(1) as u64;
                    for (i, v) in values.iter().enumerate() {
                        let stem = format!("{role}_{}", padded(i as u64, max_v));
                        index.push(self.test_value(&mut cdir, &stem, role, i, origin, v));
                    }
                }
                self.json(&mut cdir, "index.json", &Value::Array(index));
            }
        }
    }

    fn test_value(
        &mut self,
        dir: &mut Dir,
        stem: &str,
        role: &str,
        i: usize,
        origin: Origin,
        v: &TestValue,
    ) -> Value {
        let mut entry = Map::new();
        entry.insert("role".into(), json!(role));
        entry.insert("index".into(), json!(i));
        match v {
            TestValue::Tensor(BundledTensor {
                scalar_type,
                sizes,
                dim_order,
                span,
            }) => {
                let shape = TensorShape {
                    scalar_type: *scalar_type,
                    sizes,
                    dim_order,
                };
                let (bin, npy) = self.tensor_files(dir, stem, origin, *span, &shape);
                entry.insert("name".into(), json!(bin));
                entry.insert("npy".into(), json!(npy));
                entry.insert("type".into(), json!("Tensor"));
                shape.describe(&mut entry);
                entry.insert("nbytes".into(), json!(span.len));
                entry.insert(
                    "source".into(),
                    json!({"file": null, "offset": origin.shifted(*span).offset}),
                );
            }
            TestValue::Int(x) => {
                entry.insert("type".into(), json!("Int"));
                entry.insert("value".into(), json!(x));
            }
            TestValue::Bool(x) => {
                entry.insert("type".into(), json!("Bool"));
                entry.insert("value".into(), json!(x));
            }
            TestValue::Double(x) => {
                entry.insert("type".into(), json!("Double"));
                entry.insert("value".into(), json!(x));
            }
            TestValue::Unknown(t) => {
                entry.insert("type".into(), json!(t));
            }
        }
        Value::Object(entry)
    }
}

fn program_header(p: &ProgramFile<'_>) -> Value {
    let h = &p.header;
    json!({
        "kind": "program",
        "file_size": p.bytes.len(),
        "root_offset": h.root_offset,
        "identifier": String::from_utf8_lossy(&h.magic),
        "extended_header": h.extended.as_ref().map(|e| json!({
            "magic": String::from_utf8_lossy(&e.magic),
            "length": e.length,
            "program_size": e.program_size,
            "segment_base_offset": e.segment_base_offset,
            "segment_data_size": e.segment_data_size,
        })),
        "flatbuffer_size": p.flatbuffer.len,
    })
}

fn program_summary(
    p: &ProgramFile<'_>,
    origin: Origin,
    seg_path: &dyn Fn(usize) -> String,
) -> Value {
    let prog = p.program;
    let segments: Vec<Value> = prog
        .segments()
        .iter()
        .flatten()
        .zip(&p.segments)
        .enumerate()
        .map(|(i, (s, span))| {
            json!({
                "index": i,
                "offset": s.offset(),
                "size": s.size(),
                "file_offset": origin.shifted(*span).offset,
                "path": seg_path(i),
            })
        })
        .collect();
    let subsegments = |s: crate::schema::program::SubsegmentOffsets<'_>| {
        json!({
            "segment_index": s.segment_index(),
            "offsets": s.offsets().iter().flatten().collect::<Vec<u64>>(),
        })
    };
    let inline: Vec<Value> = prog
        .backend_delegate_data()
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, d)| {
            let bytes = d.data().map_or(&[][..], |v| v.bytes());
            let span = Span::of_subslice(p.bytes, bytes);
            json!({"index": i, "size": span.len, "file_offset": origin.shifted(span).offset})
        })
        .collect();
    json!({
        "identifier": String::from_utf8_lossy(&p.header.magic),
        "version": prog.version(),
        "methods": p.methods.iter().map(|m| m.name).collect::<Vec<_>>(),
        "segments": segments,
        "constant_segment": prog.constant_segment().map(subsegments),
        "constant_buffer_count": prog.constant_buffer().map_or(0, |b| b.len()),
        "mutable_data_segments": prog.mutable_data_segments().map(|v| v.iter().map(subsegments).collect::<Vec<_>>()),
        "backend_delegate_data": inline,
        "named_data": p.named.iter().map(|n| json!({"key": n.key, "segment_index": n.segment_index, "nbytes": n.span.len})).collect::<Vec<_>>(),
    })
}
