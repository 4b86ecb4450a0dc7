//! Every stored tensor of a tree, once: each file the tree types as a
//! tensor (program constants, external tensors, `.ptd` entries, `.ptn`
//! keys, decoded delegate weights, test-set inputs, debug outputs, and a
//! data file's untyped blobs), with
//! where its bytes lie in its source and the entry the tree's `index.json`
//! beside it gives it (names, users, checkpoint names), as the mount shows
//! them. The same bytes at several paths (hard links) are one tensor.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use ptefs::fs::Fs;
use ptefs::tree::{Content, Ino, ROOT};

/// One stored tensor.
#[derive(Serialize)]
struct Tensor {
    /// The path that names it: its file in the nearest `index.json` that
    /// lists it, else its first `.bin` name.
    path: String,
    /// Its inode: the same for each of its paths.
    ino: Ino,
    /// Every path of the same file (aliases, `values/<id>`, constants).
    links: Vec<String>,
    /// Its `.npy` twin, where NumPy can describe it.
    npy: Option<String>,
    /// The element type in the vocabulary of what stores it (`FLOAT`,
    /// `xnn_datatype_qint8`); `null` for a data file's untyped blob.
    dtype: Option<String>,
    /// Logical sizes; `null` for an untyped blob.
    shape: Option<Vec<i64>>,
    /// Bytes stored.
    nbytes: u64,
    /// The source file's name as the tree shows it.
    source: String,
    /// The byte offset in that file.
    offset: u64,
    /// The `index.json` entry, or `null`.
    entry: Value,
}

/// The tensors of `fs`'s tree as a JSON array, by path.
pub fn list(fs: &Fs) -> Result<String, serde_json::Error> {
    let tree = &fs.view().tree;
    // Every file's names, in walk order, and the index files.
    let mut names: HashMap<Ino, Vec<String>> = HashMap::new();
    let mut order: Vec<Ino> = Vec::new();
    let mut indexes: Vec<(String, Ino)> = Vec::new();
    let mut npys: HashMap<String, Ino> = HashMap::new();
    for (path, ino) in fs.walk(ROOT) {
        if tree.is_dir(ino) {
            continue;
        }
        if path == "index.json" || path.ends_with("/index.json") {
            indexes.push((path, ino));
            continue;
        }
        if path.ends_with(".npy") {
            npys.insert(path, ino);
            continue;
        }
        let seen = names.entry(ino).or_default();
        if seen.is_empty() {
            order.push(ino);
        }
        seen.push(path);
    }
    // The entries of the index files that name a file; an entry that
    // types it (`numpy_dtype`: a tensor's, not a constant buffer's or a
    // blob's) wins over one that only names it. A data file's untyped
    // entries (named blobs in `tensors/`) are stored tensors too.
    let mut entries: HashMap<Ino, (String, Value)> = HashMap::new();
    for (path, ino) in indexes {
        let Ok(bytes) = fs.read_copy(ino, 0, u64::MAX) else {
            continue;
        };
        let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        let dir = path.strip_suffix("index.json").unwrap_or("");
        let data_file = dir == "tensors/" || dir.ends_with("/tensors/");
        // A quantized weight's entry holds its scales' entry.
        let nested: Vec<Value> = items
            .iter()
            .filter_map(|i| i.get("scales").filter(|s| s.get("name").is_some()).cloned())
            .collect();
        for item in items.into_iter().chain(nested) {
            let Some(name) = item.get("name").and_then(Value::as_str) else {
                continue;
            };
            let file = format!("{dir}{name}");
            let Ok(file_ino) = fs.resolve(&file) else {
                continue;
            };
            let typed = |e: &Value| e.get("numpy_dtype").is_some();
            let wanted =
                tree.tensor_meta(file_ino).is_some() || (data_file && item.get("key").is_some());
            if !wanted || !names.contains_key(&file_ino) {
                continue;
            }
            let better = match entries.get(&file_ino) {
                None => true,
                Some((_, e)) => typed(&item) && !typed(e),
            };
            if better {
                entries.insert(file_ino, (file, item));
            }
        }
    }
    let mut out = Vec::with_capacity(entries.len());
    for ino in order {
        let meta = tree.tensor_meta(ino);
        if meta.is_none() && !entries.contains_key(&ino) {
            continue;
        }
        let Some(file) = tree.file(ino) else {
            continue;
        };
        let (source, span) = match &*file.content {
            Content::Source { source, span }
            | Content::Prefixed { source, span, .. }
            | Content::Widened { source, span, .. } => (*source, *span),
            Content::Generated(_) | Content::Lazy(_) | Content::Assembled(_) => continue,
        };
        let links = names.remove(&ino).unwrap_or_default();
        let (path, entry) = match entries.remove(&ino) {
            Some((p, e)) => (p, e),
            None => {
                let first = links
                    .iter()
                    .find(|p| p.ends_with(".bin"))
                    .or(links.first())
                    .cloned()
                    .unwrap_or_default();
                (first, Value::Null)
            }
        };
        let npy = twin(&path, &entry).filter(|n| npys.contains_key(n));
        out.push(Tensor {
            path,
            ino,
            links,
            npy,
            dtype: meta.map(|m| m.dtype.name()),
            shape: meta.map(|m| m.sizes.to_vec()),
            nbytes: span.len,
            source: tree.source_name(source).to_owned(),
            offset: span.offset,
            entry,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    serde_json::to_string(&out)
}

/// The `.npy` path beside `path`: the entry's `npy` name, else the same
/// stem.
fn twin(path: &str, entry: &Value) -> Option<String> {
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let join = |n: &str| {
        if dir.is_empty() {
            n.to_owned()
        } else {
            format!("{dir}/{n}")
        }
    };
    match entry.get("npy") {
        Some(Value::String(n)) => Some(join(n)),
        Some(Value::Null) => None,
        _ => path.strip_suffix(".bin").map(|s| format!("{s}.npy")),
    }
}
