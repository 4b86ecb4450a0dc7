//! The stored byte ranges of a tree, each once, with what the tree calls
//! them, for the report and the statistics: every file that is a span of a source (its `.bin`), grouped by
//! inode, so a range seen at several paths (a constant and a method's
//! tensor, a delegate weight and its named-data entry) is one item.

use std::collections::HashMap;

use std::rc::Rc;
use std::sync::Arc;

use serde::Deserialize;

mod names;

use crate::format::Span;
use crate::tree::Tree;
use crate::tree::{Content, DelegateDir, Ino, ROOT};
pub use names::Name;
pub(crate) use names::Names;

/// What a report is computed from: a tree and the bytes of its sources.
#[derive(Clone, Copy)]
pub struct Subject<'a> {
    /// The tree built from the files.
    pub tree: &'a Tree,
    /// The directory reported on, which paths are relative to: the root,
    /// or one file's directory in a tree of several.
    pub dir: Ino,
    /// Each source's bytes, by [`crate::tree::SourceId`]; a source the
    /// tree does not use may be empty.
    pub sources: &'a [&'a [u8]],
}

impl<'a> Subject<'a> {
    /// Every path under [`Subject::dir`], relative to it (`dir` itself
    /// is the empty path), with the inode it names.
    pub fn walk(&self) -> impl Iterator<Item = (String, Ino)> + 'a {
        let skip = self.prefix_len();
        self.tree
            .walk(self.dir)
            .map(move |(path, ino)| (without_prefix(path, skip), ino))
    }

    /// The first name of `ino` relative to [`Subject::dir`]; empty when
    /// that name is elsewhere in the tree.
    pub fn path(&self, ino: Ino) -> String {
        let mut path = self.tree.path(ino);
        if self.dir != ROOT {
            let dir = self.tree.path(self.dir);
            match path.strip_prefix(&dir).and_then(|p| p.strip_prefix('/')) {
                Some(rest) => path = rest.to_owned(),
                None => path.clear(),
            }
        }
        path
    }

    /// The node at `path`, relative to [`Subject::dir`].
    pub fn resolve(&self, path: &str) -> Option<Ino> {
        self.tree.resolve_from(self.dir, path)
    }

    /// How much of a path under `dir` names `dir` itself (with its `/`).
    fn prefix_len(&self) -> usize {
        match self.dir {
            ROOT => 0,
            dir => self.tree.path(dir).len() + 1,
        }
    }

    /// The bytes of `span` of source `source`, or nothing when they are
    /// out of range (never a panic on a tree that disagrees with them).
    pub fn bytes(&self, source: usize, span: crate::format::Span) -> &'a [u8] {
        let Some(b) = self.sources.get(source) else {
            return &[];
        };
        let start = usize::try_from(span.offset).unwrap_or(usize::MAX);
        let end = usize::try_from(span.end()).unwrap_or(usize::MAX);
        b.get(start..end).unwrap_or(&[])
    }
}

/// One stored byte range.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The first path the tree gives it.
    pub path: Name,
    /// Which source holds it.
    pub source: usize,
    /// Where.
    pub span: Span,
    /// Element type name, for tensors (`FLOAT`, `xnn_datatype_qcint8`).
    pub dtype: Option<Name>,
    /// NumPy's type string, `raw_bits` when it only holds the bits.
    pub numpy: Option<(Name, bool)>,
    /// Logical sizes, for tensors (shared with the tree).
    pub sizes: Option<Arc<[i64]>>,
    /// The dim order its `index.json` gives, when not the identity
    /// (`0, 1, ..`): a channels-last tensor's `0, 2, 3, 1`.
    pub dim_order: Option<Box<[i64]>>,
    /// Its best name: a checkpoint key, fully qualified name, data key or
    /// delegate weight name; `None` when nothing names it.
    pub name: Option<Name>,
    /// The module path it belongs to (see `layers`).
    pub layer: Name,
    /// What stores it: `constants`, `named data`, a delegate, a `.ptd`.
    pub store: Name,
    /// The delegate using it, as the tree knows it, if any.
    pub delegate: Option<Arc<DelegateDir>>,
    /// How a delegate quantized it, from its `index.json` (boxed: few
    /// tensors have one, and every tensor has this field).
    pub quant: Option<Box<Quant>>,
    /// True for the scales of another weight.
    pub is_scale: bool,
    /// Operators using it (`aten::permute_copy.out`), from `index.json`.
    pub ops: Box<[Name]>,
}

impl Stored {
    /// Elements, when the shape is known.
    pub fn elements(&self) -> Option<u64> {
        self.sizes
            .as_ref()
            .map(|s| s.iter().map(|&d| d.max(0) as u64).product())
    }

    /// True for a typed tensor (not an opaque blob).
    pub fn is_tensor(&self) -> bool {
        self.dtype.is_some()
    }
}

/// A delegate weight's quantization, as its `index.json` records it.
#[derive(Debug, Clone)]
pub struct Quant {
    /// `PerChannelQuant`, `PerTensorQuant`, `PerChannelGroupQuant`, ...
    pub scheme: String,
    /// The dimension scales run along.
    pub channel_dim: Option<usize>,
    /// Elements per scale along that dimension, for group schemes.
    pub group_size: Option<u64>,
    /// Where the scales are: source, span and element type name.
    pub scales: Option<(usize, Span, String)>,
}

/// `path` without its first `skip` bytes: a path of a walk from a
/// directory, relative to that directory (see [`Subject::prefix_len`]).
fn without_prefix(mut path: String, skip: usize) -> String {
    path.replace_range(..skip.min(path.len()), "");
    path
}

/// Every stored range of `subject`'s tree, in path order of first names.
pub fn collect(subject: Subject<'_>, notes: &mut Vec<String>) -> Vec<Stored> {
    let tree = subject.tree;
    // Inode → every path, in walk order.
    let mut paths: HashMap<Ino, Vec<String>> = HashMap::new();
    let mut order: Vec<Ino> = Vec::new();
    // Inode → the first delegate whose directory holds one of its paths.
    let mut delegates: HashMap<Ino, Arc<DelegateDir>> = HashMap::new();
    let skip = subject.prefix_len();
    let mut walk = tree.walk(subject.dir);
    while let Some((path, ino)) = walk.next() {
        let path = without_prefix(path, skip);
        if path
            .split('/')
            .any(|c| c == "segments" || c == "members" || c == "report")
        {
            continue;
        }
        let Some(f) = tree.file(ino) else { continue };
        if !matches!(*f.content, Content::Source { .. }) {
            continue;
        }
        let e = paths.entry(ino).or_default();
        if e.is_empty() {
            order.push(ino);
        }
        e.push(path);
        if !delegates.contains_key(&ino)
            && let Some(d) = walk.enclosing().find_map(|dir| tree.delegate_dir(dir))
        {
            delegates.insert(ino, d.clone());
        }
    }
    let mut indexes = Indexes::default();
    let mut out = Vec::with_capacity(order.len());
    for ino in order {
        let Some(f) = tree.file(ino) else { continue };
        let Content::Source { source, span } = *f.content else {
            continue;
        };
        let all = paths.remove(&ino).unwrap_or_default();
        let first = subject.path(ino);
        let path = if all.contains(&first) {
            first
        } else {
            all.first().cloned().unwrap_or_default()
        };
        let meta = f.tensor;
        let entries: Vec<Rc<Facts>> = all
            .iter()
            .filter_map(|p| indexes.entry(subject, p, notes))
            .collect();
        let text = |get: fn(&Facts) -> &Option<Name>| {
            entries
                .iter()
                .find_map(|e| get(e).as_deref().map(str::to_owned))
        };
        let numpy = text(|e| &e.numpy)
            .map(|d| {
                let raw = entries.iter().find_map(|e| e.raw_bits).unwrap_or(false);
                (d, raw)
            })
            // A delegate's own type name (Core ML's `fp32`) counts when
            // its elements are plain scalars.
            .or_else(|| {
                let t = meta.and_then(|m| m.dtype.element())?;
                crate::format::scalar::numpy(t).map(|n| (n.descr.to_owned(), n.raw_bits))
            });
        let delegate = delegates.remove(&ino);
        let label = delegate.as_ref().map(|d| d.label.as_str());
        let checkpoint = all
            .iter()
            .find_map(|p| p.split_once("by-name/").map(|(_, k)| k.to_owned()))
            .or_else(|| {
                entries
                    .iter()
                    .find_map(|e| e.checkpoint.as_deref().map(str::to_owned))
            });
        let key = text(|e| &e.key).filter(|k| !is_digest_key(k));
        let weight_layer = text(|e| &e.layer);
        let name = checkpoint
            .clone()
            .or_else(|| text(|e| &e.fqn))
            .or(key)
            .or_else(|| package_key(&all));
        let layer = match (&name, &weight_layer, label) {
            (Some(n), _, _) => module_of(n),
            (None, Some(l), Some(d)) => format!("{d}/{l}"),
            (None, Some(l), None) => l.clone(),
            (None, None, _) => "(unnamed)".to_owned(),
        };
        let name = name.or_else(|| {
            let role = text(|e| &e.role);
            weight_layer.as_ref().map(|l| match (label, role) {
                (Some(d), Some(r)) => format!("{d}/{l}.{r}"),
                (Some(d), None) => format!("{d}/{l}"),
                (None, _) => l.clone(),
            })
        });
        let is_scale = all.iter().any(|p| p.ends_with(".scale.bin"));
        let dim_order = entries.iter().find_map(|e| e.dim_order.clone());
        let quant = quant_of(subject, &entries, &all);
        let ops = entries
            .iter()
            .flat_map(|e| e.ops.iter())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .cloned()
            .collect();
        out.push(Stored {
            store: indexes
                .names
                .get(&store_of(&path, label, tree.source_name(source))),
            path: path.into(),
            source,
            span,
            dtype: meta.map(|m| indexes.names.get(&m.dtype.name())),
            numpy: numpy
                .filter(|_| meta.is_some())
                .map(|(d, raw)| (indexes.names.get(&d), raw)),
            sizes: meta.map(|m| m.sizes.clone()),
            dim_order,
            name: name.map(Name::from),
            layer: indexes.names.get(&layer),
            delegate,
            quant: quant.map(Box::new),
            is_scale,
            ops,
        });
    }
    out
}

/// The module path of a tensor named `name`: all but its last dotted
/// component (`layers.0.attn.wq.weight` → `layers.0.attn.wq`); a name
/// without a dot is its own module.
pub fn module_of(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((m, _)) if !m.is_empty() => m.to_owned(),
        _ => name.to_owned(),
    }
}

/// True for keys that are digests rather than names: XNNPACK keys its
/// named data by SHA-256 (`<hex>`, `scale_<hex>`).
fn is_digest_key(k: &str) -> bool {
    let hex = k.rsplit('_').next().unwrap_or(k);
    hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A `.ptn` tensor's key: its file under a top-level `tensors/`.
fn package_key(paths: &[String]) -> Option<String> {
    paths.iter().find_map(|p| {
        let (dir, file) = p.rsplit_once('/')?;
        let top = dir.rsplit('/').next()?;
        (top == "tensors" && !p.contains("methods/"))
            .then(|| file.strip_suffix(".bin").unwrap_or(file).to_owned())
    })
}

/// What stores the range at `path`.
fn store_of(path: &str, delegate: Option<&str>, source: &str) -> String {
    if let Some(d) = delegate
        && !path.contains("/named/")
        && !path.starts_with("named/")
    {
        return format!("delegate {d}");
    }
    let parts: Vec<&str> = path.split('/').collect();
    let has = |c: &str| parts.contains(&c);
    if source.ends_with(".ptd") || has("named") {
        "named data".to_owned()
    } else if has("constants") || has("tensors") && has("methods") {
        "constants".to_owned()
    } else if has("tensors") {
        "tensors".to_owned()
    } else {
        parts
            .len()
            .checked_sub(2)
            .and_then(|i| parts.get(i))
            .map_or("other", |s| s)
            .to_owned()
    }
}

/// What the report uses of an `index.json` entry; everything else
/// (shapes, offsets, layouts) is skipped while parsing, so a file with
/// long shapes costs no memory for them.
#[derive(Debug, Default, Deserialize)]
struct Entry {
    #[serde(default, deserialize_with = "lenient")]
    name: Option<Box<str>>,
    #[serde(default, deserialize_with = "lenient")]
    fqn: Option<Box<str>>,
    #[serde(default, deserialize_with = "lenient")]
    key: Option<Box<str>>,
    #[serde(default, deserialize_with = "lenient")]
    checkpoint_names: Option<Box<[Box<str>]>>,
    #[serde(default, deserialize_with = "lenient")]
    layer: Option<Box<str>>,
    #[serde(default, deserialize_with = "lenient")]
    role: Option<Box<str>>,
    #[serde(default, deserialize_with = "lenient")]
    numpy_dtype: Option<Box<str>>,
    #[serde(default, deserialize_with = "lenient")]
    raw_bits: Option<bool>,
    #[serde(default, deserialize_with = "lenient")]
    dim_order: Option<Box<[i64]>>,
    #[serde(default, deserialize_with = "lenient")]
    stored_dtype: Option<Box<str>>,
    #[serde(default, deserialize_with = "lenient")]
    quantization: Option<QuantEntry>,
    #[serde(default, deserialize_with = "lenient")]
    scales: Option<Box<Entry>>,
    #[serde(default, deserialize_with = "user_ops", rename = "users")]
    ops: Box<[Box<str>]>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct QuantEntry {
    #[serde(default, deserialize_with = "lenient")]
    scheme: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    channel_dim: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    group_size: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    block_size: Option<u64>,
}

/// A field of the expected shape, or `None`: each layout writes its own
/// `index.json`, and a field another layout shapes differently is simply
/// not used.
fn lenient<'de, D: serde::Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// The operators of an entry's `users` (objects with an `op`).
fn user_ops<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Box<[Box<str>]>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u.get("op")?.as_str().map(Box::from))
        .collect())
}

/// The `index.json` entries of each directory, parsed once.
#[derive(Default)]
struct Indexes {
    dirs: HashMap<String, HashMap<Box<str>, Rc<Facts>>>,
    names: Names,
}

impl Indexes {
    /// The entry describing the file at `path`, from its directory's
    /// `index.json`.
    fn entry(
        &mut self,
        subject: Subject<'_>,
        path: &str,
        notes: &mut Vec<String>,
    ) -> Option<Rc<Facts>> {
        let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
        if !self.dirs.contains_key(dir) {
            let parsed = load_index(subject, dir, &mut self.names, notes);
            self.dirs.insert(dir.to_owned(), parsed);
        }
        self.dirs.get(dir)?.get(file).cloned()
    }
}

fn load_index(
    subject: Subject<'_>,
    dir: &str,
    names: &mut Names,
    notes: &mut Vec<String>,
) -> HashMap<Box<str>, Rc<Facts>> {
    let mut out = HashMap::new();
    let path = if dir.is_empty() {
        "index.json".to_owned()
    } else {
        format!("{dir}/index.json")
    };
    let Some(ino) = subject.resolve(&path) else {
        return out;
    };
    let Some(f) = subject.tree.file(ino) else {
        return out;
    };
    // Read in pieces rather than copied whole: a large program's index
    // is tens of megabytes, already held once by the render cache.
    let reader = ContentReader {
        subject,
        content: &f.content,
        at: 0,
        len: f.content.len(),
    };
    let reader = std::io::BufReader::with_capacity(1 << 16, reader);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let read = serde::de::DeserializeSeed::deserialize(EntriesInto(&mut out, names), &mut de)
        .and_then(|()| de.end());
    if let Err(e) = read {
        notes.push(format!("{path}: not read ({e}); its names are not used"));
        out.clear();
    }
    out
}

/// Adds what `item` (and the scales it describes) says to `out` under
/// their names.
fn add_entry(out: &mut HashMap<Box<str>, Rc<Facts>>, names: &mut Names, mut item: Entry) {
    // A weight's scales are described inside its entry, and belong to its
    // layer.
    if let Some(mut s) = item.scales.take()
        && let Some(n) = s.name.clone()
    {
        s.layer = item.layer.clone();
        let role = item.role.as_deref().unwrap_or("weight");
        s.role = Some(format!("{role}.scale").into());
        item.scales = Some(Box::new(Entry {
            name: s.name.clone(),
            stored_dtype: s.stored_dtype.clone(),
            ..Entry::default()
        }));
        add_facts(out, names, n, *s);
    }
    if let Some(n) = item.name.take() {
        add_facts(out, names, n, item);
    }
}

/// Keeps what `e` says of file `name`, if anything: most entries of a
/// large index (a constant's offsets) say nothing the report uses.
fn add_facts(out: &mut HashMap<Box<str>, Rc<Facts>>, names: &mut Names, name: Box<str>, e: Entry) {
    let mut shared = |t: Option<Box<str>>| t.map(|t| names.get(&t));
    let quant = e.quantization.map(|q| {
        Box::new(QuantFacts {
            scheme: q.scheme.map(Box::from),
            channel_dim: q.channel_dim,
            group_size: q.group_size.or(q.block_size),
            scales: e
                .scales
                .and_then(|s| Some((Name::from(s.name?), s.stored_dtype))),
        })
    });
    let facts = Facts {
        fqn: e.fqn.map(Name::from),
        key: e.key.map(Name::from),
        checkpoint: e
            .checkpoint_names
            .and_then(|c| c.into_vec().into_iter().next())
            .map(Name::from),
        layer: shared(e.layer),
        role: shared(e.role),
        numpy: shared(e.numpy_dtype),
        raw_bits: e.raw_bits,
        // Only an order other than the identity is kept: a million
        // contiguous constants cost nothing here.
        dim_order: e
            .dim_order
            .filter(|d| d.iter().enumerate().any(|(i, &x)| x != i as i64)),
        ops: e.ops.iter().map(|op| names.get(op)).collect(),
        quant,
    };
    if !facts.is_empty() {
        out.insert(name, Rc::new(facts));
    }
}

/// What the report uses of an index entry, held for as long as the
/// entries are walked: the strings many entries repeat are shared.
struct Facts {
    fqn: Option<Name>,
    key: Option<Name>,
    /// The first of its checkpoint names.
    checkpoint: Option<Name>,
    layer: Option<Name>,
    role: Option<Name>,
    numpy: Option<Name>,
    raw_bits: Option<bool>,
    dim_order: Option<Box<[i64]>>,
    ops: Box<[Name]>,
    quant: Option<Box<QuantFacts>>,
}

impl Facts {
    fn is_empty(&self) -> bool {
        self.fqn.is_none()
            && self.key.is_none()
            && self.checkpoint.is_none()
            && self.layer.is_none()
            && self.role.is_none()
            && self.numpy.is_none()
            && self.raw_bits.is_none()
            && self.dim_order.is_none()
            && self.ops.is_empty()
            && self.quant.is_none()
    }
}

/// A delegate weight's quantization, as its index entry records it.
struct QuantFacts {
    scheme: Option<Box<str>>,
    channel_dim: Option<u64>,
    group_size: Option<u64>,
    /// Its scales' file name, and their stored element type.
    scales: Option<(Name, Option<Box<str>>)>,
}

/// Reads an `index.json` (a list of entries, or a package's map of them)
/// into a map entry by entry: a million-tensor index is never held as a
/// list as well.
struct EntriesInto<'m>(&'m mut HashMap<Box<str>, Rc<Facts>>, &'m mut Names);

impl<'de> serde::de::DeserializeSeed<'de> for EntriesInto<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for EntriesInto<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list or map of index entries")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<Entry>()? {
            add_entry(self.0, self.1, item);
        }
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some((_, item)) = map.next_entry::<serde::de::IgnoredAny, Entry>()? {
            add_entry(self.0, self.1, item);
        }
        Ok(())
    }
}

/// Reads a file of the tree from its start.
struct ContentReader<'a, 't> {
    subject: Subject<'a>,
    content: &'t crate::tree::Contents<'t>,
    at: u64,
    len: u64,
}

impl std::io::Read for ContentReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let piece = self.content.read(self.at, buf.len() as u64);
        let mut bytes = Vec::with_capacity(buf.len());
        let tail = piece
            .tail
            .map(|(s, span)| self.subject.bytes(s, span))
            .unwrap_or(&[]);
        piece.assemble(tail, &mut bytes);
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        self.at += n as u64;
        Ok(n)
    }
}

/// The quantization a weight's index entry records, with where its
/// scales are.
fn quant_of(subject: Subject<'_>, entries: &[Rc<Facts>], paths: &[String]) -> Option<Quant> {
    let q = entries.iter().find_map(|e| e.quant.as_deref())?;
    let scales = q.scales.as_ref().and_then(|(name, dtype)| {
        let ino = paths.iter().find_map(|p| {
            let (d, _) = p.rsplit_once('/')?;
            subject.resolve(&format!("{d}/{name}"))
        })?;
        let f = subject.tree.file(ino)?;
        let Content::Source { source, span } = *f.content else {
            return None;
        };
        let dtype = dtype.as_deref().unwrap_or("float32").to_owned();
        Some((source, span, dtype))
    });
    Some(Quant {
        scheme: q.scheme.as_deref().unwrap_or("unknown").to_owned(),
        channel_dim: q.channel_dim.map(|d| d as usize),
        group_size: q.group_size,
        scales,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_and_digests() {
        assert_eq!(module_of("layers.0.attn.wq.weight"), "layers.0.attn.wq");
        assert_eq!(module_of("scale"), "scale");
        assert!(is_digest_key(
            "scale_764fbdc951b9073275969a61783721024dc566c0dd1d8e115e0098dd2d18ba36"
        ));
        assert!(!is_digest_key("fc1.weight"));
    }
}
