//! `tosa/` in a TOSA delegate's directory: the backend behind the seam,
//! and what its folder shows: `header.json`, `graph.json`, `code.txt`,
//! `graph.dot` and `weights/` with each constant tensor's and shape's
//! files.

use serde_json::{Value, json};

use super::{Constant, Payload, dtype, graph};
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, Layout, Npy, Paths, Weights};
use crate::delegate::{Backend, Bytes, Decoded, Rendered, Summary, WeightName, graph_files};
use crate::format::le;

/// `TOSABackend`.
pub struct Tosa;

impl Backend for Tosa {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "tosa",
        decode: |payload, _named| super::decode(payload),
    }

    /// The payload has no header of its own: this is the flatbuffer's
    /// root offset and identifier, and the versions the graph states when
    /// it verifies.
    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let root = le::u32_at(payload, 0);
        let id = payload.get(4..8);
        let mut h = json!({
            "format": "TOSA flatbuffer",
            "payload_size": payload.len(),
            "payload_file_offset": at,
            "root_table_offset": root,
            "root_table_file_offset": root.map(|r| at + u64::from(r)),
            "identifier": id.map(|i| String::from_utf8_lossy(i).into_owned()),
        });
        if let (Ok(g), Some(o)) = (graph::verify(payload), h.as_object_mut()) {
            let v = g.version();
            o.insert(
                "tosa_version".into(),
                json!({"major": v._major(), "minor": v._minor(), "patch": v._patch(), "draft": v._draft()}),
            );
            if let Some(s) = g.software_version() {
                o.insert(
                    "software_version".into(),
                    json!({"major": s._major(), "minor": s._minor(), "micro": s._micro(), "modifier": s._modifier()}),
                );
            }
        }
        Some(h)
    }
}

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        Summary::graph(
            super::BACKEND_ID,
            self.operators(),
            self.values(),
            self.op_counts(),
            self.stored(),
        )
    }

    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)> {
        self.constants
            .iter()
            .map(|c| {
                let name = WeightName {
                    name: c.name.clone(),
                    layer: c.layer(),
                    role: c.role(),
                    value_id: c.index as u32,
                    datatype: dtype::name(c.dtype),
                    dims: c
                        .shape
                        .iter()
                        .map(|&d| u32::try_from(d).unwrap_or(0))
                        .collect(),
                    key: None,
                };
                (name, c.bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        let files = graph_files::files().collect();
        Layout {
            files,
            weights: Some(Weights {
                lacking: "constants lack files for their bytes",
                items: self.constants.iter().map(|c| constant(self, c)).collect(),
            }),
            errors: self.problems.clone(),
        }
    }

    fn render<'r>(&'r self, path: &str, paths: &'r Paths) -> Rendered<'r> {
        graph_files::render(
            path,
            || {
                let at = super::graph_json::constant_paths(&self.constants, paths);
                super::graph_json::graph_json(self.graph, &self.blocks, &at)
            },
            || super::code::render(self),
            || super::dot::render(self),
        )
    }
}

/// One constant's files and `index.json` entry.
fn constant<'s>(p: &'s Payload<'_>, c: &'s Constant<'_>) -> folder::Weight<'s> {
    let entry = Fields::new(move |put| {
        let block = p.blocks.get(c.block);
        put("tensor", json!(c.tensor));
        put("kind", json!(if c.is_shape { "shape" } else { "tensor" }));
        put("block", json!(block.map(|b| b.path())));
        put("index", json!(c.index));
        put("dtype", json!(dtype::name(c.dtype)));
        put("shape", json!(c.shape));
        put("numpy_dtype", json!(c.npy.as_ref().map(|n| n.1)));
        put("npy_shape", json!(c.npy.as_ref().map(|n| &n.2)));
        put("widened", json!(c.npy.as_ref().is_some_and(|n| n.3)));
        put(
            "payload_offset",
            json!(c.bytes.as_ref().ok().map(|b| b.span().offset)),
        );
        put("layer", json!(c.layer()));
        put("role", json!(c.role()));
        put("users", json!(c.users));
    });
    folder::Weight {
        stem: c.name.clone(),
        bytes: c.bytes.clone(),
        dtype: c.dtype.variant_name().unwrap_or("unknown"),
        dims: c.shape.iter().map(|&d| i64::from(d)).collect(),
        npy: c.npy.as_ref().map(|(nbytes, descr, shape, widen)| Npy {
            descr,
            shape: shape.clone(),
            nbytes: *nbytes,
            widen: *widen,
        }),
        id: c.index as u32,
        value: Some(c.key),
        entry,
        parts: Vec::new(),
        view: None,
    }
}
