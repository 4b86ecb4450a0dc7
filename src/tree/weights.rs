//! `weights.safetensors`: every stored tensor of a program or data file as
//! one safetensors file, assembled rather than copied.
//!
//! The file is a header rendered from the tree's own records of its
//! tensors (names, types, shapes, where the bytes are) followed by the
//! tensors' byte ranges of their sources, back to back, widest elements
//! first so each tensor is aligned to its element size: safetensors wants
//! no gaps between tensors, so the data section is a list of ranges, and
//! a read is served from the sources' maps range by range, as every other
//! file is. A byte range several tensors share is in the file once.
//!
//! The header and the list of ranges are made when the file is first
//! looked at (`stat` or a read) and kept: a mount whose weights nobody
//! reads pays nothing for them, which matters for programs of a million
//! tensors.
//!
//! The dtype table ([`dtype`]) maps ExecuTorch's scalar types onto
//! safetensors' exactly; a tensor of a type safetensors lacks (quantized,
//! packed 4-bit, bits, complex double, a delegate's packed formats) is
//! left out, and `__metadata__` lists it and counts it; so does it list
//! and count the external tensors whose data file is not attached.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use super::content::Piece;
use super::table::Rows;
use super::{Dtype, SourceId, TensorMeta};
use crate::format::Span;
use crate::schema::ScalarType;

/// The file's name at the root of a program's or data file's tree.
pub const FILE_NAME: &str = "weights.safetensors";

/// The largest header safetensors readers accept.
pub const MAX_HEADER: usize = 100_000_000;

/// The most tensors the file holds: safetensors readers count them in
/// 32-bit signed integers.
pub const MAX_TENSORS: usize = 1 << 31;

/// The safetensors dtype that holds ExecuTorch's `t` exactly, if there is
/// one.
pub fn scalar_dtype(t: ScalarType) -> Option<safetensors::Dtype> {
    use safetensors::Dtype as D;
    Some(match t {
        ScalarType::BYTE => D::U8,
        ScalarType::CHAR => D::I8,
        ScalarType::SHORT => D::I16,
        ScalarType::INT => D::I32,
        ScalarType::LONG => D::I64,
        ScalarType::HALF => D::F16,
        ScalarType::FLOAT => D::F32,
        ScalarType::DOUBLE => D::F64,
        ScalarType::BOOL => D::BOOL,
        ScalarType::BFLOAT16 => D::BF16,
        ScalarType::UINT16 => D::U16,
        ScalarType::UINT32 => D::U32,
        ScalarType::UINT64 => D::U64,
        ScalarType::FLOAT8E5M2 => D::F8_E5M2,
        ScalarType::FLOAT8E4M3FN => D::F8_E4M3,
        crate::format::scalar::COMPLEX_FLOAT => D::C64,
        _ => return None,
    })
}

/// The safetensors dtype of a tensor file's type: a delegate's type counts
/// when its stored bytes are plain elements of a scalar type, or are
/// bfloat16 (which NumPy, and so the element type, lacks).
pub fn dtype(d: Dtype) -> Option<safetensors::Dtype> {
    match d {
        Dtype::Named {
            name: "bfloat16",
            element: None,
        } => Some(safetensors::Dtype::BF16),
        d => d.element().and_then(scalar_dtype),
    }
}

/// A tensor file under the tree of the file the weights are of, stored as
/// a node of its own (not a row of a method's table).
#[derive(Debug, Clone)]
pub struct Stored {
    /// Where its bytes are.
    pub source: SourceId,
    pub span: Span,
    /// Its type and shape (an index into the tree's tensor table).
    pub meta: u32,
    /// The key or fully qualified name the file gives it.
    pub key: Option<String>,
    /// The first checkpoint key whose bytes it holds (`--names`).
    pub checkpoint: Option<String>,
    /// Its path from the directory holding `weights.safetensors`.
    pub path: String,
    /// The paths of its other names there (links to the same file).
    pub links: Vec<String>,
}

/// What `weights.safetensors` is made from, set when the tree is built.
#[derive(Debug)]
pub struct Parts {
    /// The name of the file the weights are of.
    pub source_name: String,
    /// The methods' tensor tables, each with the path of its directory.
    pub tables: Vec<(String, Arc<Rows>)>,
    /// The other tensor files, in inode order.
    pub stored: Vec<Stored>,
    /// Files of raw named data that no tensor types (left out), with
    /// where their bytes are.
    pub untyped: Vec<(String, SourceId, Span)>,
    /// Tensors whose bytes are not there (external tensors whose data
    /// file is not attached), which the file cannot hold.
    pub missing: Vec<Missing>,
    /// The checkpoint keys (`--names`) of stored byte ranges, each once.
    pub checkpoint: HashMap<(SourceId, u64, u64), Vec<String>>,
}

/// A tensor of the file's program whose bytes are not there: listed in
/// `ptefs.missing`, so a reader of the file alone sees what it lacks.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Missing {
    /// The directory its file would be in (`methods/forward/tensors`).
    pub dir: String,
    /// The name its file would have, where the tree knows it (a
    /// delegate's weight).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its value index in the method (an external tensor's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<usize>,
    /// The key its bytes are stored under elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Why its bytes are not there.
    pub why: String,
}

/// `weights.safetensors`: its parts, and once looked at, its layout.
pub struct Assembly {
    parts: Parts,
    metas: Arc<[TensorMeta]>,
    plan: OnceLock<Result<Plan, String>>,
}

impl std::fmt::Debug for Assembly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembly")
            .field("source_name", &self.parts.source_name)
            .field("planned", &self.plan.get().is_some())
            .finish_non_exhaustive()
    }
}

/// The file's layout: the header, then the data section's ranges.
#[derive(Debug)]
struct Plan {
    header: Box<[u8]>,
    /// Each range with where it starts in the data section, in order;
    /// empty tensors have none.
    segments: Box<[Segment]>,
    /// Bytes of the data section.
    data_len: u64,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    /// Offset in the data section.
    start: u64,
    offset: u64,
    len: u64,
    source: SourceId,
}

/// One tensor of the file, while the layout is made.
struct Tensor {
    name: String,
    dtype: safetensors::Dtype,
    shape: Vec<u64>,
    dim_order: Option<Arc<[u8]>>,
    source: SourceId,
    span: Span,
    /// Its tree paths: the first is its own file, then other files of the
    /// same bytes.
    paths: Vec<String>,
    /// Other names its bytes have (checkpoint keys, names of the other
    /// files of the same bytes).
    aliases: Vec<String>,
}

/// A tensor left out, and why.
#[derive(Serialize)]
struct LeftOut {
    path: String,
    dtype: String,
    why: &'static str,
}

impl Assembly {
    /// The file made of `parts`, typed by the tree's tensor table `metas`.
    pub fn new(parts: Parts, metas: Arc<[TensorMeta]>) -> Assembly {
        Assembly {
            parts,
            metas,
            plan: OnceLock::new(),
        }
    }

    fn plan(&self) -> &Result<Plan, String> {
        self.plan.get_or_init(|| {
            let plan = plan(&self.parts, &self.metas, Limits::SAFETENSORS);
            crate::allocator::release_free();
            plan
        })
    }

    /// Why the file cannot be assembled (too many tensors, a header over
    /// safetensors' limit), if it cannot.
    pub fn error(&self) -> Option<String> {
        self.plan().as_ref().err().map(|why| {
            format!(
                "{}/{FILE_NAME}: cannot be assembled: {why}",
                self.parts.source_name
            )
        })
    }

    /// The size, if the layout was made already.
    pub fn known_len(&self) -> Option<u64> {
        match self.plan.get()? {
            Ok(p) => Some(p.header.len() as u64 + p.data_len),
            Err(_) => Some(0),
        }
    }

    /// The file's size (0 when it cannot be assembled).
    pub fn len(&self) -> u64 {
        self.plan();
        self.known_len().unwrap_or(0)
    }

    /// True when the file is empty (it cannot be assembled).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The header (length prefix included).
    pub fn header(&self) -> &[u8] {
        match self.plan() {
            Ok(p) => &p.header,
            Err(_) => &[],
        }
    }

    /// Where the tensor whose bytes are `len` bytes at `start` of the data
    /// section is stored; `None` for an empty tensor or a range that is
    /// not one tensor's.
    pub fn locate(&self, start: u64, len: u64) -> Option<(SourceId, Span)> {
        let plan = self.plan().as_ref().ok()?;
        let i = plan.segments.partition_point(|s| s.start < start);
        let s = plan
            .segments
            .get(i)
            .filter(|s| s.start == start && s.len == len)?;
        Some((
            s.source,
            Span {
                offset: s.offset,
                len,
            },
        ))
    }

    /// What `size` bytes at `offset` are made of: header bytes, or the
    /// source bytes of one tensor. A read that spans several tensors gets
    /// the part up to the end of the first; the rest is read from there.
    pub fn read(&self, offset: u64, size: u64) -> Piece<'_> {
        let empty = Piece {
            head: std::borrow::Cow::Borrowed(&[]),
            tail: None,
            widen: None,
        };
        let Ok(plan) = self.plan() else {
            return empty;
        };
        let hlen = plan.header.len() as u64;
        let end = offset
            .saturating_add(size)
            .min(hlen.saturating_add(plan.data_len));
        if offset >= end {
            return empty;
        }
        if offset < hlen {
            return Piece {
                head: std::borrow::Cow::Borrowed(
                    &plan.header[offset as usize..end.min(hlen) as usize],
                ),
                tail: None,
                widen: None,
            };
        }
        let at = offset - hlen;
        // The last segment starting at or before `at`: segments are
        // non-empty and back to back, so it holds `at`.
        let i = plan.segments.partition_point(|s| s.start <= at);
        let Some(s) = i.checked_sub(1).and_then(|i| plan.segments.get(i)) else {
            return empty;
        };
        let within = at - s.start;
        let len = (end - offset).min(s.len - within);
        Piece {
            head: std::borrow::Cow::Borrowed(&[]),
            tail: Some((
                s.source,
                Span {
                    offset: s.offset + within,
                    len,
                },
            )),
            widen: None,
        }
    }
}

/// How many tensors, and how large a header, a file may have.
#[derive(Debug, Clone, Copy)]
struct Limits {
    tensors: usize,
    header: usize,
}

impl Limits {
    /// What safetensors readers accept.
    const SAFETENSORS: Limits = Limits {
        tensors: MAX_TENSORS,
        header: MAX_HEADER,
    };
}

/// Lays out the file: which tensors, under which names, where.
fn plan(parts: &Parts, metas: &[TensorMeta], limits: Limits) -> Result<Plan, String> {
    let mut tensors: Vec<Tensor> = Vec::new();
    let mut left_out: Vec<LeftOut> = Vec::new();
    let mut by_bytes: HashMap<(SourceId, u64, u64), usize> = HashMap::new();
    let mut add = |name: Option<String>,
                   aliases: Vec<String>,
                   paths: Vec<String>,
                   meta: u32,
                   (source, span): (SourceId, Span)| {
        let Some(m) = metas.get(meta as usize) else {
            return;
        };
        if span.len > 0
            && let Some(&i) = by_bytes.get(&(source, span.offset, span.len))
        {
            let t: &mut Tensor = &mut tensors[i];
            if let Some(n) = name.filter(|n| *n != t.name) {
                t.aliases.push(n);
            }
            t.aliases.extend(aliases);
            t.paths.extend(paths);
            return;
        }
        let path = paths.first().cloned().unwrap_or_default();
        let Some(dt) = dtype(m.dtype) else {
            left_out.push(LeftOut {
                path,
                dtype: m.dtype.name(),
                why: "safetensors has no such type",
            });
            return;
        };
        let shape = storage_shape(&m.sizes, m.dim_order.as_deref());
        let numel = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
        let bits = dt.bitsize() as u64;
        if numel.and_then(|n| n.checked_mul(bits)) != Some(span.len * 8) {
            left_out.push(LeftOut {
                path,
                dtype: m.dtype.name(),
                why: "its bytes are not its elements one after another",
            });
            return;
        }
        if span.len > 0 {
            by_bytes.insert((source, span.offset, span.len), tensors.len());
        }
        tensors.push(Tensor {
            name: name.unwrap_or(path),
            dtype: dt,
            shape,
            dim_order: m.dim_order.clone(),
            source,
            span,
            paths,
            aliases,
        });
    };
    for (dir, rows) in &parts.tables {
        for row in 0..rows.len() as u32 {
            let Some(kind) = rows.kind(row) else {
                continue;
            };
            let path = format!("{dir}/{}", rows.names(row).bin);
            let keys = rows.checkpoint_names(row).unwrap_or_default();
            let fqn = rows.fqn(row).map(super::file_names::decode);
            let mut aliases: Vec<String> = Vec::new();
            let name = match fqn {
                Some(f) => {
                    aliases.extend(keys.iter().filter(|k| **k != f).cloned());
                    Some(f)
                }
                None => {
                    let mut keys = keys.iter().cloned();
                    let first = keys.next();
                    aliases.extend(keys);
                    first
                }
            };
            if let Some(a) = rows.alias(row) {
                aliases.push(format!("{dir}/{a}"));
            }
            add(name, aliases, vec![path], kind.meta, rows.bytes(row));
        }
    }
    for s in &parts.stored {
        let mut aliases = Vec::new();
        let name = match (&s.key, &s.checkpoint) {
            (Some(k), Some(c)) => {
                if c != k {
                    aliases.push(c.clone());
                }
                Some(k.clone())
            }
            (k, c) => k.clone().or_else(|| c.clone()),
        };
        let paths = std::iter::once(&s.path).chain(&s.links).cloned().collect();
        add(name, aliases, paths, s.meta, (s.source, s.span));
    }
    if tensors.len() > limits.tensors {
        return Err(format!(
            "{} tensors, more than safetensors' limit of {}",
            tensors.len(),
            limits.tensors
        ));
    }
    for t in &mut tensors {
        if let Some(keys) = parts.checkpoint.get(&(t.source, t.span.offset, t.span.len)) {
            t.aliases.extend(keys.iter().cloned());
        }
    }
    let untyped: Vec<&str> = (parts.untyped.iter())
        .filter(|(_, source, span)| !by_bytes.contains_key(&(*source, span.offset, span.len)))
        .map(|(path, _, _)| path.as_str())
        .collect();
    unique_names(&mut tensors);
    for t in &mut tensors {
        distinct_aliases(t);
    }
    // Widest elements first: every size is a power of two and every
    // tensor a whole number of its elements, so each starts at a multiple
    // of its element size (as memory-mapping readers want) with no holes.
    tensors.sort_unstable_by(|a, b| {
        (b.dtype.bitsize().cmp(&a.dtype.bitsize())).then_with(|| a.name.cmp(&b.name))
    });
    render(parts, tensors, left_out, &untyped, limits.header)
}

/// Renames every tensor whose name an earlier one took (or that is the
/// name safetensors reserves) with `~2`, `~3`, ..., as the tree does in a
/// directory.
fn unique_names(tensors: &mut [Tensor]) {
    let mut taken: HashMap<String, u32> = HashMap::with_capacity(tensors.len());
    taken.insert("__metadata__".to_owned(), 1);
    for t in tensors.iter_mut() {
        let Some(n) = taken.get(&t.name).copied() else {
            taken.insert(t.name.clone(), 1);
            continue;
        };
        let mut k = n + 1;
        let name = loop {
            let candidate = format!("{}~{k}", t.name);
            if !taken.contains_key(&candidate) {
                break candidate;
            }
            k += 1;
        };
        taken.insert(t.name.clone(), k);
        taken.insert(name.clone(), 1);
        t.aliases.push(std::mem::replace(&mut t.name, name));
    }
}

/// Keeps each of `t`'s aliases once, in first-seen order, and none that
/// is its own name: the same bytes reach the file through several rows,
/// links and checkpoint keys.
fn distinct_aliases(t: &mut Tensor) {
    if t.aliases.is_empty() {
        return;
    }
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    seen.insert(t.name.clone());
    t.aliases.retain(|a| seen.insert(a.clone()));
}

/// The header and the segments of `tensors`, in order, back to back.
fn render(
    parts: &Parts,
    tensors: Vec<Tensor>,
    left_out: Vec<LeftOut>,
    untyped: &[&str],
    max_header: usize,
) -> Result<Plan, String> {
    let mut metadata: BTreeMap<&str, String> = BTreeMap::new();
    metadata.insert("format", "pt".to_owned());
    metadata.insert("ptefs.source", parts.source_name.clone());
    metadata.insert("ptefs.version", env!("CARGO_PKG_VERSION").to_owned());
    let paths: BTreeMap<&str, &[String]> = tensors
        .iter()
        .map(|t| (t.name.as_str(), &t.paths[..]))
        .collect();
    metadata.insert("ptefs.paths", json(&paths)?);
    let aliases: BTreeMap<&str, &[String]> = tensors
        .iter()
        .filter(|t| !t.aliases.is_empty())
        .map(|t| (t.name.as_str(), &t.aliases[..]))
        .collect();
    if !aliases.is_empty() {
        metadata.insert("ptefs.aliases", json(&aliases)?);
    }
    let orders: BTreeMap<&str, &[u8]> = tensors
        .iter()
        .filter_map(|t| Some((t.name.as_str(), t.dim_order.as_deref()?)))
        .collect();
    if !orders.is_empty() {
        metadata.insert("ptefs.dim_order", json(&orders)?);
    }
    metadata.insert("ptefs.left_out_count", left_out.len().to_string());
    metadata.insert("ptefs.left_out", json(&left_out)?);
    metadata.insert("ptefs.untyped_count", untyped.len().to_string());
    metadata.insert("ptefs.untyped", json(&untyped)?);
    metadata.insert("ptefs.missing_count", parts.missing.len().to_string());
    metadata.insert("ptefs.missing", json(&parts.missing)?);

    let mut segments = Vec::with_capacity(tensors.len());
    let mut offsets = Vec::with_capacity(tensors.len());
    let mut at = 0u64;
    for t in &tensors {
        offsets.push(at);
        if t.span.len > 0 {
            segments.push(Segment {
                start: at,
                offset: t.span.offset,
                len: t.span.len,
                source: t.source,
            });
        }
        at += t.span.len;
    }
    let mut header = vec![0u8; 8];
    serde_json::to_writer(
        &mut header,
        &Header {
            metadata: &metadata,
            tensors: &tensors,
            offsets: &offsets,
        },
    )
    .map_err(|e| e.to_string())?;
    // Spaces up to a multiple of 8, so the data section is aligned as
    // safetensors' own writer aligns it.
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let n = header.len() - 8;
    if n > max_header {
        return Err(format!(
            "its header would be {n} bytes, over safetensors' limit of {max_header}"
        ));
    }
    header[..8].copy_from_slice(&(n as u64).to_le_bytes());
    Ok(Plan {
        header: header.into(),
        segments: segments.into(),
        data_len: at,
    })
}

/// The shape as stored: the logical sizes in dim order.
fn storage_shape(sizes: &[i64], dim_order: Option<&[u8]>) -> Vec<u64> {
    let logical: Vec<u64> = sizes.iter().map(|&s| s.max(0) as u64).collect();
    match dim_order {
        Some(order) if order.len() == logical.len() => order
            .iter()
            .map(|&d| logical.get(d as usize).copied().unwrap_or(0))
            .collect(),
        _ => logical,
    }
}

/// The header's JSON, streamed rather than built as a value.
struct Header<'a> {
    metadata: &'a BTreeMap<&'a str, String>,
    tensors: &'a [Tensor],
    offsets: &'a [u64],
}

impl Serialize for Header<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.tensors.len() + 1))?;
        m.serialize_entry("__metadata__", self.metadata)?;
        for (t, &start) in self.tensors.iter().zip(self.offsets) {
            m.serialize_entry(&t.name, &Info { t, start })?;
        }
        m.end()
    }
}

/// One tensor's entry in the header.
struct Info<'a> {
    t: &'a Tensor,
    start: u64,
}

impl Serialize for Info<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Info", 3)?;
        st.serialize_field("dtype", &self.t.dtype)?;
        st.serialize_field("shape", &self.t.shape)?;
        st.serialize_field("data_offsets", &[self.start, self.start + self.t.span.len])?;
        st.end()
    }
}

/// `v` as JSON text, for one of `__metadata__`'s string values.
fn json(v: &impl Serialize) -> Result<String, String> {
    serde_json::to_string(v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Dtype, TensorMeta};

    fn float(sizes: &[i64]) -> TensorMeta {
        TensorMeta {
            dtype: Dtype::Scalar(ScalarType::FLOAT),
            sizes: sizes.into(),
            dim_order: None,
        }
    }

    /// `n` float tensors of 4 bytes each, back to back in source 0, keyed
    /// `k0`, `k1`, ...
    fn parts(n: u64) -> Parts {
        Parts {
            source_name: "m.ptd".to_owned(),
            tables: Vec::new(),
            stored: (0..n)
                .map(|i| Stored {
                    source: 0,
                    span: Span {
                        offset: 64 + 4 * i,
                        len: 4,
                    },
                    meta: 0,
                    key: Some(format!("k{i}")),
                    checkpoint: None,
                    path: format!("tensors/k{i}.bin"),
                    links: Vec::new(),
                })
                .collect(),
            untyped: Vec::new(),
            missing: Vec::new(),
            checkpoint: HashMap::new(),
        }
    }

    fn header_of(plan: &Plan) -> serde_json::Value {
        serde_json::from_slice(&plan.header[8..]).unwrap()
    }

    #[test]
    fn more_tensors_than_the_limit_is_an_error_naming_both_counts() {
        let metas = [float(&[1])];
        let limits = Limits {
            tensors: 3,
            header: MAX_HEADER,
        };
        let err = plan(&parts(4), &metas, limits).unwrap_err();
        assert_eq!(err, "4 tensors, more than safetensors' limit of 3");
        assert!(plan(&parts(3), &metas, limits).is_ok());
    }

    #[test]
    fn a_header_over_the_limit_is_an_error_and_one_at_it_is_not() {
        let metas = [float(&[1])];
        let at = |header| Limits {
            tensors: MAX_TENSORS,
            header,
        };
        let fits = plan(&parts(50), &metas, Limits::SAFETENSORS).unwrap();
        let n = fits.header.len() - 8;
        assert!(plan(&parts(50), &metas, at(n)).is_ok());
        let err = plan(&parts(50), &metas, at(n - 1)).unwrap_err();
        assert!(
            err.starts_with(&format!("its header would be {n} bytes, over")),
            "{err}"
        );
    }

    #[test]
    fn names_that_collide_get_a_suffix_and_keep_the_original_as_an_alias() {
        let mut p = parts(3);
        p.stored[1].key = Some("k0".to_owned());
        p.stored[2].key = Some("__metadata__".to_owned());
        let plan = plan(&p, &[float(&[1])], Limits::SAFETENSORS).unwrap();
        let h = header_of(&plan);
        let names: Vec<&String> = h.as_object().unwrap().keys().collect();
        assert_eq!(names, ["__metadata__", "__metadata__~2", "k0", "k0~2"]);
        let aliases: serde_json::Value =
            serde_json::from_str(h["__metadata__"]["ptefs.aliases"].as_str().unwrap()).unwrap();
        assert_eq!(aliases["k0~2"], serde_json::json!(["k0"]));
        assert_eq!(
            aliases["__metadata__~2"],
            serde_json::json!(["__metadata__"])
        );
    }

    #[test]
    fn aliases_name_each_other_name_of_the_bytes_once() {
        let mut p = parts(3);
        let span = p.stored[0].span;
        for s in &mut p.stored[1..] {
            s.span = span;
            s.key = Some("k1".to_owned());
        }
        let bytes = (0, span.offset, 4);
        let keys = vec!["ckpt.w".to_owned(), "k0".to_owned(), "ckpt.w".to_owned()];
        p.checkpoint.insert(bytes, keys);
        let plan = plan(&p, &[float(&[1])], Limits::SAFETENSORS).unwrap();
        let h = header_of(&plan);
        let aliases: serde_json::Value =
            serde_json::from_str(h["__metadata__"]["ptefs.aliases"].as_str().unwrap()).unwrap();
        assert_eq!(aliases, serde_json::json!({"k0": ["k1", "ckpt.w"]}));
    }

    #[test]
    fn each_tensor_starts_at_a_multiple_of_its_element_size_without_holes() {
        let scalar = |t, sizes: &[i64]| TensorMeta {
            dtype: Dtype::Scalar(t),
            sizes: sizes.into(),
            dim_order: None,
        };
        // a: 1 byte, b: 2 x f16, c: f64, d: 3 x f32, e: i64, in name order
        // each after the first would be misaligned.
        let metas = [
            scalar(ScalarType::BYTE, &[1]),
            scalar(ScalarType::HALF, &[2]),
            scalar(ScalarType::DOUBLE, &[1]),
            scalar(ScalarType::FLOAT, &[3]),
            scalar(ScalarType::LONG, &[1]),
        ];
        let lens = [1, 4, 8, 12, 8];
        let mut p = parts(5);
        let mut at = 64;
        for (i, s) in p.stored.iter_mut().enumerate() {
            s.meta = i as u32;
            s.key = Some(["a", "b", "c", "d", "e"][i].to_owned());
            s.span = Span {
                offset: at,
                len: lens[i],
            };
            at += lens[i];
        }
        let plan = plan(&p, &metas, Limits::SAFETENSORS).unwrap();
        assert!(plan.header.len().is_multiple_of(8));
        let h = header_of(&plan);
        let start = |k: &str| h[k]["data_offsets"][0].as_u64().unwrap();
        let order: Vec<(&str, u64)> = ["c", "e", "d", "b", "a"]
            .into_iter()
            .map(|k| (k, start(k)))
            .collect();
        assert_eq!(order, [("c", 0), ("e", 8), ("d", 16), ("b", 28), ("a", 32)]);
        assert_eq!(plan.data_len, 33);
    }

    #[test]
    fn zero_size_tensors_have_empty_ranges_and_no_segment() {
        let mut p = parts(3);
        p.stored[1].span = Span { offset: 68, len: 0 };
        p.stored[1].meta = 1;
        let plan = plan(&p, &[float(&[1]), float(&[0, 3])], Limits::SAFETENSORS).unwrap();
        let h = header_of(&plan);
        assert_eq!(h["k1"]["shape"], serde_json::json!([0, 3]));
        assert_eq!(h["k1"]["data_offsets"], serde_json::json!([4, 4]));
        assert_eq!(h["k2"]["data_offsets"], serde_json::json!([4, 8]));
        assert_eq!(plan.segments.len(), 2);
        assert_eq!(plan.data_len, 8);
    }

    #[test]
    fn bytes_that_are_not_the_elements_are_left_out_and_counted() {
        let mut p = parts(2);
        p.stored[1].meta = 1;
        let plan = plan(&p, &[float(&[1]), float(&[2])], Limits::SAFETENSORS).unwrap();
        let h = header_of(&plan);
        assert!(h.get("k1").is_none());
        assert_eq!(h["__metadata__"]["ptefs.left_out_count"], "1");
    }
}
