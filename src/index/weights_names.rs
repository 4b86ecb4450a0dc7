//! The name each stored byte range has in its tree's
//! `weights.safetensors`, so that the catalog's `tensors` rows join with
//! that file's tensors: the file names a tensor by its key or fully
//! qualified name, the catalog by the best name the report knows
//! (a delegate weight's `forward/0-XnnpackBackend/033-fully_connected.filter`).
//!
//! The names are read back from the file's own header rather than made
//! again, so they are the file's whatever rule it names them by.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde::de::{Deserializer as _, MapAccess, Visitor};

use crate::format::Span;
use crate::tree::weights::{Assembly, FILE_NAME};
use crate::tree::{Content, Contents, Ino, SourceId, Tree};

/// The names of `weights.safetensors` of one tree, by what they hold,
/// borrowed from its header where they need no unescaping.
#[derive(Debug, Default)]
pub struct WeightsNames<'t> {
    /// Tensors with bytes, by the range they hold, sorted: a million
    /// tensors take no more than their keys and names.
    by_range: Vec<((SourceId, u64, u64), Cow<'t, str>)>,
    /// Empty tensors, which hold no range, by their tree paths.
    by_path: HashMap<String, String>,
}

/// A header entry: a tensor's place in the data section, or (for
/// `__metadata__`) the tree paths of each tensor.
#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    data_offsets: Option<[u64; 2]>,
    #[serde(default, rename = "ptefs.paths")]
    paths: Option<String>,
}

impl WeightsNames<'_> {
    /// The name in `weights.safetensors` of the tensor holding `span` of
    /// `source` (or, when empty, at `path`); `None` when the file leaves
    /// it out.
    pub fn name(&self, source: SourceId, span: Span, path: &str) -> Option<&str> {
        if span.len == 0 {
            return self.by_path.get(path).map(String::as_str);
        }
        let key = (source, span.offset, span.len);
        let i = self.by_range.binary_search_by(|(k, _)| k.cmp(&key)).ok()?;
        Some(&self.by_range[i].1)
    }
}

/// Reads the header's entries one at a time into [`WeightsNames`],
/// without a map of them all first.
struct Collect<'a, 't> {
    assembly: &'a Assembly,
    out: &'a mut WeightsNames<'t>,
    empty: &'a mut Vec<String>,
    paths: &'a mut Option<String>,
}

impl<'de, 'a> Visitor<'de> for Collect<'a, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a safetensors header")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        while let Some(name) = map.next_key::<Cow<'de, str>>()? {
            let e: Entry = map.next_value()?;
            match e.data_offsets {
                Some([start, end]) if end > start => {
                    if let Some((source, span)) = self.assembly.locate(start, end - start) {
                        self.out
                            .by_range
                            .push(((source, span.offset, span.len), name));
                    }
                }
                Some(_) => self.empty.push(name.into_owned()),
                None => *self.paths = e.paths,
            }
        }
        Ok(())
    }
}

/// The names of the `weights.safetensors` at the root `root` of `tree`;
/// none when there is no such file or it cannot be assembled.
pub fn of(tree: &Tree, root: Ino) -> WeightsNames<'_> {
    let mut out = WeightsNames::default();
    let Some(file) = tree
        .resolve_from(root, FILE_NAME)
        .and_then(|i| tree.file(i))
    else {
        return out;
    };
    // The file is a node of the tree, so its header lives as long.
    let Contents::Stored(Content::Assembled(assembly)) = file.content else {
        return out;
    };
    if assembly.error().is_some() {
        return out;
    }
    let header = assembly.header().get(8..).unwrap_or_default();
    let (mut empty, mut paths) = (Vec::new(), None);
    let mut de = serde_json::Deserializer::from_slice(header);
    let collect = Collect {
        assembly,
        out: &mut out,
        empty: &mut empty,
        paths: &mut paths,
    };
    if de.deserialize_map(collect).is_err() {
        return WeightsNames::default();
    }
    out.by_range.sort_unstable_by_key(|(k, _)| *k);
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
