//! `mps/` in an MPS delegate's directory: the backend behind the seam, and
//! what its folder shows: `header.json`, `graph.json`, `code.txt`,
//! `graph.dot`, and `weights/` with each constant's files.

use std::ops::Range;

use serde_json::{Value, json};

use super::constants::{Constant, dtype_name};
use super::{Payload, render};
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, File, Layout, Paths, Weights};
use crate::delegate::{
    Backend, Bytes, Decoded, Rendered, Summary, WeightName, graph_files, payload_fetch,
    segment_header,
};

/// `MPSBackend`.
pub struct Mps;

impl Backend for Mps {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "mps",
        decode: |payload, _named| super::decode(payload),
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        super::HEADER.json(payload, at)
    }

    /// The header, then the graph it locates; never the constant data.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        let region = |p: &[u8]| super::HEADER.parse(p).ok().map(|h| h.flatbuffer);
        payload_fetch::header_then(payload, have, segment_header::LEN, region)
    }
}

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        Summary::graph(
            super::BACKEND_ID,
            self.nodes.len(),
            self.graph.mps_values().map_or(0, |v| v.len()),
            self.op_counts(),
            self.stored(),
        )
    }

    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)> {
        self.constants
            .iter()
            .map(|c| {
                let first = c.users.first();
                let name = WeightName {
                    name: c.stem.clone(),
                    layer: first.map(|u| format!("{:03}-{}", u.node, u.op)),
                    role: first.map_or_else(|| "unused".to_owned(), |u| u.role.clone()),
                    value_id: c.id,
                    datatype: dtype_name(c.dtype),
                    dims: c
                        .dims
                        .iter()
                        .map(|&d| u32::try_from(d).unwrap_or(u32::MAX))
                        .collect(),
                    key: None,
                };
                (name, c.bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        let files: Vec<File<'a>> = graph_files::files().collect();
        Layout {
            files,
            weights: Some(Weights {
                lacking: "constants lack files for their bytes",
                items: self
                    .constants
                    .iter()
                    .enumerate()
                    .map(|(k, c)| constant(k, c))
                    .collect(),
            }),
            errors: self.errors.clone(),
        }
    }

    fn render<'r>(&'r self, path: &str, paths: &'r Paths) -> Rendered<'r> {
        graph_files::render(
            path,
            || render::graph_json(self, paths),
            || render::code(self),
            || render::dot(self),
        )
    }
}

/// Constant `k`'s files and `index.json` entry.
fn constant<'s>(k: usize, c: &'s Constant<'_>) -> folder::Weight<'s> {
    let entry = Fields::new(move |put| {
        put("value_id", json!(c.id));
        put("listed", json!(c.listed));
        put(
            "layer",
            json!(c.users.first().map(|u| format!("{:03}-{}", u.node, u.op))),
        );
        put(
            "role",
            json!(c.users.first().map_or("unused", |u| u.role.as_str())),
        );
        put("dtype", json!(dtype_name(c.dtype)));
        put("dims", json!(c.dims));
        put("numpy_dtype", json!(c.npy.as_ref().map(|n| n.descr)));
        put("stored_in", json!(c.store));
        put("segment_offset", json!(c.segment_offset));
        put("constant_buffer_size", json!(c.size));
        put(
            "payload_offset",
            json!(c.bytes.as_ref().ok().map(|b| b.span().offset)),
        );
        put("key", Value::Null);
        put("users", json!(c.users));
    });
    folder::Weight {
        stem: c.stem.clone(),
        bytes: c.bytes.clone(),
        dtype: c.dtype.variant_name().unwrap_or("unknown"),
        dims: c.dims.clone(),
        npy: c.npy.clone(),
        id: c.id,
        value: Some(k),
        entry,
        parts: Vec::new(),
        view: None,
    }
}
