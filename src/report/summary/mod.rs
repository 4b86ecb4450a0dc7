//! `ptefs report`: where a file's bytes go, what runs where and what the
//! weights look like, as one typed value ([`Report`]). The terminal text,
//! the `--json` document, the HTML page and the tree's `report/` files are
//! renderings of it.
//!
//! The report is computed from the tree ([`crate::tree::Tree`]) and the
//! parsed files: the tree already decides what each stored byte range is
//! called (constants, named data, delegate weights, `.ptn` keys, `--names`
//! keys), which ranges are the same file (one inode, several names), and
//! what type and shape each tensor has; the `index.json` beside each
//! tensor says its fully qualified name, key, users and quantization. So
//! the report names things exactly as the tree does, and a layout change
//! shows up in both.
//!
//! The tree's own `report/` files need this computation, but the tree may
//! not import reports (reports read trees). The tree therefore takes the
//! report as a renderer it is handed
//! ([`crate::tree::report_files::ReportMaker`]); [`tree_files`] is that
//! renderer, and the view, which may use both, passes it in. Imports stay
//! acyclic: report → tree, view → report → tree.

pub mod coverage;
mod duplicates;
mod files;
mod layers;
mod memory;
pub mod quantization;
mod size;
pub mod text;

use serde::Serialize;

use crate::format::{DataFile, Parsed};

pub use crate::report::stats::TensorStats;
pub use crate::report::stored::{Name, Subject};
pub use coverage::{DelegateCoverage, MethodCoverage, OpCalls};
pub use duplicates::{Copy, Duplicate};
pub use files::{FILES, remote_tree_files, render_file, tree_files};
pub use layers::Layer;
pub use memory::{Lifetime, MethodMemory, PlannedBuffer};
pub use quantization::{Quantization, WeightQuant};
pub use size::{BackendRow, DtypeRow, SizeNode};

/// Everything `ptefs report` says about a file (and the data files
/// attached to it).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The file reported on (the first, for several).
    pub file: String,
    /// Bytes of every file reported on, attached data files included.
    pub total_bytes: u64,
    /// Each file and its bytes.
    pub files: Vec<FileSize>,
    /// Where the bytes go: file → store (segments, named data, delegates)
    /// → layer → tensor, each node's bytes the sum of its children's.
    pub size: SizeNode,
    /// Stored tensors by element type.
    pub by_dtype: Vec<DtypeRow>,
    /// Stored tensors by module path (layer).
    pub by_layer: Vec<Layer>,
    /// Delegates by backend.
    pub by_backend: Vec<BackendRow>,
    /// Equal bytes stored more than once.
    pub duplicates: Vec<Duplicate>,
    /// Per method, what runs on kernels and what inside delegates.
    pub coverage: Vec<MethodCoverage>,
    /// How the weights are stored: dtype, scheme, bits, compression.
    pub quantization: Quantization,
    /// Per tensor: min, max, mean, std, zeros, NaN, Inf and a histogram.
    pub stats: Vec<TensorStats>,
    /// Per method: planned buffers and the lifetimes of planned values.
    pub memory: Vec<MethodMemory>,
    /// Per program: would it load and run on the default runtime
    /// (`ptefs check`'s result).
    pub checks: Vec<crate::report::check::Check>,
    /// Things the report could not work out, one sentence each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One file reported on.
#[derive(Debug, Clone, Serialize)]
pub struct FileSize {
    /// Its name in the tree.
    pub name: String,
    /// Bytes.
    pub bytes: u64,
}

/// Each of `subject`'s files, parsed, by source order: what
/// [`summarize`] takes beside the tree, for callers that no longer hold
/// the parsed files the tree was built from.
pub fn parse_sources<'a>(subject: Subject<'a>) -> Vec<(String, Parsed<'a>)> {
    subject
        .sources
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.is_empty())
        .filter_map(|(id, b)| {
            let name = subject.tree.source_name(id);
            (!name.is_empty())
                .then(|| crate::format::parse(b).ok().map(|p| (name.to_owned(), p)))
                .flatten()
        })
        .collect()
}

/// Computes the report of `subject`, whose files, parsed, are `parsed`
/// (by source order; see [`parse_sources`]).
pub fn summarize(subject: Subject<'_>, parsed: &[(&str, &Parsed<'_>)]) -> Report {
    let mut notes = Vec::new();
    let collected = crate::report::stored::collect(subject, &mut notes);
    let data: Vec<&DataFile<'_>> = parsed
        .iter()
        .filter_map(|(_, p)| match p {
            Parsed::Data(d) => Some(d),
            _ => None,
        })
        .collect();
    let files: Vec<FileSize> = parsed
        .iter()
        .map(|(name, p)| FileSize {
            name: (*name).to_owned(),
            bytes: file_len(p),
        })
        .collect();
    let total_bytes = files.iter().map(|f| f.bytes).sum();
    let inspections: Vec<crate::report::inspect::Inspection> = parsed
        .iter()
        .filter(|(_, p)| matches!(p, Parsed::Program(_) | Parsed::Bundled(_)))
        .map(|(name, p)| crate::report::inspect::inspect(name, p, &data))
        .collect();
    let coverage = coverage::coverage(&inspections);
    let memory = parsed
        .iter()
        .flat_map(|(name, p)| memory::memory(name, p))
        .collect();
    let checks = checks(parsed, &data);
    let stats = crate::report::stats::compute(subject, &collected);
    let quantization = quantization::summarize(&collected, &coverage);
    Report {
        file: files.first().map(|f| f.name.clone()).unwrap_or_default(),
        total_bytes,
        size: size::tree(subject, &collected, &files),
        by_dtype: size::by_dtype(&collected),
        by_layer: layers::by_layer(&collected),
        by_backend: size::by_backend(&inspections, &collected),
        duplicates: duplicates::find(subject, &collected),
        files,
        coverage,
        quantization,
        stats,
        memory,
        checks,
        notes,
    }
}

/// `ptefs check` of each program (`.pte`, `.bpte`, `.ptn`) against the
/// default runtime, with every data file reported on attached.
fn checks(
    parsed: &[(&str, &Parsed<'_>)],
    data: &[&DataFile<'_>],
) -> Vec<crate::report::check::Check> {
    use crate::report::check::{Limits, check_parsed, spec};
    let Some(runtime) = spec::RuntimeSpec::builtin(spec::DEFAULT) else {
        return Vec::new();
    };
    let data_names: Vec<String> = parsed
        .iter()
        .filter(|(_, p)| matches!(p, Parsed::Data(_)))
        .map(|(n, _)| (*n).to_owned())
        .collect();
    parsed
        .iter()
        .filter_map(|(name, p)| {
            check_parsed(name, p, data, &data_names, &runtime, Limits::default()).ok()
        })
        .collect()
}

/// The bytes of a parsed file.
fn file_len(p: &Parsed<'_>) -> u64 {
    let b = match p {
        Parsed::Program(p) => p.bytes,
        Parsed::Data(d) => d.bytes,
        Parsed::Bundled(b) => b.bytes,
        Parsed::Package(p) => p.bytes,
        Parsed::Profile(p) => p.bytes,
        Parsed::EtRecord(r) => r.bytes,
    };
    b.len() as u64
}

/// `part / whole`, rounded to four places.
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64 * 10_000.0).round() / 10_000.0
    }
}
