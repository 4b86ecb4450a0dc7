//! `inspect`: what a file holds and what makes it big, as one typed value.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::Share;
use super::composition::move_bytes;
use crate::format::{DataFile, Parsed};

mod build;
pub mod check;
mod etrecord;
mod package;
mod profile;
mod text;

/// Everything `ptefs inspect` reports about one file.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    /// The file's name.
    pub file: String,
    /// `program`, `data` or `bundled_program`.
    pub kind: &'static str,
    /// The file identifier (bytes 4..8): `ET12`, `FT01`, `BP08`.
    pub identifier: String,
    /// The root table's version field.
    pub version: u32,
    /// Bytes.
    pub file_size: u64,
    /// A bundled program's own facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<Bundle>,
    /// The program (a `.pte`, or the one a bundle embeds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<Program>,
    /// A data file's contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Data>,
    /// What share of the file each kind of content takes.
    pub composition: Vec<Share>,
    /// A native program package's members, methods and tensors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<crate::format::package::PackageSummary>,
    /// How many keys of a `--names` checkpoint the file holds, and which
    /// it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<crate::meta::checkpoint::MatchReport>,
    /// An ETDump's runs, events and slowest instructions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::ProfileSummary>,
    /// The largest tensors and blobs, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest: Option<Vec<Largest>>,
    /// Each tensor's statistics, when asked for (`--stats`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Vec<crate::report::stats::TensorStats>>,
    /// An ETRecord's programs, tensors and maps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etrecord: Option<etrecord::EtRecordSummary>,
}

/// `report` with the profile `profile` joined with `program` (shown as
/// `program_name`): for `inspect run.etdp --program model.pte` and
/// `inspect model.pte --profile run.etdp`. Errors when `program` is no
/// program or `profile` no ETDump.
pub fn join_profile(
    report: &mut Inspection,
    program_name: &str,
    program: &Parsed<'_>,
    profile: &Parsed<'_>,
) -> Result<(), String> {
    let program = match program {
        Parsed::Program(p) => p,
        Parsed::Bundled(b) => &b.program,
        _ => return Err(format!("{program_name}: is not a program (.pte or .bpte)")),
    };
    let Parsed::Profile(profile) = profile else {
        return Err("the profile is not an ETDump (.etdp)".to_owned());
    };
    let mut s = match report.profile.take() {
        Some(s) => s,
        None => profile::summary(profile),
    };
    profile::join_program(&mut s, program_name, program, profile);
    report.profile = Some(s);
    Ok(())
}

/// One of the largest tensors or blobs of a file.
#[derive(Debug, Clone, Serialize)]
pub struct Largest {
    /// Its path in the tree, as `ptefs ls -R` prints it.
    pub path: String,
    /// Its other paths (the same bytes seen elsewhere in the tree).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Element type, for tensors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scalar_type: Option<String>,
    /// Logical sizes, for tensors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<i64>>,
    /// The file holding its bytes.
    pub source: String,
    /// Bytes.
    pub bytes: u64,
    /// Its fraction of that file.
    pub share: f64,
}

/// What `inspect` adds, when asked, to the summary of a file.
#[derive(Debug, Default, Clone, Copy)]
pub struct Extras<'c> {
    /// Count which of its keys name a tensor (`--names`).
    pub checkpoint: Option<&'c crate::meta::checkpoint::Checkpoint>,
    /// List the N largest entries, each byte range once (`--top N`).
    pub top: Option<usize>,
    /// Each tensor's statistics (`--stats`).
    pub stats: bool,
}

/// `inspect` of `input` with the files attached to it (`sources`: each
/// source's bytes, by source id), and what `extras` ask for;
/// `stage` hears the name of each step as it starts. The command and the
/// Python module both make their reports here.
pub fn inspect_input(
    input: &crate::tree::Input<'_>,
    attached: &[crate::tree::Input<'_>],
    sources: &[&[u8]],
    extras: Extras<'_>,
    stage: &mut dyn FnMut(&str),
) -> Inspection {
    stage("summarizing");
    let data: Vec<&DataFile<'_>> = attached
        .iter()
        .filter_map(|i| match &i.parsed {
            Parsed::Data(d) => Some(d),
            _ => None,
        })
        .collect();
    let mut report = inspect(&input.name, &input.parsed, &data);
    if extras.checkpoint.is_none() && extras.top.is_none() && !extras.stats {
        return report;
    }
    // One tree serves every extra; with a checkpoint its keys name the
    // tensors the largest list and the statistics show.
    stage("building the tree");
    let tree = crate::tree::build_with_names(
        std::slice::from_ref(input),
        attached,
        false,
        extras.checkpoint,
    );
    if let Some(checkpoint) = extras.checkpoint {
        report.checkpoint = Some(checkpoint_matches(&tree, checkpoint));
    }
    if let Some(n) = extras.top {
        let sizes: Vec<u64> = sources.iter().map(|s| s.len() as u64).collect();
        report.largest = Some(largest(&tree, n, &sizes));
    }
    if extras.stats {
        stage("computing statistics");
        report.stats = Some(crate::report::stats::of(crate::report::stored::Subject {
            tree: &tree,
            dir: crate::tree::ROOT,
            sources,
        }));
    }
    report
}

/// Which keys of `checkpoint` name a file in `tree` (under `by-name/`,
/// where the tree shows each matched key by its encoded file name).
pub fn checkpoint_matches(
    tree: &crate::tree::Tree,
    checkpoint: &crate::meta::checkpoint::Checkpoint,
) -> crate::meta::checkpoint::MatchReport {
    let unmatched: Vec<String> = checkpoint
        .keys
        .keys()
        .filter(|k| {
            let name = crate::tree::file_names::by_name(k);
            tree.resolve(&format!("by-name/{name}")).is_none()
        })
        .cloned()
        .collect();
    crate::meta::checkpoint::MatchReport {
        keys: checkpoint.keys.len(),
        matched: checkpoint.keys.len() - unmatched.len(),
        unmatched,
    }
}

/// The `n` largest tensors and blobs of `tree`, whose sources have
/// `source_sizes` bytes: every file that is a byte range of a source, each
/// range once whatever its names, segments and package members left out as
/// the containers they are.
pub fn largest(tree: &crate::tree::Tree, n: usize, source_sizes: &[u64]) -> Vec<Largest> {
    use std::collections::BTreeMap;

    use crate::tree::{Content, ROOT};
    let mut by_ino: BTreeMap<u64, Vec<(usize, String)>> = BTreeMap::new();
    for (path, ino) in tree.walk(ROOT) {
        let Some(f) = tree.file(ino) else {
            continue;
        };
        if let Content::Source { source, .. } = *f.content
            && !path.split('/').any(|c| c == "segments" || c == "members")
        {
            by_ino.entry(ino).or_default().push((source, path));
        }
    }
    let mut all: Vec<Largest> = by_ino
        .into_iter()
        .map(|(ino, mut paths)| {
            // The file's first name leads; the others follow in tree order.
            let first = tree.path(ino);
            paths.sort_by_key(|(_, p)| *p != first);
            let source = paths.first().map_or(0, |(s, _)| *s);
            let file_size = source_sizes.get(source).copied().unwrap_or(0);
            let meta = tree.tensor_meta(ino);
            let bytes = tree.file(ino).map_or(0, |f| f.content.len());
            let mut paths = paths.into_iter().map(|(_, p)| p);
            Largest {
                path: paths.next().unwrap_or_default(),
                aliases: paths.collect(),
                source: tree.source_name(source).to_owned(),
                scalar_type: meta.map(|m| m.dtype.name()),
                sizes: meta.map(|m| m.sizes.to_vec()),
                bytes,
                share: super::composition::share(bytes, file_size),
            }
        })
        .collect();
    all.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
    all.truncate(n);
    all
}

/// What a bundled program adds around its program.
#[derive(Debug, Clone, Serialize)]
pub struct Bundle {
    /// Where the embedded program lies in the bundle.
    pub embedded_program: Location,
    /// Test cases per method.
    pub test_suites: Vec<Suite>,
}

/// A byte range of the file.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Location {
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
}

/// A method's test cases in a bundle.
#[derive(Debug, Clone, Serialize)]
pub struct Suite {
    /// The method tested.
    pub method: String,
    /// How many cases.
    pub cases: usize,
}

/// A program's contents.
#[derive(Debug, Clone, Serialize)]
pub struct Program {
    /// `ET12` and the like.
    pub identifier: String,
    /// `Program.version`.
    pub version: u32,
    /// Each method, in file order.
    pub methods: Vec<Method>,
    /// Tensors with stored bytes, by element type.
    pub tensors: Vec<DtypeCount>,
    /// All segments.
    pub segments: Count,
    /// `Program.named_data` blobs.
    pub named_data: Count,
    /// Every delegate of every method.
    pub delegates: Vec<Delegate>,
}

/// One method.
#[derive(Debug, Clone, Serialize)]
pub struct Method {
    /// Its name.
    pub name: String,
    /// `ExecutionPlan.values` entries.
    pub values: usize,
    /// Instructions over all chains.
    pub instructions: u64,
    /// Entries of the operator table.
    pub operators: usize,
    /// How often each operator (or other instruction) occurs.
    pub calls: BTreeMap<String, u64>,
    /// Tensors with stored bytes.
    pub tensors: usize,
    /// Their bytes.
    pub tensor_bytes: u64,
    /// Of them, stored in a data file.
    pub external_tensors: usize,
    /// Of those, in no attached data file.
    pub external_missing: usize,
    /// Delegates.
    pub delegates: usize,
}

/// Tensors of one element type.
#[derive(Debug, Clone, Serialize)]
pub struct DtypeCount {
    /// The schema's name for the type (`FLOAT`).
    pub scalar_type: String,
    /// How many tensors.
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// How many of something, and their bytes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Count {
    /// How many.
    pub count: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// One delegate.
#[derive(Debug, Clone, Serialize)]
pub struct Delegate {
    /// The method holding it.
    pub method: String,
    /// Its index in the method.
    pub index: usize,
    /// The backend id.
    pub id: String,
    /// Bytes of its processed blob.
    pub bytes: u64,
    /// What its payload holds, for backends ptefs decodes: node counts per
    /// operator and constant bytes per datatype.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoded: Option<crate::delegate::Summary>,
    /// Why its payload could not be decoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Key header fields of a vendor artifact, and what is wrong with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<(String, String)>,
}

/// A data file's contents.
#[derive(Debug, Clone, Serialize)]
pub struct Data {
    /// Named entries.
    pub named_data: usize,
    /// Entries with a tensor layout, by element type.
    pub tensors: Vec<DtypeCount>,
    /// Entries without one (delegate weights and the like).
    pub opaque_blobs: Count,
    /// Segments.
    pub segments: Count,
}

/// Inspects `parsed` (shown as `name`); `attached` are the data files
/// that may hold its external tensors.
/// Fills in what each delegate's payload holds, for the backends the
/// `delegate` decoders know (their weights may be in `attached`).
/// Returns the bytes of decoded weights that lie inside the payloads
/// themselves (not in named data), for the composition.
fn decode_delegates(
    program: &mut Program,
    p: &crate::format::ProgramFile<'_>,
    attached: &[&DataFile<'_>],
) -> u64 {
    let named = crate::delegate::NamedData::of(p, attached);
    let mut in_payloads = 0;
    for d in crate::delegate::decode_program(p, &named) {
        let method = d.method.to_string();
        let Some(entry) = program
            .delegates
            .iter_mut()
            .find(|x| x.method == method && x.index == d.index)
        else {
            continue;
        };
        match d.decoded {
            Some(Ok(decoded)) => {
                in_payloads += payload_weight_bytes(&decoded.weights(), entry.bytes);
                entry.facts = decoded.facts();
                for e in decoded.layout().errors {
                    entry.facts.push(("problem".to_owned(), e));
                }
                entry.decoded = Some(decoded.summary());
            }
            Some(Err(e)) => entry.error = Some(e.to_string()),
            None => {}
        }
    }
    in_payloads
}

pub fn inspect(name: &str, parsed: &Parsed<'_>, attached: &[&DataFile<'_>]) -> Inspection {
    let keys: HashSet<crate::format::Name<'_>> = attached
        .iter()
        .flat_map(|d| d.entries.iter().map(|e| e.key))
        .collect();
    match parsed {
        Parsed::Program(p) => {
            let (mut program, mut composition) = build::program(p, 0, &keys);
            let weights = decode_delegates(&mut program, p, attached);
            let size = p.bytes.len() as u64;
            move_bytes(
                &mut composition,
                "delegate blobs",
                "delegate weights",
                weights,
                size,
            );
            Inspection {
                file: name.to_owned(),
                kind: "program",
                identifier: program.identifier.clone(),
                version: program.version,
                file_size: p.bytes.len() as u64,
                bundle: None,
                program: Some(program),
                data: None,
                composition,
                package: None,
                checkpoint: None,
                profile: None,
                largest: None,
                stats: None,
                etrecord: None,
            }
        }
        Parsed::Data(d) => build::data(name, d),
        Parsed::Bundled(b) => {
            let mut r = build::bundled(name, b, &keys);
            if let Some(program) = &mut r.program {
                let weights = decode_delegates(program, &b.program, attached);
                let size = r.file_size;
                move_bytes(
                    &mut r.composition,
                    "delegate blobs",
                    "delegate weights",
                    weights,
                    size,
                );
            }
            r
        }
        Parsed::Package(p) => package::package(name, p),
        Parsed::Profile(p) => profile::inspection(name, p),
        Parsed::EtRecord(r) => etrecord::inspection(name, r),
    }
}

/// The bytes of `weights` inside their payload (of `len` bytes), each
/// byte once however many weights share it.
fn payload_weight_bytes(
    weights: &[(
        crate::delegate::WeightName,
        Option<crate::delegate::Bytes<'_>>,
    )],
    len: u64,
) -> u64 {
    let mut spans: Vec<(u64, u64)> = weights
        .iter()
        .filter_map(|(_, b)| match b {
            Some(crate::delegate::Bytes::Payload(s)) => Some((s.offset.min(len), s.end().min(len))),
            _ => None,
        })
        .collect();
    spans.sort_unstable();
    let (mut total, mut reached) = (0, 0);
    for (start, end) in spans {
        let start = start.max(reached);
        if end > start {
            total += end - start;
            reached = end;
        }
    }
    total
}
