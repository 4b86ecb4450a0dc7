//! `mps/` in an MPS delegate's directory: the backend behind the seam, and
//! what its folder shows: `header.json`, `graph.json`, `code.txt`,
//! `graph.dot`, and `weights/` with each constant's files.

use std::ops::Range;

use serde_json::{Value, json};

use super::constants::{Constant, dtype_name};
use super::{Payload, render};
use crate::delegate::artifact::Specs;
use crate::delegate::folder::{self, Fields, File, Layout, Paths, Weights};
use crate::delegate::{Backend, Bytes, Decoded, Lookup, Rendered, Summary, WeightName};
use crate::format::Result;

/// `MPSBackend`.
pub struct Mps;

impl Backend for Mps {
    fn id(&self) -> &'static str {
        super::BACKEND_ID
    }

    fn folder(&self) -> &'static str {
        "mps"
    }

    fn decode<'a>(
        &self,
        payload: &'a [u8],
        _specs: Specs<'_, 'a>,
        _named: &dyn Lookup<'a>,
    ) -> Result<Box<dyn Decoded<'a> + 'a>> {
        Ok(Box::new(super::decode(payload)?))
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        super::header::json(payload, at)
    }

    /// The header, then the graph it locates; never the constant data.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        let head = 0..(payload.len() as u64).min(super::header::LEN);
        if !have(&head) {
            return vec![head];
        }
        // An invalid header needs nothing more: decoding reports it.
        super::header::parse(payload)
            .map(|h| h.flatbuffer.offset..h.flatbuffer.end())
            .into_iter()
            .collect()
    }
}

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        let mut s = Summary {
            backend: super::BACKEND_ID.to_owned(),
            nodes: self.nodes.len(),
            values: self.graph.mps_values().map_or(0, |v| v.len()),
            ops: self.op_counts(),
            ..Summary::default()
        };
        s.count_constants(self.stored());
        s
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
        let files: Vec<File<'a>> = ["graph.json", "code.txt", "graph.dot"]
            .into_iter()
            .map(|p| File::Rendered { path: p.into() })
            .collect();
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
        match path {
            "graph.json" => Rendered::Json(Box::new(render::graph_json(self, paths))),
            "code.txt" => Rendered::text(render::code(self)),
            "graph.dot" => Rendered::text(render::dot(self)),
            _ => Rendered::None,
        }
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
