//! Edits from a safetensors file, by name: each tensor of the file that
//! names a tensor of the tree's `weights.safetensors` (by its name, an
//! alias or a tree path, with or without `.bin`) replaces that tensor's
//! stored bytes where they differ (`ptefs set --from`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{Edit, EditError, Result};
use crate::tree::weights::FILE_NAME;
use crate::tree::{Content, Ino, SourceId, Tree};

/// What a safetensors file changes in a tree.
#[derive(Debug, Default)]
pub struct FromWeights {
    /// The edits, each with the source it writes.
    pub edits: Vec<(SourceId, Edit)>,
    /// Tensors of the file whose bytes equal the stored ones.
    pub unchanged: usize,
}

/// One tensor's entry in a safetensors header.
#[derive(Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: [u64; 2],
}

/// The edits that make the tensors of the tree at `root` (a program's or
/// data file's) hold those of the safetensors file `given` (read from
/// `path`), matched by name with the tree's `weights.safetensors`.
/// `stored` gives the current bytes of a source range.
pub fn edits(
    tree: &Tree,
    root: Ino,
    (path, given): (&Path, &[u8]),
    stored: impl Fn(SourceId, crate::format::Span) -> Option<Vec<u8>>,
) -> Result<FromWeights> {
    let shown = crate::source::redact::shown(path);
    let mismatch = |why: String| EditError::Mismatch {
        path: shown.to_string(),
        why,
    };
    let ours = tree
        .resolve_from(root, FILE_NAME)
        .and_then(|ino| tree.file(ino))
        .ok_or_else(|| {
            mismatch(format!(
                "the tree has no {FILE_NAME} to match its names with"
            ))
        })?;
    let Content::Assembled(assembly) = &*ours.content else {
        return Err(mismatch(format!("the tree's {FILE_NAME} is not assembled")));
    };
    if let Some(why) = assembly.error() {
        return Err(mismatch(why));
    }
    let header = assembly.header();
    let entries: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(header.get(8..).unwrap_or_default())
            .map_err(|e| mismatch(format!("the tree's {FILE_NAME} header: {e}")))?;
    let theirs = safetensors::SafeTensors::deserialize(given)
        .map_err(|e| mismatch(format!("not a safetensors file: {e}")))?;
    let aliases = alias_targets(&entries);
    // Without `--names` a checkpoint's keys name nothing of the tree.
    let hint = if tree.resolve_from(root, "by-name").is_none() {
        format!(
            "; if {shown} is the checkpoint the file was exported from, `--names {shown}` matches its keys"
        )
    } else {
        String::new()
    };
    let mut out = FromWeights::default();
    let mut names: Vec<&str> = theirs.names();
    names.sort();
    // The name of the file each tensor of the tree is given under, with
    // its bytes: two names of the same bytes must agree.
    let mut given_as: BTreeMap<&str, (String, &[u8])> = BTreeMap::new();
    for name in names {
        let name = name.to_owned();
        let view = theirs
            .tensor(&name)
            .map_err(|e| mismatch(format!("{name}: {e}")))?;
        let target: &str = match entries.get_key_value(&name) {
            Some((k, _)) if name != "__metadata__" => k,
            _ => aliases.get(name.as_str()).copied().ok_or_else(|| {
                mismatch(format!(
                    "{name}: names no tensor of the tree's {FILE_NAME}, nor is one of their aliases or tree paths (its __metadata__ lists them: `ptefs cat FILE {FILE_NAME}`){hint}"
                ))
            })?,
        };
        if let Some((first, bytes)) = given_as.get(target) {
            if *bytes != view.data() {
                return Err(mismatch(format!(
                    "{first} and {name} name the same stored bytes ({target}) but hold different values"
                )));
            }
            continue;
        }
        given_as.insert(target, (name.clone(), view.data()));
        let entry: Entry = entries
            .get(target)
            .and_then(|v| Entry::deserialize(v).ok())
            .ok_or_else(|| {
                mismatch(format!(
                    "{name}: the tree's {FILE_NAME} has no entry {target}"
                ))
            })?;
        let dtype = view.dtype().to_string();
        let shape: Vec<u64> = view.shape().iter().map(|&d| d as u64).collect();
        if dtype != entry.dtype || shape != entry.shape {
            return Err(mismatch(format!(
                "{name}: is {dtype} {shape:?}, but the tensor it names is {} {:?}",
                entry.dtype, entry.shape
            )));
        }
        let [start, end] = entry.data_offsets;
        if start == end {
            out.unchanged += 1;
            continue;
        }
        let (source, span) = assembly.locate(start, end - start).ok_or_else(|| {
            mismatch(format!(
                "{name}: its bytes are not one stored range of the tree"
            ))
        })?;
        let bytes = view.data();
        if stored(source, span).as_deref() == Some(bytes) {
            out.unchanged += 1;
            continue;
        }
        out.edits.push((
            source,
            Edit {
                offset: span.offset,
                bytes: bytes.to_vec(),
                path: format!("{FILE_NAME}:{name}"),
            },
        ));
    }
    Ok(out)
}

/// Every other name a tensor of the header is known by, with the tensor
/// it names: its aliases (`ptefs.aliases`), its tree paths
/// (`ptefs.paths`), and each of these and its own name without `.bin`. A
/// tensor's own name wins over another's alias, an alias over a path,
/// and a whole name over one without its `.bin`.
fn alias_targets(entries: &BTreeMap<String, serde_json::Value>) -> BTreeMap<String, &str> {
    let listed = |key: &str| -> BTreeMap<String, Vec<String>> {
        entries
            .get("__metadata__")
            .and_then(|m| m.get(key))
            .and_then(serde_json::Value::as_str)
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    };
    let mut out: BTreeMap<String, &str> = BTreeMap::new();
    let mut stems: Vec<(String, &str)> = Vec::new();
    for names in [listed("ptefs.aliases"), listed("ptefs.paths")] {
        for (target, names) in &names {
            let Some((target, _)) = entries.get_key_value(target) else {
                continue;
            };
            for a in names {
                if !entries.contains_key(a) {
                    out.entry(a.clone()).or_insert(target.as_str());
                }
                if let Some(stem) = a.strip_suffix(".bin") {
                    stems.push((stem.to_owned(), target));
                }
            }
        }
    }
    for target in entries.keys() {
        if let Some(stem) = target.strip_suffix(".bin") {
            stems.push((stem.to_owned(), target));
        }
    }
    for (stem, target) in stems {
        if !entries.contains_key(&stem) {
            out.entry(stem).or_insert(target);
        }
    }
    out
}
