//! Tensors and blobs of two files, paired by where they are and by their
//! bytes, then compared.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use super::values::{self, Elements, Tolerance};
use crate::format::package::PackageFile;
use crate::format::{DataFile, Parsed, ProgramFile, TensorData, scalar};
use crate::schema::ScalarType;
use crate::tree::Input;
use crate::tree::{Content, DelegateDir, ROOT, SourceId, Tree, Walk};

/// Where a tensor or blob is, as pairing sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Place {
    /// A fully qualified name.
    Fqn(String),
    /// A method's value without a name.
    Value(String, usize),
    /// A named blob or data-file entry.
    Key(String),
    /// A delegate weight, by layer and role (`012-conv2d.filter` in its
    /// delegate directory): named blobs are keyed by the sha256 of their
    /// bytes, so a changed weight would otherwise look removed and added.
    Layer(String),
}

impl Place {
    fn show(&self) -> String {
        match self {
            Place::Fqn(f) => f.clone(),
            Place::Value(m, v) => format!("{m}/{v}"),
            Place::Key(k) | Place::Layer(k) => k.clone(),
        }
    }
}

/// A tensor or blob of one side.
#[derive(Debug, Clone)]
pub(super) struct Item<'a> {
    place: Place,
    /// Its index among its method's values.
    value: Option<usize>,
    /// The method whose tensor it is; `None` for program-wide data.
    pub(super) method: Option<String>,
    scalar_type: Option<ScalarType>,
    sizes: Vec<i64>,
    dim_order: Vec<u8>,
    bytes: &'a [u8],
    /// Where the bytes are in the tree: its first name, then the others.
    paths: Vec<String>,
}

impl<'a> Item<'a> {
    /// A tensor known by its name, shown at `path`, its bytes in row-major
    /// order.
    pub(super) fn named(
        name: String,
        path: String,
        scalar_type: ScalarType,
        sizes: Vec<i64>,
        bytes: &'a [u8],
    ) -> Self {
        Item {
            place: Place::Fqn(name),
            value: None,
            method: None,
            scalar_type: Some(scalar_type),
            dim_order: (0..sizes.len().min(256)).map(|d| d as u8).collect(),
            sizes,
            bytes,
            paths: vec![path],
        }
    }
}

/// One side's file, its attached data files and its tree.
pub struct Side<'s, 'a> {
    /// The file shown.
    pub input: &'s Input<'a>,
    /// Its attached data files.
    pub attached: &'s [Input<'a>],
    /// The tree they make.
    pub tree: &'s Tree,
}

/// A stored byte range: its source, offset and length.
type Range = (SourceId, u64, u64);

/// What the tree says of the stored byte ranges of a side.
struct Names {
    /// Every name each range has: the file's first name, then its others
    /// in tree order.
    paths: HashMap<Range, Vec<String>>,
    /// The ranges whose first name is a weight file of a decoded delegate
    /// (`<folder>/weights/<stem>.bin` in the delegate's directory), with
    /// that delegate.
    weights: HashMap<Range, Arc<DelegateDir>>,
}

/// The names of every range of `tree`, and which are delegate weights.
fn names(tree: &Tree) -> Names {
    let mut paths: HashMap<Range, Vec<String>> = HashMap::new();
    let mut weights = HashMap::new();
    let mut walk = tree.walk(ROOT);
    while let Some((path, ino)) = walk.next() {
        let Some(f) = tree.file(ino) else { continue };
        let Content::Source { source, span } = &*f.content else {
            continue;
        };
        let key = (*source, span.offset, span.len);
        let all = paths.entry(key).or_default();
        if all.is_empty() {
            all.push(tree.path(ino));
        }
        if all[0] != path {
            all.push(path);
        } else if let Some(d) = weight_of(tree, &walk, &path) {
            weights.insert(key, d.clone());
        }
    }
    Names { paths, weights }
}

/// The delegate whose decoded folder's `weights/` holds `path`, the file
/// `walk` last returned, as a `.bin`.
fn weight_of<'t>(tree: &'t Tree, walk: &Walk<'t>, path: &str) -> Option<&'t Arc<DelegateDir>> {
    let mut up = walk.enclosing();
    let (weights, folder, dir) = (up.next()?, up.next()?, up.next()?);
    let filed = path.ends_with(".bin") && tree.lookup(folder, b"weights") == Some(weights);
    tree.delegate_dir(dir).filter(|_| filed)
}

/// Items gathered from a side, each byte range once.
struct Collector<'a, 't> {
    tree: &'t Tree,
    names: Names,
    out: Vec<Item<'a>>,
    seen: HashMap<Range, usize>,
}

impl<'a> Collector<'a, '_> {
    /// Adds `item`, whose bytes are `key`; bytes already listed only get
    /// the better name (a fully qualified one).
    fn add(&mut self, item: Item<'a>, key: Range) {
        if let Some(&i) = self.seen.get(&key) {
            let known = &mut self.out[i];
            if matches!(item.place, Place::Fqn(_)) && !matches!(known.place, Place::Fqn(_)) {
                known.place = item.place;
            }
            return;
        }
        let paths = self.names.paths.get(&key).cloned().unwrap_or_default();
        let item = match paths.first() {
            Some(first)
                if matches!(item.place, Place::Key(_)) && self.names.weights.contains_key(&key) =>
            {
                self.delegate_weight(item, first)
            }
            _ => item,
        };
        // Unnamed bytes that a `--names` checkpoint names pair by that name.
        let checkpoint = paths.iter().find_map(|p| p.strip_prefix("by-name/"));
        let item = match (&item.place, checkpoint) {
            (Place::Value(..) | Place::Key(_), Some(name)) => Item {
                place: Place::Fqn(name.to_owned()),
                ..item
            },
            _ => item,
        };
        self.seen.insert(key, self.out.len());
        self.out.push(Item { paths, ..item });
    }

    fn program(
        &mut self,
        p: &ProgramFile<'a>,
        own: SourceId,
        shift: u64,
        data: &[(SourceId, &DataFile<'a>)],
    ) {
        for m in &p.methods {
            for t in &m.tensors {
                let found = match &t.data {
                    TensorData::External { key } => crate::meta::external::find(
                        data.iter().map(|d| d.1),
                        *key,
                    )
                    .and_then(|(i, e)| {
                        let bytes = e.span.bytes(data[i].1.bytes).get(..t.nbytes as usize)?;
                        Some((bytes, (data[i].0, e.span.offset, t.nbytes)))
                    }),
                    other => other
                        .span()
                        .map(|s| (s.bytes(p.bytes), (own, s.offset + shift, s.len))),
                };
                let Some((bytes, key)) = found else { continue };
                let place = match t.fqn {
                    Some(f) => Place::Fqn(f.to_string()),
                    None => Place::Value(m.name.to_string(), t.value_index),
                };
                let item = Item {
                    place,
                    value: Some(t.value_index),
                    method: Some(m.name.to_string()),
                    scalar_type: Some(t.scalar_type),
                    sizes: t.sizes.to_vec(),
                    dim_order: t.dim_order.to_vec(),
                    bytes,
                    paths: Vec::new(),
                };
                self.add(item, key);
            }
        }
        for n in &p.named {
            let item = blob(Place::Key(n.key.to_string()), n.span.bytes(p.bytes));
            self.add(item, (own, n.span.offset + shift, n.span.len));
        }
    }

    fn data(&mut self, d: &DataFile<'a>, source: SourceId) {
        for e in &d.entries {
            let layout = e.layout.as_ref();
            let item = Item {
                scalar_type: layout.map(|l| l.scalar_type),
                sizes: layout.map(|l| l.sizes.to_vec()).unwrap_or_default(),
                dim_order: layout.map(|l| l.dim_order.to_vec()).unwrap_or_default(),
                ..blob(Place::Key(e.key.to_string()), e.span.bytes(d.bytes))
            };
            self.add(item, (source, e.span.offset, e.span.len));
        }
    }

    /// A blob that a decoded delegate names as a weight (its first name is
    /// the weight's file): placed by layer and role, typed as the delegate
    /// stores it where that type is a number ptefs compares.
    fn delegate_weight(&self, item: Item<'a>, path: &str) -> Item<'a> {
        let meta = self
            .tree
            .resolve(path)
            .and_then(|i| self.tree.tensor_meta(i));
        let scalar_type = meta.and_then(|m| m.dtype.element());
        let sizes: Vec<i64> = meta.map(|m| m.sizes.to_vec()).unwrap_or_default();
        // Compare as typed only where the bytes are exactly the elements.
        let fits = scalar_type.is_some_and(|t| {
            let n: i64 = sizes.iter().product();
            crate::format::scalar::element_size(t)
                .is_some_and(|e| e as i64 * n == item.bytes.len() as i64)
        });
        Item {
            place: Place::Layer(path.to_owned()),
            scalar_type: scalar_type.filter(|_| fits),
            sizes: if fits { sizes } else { Vec::new() },
            ..item
        }
    }

    /// The weights decoded delegates hold inside their payloads (TOSA
    /// constants, OpenVINO's and Core ML's weight blobs, ...), which no
    /// program table lists: found by their files under a delegate's
    /// `weights/`, in path order, each paired by layer and role.
    fn payload_weights(&mut self, files: &HashMap<SourceId, &'a [u8]>) {
        let mut found: Vec<(String, Range, String)> = (self.names.weights.iter())
            .filter(|(key, _)| !self.seen.contains_key(*key))
            .filter_map(|(key, d)| {
                let path = self.names.paths.get(key)?.first()?;
                Some((path.clone(), *key, d.method.clone()))
            })
            .collect();
        found.sort();
        for (path, key, method) in found {
            let (source, offset, len) = key;
            let Some(bytes) = files.get(&source).and_then(|f| {
                let start = usize::try_from(offset).ok()?;
                f.get(start..start.checked_add(usize::try_from(len).ok()?)?)
            }) else {
                continue;
            };
            let item = Item {
                method: Some(method),
                ..self.delegate_weight(blob(Place::Key(path.clone()), bytes), &path)
            };
            self.add(item, key);
        }
    }

    /// A package's stored tensors by data key, which is the fully
    /// qualified name, so that they pair with a program's.
    fn package(&mut self, p: &PackageFile<'a>, source: SourceId) {
        for (key, t, _) in p.keys() {
            let item = Item {
                scalar_type: t.scalar_type,
                sizes: t.shape.iter().map(|&d| d as i64).collect(),
                ..blob(Place::Fqn(key.to_owned()), t.span.bytes(p.bytes))
            };
            self.add(item, (source, t.span.offset, t.span.len));
        }
    }
}

/// Program-wide bytes at `place`, without a type.
fn blob(place: Place, bytes: &[u8]) -> Item<'_> {
    Item {
        place,
        value: None,
        method: None,
        scalar_type: None,
        sizes: Vec::new(),
        dim_order: Vec::new(),
        bytes,
        paths: Vec::new(),
    }
}

/// The tensors and blobs of a side, each byte range once: under its fully
/// qualified name where it has one, else the first method's value, else
/// its key, with every path it has.
pub(super) fn items<'a>(side: &Side<'_, 'a>) -> Vec<Item<'a>> {
    let mut c = Collector {
        tree: side.tree,
        names: names(side.tree),
        out: Vec::new(),
        seen: HashMap::new(),
    };
    let data: Vec<(SourceId, &DataFile<'a>)> = side
        .attached
        .iter()
        .filter_map(|i| match &i.parsed {
            Parsed::Data(d) => Some((i.source, d)),
            _ => None,
        })
        .collect();
    let own = side.input.source;
    match &side.input.parsed {
        Parsed::Program(p) => c.program(p, own, 0, &data),
        Parsed::Bundled(b) => c.program(&b.program, own, b.program_span.offset, &data),
        Parsed::Data(d) => c.data(d, own),
        Parsed::Package(p) => c.package(p, own),
        Parsed::Profile(_) | Parsed::EtRecord(_) => {}
    }
    for (source, d) in &data {
        c.data(d, *source);
    }
    let files: HashMap<SourceId, &'a [u8]> = std::iter::once(side.input)
        .chain(side.attached)
        .map(|i| (i.source, i.parsed.bytes()))
        .collect();
    c.payload_weights(&files);
    c.out
}

/// A tensor or blob as the report names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ref {
    /// Its fully qualified name, `method/value`, or key.
    pub name: String,
    /// Its path in the tree (a tensor's own file where it has one).
    pub path: String,
    /// Its other paths: the same bytes seen elsewhere in the tree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Element type, for tensors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scalar_type: Option<String>,
    /// Logical sizes, for tensors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<i64>>,
    /// Bytes.
    pub nbytes: u64,
    /// For a method's tensor: its index among the plan's values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_index: Option<usize>,
}

fn reference(i: &Item<'_>) -> Ref {
    let mut paths = i.paths.iter();
    Ref {
        name: i.place.show(),
        path: paths.next().cloned().unwrap_or_default(),
        aliases: paths.cloned().collect(),
        scalar_type: i.scalar_type.map(scalar::name),
        sizes: i.scalar_type.map(|_| i.sizes.clone()),
        nbytes: i.bytes.len() as u64,
        value_index: i.value,
    }
}

/// A tensor in both files whose type, shape or values differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changed {
    /// The tensor in A.
    pub a: Ref,
    /// Its path in B, where that differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_path: Option<String>,
    /// Element types of A and B, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retyped: Option<(String, String)>,
    /// Sizes of A and B, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reshaped: Option<(Vec<i64>, Vec<i64>)>,
    /// How the elements differ, when type and shape agree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elements: Option<Elements>,
    /// For blobs without a type: bytes that differ, and the sizes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<BytesChange>,
    /// The calls that use the tensor (in A): `convolution.weight`,
    /// `delegate-0.arg2`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub used_by: Vec<String>,
}

/// How two untyped blobs differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BytesChange {
    /// Sizes in A and B.
    pub sizes: (u64, u64),
    /// Bytes that differ in the common length.
    pub differing: u64,
    /// The first such byte.
    pub first: Option<u64>,
}

/// A tensor found at another place with the same bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    /// Where it is in A.
    pub a: Ref,
    /// Where it is in B.
    pub b: Ref,
}

/// The tensors (or program-wide data) of a section.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tensors {
    /// Pairs at the same place with equal bytes.
    pub unchanged: u64,
    /// Pairs whose differences are all within the tolerance.
    pub within_tolerance: u64,
    /// Equal bytes at another place.
    pub moved: Vec<Moved>,
    /// Same place, different type, shape or bytes.
    pub changed: Vec<Changed>,
    /// Only in B.
    pub added: Vec<Ref>,
    /// Only in A.
    pub removed: Vec<Ref>,
}

impl Tensors {
    /// How many tensors changed in any way.
    pub fn changes(&self) -> usize {
        self.moved.len() + self.changed.len() + self.added.len() + self.removed.len()
    }
}

/// Pairs `a` and `b`: the same place with equal bytes is unchanged; of the
/// rest, equal bytes pair as moved; then the same place pairs as changed.
/// What is left was added or removed.
pub(super) fn pair(a: Vec<Item<'_>>, b: Vec<Item<'_>>, tol: Tolerance) -> Tensors {
    let mut r = Tensors::default();
    let mut b_at: HashMap<&Place, usize> =
        b.iter().enumerate().map(|(i, t)| (&t.place, i)).collect();
    let mut b_left = vec![true; b.len()];
    let mut a_left = Vec::new();
    for (i, t) in a.iter().enumerate() {
        match b_at.get(&t.place) {
            Some(&j)
                if b[j].bytes == t.bytes
                    && b[j].scalar_type == t.scalar_type
                    && b[j].sizes == t.sizes =>
            {
                r.unchanged += 1;
                b_left[j] = false;
                b_at.remove(&t.place);
            }
            _ => a_left.push(i),
        }
    }
    // Equal bytes elsewhere: moved.
    let mut by_bytes: HashMap<&[u8], Vec<usize>> = HashMap::new();
    for (j, t) in b.iter().enumerate() {
        if b_left[j] && !t.bytes.is_empty() {
            by_bytes.entry(t.bytes).or_default().push(j);
        }
    }
    let mut still = Vec::new();
    for i in a_left {
        let t = &a[i];
        let j = by_bytes.get_mut(t.bytes).and_then(|v| v.pop());
        match j {
            Some(j) if !t.bytes.is_empty() => {
                b_left[j] = false;
                r.moved.push(Moved {
                    a: reference(t),
                    b: reference(&b[j]),
                });
            }
            _ => still.push(i),
        }
    }
    for i in still {
        let t = &a[i];
        match b_at.get(&t.place) {
            Some(&j) if b_left[j] => {
                b_left[j] = false;
                match change(t, &b[j], tol) {
                    Some(c) => r.changed.push(c),
                    None => r.within_tolerance += 1,
                }
            }
            _ => r.removed.push(reference(t)),
        }
    }
    r.added = b
        .iter()
        .zip(&b_left)
        .filter(|(_, left)| **left)
        .map(|(t, _)| reference(t))
        .collect();
    r
}

/// How `a` and `b` at the same place differ; `None` when only within the
/// tolerance.
fn change(a: &Item<'_>, b: &Item<'_>, tol: Tolerance) -> Option<Changed> {
    let mut c = Changed {
        a: reference(a),
        b_path: b
            .paths
            .first()
            .filter(|p| Some(*p) != a.paths.first())
            .cloned(),
        retyped: None,
        reshaped: None,
        elements: None,
        bytes: None,
        used_by: Vec::new(),
    };
    if a.scalar_type != b.scalar_type {
        let name = |t: Option<ScalarType>| t.map_or_else(|| "untyped".to_owned(), scalar::name);
        c.retyped = Some((name(a.scalar_type), name(b.scalar_type)));
    }
    if a.sizes != b.sizes {
        c.reshaped = Some((a.sizes.clone(), b.sizes.clone()));
    }
    if c.retyped.is_some() || c.reshaped.is_some() {
        return Some(c);
    }
    match a.scalar_type {
        Some(t) if a.bytes.len() == b.bytes.len() => {
            let e = values::compare(t, &a.sizes, &a.dim_order, a.bytes, b.bytes, tol);
            if e.differing == 0 {
                return None;
            }
            c.elements = Some(e);
        }
        _ => {
            let common = a.bytes.len().min(b.bytes.len());
            let diff = |i: &usize| a.bytes[*i] != b.bytes[*i];
            c.bytes = Some(BytesChange {
                sizes: (a.bytes.len() as u64, b.bytes.len() as u64),
                differing: (0..common).filter(diff).count() as u64,
                first: (0..common).find(diff).map(|i| i as u64),
            });
        }
    }
    Some(c)
}
