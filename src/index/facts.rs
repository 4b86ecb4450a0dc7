//! The rows of one file: what `inspect --json`, `check --json`, the
//! tree's `ops.yaml` and the report's stored ranges say of it, as rows of
//! the catalog's tables. Nothing is derived here that those do not say.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::listing::{self, Item};
use arrow_array::RecordBatch;

use super::schema::{Row, Stamp, TENSORS, V};
use crate::format::Parsed;
use crate::meta::oplist;
use crate::report::check::spec::RuntimeSpec;
use crate::report::check::{Limits, check_input};
use crate::report::inspect::{Extras, Inspection, inspect_input};
use crate::report::stored::{Stored, Subject};
use crate::report::summary::quantization::scheme;
use crate::source::Source;
use crate::view::{Opened, Request};

/// A runtime spec as given (`executorch-1.5.1+ops.yaml`), and what it
/// adds up to.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// As given.
    pub name: String,
    /// The specs it names, added up.
    pub spec: RuntimeSpec,
}

/// What to compute besides the facts every file gets.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// The runtimes each program is checked against, each alone.
    pub runtimes: Vec<Runtime>,
    /// The sha256 of each file and of each stored range.
    pub hash: bool,
}

/// The rows of one file, table by table.
#[derive(Debug, Default)]
pub struct Facts {
    /// Its one row of `files`.
    pub files: Vec<Row>,
    /// Its rows of `tensors`, as batches: a file may have a million,
    /// which as rows would take several times the memory.
    pub tensors: Vec<RecordBatch>,
    /// Its rows of `operators`.
    pub operators: Vec<Row>,
    /// Its rows of `delegates`.
    pub delegates: Vec<Row>,
    /// Its rows of `checks`.
    pub checks: Vec<Row>,
    /// True when the file could not be read: its row says why.
    pub failed: bool,
    /// Bytes read from it.
    pub bytes: u64,
}

impl Facts {
    /// The tables' rows, in the order of [`super::schema::TABLES`], but
    /// for `tensors` (see [`Facts::tensors`]).
    pub fn tables(&self) -> [&[Row]; 5] {
        [
            &self.files,
            &[],
            &self.operators,
            &self.delegates,
            &self.checks,
        ]
    }
}

/// The hex sha256 of `bytes`.
fn sha256(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The facts of `item`; a file that cannot be read is one `files` row
/// with its error.
pub fn of(item: &Item, wanted: &Wanted) -> Facts {
    match read(item, wanted) {
        Ok(f) => f,
        Err(error) => Facts {
            files: vec![error_row(item, &error)],
            failed: true,
            ..Facts::default()
        },
    }
}

/// Tensor rows turned into a batch at a time.
const TENSOR_BATCH: usize = 8192;

/// Where `fetched` goes in a `files` row (see [`super::schema::FILES`]).
const FETCHED_COLUMN: usize = 15;

/// The `files` row of a file that could not be read.
fn error_row(item: &Item, error: &str) -> Row {
    vec![
        item.source.as_str().into(),
        crate::source::base_name(std::path::Path::new(&item.source)).into(),
        V::Null,
        item.size.into(),
        item.mtime.map_or(V::Null, V::Time),
        item.etag.clone().into(),
        // identifier, version, methods, backends, data_files
        V::Null,
        V::Null,
        V::Null,
        V::Null,
        V::Null,
        // Nothing attached: the rows stand until the file changes.
        V::Stamps(Vec::new()),
        // tensors, tensor_bytes, sha256, fetched, warnings
        V::Null,
        V::Null,
        V::Null,
        V::Null,
        V::Null,
        error.into(),
    ]
}

fn read(item: &Item, wanted: &Wanted) -> Result<Facts, String> {
    let path = PathBuf::from(&item.source);
    // Only the data files beside it that it needs are attached: a
    // profile or ETRecord beside it is a file of the fleet in its own
    // right.
    let (data, _notes) = crate::auto_data::find(std::slice::from_ref(&path), &[]);
    let req = Request {
        inputs: vec![path],
        data,
        recursive: false,
        names: None,
        auto_data: false,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    };
    let mut opened = Opened::open(&req).map_err(|e| e.to_string())?;
    if wanted.hash {
        opened.fetch_whole().map_err(|e| e.to_string())?;
    }
    let inputs = match opened.parse() {
        Ok(i) => i,
        Err(e) => {
            // The runtime refuses some unreadable files with an error of
            // its own: that verdict is still a check row.
            let mut f = Facts {
                files: vec![error_row(item, &e.to_string())],
                failed: true,
                ..Facts::default()
            };
            for r in &wanted.runtimes {
                if let Ok(c) = crate::view::check::check(&opened, &r.spec, Limits::default()) {
                    f.checks.push(check_row(item, r, &c));
                }
            }
            return Ok(f);
        }
    };
    let input = inputs.shown.first().ok_or("nothing to index")?;
    let sources: Vec<&[u8]> = opened.sources.iter().map(Source::bytes).collect();
    let options = crate::tree::Options {
        one_dir_each: false,
        names: None,
        debug: &inputs.debug,
        profile: None,
        etrecord: None,
        reports: None,
        beside: &[],
    };
    let tree = crate::tree::build_with(&inputs.shown, &inputs.attached, &options);
    // Laying out `weights.safetensors` takes memory of its own while it
    // is made: it is made before the report's ranges are held.
    let weights = super::weights_names::of(&tree, crate::tree::ROOT);
    let extras = Extras {
        checkpoint: None,
        top: None,
        stats: false,
    };
    let inspection = inspect_input(input, &inputs.attached, &sources, extras, &mut |_| {});
    let subject = Subject {
        tree: &tree,
        dir: crate::tree::ROOT,
        sources: &sources,
    };
    let mut notes = Vec::new();
    let stored = crate::report::stored::collect(subject, &mut notes);
    let mut f = Facts::default();
    let own = &opened.sources[input.source];
    // The file holding a range: the source itself as listed, or the
    // path of a data file found beside it.
    let holder = |id: usize| {
        (id == input.source)
            .then(|| item.source.clone())
            .or_else(|| {
                // Spelled as the listing spells paths: a data file found
                // beside `m.pte` is `w.ptd`, not `./w.ptd`.
                let path = &opened.sources.get(id)?.path;
                let path = match path.strip_prefix("./") {
                    Ok(p) if !item.source.starts_with("./") => p,
                    _ => path,
                };
                Some(path.display().to_string())
            })
    };
    let stored = once_each(stored);
    let mut rows = Vec::with_capacity(TENSOR_BATCH.min(stored.len()));
    for s in &stored {
        let weights_name = weights.name(s.source, s.span, &s.path);
        rows.push(tensor_row(
            item,
            subject,
            s,
            (&holder, weights_name),
            wanted.hash,
        ));
        if rows.len() == TENSOR_BATCH {
            f.tensors
                .push(TENSORS.batch(&rows).map_err(|e| e.to_string())?);
            rows.clear();
        }
    }
    if !rows.is_empty() {
        f.tensors
            .push(TENSORS.batch(&rows).map_err(|e| e.to_string())?);
    }
    if let Some(p) = inspection.program.as_ref() {
        for d in &p.delegates {
            f.delegates.push(vec![
                item.source.as_str().into(),
                d.method.as_str().into(),
                d.index.into(),
                d.id.as_str().into(),
                d.bytes.into(),
                d.decoded.as_ref().map(|s| s.nodes).into(),
                ["version", "payload_version", "magic"]
                    .iter()
                    .find_map(|want| d.facts.iter().find(|(k, _)| k == want))
                    .map(|(_, v)| v.clone())
                    .into(),
                d.error.clone().into(),
            ]);
        }
    }
    if let Ok(program) = super::ops::program(&input.name, &input.parsed) {
        operator_rows(item, program, &inspection, &mut f.operators);
    }
    if matches!(
        input.parsed,
        Parsed::Program(_) | Parsed::Bundled(_) | Parsed::Package(_)
    ) {
        for r in &wanted.runtimes {
            if let Ok(c) = check_input(input, &inputs.attached, &r.spec, Limits::default()) {
                f.checks.push(check_row(item, r, &c));
            }
        }
    }
    // What was read must be what was listed: a file replaced meanwhile
    // is an error, not a mix of two files.
    for s in &opened.sources {
        s.check_unchanged().map_err(|e| e.to_string())?;
    }
    let fetched: u64 = opened.sources.iter().map(Source::fetched_bytes).sum();
    let mut stamps: Vec<Stamp> = (0..opened.sources.len())
        .filter(|&id| id != input.source)
        .filter_map(|id| listing::stamp(&holder(id)?))
        .collect();
    if let Parsed::Program(p) = &input.parsed
        && looks_beside(p)
    {
        // A data file appearing beside it, or leaving, changes its folder.
        let dir = match std::path::Path::new(&item.source).parent() {
            Some(d) if !d.as_os_str().is_empty() => d.display().to_string(),
            _ => ".".to_owned(),
        };
        stamps.extend(listing::stamp(&dir));
    }
    let facts = FileFacts {
        own,
        inspection: &inspection,
        inputs: &inputs,
        stored: &stored,
        stamps,
        warnings: tree.warnings.clone(),
    };
    let mut row = file_row(item, &facts, wanted.hash);
    row.insert(FETCHED_COLUMN, fetched.into());
    f.files.push(row);
    f.bytes = if own.is_remote() {
        fetched
    } else {
        own.opened.len
    };
    Ok(f)
}

fn check_row(item: &Item, r: &Runtime, c: &crate::report::check::Check) -> Row {
    vec![
        item.source.as_str().into(),
        r.name.as_str().into(),
        c.ok.into(),
        c.problems.len().into(),
        c.warnings.len().into(),
        serde_json::to_string(c).ok().into(),
    ]
}

/// True when `program` lacks data that it would look for in the data
/// files beside it (external tensors, named data of its delegates).
fn looks_beside(program: &crate::format::ProgramFile<'_>) -> bool {
    use crate::meta::external::{missing_keys, missing_named};
    let referenced = crate::delegate::referenced_named_keys(program);
    !missing_keys(program, &[]).is_empty()
        || !missing_named(program, &[], referenced.iter().map(|(k, _)| *k)).is_empty()
}

/// Each stored byte range once: ranges the tree gives at several paths
/// of their own (an empty constant and the empty tensor typing it) keep
/// their first typed row.
fn once_each(stored: Vec<Stored>) -> Vec<Stored> {
    let mut at: std::collections::HashMap<(usize, u64, u64), usize> =
        std::collections::HashMap::with_capacity(stored.len());
    let mut out: Vec<Stored> = Vec::with_capacity(stored.len());
    for s in stored {
        match at.entry((s.source, s.span.offset, s.span.len)) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let kept = &mut out[*e.get()];
                if !kept.is_tensor() && s.is_tensor() {
                    *kept = s;
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(out.len());
                out.push(s);
            }
        }
    }
    out
}

/// What a `files` row is made of.
struct FileFacts<'a, 'b> {
    own: &'a Source,
    inspection: &'a Inspection,
    inputs: &'a crate::view::Inputs<'b>,
    stored: &'a [Stored],
    stamps: Vec<Stamp>,
    warnings: Vec<String>,
}

fn file_row(item: &Item, facts: &FileFacts<'_, '_>, hash: bool) -> Row {
    let FileFacts {
        own,
        inspection,
        inputs,
        stored,
        ..
    } = facts;
    let program = inspection.program.as_ref();
    let methods: Option<Vec<String>> =
        program.map(|p| p.methods.iter().map(|m| m.name.clone()).collect());
    let backends: Option<Vec<String>> = program.map(|p| {
        let set: std::collections::BTreeSet<String> =
            p.delegates.iter().map(|d| d.id.clone()).collect();
        set.into_iter().collect()
    });
    let data_files: Vec<String> = inputs.attached.iter().map(|i| i.name.clone()).collect();
    let tensors = stored.iter().filter(|s| s.is_tensor());
    let mtime = listing::micros(own.opened.mtime());
    vec![
        item.source.as_str().into(),
        inspection.file.as_str().into(),
        inspection.kind.into(),
        inspection.file_size.into(),
        // A URL given alone is stamped by what its server said when read,
        // as a re-run's HEAD of it stamps it.
        if own.is_remote() {
            item.mtime.or(mtime)
        } else {
            mtime
        }
        .map_or(V::Null, V::Time),
        (item.etag.clone())
            .or_else(|| own.etag().map(str::to_owned))
            .into(),
        Some(inspection.identifier.as_str())
            .filter(|s| !s.is_empty())
            .into(),
        u64::from(inspection.version).into(),
        methods.into(),
        backends.into(),
        data_files.into(),
        V::Stamps(facts.stamps.clone()),
        tensors.clone().count().into(),
        tensors.map(|s| s.span.len).sum::<u64>().into(),
        hash.then(|| sha256(own.bytes())).into(),
        facts.warnings.clone().into(),
        V::Null,
    ]
}

/// The method a tree path is under (`methods/<m>/...`).
fn method_of(path: &str) -> Option<&str> {
    let mut parts = path.split('/');
    parts.find(|p| *p == "methods")?;
    parts.next()
}

fn tensor_row(
    item: &Item,
    subject: Subject<'_>,
    s: &Stored,
    (holder, weights_name): (&dyn Fn(usize) -> Option<String>, Option<&str>),
    hash: bool,
) -> Row {
    let dim_order = s.dim_order.as_deref().map(<[i64]>::to_vec).or_else(|| {
        s.sizes
            .as_ref()
            .map(|sz| (0..sz.len() as i64).collect::<Vec<_>>())
    });
    vec![
        item.source.as_str().into(),
        (*s.path).into(),
        s.delegate
            .as_ref()
            .map(|d| d.method.as_str())
            .or_else(|| method_of(&s.path))
            .into(),
        s.name.as_deref().into(),
        weights_name.into(),
        s.dtype.as_deref().into(),
        s.numpy
            .as_ref()
            .filter(|(_, raw_bits)| !raw_bits)
            .map(|(d, _)| &**d)
            .into(),
        s.sizes.as_ref().map_or(V::Null, |sz| V::I64s(sz.to_vec())),
        dim_order.map_or(V::Null, V::I64s),
        s.span.len.into(),
        holder(s.source).into(),
        s.span.offset.into(),
        (*s.store).into(),
        s.delegate.as_ref().map(|d| d.backend.as_str()).into(),
        s.is_tensor().then(|| scheme(s).0).into(),
        hash.then(|| sha256(subject.bytes(s.source, s.span))).into(),
    ]
}

/// The operators of each method: the program's own (its operator table,
/// uncalled ones with 0 calls, with the kernel keys of their calls), then
/// the nodes of each decoded delegate payload.
fn operator_rows(
    item: &Item,
    program: &crate::format::ProgramFile<'_>,
    inspection: &Inspection,
    out: &mut Vec<Row>,
) {
    for m in &program.methods {
        let method = m.name.show().into_owned();
        let keys = oplist::oplist([m.plan]).kernel_keys;
        let mut seen = std::collections::BTreeMap::<String, u64>::new();
        for c in oplist::calls(m.plan) {
            if c.delegate.is_none() && !c.name.is_empty() {
                *seen.entry(c.name).or_default() += c.calls;
            }
        }
        for (op, calls) in seen {
            let (name, overload) = op.split_once('.').unwrap_or((op.as_str(), ""));
            let k: Vec<String> = keys.get(&op).into_iter().flatten().cloned().collect();
            out.push(vec![
                item.source.as_str().into(),
                method.as_str().into(),
                op.as_str().into(),
                name.into(),
                overload.into(),
                calls.into(),
                k.into(),
                "kernel library".into(),
                V::Null,
            ]);
        }
    }
    let Some(p) = &inspection.program else {
        return;
    };
    for d in &p.delegates {
        let Some(decoded) = &d.decoded else { continue };
        for (op, n) in &decoded.ops {
            out.push(vec![
                item.source.as_str().into(),
                d.method.as_str().into(),
                op.as_str().into(),
                op.as_str().into(),
                "".into(),
                (*n).into(),
                Vec::<String>::new().into(),
                d.id.as_str().into(),
                d.index.into(),
            ]);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fetched_has_its_place_in_the_files_table() {
        let c = super::super::schema::FILES.columns;
        assert_eq!(c[super::FETCHED_COLUMN].name, "fetched");
    }

    #[test]
    fn an_error_row_fills_every_column_of_files() {
        let item = super::Item {
            source: "gone.pte".into(),
            size: None,
            mtime: None,
            etag: None,
            file: None,
        };
        let row = super::error_row(&item, "gone");
        assert_eq!(row.len(), super::super::schema::FILES.columns.len());
        assert!(super::super::schema::FILES.batch(&[row]).is_ok());
    }
}
