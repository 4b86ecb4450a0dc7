//! The name each stored byte range has in its tree's
//! `weights.safetensors`, so that the catalog's `tensors` rows join with
//! that file's tensors: the file names a tensor by its key or fully
//! qualified name, the catalog by the best name the report knows
//! (a delegate weight's `forward/0-XnnpackBackend/033-fully_connected.filter`).
//!
//! The names are read back from the file's own header rather than made
//! again, so they are the file's whatever rule it names them by.

use std::collections::HashMap;

use serde::Deserialize;

use crate::format::Span;
use crate::tree::weights::FILE_NAME;
use crate::tree::{Content, Ino, SourceId, Tree};

/// The names of `weights.safetensors` of one tree, by what they hold.
#[derive(Debug, Default)]
pub struct WeightsNames {
    /// Tensors with bytes, by the range they hold.
    by_range: HashMap<(SourceId, u64, u64), String>,
    /// Empty tensors, which hold no range, by their tree paths.
    by_path: HashMap<String, String>,
}

/// One header entry: a tensor's place in the data section, or (for
/// `__metadata__`) the tree paths of each tensor.
#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    data_offsets: Option<[u64; 2]>,
    #[serde(default, rename = "ptefs.paths")]
    paths: Option<String>,
}

impl WeightsNames {
    /// The name in `weights.safetensors` of the tensor holding `span` of
    /// `source` (or, when empty, at `path`); `None` when the file leaves
    /// it out.
    pub fn name(&self, source: SourceId, span: Span, path: &str) -> Option<&str> {
        if span.len > 0 {
            self.by_range.get(&(source, span.offset, span.len))
        } else {
            self.by_path.get(path)
        }
        .map(String::as_str)
    }
}

/// The names of the `weights.safetensors` at the root `root` of `tree`;
/// none when there is no such file or it cannot be assembled.
pub fn of(tree: &Tree, root: Ino) -> WeightsNames {
    let mut out = WeightsNames::default();
    let Some(file) = tree
        .resolve_from(root, FILE_NAME)
        .and_then(|i| tree.file(i))
    else {
        return out;
    };
    let Content::Assembled(assembly) = &*file.content else {
        return out;
    };
    if assembly.error().is_some() {
        return out;
    }
    let header = assembly.header();
    let Ok(entries) =
        serde_json::from_slice::<HashMap<String, Entry>>(header.get(8..).unwrap_or_default())
    else {
        return out;
    };
    let mut empty = Vec::new();
    let mut paths = None;
    for (name, e) in entries {
        match e.data_offsets {
            Some([start, end]) if end > start => {
                if let Some((source, span)) = assembly.locate(start, end - start) {
                    out.by_range.insert((source, span.offset, span.len), name);
                }
            }
            Some(_) => empty.push(name),
            None => paths = e.paths,
        }
    }
    if empty.is_empty() {
        return out;
    }
    let paths: HashMap<String, Vec<String>> = paths
        .and_then(|p| serde_json::from_str(&p).ok())
        .unwrap_or_default();
    for name in empty {
        for p in paths.get(&name).into_iter().flatten() {
            out.by_path.insert(p.clone(), name.clone());
        }
    }
    out
}
