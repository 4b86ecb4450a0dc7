//! `coreml/` in a Core ML delegate's directory: the backend behind the
//! seam, and what its folder shows: the flattened directory file for file
//! (`<name>/model.mlpackage/…`, `<name>/metadata.json`, …, so copying it
//! out gives a package Core ML tools open), `reference.json` for a `CMJR`
//! payload, and from the decoded model `code.txt`, `graph.json`,
//! `graph.dot` and `weights/`.

use serde_json::{Value, json};

use super::weights::Stored;
use super::{Payload, Weight, blob, flattened, mil, reference};
use crate::delegate::artifact::Specs;
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, File, Layout, Npy, Paths, Weights};
use crate::delegate::{Backend, Bytes, Decoded, Rendered, Summary, WeightName, graph_files};
use crate::format::Result;

/// `CoreMLBackend`.
pub struct CoreMl;

impl Backend for CoreMl {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "coreml",
        decode: |payload, named| super::decode(payload, named),
    }

    /// A reference's JSON, or where a flattened directory's files and node
    /// table are (offsets in the file).
    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        if reference::is_reference(payload) {
            let r = reference::parse(payload).ok()?;
            return Some(json!({
                "kind": "CMJR reference",
                "magic": "CMJR",
                "json_offset": at + 4,
                "json_length": payload.len().saturating_sub(4),
                "version": r.version,
                "key": r.key,
                "function_name": r.function_name,
            }));
        }
        let d = flattened::parse(payload).ok()?;
        Some(json!({
            "kind": "flattened directory",
            "files_offset": at,
            "files_length": d.table.offset,
            "node_table_offset": at + d.table.offset,
            "node_table_length": d.table.len,
            "node_table_reversed": true,
            "nodes": d.nodes,
            "root": d.root,
        }))
    }

    fn named_keys<'a>(&self, payload: &'a [u8], _specs: Specs<'_, 'a>) -> Result<Vec<&'a str>> {
        super::named_keys(payload)
    }
}

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        let ops = self.op_counts();
        Summary::graph(
            super::BACKEND_ID,
            ops.values().sum(),
            self.value_count(),
            ops,
            self.weights()
                .into_iter()
                .filter_map(|(n, b)| Some((n.datatype, b?))),
        )
    }

    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)> {
        self.weights
            .iter()
            .enumerate()
            .map(|(k, w)| {
                let name = WeightName {
                    name: w.stem.clone(),
                    layer: Some(w.layer.clone()),
                    role: w.role.clone(),
                    value_id: u32::try_from(k).unwrap_or(u32::MAX),
                    datatype: mil::dtype_name(w.dtype),
                    dims: w
                        .dims
                        .iter()
                        .map(|&d| u32::try_from(d).unwrap_or(u32::MAX))
                        .collect(),
                    key: self.store.key.map(str::to_owned),
                };
                (name, w.bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        let mut files: Vec<File<'a>> = self
            .dir
            .files
            .iter()
            .map(|f| File::Bytes {
                path: f.path.clone(),
                bytes: self.store.range(f.span),
            })
            .collect();
        if let Some(r) = &self.reference {
            files.push(File::Json {
                path: "reference.json".into(),
                value: json!(r),
            });
        }
        if self.model.is_some() {
            for path in ["code.txt", "graph.json", "graph.dot"] {
                files.push(File::Rendered { path: path.into() });
            }
        }
        let weights = (!self.weights.is_empty()).then(|| Weights {
            lacking: "weights lack files for their bytes",
            items: self
                .weights
                .iter()
                .enumerate()
                .map(|(k, w)| weight(k, w))
                .collect(),
        });
        Layout {
            files,
            weights,
            errors: self.errors.clone(),
        }
    }

    fn render<'r>(&'r self, path: &str, paths: &'r Paths) -> Rendered<'r> {
        graph_files::render(
            path,
            || super::graph_json::render(self, paths),
            || super::code::render(self),
            || super::dot::render(self),
        )
    }
}

/// One weight's files and `index.json` entry.
fn weight<'s>(k: usize, w: &'s Weight<'_>) -> folder::Weight<'s> {
    let entry = Fields::new(move |put| {
        put("function", json!(w.function));
        put("op_index", json!(w.op_index));
        put("op_type", json!(w.op_type));
        put("output", json!(w.output));
        put("argument", json!(w.argument));
        put("layer", json!(w.layer));
        put("role", json!(w.role));
        put("dtype", json!(mil::dtype_name(w.dtype)));
        put("shape", json!(w.dims));
        match &w.stored {
            Stored::Blob {
                file_name,
                file_path,
                metadata_offset,
                blob,
            } => {
                put("stored", json!("blob"));
                put("file", json!(file_name));
                put("file_path", json!(file_path));
                put("metadata_offset", json!(metadata_offset));
                match blob {
                    Ok(b) => {
                        put("blob_dtype", json!(blob::dtype_name(b.dtype)));
                        put("data_offset", json!(b.data.offset));
                        put("data_size", json!(b.data.len));
                    }
                    Err(e) => put("blob_error", json!(e)),
                }
            }
            Stored::Inline { field, offset } => {
                put("stored", json!("inline"));
                put("field", json!(field));
                put("model_offset", json!(offset));
            }
        }
        put("users", json!(w.users));
        if w.user_count > w.users.len() {
            put("user_count", json!(w.user_count));
        }
    });
    let npy = mil::numpy(w.dtype).and_then(|(descr, size)| {
        let shape: Vec<u64> = w
            .dims
            .iter()
            .map(|&d| u64::try_from(d).ok())
            .collect::<Option<_>>()?;
        let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
        let widen = w.dtype == 13;
        let nbytes = count.checked_mul(if widen { 4 } else { size })?;
        Some(Npy {
            descr,
            shape,
            nbytes,
            widen,
        })
    });
    folder::Weight {
        stem: w.stem.clone(),
        bytes: w.bytes.clone(),
        dtype: dtype_static(w.dtype),
        dims: w.dims.clone(),
        npy,
        id: u32::try_from(k).unwrap_or(u32::MAX),
        value: Some(k),
        entry,
        parts: Vec::new(),
        view: None,
    }
}

/// The MIL data type's name, for extended attributes.
fn dtype_static(code: i32) -> &'static str {
    match code {
        1 => "bool",
        10 => "fp16",
        11 => "fp32",
        12 => "fp64",
        13 => "bf16",
        21 => "int8",
        22 => "int16",
        23 => "int32",
        24 => "int64",
        31 => "uint8",
        32 => "uint16",
        33 => "uint32",
        34 => "uint64",
        _ => "unknown",
    }
}
