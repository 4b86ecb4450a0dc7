//! `mlx/` in an MLX delegate's directory: the backend behind the seam, and
//! what its folder shows: `header.json`, `graph.json`, `code.txt`,
//! `graph.dot`, `data_segment.bin` when it has bytes, and `weights/` with
//! each constant's files.

use std::ops::Range;

use serde_json::{Value, json};

use super::{Constant, Payload, render};
use crate::delegate::artifact::Specs;
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, File, Layout, Paths, Weights};
use crate::delegate::{
    Backend, Bytes, Decoded, Rendered, Summary, WeightName, graph_files, payload_fetch,
    segment_header,
};
use crate::format::{Result, scalar};

/// `MLXBackend`.
pub struct Mlx;

impl Backend for Mlx {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "mlx",
        decode: |payload, named| super::decode(payload, named),
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        super::HEADER.json(payload, at)
    }

    fn named_keys<'a>(&self, payload: &'a [u8], _specs: Specs<'_, 'a>) -> Result<Vec<&'a str>> {
        super::named_keys(payload)
    }

    /// The header, then the graph it locates; never the data segment.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        let region = |p: &[u8]| super::HEADER.parse(p).ok().map(|h| h.flatbuffer);
        payload_fetch::header_then(payload, have, segment_header::LEN, region)
    }
}

fn dtype_name(c: &Constant<'_>) -> String {
    c.dtype.map_or_else(|| "unknown".to_owned(), scalar::name)
}

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        Summary::graph(
            super::BACKEND_ID,
            self.instrs.len(),
            usize::try_from(self.tensor_slots() + u64::from(self.graph.num_values()))
                .unwrap_or(usize::MAX),
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
                    layer: first.map(|u| u.layer.clone()),
                    role: first.map_or_else(|| "unused".to_owned(), |u| u.field.clone()),
                    value_id: c.tid,
                    datatype: dtype_name(c),
                    dims: c
                        .dims
                        .iter()
                        .map(|&d| u32::try_from(d).unwrap_or(u32::MAX))
                        .collect(),
                    key: Some(c.key.to_owned()),
                };
                (name, c.bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        let mut files: Vec<File<'a>> = graph_files::files().collect();
        if self.header.segment.len != 0 {
            files.push(File::Bytes {
                path: "data_segment.bin".into(),
                bytes: Bytes::Payload(self.header.segment),
            });
        }
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
            errors: Vec::new(),
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
        put("tid", json!(c.tid));
        put("key", json!(c.key));
        put("dtype", json!(dtype_name(c)));
        put("shape", json!(c.dims));
        put("numpy_dtype", json!(c.npy.as_ref().map(|n| n.descr)));
        put(
            "offset",
            json!(c.bytes.as_ref().ok().map(|b| b.span().offset)),
        );
        put("users", json!(c.users));
    });
    folder::Weight {
        stem: c.stem.clone(),
        bytes: c.bytes.clone(),
        dtype: c.dtype.and_then(|t| t.variant_name()).unwrap_or("unknown"),
        dims: c.dims.clone(),
        npy: c.npy.clone(),
        id: c.tid,
        value: Some(k),
        entry,
        parts: Vec::new(),
        view: None,
    }
}
