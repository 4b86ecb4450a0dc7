//! `diff`: what differs between two files, section by section, as one
//! typed value; text, `--stat` and JSON are renderings of it.
//!
//! Sections, in order: `file` (sizes, identifiers, versions, header fields,
//! counts), `methods` (added and removed), then for each method on both
//! sides `io` (inputs and outputs), `instructions` (code.txt as a unified
//! diff, operator counts), `memory` (planned buffers and placements),
//! `delegates` (backends, compile specs, payloads) and `tensors` (with the
//! operators using each changed one); last, program-wide data (named blobs,
//! data-file entries) under `tensors`.

mod directories;
pub mod etrecord;
mod file;
mod methods;
mod plan;
pub mod profile;
mod tensors;
mod text;
pub mod values;

use std::collections::BTreeMap;

use serde::Serialize;

pub use directories::{Directories, Pairing};
pub use file::FieldChange;
pub use methods::{ArtifactChange, DelegateChange, Instructions, SpecChange};
pub use plan::PlanChange;
pub use tensors::{BytesChange, Changed, Moved, Ref, Side, Tensors};
pub use values::{At, Elements, Figure, Tolerance};

use crate::format::{Parsed, ProgramFile};

/// A section of the report, by the name `--only` and JSON use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Section {
    /// Sizes, identifiers, versions, header fields, counts.
    File,
    /// Methods added or removed.
    Methods,
    /// Each method's inputs and outputs.
    Io,
    /// Each method's instructions and operator counts.
    Instructions,
    /// Each method's memory plan.
    Memory,
    /// Each method's delegates.
    Delegates,
    /// Each method's tensors, and program-wide data.
    Tensors,
}

/// What to compare and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only these sections (all when empty).
    pub only: Vec<Section>,
    /// When elements count as equal.
    pub tolerance: Tolerance,
}

impl Options {
    fn wants(&self, s: Section) -> bool {
        self.only.is_empty() || self.only.contains(&s)
    }
}

/// Everything that differs between two files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The first file, as named.
    pub a: String,
    /// The second file, as named.
    pub b: String,
    /// Whether anything in the selected sections differs.
    pub differ: bool,
    /// `file`: fields that differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<Vec<FieldChange>>,
    /// `methods`: added and removed, and each common method's sections.
    pub methods: Methods,
    /// Program-wide data: named blobs and data-file entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensors: Option<Tensors>,
}

/// Methods of the two files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Methods {
    /// Only in B.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<Vec<String>>,
    /// Only in A.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<Vec<String>>,
    /// Each method in both, by name.
    pub common: BTreeMap<String, Method>,
}

/// The sections of one method in both files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Method {
    /// `io`: inputs and outputs whose type, sizes, dim order, dynamism or
    /// planning differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<Vec<PlanChange>>,
    /// `instructions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Instructions>,
    /// `memory`: planned buffer sizes and value placements that differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Vec<PlanChange>>,
    /// `delegates`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegates: Option<Vec<DelegateChange>>,
    /// `tensors`: the method's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensors: Option<Tensors>,
}

impl Method {
    fn differs(&self) -> bool {
        self.io.as_ref().is_some_and(|c| !c.is_empty())
            || self.memory.as_ref().is_some_and(|c| !c.is_empty())
            || self
                .instructions
                .as_ref()
                .is_some_and(Instructions::differs)
            || self.delegates.as_ref().is_some_and(|d| !d.is_empty())
            || self.tensors.as_ref().is_some_and(|t| t.changes() > 0)
    }
}

fn program<'p, 'a>(p: &'p Parsed<'a>) -> Option<&'p ProgramFile<'a>> {
    match p {
        Parsed::Program(p) => Some(p),
        Parsed::Bundled(b) => Some(&b.program),
        Parsed::Data(_) | Parsed::Package(_) | Parsed::Profile(_) | Parsed::EtRecord(_) => None,
    }
}

/// The path and text of the `code.txt` in the backend folder
/// (`xnnpack/`, `coreml/`, ...) of delegate `index` of method `method` in
/// `tree`, where its payload was decoded.
fn delegate_code(tree: &crate::tree::Tree, method: &str, index: usize) -> Option<(String, String)> {
    use crate::tree::Content;
    let dir = tree.resolve(&format!(
        "methods/{}/delegates",
        crate::tree::file_names::encode(method)
    ))?;
    let one = tree.entries(dir)?.nth(index)?.ino;
    let folder = crate::delegate::backends()
        .iter()
        .find_map(|b| tree.lookup(one, b.folder().as_bytes()))?;
    let code = tree.lookup(folder, b"code.txt")?;
    let text = match &*tree.file(code)?.content {
        Content::Generated(b) => String::from_utf8_lossy(b).into_owned(),
        Content::Lazy(l) => String::from_utf8_lossy(&l.rendered()).into_owned(),
        _ => return None,
    };
    Some((tree.path(code), text))
}

/// Items grouped by method (`None`: program-wide).
fn by_method(items: Vec<tensors::Item<'_>>) -> BTreeMap<Option<String>, Vec<tensors::Item<'_>>> {
    let mut per: BTreeMap<Option<String>, Vec<_>> = BTreeMap::new();
    for t in items {
        per.entry(t.method.clone()).or_default().push(t);
    }
    per
}

/// Compares the first shown input of each side (`(shown, attached)`),
/// building both trees, with a checkpoint's names where given; `stage`
/// hears the name of each step as it starts. `None` when a side shows
/// nothing. The command and the Python module both compare here.
pub fn compare_inputs(
    a: (&[crate::tree::Input<'_>], &[crate::tree::Input<'_>]),
    b: (&[crate::tree::Input<'_>], &[crate::tree::Input<'_>]),
    names: (&str, &str),
    opt: &Options,
    checkpoint: Option<&crate::meta::checkpoint::Checkpoint>,
    stage: &mut dyn FnMut(&str),
) -> Option<Report> {
    let (xa, xb) = (a.0.first()?, b.0.first()?);
    stage("building the trees");
    let ta = crate::tree::build_with_names(a.0, a.1, false, checkpoint);
    let tb = crate::tree::build_with_names(b.0, b.1, false, checkpoint);
    stage("comparing metadata and tensor bytes");
    let side = |input, attached, tree| Side {
        input,
        attached,
        tree,
    };
    Some(compare(
        &side(xa, a.1, &ta),
        &side(xb, b.1, &tb),
        names,
        opt,
    ))
}

/// Compares side `a` with side `b` (the reference, for relative
/// differences and tolerances).
pub fn compare(a: &Side<'_, '_>, b: &Side<'_, '_>, names: (&str, &str), opt: &Options) -> Report {
    let mut r = Report {
        a: names.0.to_owned(),
        b: names.1.to_owned(),
        ..Report::default()
    };
    if opt.wants(Section::File) {
        r.file = Some(file::compare(&a.input.parsed, &b.input.parsed));
    }
    let (pa, pb) = (program(&a.input.parsed), program(&b.input.parsed));
    let (oa, ob) = (
        methods::operators(&a.input.parsed),
        methods::operators(&b.input.parsed),
    );
    if opt.wants(Section::Methods) {
        let (added, removed) = methods::added_removed(&oa, &ob);
        r.methods.added = Some(added);
        r.methods.removed = Some(removed);
    }
    // A package against a program: methods of one name are the same
    // method, compared by their operator calls.
    if pa.is_none() != pb.is_none() && opt.wants(Section::Instructions) {
        for (name, x) in &oa {
            if let Some(y) = ob.get(name) {
                let m = Method {
                    instructions: Some(methods::operator_counts(x, y)),
                    ..Method::default()
                };
                r.methods.common.insert(name.clone(), m);
            }
        }
    }
    let (mut ia, mut ib) = (tensors::items(a), tensors::items(b));
    // A package keeps its tensors at its root: against one, a program's
    // tensors are compared as program-wide data too, by name then bytes.
    let package = |s: &Side<'_, '_>| matches!(s.input.parsed, Parsed::Package(_));
    if package(a) || package(b) {
        for t in ia.iter_mut().chain(ib.iter_mut()) {
            t.method = None;
        }
    }
    let (mut ta, mut tb) = (by_method(ia), by_method(ib));
    if let (Some(pa), Some(pb)) = (pa, pb) {
        for (name, ma, mb) in methods::common(pa, pb) {
            let mut m = Method::default();
            if opt.wants(Section::Io) {
                m.io = Some(plan::io(ma.plan, mb.plan));
            }
            if opt.wants(Section::Instructions) {
                m.instructions = Some(methods::instructions(ma, mb));
            }
            if opt.wants(Section::Memory) {
                m.memory = Some(plan::memory(ma.plan, mb.plan));
            }
            if opt.wants(Section::Delegates) {
                let mut d = methods::delegates(pa, ma, pb, mb);
                for c in &mut d {
                    let (x, y) = (
                        delegate_code(a.tree, &name, c.index),
                        delegate_code(b.tree, &name, c.index),
                    );
                    if let (Some((path, x)), Some((_, y))) = (x, y) {
                        c.nodes = Some(methods::unified(&x, &y, &path));
                    }
                }
                m.delegates = Some(d);
            }
            if opt.wants(Section::Tensors) {
                let key = Some(name.clone());
                let (x, y) = (
                    ta.remove(&key).unwrap_or_default(),
                    tb.remove(&key).unwrap_or_default(),
                );
                let mut t = tensors::pair(x, y, opt.tolerance);
                let users = crate::meta::users::users(ma.plan);
                for c in &mut t.changed {
                    if let Some(v) = c.a.value_index {
                        c.used_by = users.of(v).iter().map(|u| users.label(u)).collect();
                    }
                }
                m.tensors = Some(t);
            }
            r.methods.common.insert(name, m);
        }
    }
    if opt.wants(Section::Tensors) {
        // Program-wide data. (Tensors of a method on one side only go with
        // that method, which `methods` reports.)
        let (x, y) = (
            ta.remove(&None).unwrap_or_default(),
            tb.remove(&None).unwrap_or_default(),
        );
        r.tensors = Some(tensors::pair(x, y, opt.tolerance));
    }
    r.differ = r.file.as_ref().is_some_and(|f| !f.is_empty())
        || r.methods.added.as_ref().is_some_and(|v| !v.is_empty())
        || r.methods.removed.as_ref().is_some_and(|v| !v.is_empty())
        || r.methods.common.values().any(Method::differs)
        || r.tensors.as_ref().is_some_and(|t| t.changes() > 0);
    r
}
