//! The `methods`, `instructions` and `delegates` sections.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use similar::TextDiff;

use crate::format::{MethodInfo, Parsed, ProgramFile};
use crate::meta::ops::instruction_counts;
use crate::tree::render::code_txt;

/// Two texts as a unified diff with three lines of context under the
/// header `a/<path>`, `b/<path>`; empty when they are equal. Past a
/// deadline the diff is coarser but still correct, so two very different
/// texts cannot make this take long.
pub(super) fn unified(a: &str, b: &str, path: &str) -> String {
    if a == b {
        return String::new();
    }
    TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// The methods of a file by name, with their operator calls by operator
/// (`aten::addmm`, overload left out, so that a package's
/// `torch.ops.aten.addmm.default` and a program's `aten::addmm.out` are
/// one operator): a program's, a bundled program's or a package's.
pub(super) fn operators(p: &Parsed<'_>) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let mut add = |method: String, calls: &mut dyn Iterator<Item = (&str, u64)>| {
        let ops: &mut BTreeMap<String, u64> = out.entry(method).or_default();
        for (op, n) in calls {
            *ops.entry(operator(op)).or_default() += n;
        }
    };
    match p {
        Parsed::Program(_) | Parsed::Bundled(_) => {
            let program = match p {
                Parsed::Program(p) => p,
                Parsed::Bundled(b) => &b.program,
                _ => return out,
            };
            for m in &program.methods {
                let counts = instruction_counts(m.plan);
                add(
                    m.name.to_string(),
                    &mut counts.iter().map(|(k, v)| (k.as_str(), *v)),
                );
            }
        }
        Parsed::Package(pkg) => {
            for m in pkg.summary().methods {
                let targets = m.counts.targets;
                add(m.name, &mut targets.iter().map(|(k, v)| (k.as_str(), *v)));
            }
        }
        Parsed::Data(_) | Parsed::Profile(_) | Parsed::EtRecord(_) => {}
    }
    out
}

/// An operator's name without namespace prefix or overload:
/// `torch.ops.aten.addmm.default` and `aten::addmm.out` are
/// `aten::addmm`; other instructions keep their name.
fn operator(name: &str) -> String {
    if let Some((ns, rest)) = name.split_once("::") {
        let op = rest.split('.').next().unwrap_or(rest);
        return format!("{ns}::{op}");
    }
    let parts: Vec<&str> = name
        .strip_prefix("torch.ops.")
        .unwrap_or(name)
        .split('.')
        .collect();
    match parts.as_slice() {
        [ns, op, _] | [ns, op] => format!("{ns}::{op}"),
        _ => name.to_owned(),
    }
}

/// Methods only in B, then only in A, by name.
pub(super) fn added_removed<T>(
    a: &BTreeMap<String, T>,
    b: &BTreeMap<String, T>,
) -> (Vec<String>, Vec<String>) {
    (
        b.keys().filter(|k| !a.contains_key(*k)).cloned().collect(),
        a.keys().filter(|k| !b.contains_key(*k)).cloned().collect(),
    )
}

/// How the operator calls of one method differ between a package and a
/// program (which have no instructions to diff line by line): calls per
/// operator whose count differs.
pub(super) fn operator_counts(
    a: &BTreeMap<String, u64>,
    b: &BTreeMap<String, u64>,
) -> Instructions {
    let ops: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let counts = ops
        .into_iter()
        .map(|op| {
            let n = |c: &BTreeMap<String, u64>| c.get(op).copied().unwrap_or(0);
            (op.clone(), (n(a), n(b)))
        })
        .filter(|(_, (x, y))| x != y)
        .collect();
    Instructions {
        unified: String::new(),
        counts,
    }
}

/// Methods in both, in name order.
pub(super) fn common<'p, 'a>(
    a: &'p ProgramFile<'a>,
    b: &'p ProgramFile<'a>,
) -> Vec<(String, &'p MethodInfo<'a>, &'p MethodInfo<'a>)> {
    let mut out: Vec<_> = a
        .methods
        .iter()
        .filter_map(|ma| {
            let mb = b.methods.iter().find(|mb| mb.name == ma.name)?;
            Some((ma.name.to_string(), ma, mb))
        })
        .collect();
    out.sort_by(|x, y| x.0.cmp(&y.0));
    out
}

/// How a method's instructions differ.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Instructions {
    /// `code.txt` of A against B as a unified diff with three lines of
    /// context; empty when they are the same.
    pub unified: String,
    /// Operators (and other instructions) whose count changed: (A, B).
    pub counts: BTreeMap<String, (u64, u64)>,
}

impl Instructions {
    /// True when anything differs.
    pub fn differs(&self) -> bool {
        !self.unified.is_empty() || !self.counts.is_empty()
    }
}

pub(super) fn instructions(a: &MethodInfo<'_>, b: &MethodInfo<'_>) -> Instructions {
    let (ta, tb) = (code_txt::render(a.plan), code_txt::render(b.plan));
    let unified = unified(&ta, &tb, &format!("methods/{}/code.txt", a.name));
    let (ca, cb) = (instruction_counts(a.plan), instruction_counts(b.plan));
    let ops: BTreeSet<&String> = ca.keys().chain(cb.keys()).collect();
    let counts = ops
        .into_iter()
        .map(|op| {
            let n = |c: &BTreeMap<String, u64>| c.get(op).copied().unwrap_or(0);
            (op.clone(), (n(&ca), n(&cb)))
        })
        .filter(|(_, (x, y))| x != y)
        .collect();
    Instructions { unified, counts }
}

/// How one delegate (by its index in the method) differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DelegateChange {
    /// Its index in the method.
    pub index: usize,
    /// Backend ids of A and B; one side is null when the delegate exists
    /// only on the other.
    pub backend: (Option<String>, Option<String>),
    /// Compile specs whose value differs (or exist on one side only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compile_specs: Vec<SpecChange>,
    /// Payload sizes of A and B, when the payloads differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<(u64, u64)>,
    /// Header fields of a vendor artifact that differ (as `inspect` names
    /// them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<SpecChange>,
    /// Each file of a vendor artifact (`engine.plan`, `context.bin`, …):
    /// its sizes in A and B and whether the bytes are equal.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactChange>,
    /// For a decoded payload (XNNPACK): its `xnnpack/code.txt`, one line
    /// per node, of A against B as a unified diff; empty when the nodes
    /// are the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
}

/// One file of a vendor artifact in A and B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArtifactChange {
    /// Its path in the backend's folder.
    pub name: String,
    /// Its size in A and in B (`None`: not there).
    pub size: (Option<u64>, Option<u64>),
    /// Whether the bytes are the same.
    pub equal: bool,
}

/// Header fields and artifact files of a vendor delegate: `None` for a
/// delegate whose backend states no header fields.
type Vendor<'a> = (BTreeMap<String, String>, BTreeMap<String, Option<&'a [u8]>>);

fn vendor<'a>(p: &ProgramFile<'a>, d: Option<&crate::format::Delegate<'a>>) -> Option<Vendor<'a>> {
    use crate::delegate::folder::File;
    let d = d?;
    let (id, span) = d.id.as_str().zip(d.processed)?;
    let payload = span.bytes(p.bytes);
    let named = crate::delegate::NamedData::of(p, &[]);
    let specs = crate::delegate::text_specs(&d.compile_specs);
    let decoded = crate::delegate::decode(id, payload, &specs, &named)?.ok()?;
    let facts: BTreeMap<String, String> = decoded.facts().into_iter().collect();
    if facts.is_empty() {
        return None;
    }
    let files = decoded
        .layout()
        .files
        .into_iter()
        .filter_map(|f| match f {
            File::Bytes { path, bytes } => Some((path, bytes.resolve(payload, &named))),
            _ => None,
        })
        .collect();
    Some((facts, files))
}

/// What differs between two vendor delegates' headers, and each artifact
/// file's sizes and equality.
fn vendor_changes(
    a: Option<Vendor<'_>>,
    b: Option<Vendor<'_>>,
) -> (Vec<SpecChange>, Vec<ArtifactChange>) {
    let (Some((fa, xa)), Some((fb, xb))) = (a, b) else {
        return (Vec::new(), Vec::new());
    };
    let keys: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    let header = keys
        .into_iter()
        .filter(|k| fa.get(*k) != fb.get(*k))
        .map(|k| SpecChange {
            key: k.clone(),
            a: fa.get(k).cloned(),
            b: fb.get(k).cloned(),
        })
        .collect();
    let names: BTreeSet<&String> = xa.keys().chain(xb.keys()).collect();
    let artifacts = names
        .into_iter()
        .map(|n| {
            let (ba, bb) = (xa.get(n).copied().flatten(), xb.get(n).copied().flatten());
            ArtifactChange {
                name: n.clone(),
                size: (ba.map(|x| x.len() as u64), bb.map(|x| x.len() as u64)),
                equal: ba.is_some() && ba == bb,
            }
        })
        .collect();
    (header, artifacts)
}

/// A compile spec whose value differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecChange {
    /// Its key.
    pub key: String,
    /// Its value in A (as text where it is UTF-8, else hex).
    pub a: Option<String>,
    /// Its value in B.
    pub b: Option<String>,
}

fn show(v: &[u8]) -> String {
    match std::str::from_utf8(v) {
        Ok(s) => s.to_owned(),
        Err(_) => v.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

fn payload<'a>(p: &ProgramFile<'a>, d: Option<&crate::format::Delegate<'_>>) -> Option<&'a [u8]> {
    d.map(|d| d.processed.map_or(&[][..], |s| s.bytes(p.bytes)))
}

pub(super) fn delegates(
    pa: &ProgramFile<'_>,
    a: &MethodInfo<'_>,
    pb: &ProgramFile<'_>,
    b: &MethodInfo<'_>,
) -> Vec<DelegateChange> {
    let n = a.delegates.len().max(b.delegates.len());
    (0..n)
        .filter_map(|i| {
            let (da, db) = (a.delegates.get(i), b.delegates.get(i));
            let id = |d: Option<&crate::format::Delegate<'_>>| d.map(|d| d.id.to_string());
            let specs = |d: Option<&crate::format::Delegate<'_>>| -> BTreeMap<String, String> {
                d.map(|d| {
                    d.compile_specs
                        .iter()
                        .map(|(k, v)| (k.to_string(), show(v)))
                        .collect()
                })
                .unwrap_or_default()
            };
            let (sa, sb) = (specs(da), specs(db));
            let keys: BTreeSet<&String> = sa.keys().chain(sb.keys()).collect();
            let compile_specs: Vec<SpecChange> = keys
                .into_iter()
                .filter(|k| sa.get(*k) != sb.get(*k))
                .map(|k| SpecChange {
                    key: k.clone(),
                    a: sa.get(k).cloned(),
                    b: sb.get(k).cloned(),
                })
                .collect();
            let (xa, xb) = (payload(pa, da), payload(pb, db));
            let payload = (xa != xb).then(|| {
                (
                    xa.map_or(0, |x| x.len() as u64),
                    xb.map_or(0, |x| x.len() as u64),
                )
            });
            let backend = (id(da), id(db));
            let (header, artifacts) = if backend.0 == backend.1 {
                vendor_changes(vendor(pa, da), vendor(pb, db))
            } else {
                (Vec::new(), Vec::new())
            };
            let changed = backend.0 != backend.1
                || !compile_specs.is_empty()
                || payload.is_some()
                || !header.is_empty()
                || artifacts.iter().any(|x| !x.equal);
            changed.then_some(DelegateChange {
                index: i,
                backend,
                compile_specs,
                payload,
                header,
                artifacts,
                nodes: None,
            })
        })
        .collect()
}
