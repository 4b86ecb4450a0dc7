//! What differs between two files, at the level a person thinks of a
//! model: methods, operator counts, tensors, named blobs and delegates.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::format::{DataFile, Parsed, ProgramFile, TensorData, scalar};
use crate::schema::ScalarType;
use crate::text::escape;

/// Everything that differs; empty when nothing does at this level.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// `program`, `data` or `bundled_program` of each side, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kinds: Option<(String, String)>,
    /// Methods only in B.
    pub methods_added: Vec<String>,
    /// Methods only in A.
    pub methods_removed: Vec<String>,
    /// Per method, operators whose call count changed: name → (A, B).
    pub operator_counts: BTreeMap<String, BTreeMap<String, (u64, u64)>>,
    /// Tensors only in B.
    pub tensors_added: Vec<TensorRef>,
    /// Tensors only in A.
    pub tensors_removed: Vec<TensorRef>,
    /// Tensors in both whose type, shape or bytes differ.
    pub tensors_changed: Vec<TensorChange>,
    /// Named blobs (program and data file named data) that differ, by key:
    /// `added`, `removed` or `changed`.
    pub named: BTreeMap<String, &'static str>,
    /// Delegate blobs that differ, by `method #index id`.
    pub delegates: BTreeMap<String, &'static str>,
}

impl Report {
    /// True when nothing differs at this level.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_none()
            && self.methods_added.is_empty()
            && self.methods_removed.is_empty()
            && self.operator_counts.is_empty()
            && self.tensors_added.is_empty()
            && self.tensors_removed.is_empty()
            && self.tensors_changed.is_empty()
            && self.named.is_empty()
            && self.delegates.is_empty()
    }
}

/// A tensor as the report names it.
#[derive(Debug, Clone, Serialize)]
pub struct TensorRef {
    /// Fully qualified name, or `method/value` for unnamed program tensors.
    pub name: String,
    /// Schema name of the element type.
    pub scalar_type: String,
    /// Logical sizes.
    pub sizes: Vec<i64>,
}

/// How a tensor present in both files differs.
#[derive(Debug, Serialize)]
pub struct TensorChange {
    /// The tensor's name.
    pub name: String,
    /// Element types of A and B, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retyped: Option<(String, String)>,
    /// Sizes of A and B, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reshaped: Option<(Vec<i64>, Vec<i64>)>,
    /// Elements that differ, when type and shape agree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differing_elements: Option<u64>,
    /// Elements in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elements: Option<u64>,
    /// Float tensors: the largest |a - b| over pairs of finite numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_abs_diff: Option<f64>,
    /// Float tensors: the largest |a - b| / |b| over pairs of finite
    /// numbers where b != 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rel_diff: Option<f64>,
    /// Float tensors: NaN elements in A.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nan_a: Option<u64>,
    /// Float tensors: NaN elements in B.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nan_b: Option<u64>,
    /// Float tensors: differing pairs where either side is NaN or an
    /// infinity (left out of the maxima).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonfinite_differences: Option<u64>,
}

/// A tensor with its bytes, from either kind of file.
struct Tensor<'a> {
    scalar_type: ScalarType,
    sizes: Vec<i64>,
    bytes: Option<&'a [u8]>,
}

/// A parsed file and the data files attached to it.
pub struct Side<'p, 'a> {
    /// The file.
    pub parsed: &'p Parsed<'a>,
    /// Data files that supply its external tensors.
    pub data: &'p [&'p DataFile<'a>],
}

/// Compares two files.
pub fn compare(a: &Side<'_, '_>, b: &Side<'_, '_>) -> Report {
    let mut r = Report::default();
    let (ka, kb) = (kind(a.parsed), kind(b.parsed));
    if ka != kb {
        r.kinds = Some((ka.to_owned(), kb.to_owned()));
    }
    if let (Some(pa), Some(pb)) = (program(a.parsed), program(b.parsed)) {
        methods(pa, pb, &mut r);
        blobs(&delegate_blobs(pa), &delegate_blobs(pb), &mut r.delegates);
    }
    tensors(&tensors_of(a), &tensors_of(b), &mut r);
    blobs(&named_blobs(a.parsed), &named_blobs(b.parsed), &mut r.named);
    r
}

fn kind(p: &Parsed<'_>) -> &'static str {
    match p {
        Parsed::Program(_) => "program",
        Parsed::Data(_) => "data",
        Parsed::Bundled(_) => "bundled_program",
    }
}

fn program<'p, 'a>(p: &'p Parsed<'a>) -> Option<&'p ProgramFile<'a>> {
    match p {
        Parsed::Program(p) => Some(p),
        Parsed::Bundled(b) => Some(&b.program),
        Parsed::Data(_) => None,
    }
}

fn methods(a: &ProgramFile<'_>, b: &ProgramFile<'_>, r: &mut Report) {
    let names = |p: &ProgramFile<'_>| {
        p.methods
            .iter()
            .map(|m| m.name.to_owned())
            .collect::<BTreeSet<_>>()
    };
    let (na, nb) = (names(a), names(b));
    r.methods_added = nb.difference(&na).cloned().collect();
    r.methods_removed = na.difference(&nb).cloned().collect();
    for m in na.intersection(&nb) {
        let (ca, cb) = (operator_counts(a, m), operator_counts(b, m));
        let ops: BTreeSet<&String> = ca.keys().chain(cb.keys()).collect();
        let changed: BTreeMap<String, (u64, u64)> = ops
            .into_iter()
            .map(|op| {
                (
                    op.clone(),
                    (
                        ca.get(op).copied().unwrap_or(0),
                        cb.get(op).copied().unwrap_or(0),
                    ),
                )
            })
            .filter(|(_, (x, y))| x != y)
            .collect();
        if !changed.is_empty() {
            r.operator_counts.insert(m.clone(), changed);
        }
    }
}

/// Instructions per operator (and per other kind) in method `name`.
fn operator_counts(p: &ProgramFile<'_>, name: &str) -> BTreeMap<String, u64> {
    p.methods
        .iter()
        .find(|m| m.name == name)
        .map(|m| crate::meta::ops::instruction_counts(m.plan))
        .unwrap_or_default()
}

/// Every tensor by its name: the fully qualified name where the file has
/// one, else `method/value`.
fn tensors_of<'a>(side: &Side<'_, 'a>) -> BTreeMap<String, Tensor<'a>> {
    let mut out = BTreeMap::new();
    match side.parsed {
        Parsed::Data(d) => {
            for e in &d.entries {
                if let Some(l) = &e.layout {
                    let t = Tensor {
                        scalar_type: l.scalar_type,
                        sizes: l.sizes.clone(),
                        bytes: Some(e.span.bytes(d.bytes)),
                    };
                    out.entry(e.key.to_owned()).or_insert(t);
                }
            }
        }
        other => {
            let Some(p) = program(other) else { return out };
            for m in &p.methods {
                for t in &m.tensors {
                    let bytes = match &t.data {
                        TensorData::External { key } => {
                            crate::meta::external::find(side.data.iter().copied(), key).and_then(
                                |(i, e)| e.span.bytes(side.data[i].bytes).get(..t.nbytes as usize),
                            )
                        }
                        other => other.span().map(|s| s.bytes(p.bytes)),
                    };
                    let name = t
                        .fqn
                        .map_or_else(|| format!("{}/{}", m.name, t.value_index), str::to_owned);
                    out.entry(name).or_insert(Tensor {
                        scalar_type: t.scalar_type,
                        sizes: t.sizes.clone(),
                        bytes,
                    });
                }
            }
        }
    }
    out
}

fn tensors(a: &BTreeMap<String, Tensor<'_>>, b: &BTreeMap<String, Tensor<'_>>, r: &mut Report) {
    let describe = |name: &String, t: &Tensor<'_>| TensorRef {
        name: name.clone(),
        scalar_type: scalar::name(t.scalar_type),
        sizes: t.sizes.clone(),
    };
    r.tensors_added = b
        .iter()
        .filter(|(k, _)| !a.contains_key(*k))
        .map(|(k, t)| describe(k, t))
        .collect();
    r.tensors_removed = a
        .iter()
        .filter(|(k, _)| !b.contains_key(*k))
        .map(|(k, t)| describe(k, t))
        .collect();
    for (name, ta) in a {
        let Some(tb) = b.get(name) else { continue };
        let mut c = TensorChange {
            name: name.clone(),
            retyped: None,
            reshaped: None,
            differing_elements: None,
            elements: None,
            max_abs_diff: None,
            max_rel_diff: None,
            nan_a: None,
            nan_b: None,
            nonfinite_differences: None,
        };
        if ta.scalar_type != tb.scalar_type {
            c.retyped = Some((scalar::name(ta.scalar_type), scalar::name(tb.scalar_type)));
        }
        if ta.sizes != tb.sizes {
            c.reshaped = Some((ta.sizes.clone(), tb.sizes.clone()));
        }
        if c.retyped.is_none() && c.reshaped.is_none() {
            match (ta.bytes, tb.bytes) {
                (Some(x), Some(y)) if x != y => values(ta.scalar_type, x, y, &mut c),
                _ => continue,
            }
        }
        r.tensors_changed.push(c);
    }
}

/// Fills in how the elements of two same-typed, same-shaped tensors differ.
/// For floats, NaN equals NaN and an infinity equals itself; a pair where
/// either side is NaN or infinite and the two differ is counted apart and
/// left out of the maxima, which cover pairs of finite numbers.
fn values(t: ScalarType, a: &[u8], b: &[u8], c: &mut TensorChange) {
    let size = scalar::element_size(t).unwrap_or(1).max(1) as usize;
    let pairs = || a.chunks_exact(size).zip(b.chunks_exact(size));
    c.elements = Some(pairs().count() as u64);
    let Some(decode) = float_decoder(t) else {
        c.differing_elements = Some(pairs().filter(|(x, y)| x != y).count() as u64);
        return;
    };
    let (mut differing, mut nan_a, mut nan_b, mut nonfinite) = (0, 0, 0, 0);
    let (mut abs, mut rel): (Option<f64>, Option<f64>) = (None, None);
    for (x, y) in pairs() {
        let (x, y) = (decode(x), decode(y));
        nan_a += u64::from(x.is_nan());
        nan_b += u64::from(y.is_nan());
        if x == y || (x.is_nan() && y.is_nan()) {
            continue;
        }
        differing += 1;
        if !x.is_finite() || !y.is_finite() {
            nonfinite += 1;
            continue;
        }
        let d = (x - y).abs();
        abs = Some(abs.map_or(d, |m| m.max(d)));
        if y != 0.0 {
            let r = d / y.abs();
            rel = Some(rel.map_or(r, |m| m.max(r)));
        }
    }
    c.differing_elements = Some(differing);
    c.max_abs_diff = abs;
    c.max_rel_diff = rel;
    c.nan_a = Some(nan_a);
    c.nan_b = Some(nan_b);
    c.nonfinite_differences = Some(nonfinite);
}

type Decode = fn(&[u8]) -> f64;

fn float_decoder(t: ScalarType) -> Option<Decode> {
    Some(match t {
        ScalarType::FLOAT => |b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        ScalarType::DOUBLE => {
            |b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        }
        ScalarType::HALF => |b| f16_to_f64(u16::from_le_bytes([b[0], b[1]])),
        ScalarType::BFLOAT16 => |b| {
            f64::from(f32::from_bits(
                u32::from(u16::from_le_bytes([b[0], b[1]])) << 16,
            ))
        },
        _ => return None,
    })
}

/// IEEE 754 half precision to double.
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

fn named_blobs<'a>(p: &Parsed<'a>) -> BTreeMap<String, &'a [u8]> {
    match p {
        Parsed::Data(d) => d
            .entries
            .iter()
            .filter(|e| e.layout.is_none())
            .map(|e| (e.key.to_owned(), e.span.bytes(d.bytes)))
            .collect(),
        other => program(other)
            .map(|p| {
                p.named
                    .iter()
                    .map(|n| (n.key.to_owned(), n.span.bytes(p.bytes)))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn delegate_blobs<'a>(p: &ProgramFile<'a>) -> BTreeMap<String, &'a [u8]> {
    p.methods
        .iter()
        .flat_map(|m| {
            m.delegates.iter().map(move |d| {
                (
                    format!("{} #{} {}", m.name, d.index, d.id),
                    d.processed.bytes(p.bytes),
                )
            })
        })
        .collect()
}

fn blobs(
    a: &BTreeMap<String, &[u8]>,
    b: &BTreeMap<String, &[u8]>,
    out: &mut BTreeMap<String, &'static str>,
) {
    for (k, x) in a {
        match b.get(k) {
            None => {
                out.insert(k.clone(), "removed");
            }
            Some(y) if x != y => {
                out.insert(k.clone(), "changed");
            }
            Some(_) => {}
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        out.insert(k.clone(), "added");
    }
}

/// The report as lines a person reads.
pub fn text(r: &Report) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let shape = |t: &TensorRef| format!("{} {:?}", t.scalar_type, t.sizes);
    if let Some((a, b)) = &r.kinds {
        let _ = writeln!(o, "kind: {a} -> {b}");
    }
    for m in &r.methods_added {
        let _ = writeln!(o, "method added: {}", escape(m));
    }
    for m in &r.methods_removed {
        let _ = writeln!(o, "method removed: {}", escape(m));
    }
    for (m, ops) in &r.operator_counts {
        for (op, (a, b)) in ops {
            let _ = writeln!(o, "method {}: {} calls {a} -> {b}", escape(m), escape(op));
        }
    }
    for t in &r.tensors_added {
        let _ = writeln!(o, "tensor added: {} ({})", escape(&t.name), shape(t));
    }
    for t in &r.tensors_removed {
        let _ = writeln!(o, "tensor removed: {} ({})", escape(&t.name), shape(t));
    }
    for c in &r.tensors_changed {
        if let Some((a, b)) = &c.retyped {
            let _ = writeln!(o, "tensor retyped: {} {a} -> {b}", escape(&c.name));
        }
        if let Some((a, b)) = &c.reshaped {
            let _ = writeln!(o, "tensor reshaped: {} {a:?} -> {b:?}", escape(&c.name));
        }
        if let (Some(d), Some(n)) = (c.differing_elements, c.elements) {
            let mut line = format!(
                "tensor changed: {} ({d} of {n} elements differ",
                escape(&c.name)
            );
            if let Some(abs) = c.max_abs_diff {
                let _ = write!(line, "; max abs diff {abs:.6e}");
                if let Some(rel) = c.max_rel_diff {
                    let _ = write!(line, ", max rel diff {rel:.6e}");
                }
            }
            if let (Some(na), Some(nb)) = (c.nan_a, c.nan_b)
                && na + nb > 0
            {
                let _ = write!(line, "; NaN: {na} in A, {nb} in B");
            }
            if let Some(k) = c.nonfinite_differences.filter(|&k| k > 0) {
                let _ = write!(line, "; {k} differences involve NaN or infinity");
            }
            let _ = writeln!(o, "{line})");
        }
    }
    for (k, what) in &r.named {
        let _ = writeln!(o, "named blob {what}: {}", escape(k));
    }
    for (k, what) in &r.delegates {
        let _ = writeln!(o, "delegate blob {what}: {}", escape(k));
    }
    o
}
