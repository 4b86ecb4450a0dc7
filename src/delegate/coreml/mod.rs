//! The Core ML delegate payload (`CoreMLBackend`): a flattened directory
//! (ExecuTorch's `inmemoryfs`) holding `<name>/model.mlpackage/…`,
//! `metadata.json` and `debug_info.json`, shown file for file; or, for
//! programs whose methods share one model, a `CMJR` reference to the
//! named-data entry holding that directory. The package's `model.mlmodel`
//! is decoded as an ML Program (MIL) and its weight-file blobs located.

mod backend;
pub mod blob;
mod code;
mod dot;
pub mod flattened;
mod graph_json;
pub mod mil;
pub mod reference;
pub mod weights;

use std::collections::{BTreeMap, HashSet};

pub use backend::CoreMl;
pub use flattened::Directory;
pub use reference::Reference;
pub use weights::Weight;

use crate::delegate::{Bytes, Lookup};
use crate::format::{Error, Result, Span};
use crate::schema::coreml as pb;

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "CoreMLBackend";

/// Where the flattened directory's bytes are: the payload itself, or a
/// named-data entry.
#[derive(Debug, Clone, Copy)]
pub struct Store<'a> {
    /// The flattened bytes.
    pub bytes: &'a [u8],
    /// The named-data key holding them (`None`: the payload).
    pub key: Option<&'a str>,
}

impl<'a> Store<'a> {
    /// `span` of the flattened bytes, as a served range.
    pub fn range(&self, span: Span) -> Bytes<'a> {
        match self.key {
            None => Bytes::Payload(span),
            Some(key) => Bytes::Named { key, span },
        }
    }

    /// The bytes of `span` (spans come checked against these bytes).
    pub fn slice(&self, span: Span) -> &'a [u8] {
        span.bytes(self.bytes)
    }
}

/// The decoded `model.mlmodel`.
#[derive(Debug)]
pub struct Model {
    /// Its path in the folder.
    pub path: String,
    /// The folder `@model_path/` names (the one holding it).
    pub dir: String,
    /// The decoded message.
    pub spec: pb::Model,
}

/// A decoded payload.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The reference, for a `CMJR` payload.
    pub reference: Option<Reference>,
    /// Where the directory's bytes are.
    pub store: Store<'a>,
    /// The directory.
    pub dir: Directory,
    /// The decoded model, when the directory has one that decodes.
    pub model: Option<Model>,
    /// Every weight-file value of the model.
    pub weights: Vec<Weight<'a>>,
    /// What did not decode, while the rest is shown.
    pub errors: Vec<String>,
}

/// Decodes `payload`, finding a `CMJR` reference's entry in `named`.
pub fn decode<'a>(payload: &'a [u8], named: &dyn Lookup<'a>) -> Result<Payload<'a>> {
    let (reference, store) = if reference::is_reference(payload) {
        let r = reference::parse(payload)?;
        let Some(bytes) = named.bytes(&r.key) else {
            return Err(Error::new(format!(
                "CMJR reference: named-data key {:?} is in neither the program nor an attached data file",
                r.key
            )));
        };
        // The key must outlive the payload's decoding: take it from the
        // payload's own bytes, where the JSON holds it verbatim.
        let Some(key) = key_in(payload, &r.key) else {
            return Err(Error::new(format!(
                "CMJR reference: key {:?} is written with JSON escapes, which ptefs does not follow",
                r.key
            )));
        };
        (
            Some(r),
            Store {
                bytes,
                key: Some(key),
            },
        )
    } else {
        (
            None,
            Store {
                bytes: payload,
                key: None,
            },
        )
    };
    let dir = flattened::parse(store.bytes).map_err(|e| match &reference {
        Some(r) => e.context(format!("named-data entry {:?}", r.key)),
        None => e,
    })?;
    let mut errors = dir.errors.clone();
    let mut model = None;
    let file = model_file(&dir).cloned();
    if let Some(file) = &file {
        let path = file.path.clone();
        match mil::decode(store.slice(file.span), &path) {
            Ok(spec) => {
                let dir_of = path.rsplit_once('/').map_or("", |(d, _)| d).to_owned();
                model = Some(Model {
                    path,
                    dir: dir_of,
                    spec,
                });
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    let weights = match (&model, &file) {
        (Some(m), Some(file)) => {
            let cx = weights::Context {
                dir: &dir,
                store: &store,
                model_dir: &m.dir,
                model: file,
            };
            mil::program(&m.spec)
                .map(|p| weights::collect(p, &cx))
                .unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let missing = |r: &Reference, m: &Model| -> Option<String> {
        let f = r.function_name.as_ref()?;
        let p = mil::program(&m.spec)?;
        (!p.functions.contains_key(f)).then(|| {
            format!(
                "CMJR reference names function {f:?}, which {} does not have",
                m.path
            )
        })
    };
    if let (Some(r), Some(m)) = (&reference, &model) {
        errors.extend(missing(r, m));
    }
    Ok(Payload {
        reference,
        store,
        dir,
        model,
        weights,
        errors,
    })
}

/// `key` as a slice of `payload` (the reference JSON holds it unescaped
/// in the usual case).
fn key_in<'a>(payload: &'a [u8], key: &str) -> Option<&'a str> {
    let at = payload
        .windows(key.len().max(1))
        .position(|w| w == key.as_bytes())?;
    std::str::from_utf8(&payload[at..at + key.len()]).ok()
}

/// The package's `model.mlmodel` (Core ML's `Data/com.apple.CoreML/`
/// first, else any).
fn model_file(dir: &Directory) -> Option<&flattened::FileEntry> {
    dir.files
        .iter()
        .find(|f| f.path.ends_with("/Data/com.apple.CoreML/model.mlmodel"))
        .or_else(|| {
            dir.files
                .iter()
                .find(|f| f.path.ends_with("/model.mlmodel"))
        })
}

/// The named-data keys `payload` refers to: a reference's key.
pub fn named_keys(payload: &[u8]) -> Result<Vec<&str>> {
    if !reference::is_reference(payload) {
        return Ok(Vec::new());
    }
    let r = reference::parse(payload)?;
    Ok(key_in(payload, &r.key).into_iter().collect())
}

impl Payload<'_> {
    /// Every function with its active block, in name order.
    pub fn functions(&self) -> Vec<(&str, &pb::Function, &str, &pb::Block)> {
        let Some(p) = self.model.as_ref().and_then(|m| mil::program(&m.spec)) else {
            return Vec::new();
        };
        p.functions
            .iter()
            .filter_map(|(n, f)| mil::block(f).map(|(o, b)| (n.as_str(), f, o, b)))
            .collect()
    }

    /// Op counts by type over every function.
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for (_, _, _, b) in self.functions() {
            for op in &b.operations {
                *counts.entry(op.r#type.clone()).or_default() += 1;
            }
        }
        counts
    }

    /// Distinct value names (function inputs and op outputs).
    pub fn value_count(&self) -> usize {
        let mut names = HashSet::new();
        for (fname, f, _, b) in self.functions() {
            for i in &f.inputs {
                names.insert((fname, i.name.as_str()));
            }
            for op in &b.operations {
                for o in &op.outputs {
                    names.insert((fname, o.name.as_str()));
                }
            }
        }
        names.len()
    }
}
