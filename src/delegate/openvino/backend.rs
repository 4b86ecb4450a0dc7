//! `openvino/` in an OpenVINO delegate's directory: the backend behind the
//! seam, and what its folder shows: `header.json`, `custom_data.xml`,
//! `consts.bin` (the weights region), `model.xml` (the IR, decoded),
//! `graph.json`, `code.txt`, `graph.dot`, and `weights/` with a file per
//! `Const` layer.

use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::{Value, json};

use super::{Const, Payload, obfuscation, render};
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, File, Layout, Paths, Weights};
use crate::delegate::{
    Backend, Bytes, Decoded, Rendered, Summary, WeightName, graph_files, payload_fetch,
};

/// `OpenvinoBackend`.
pub struct Openvino;

impl Backend for Openvino {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "openvino",
        decode: |payload, _named| super::decode(payload),
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        // Whether the IR is obfuscated, from its first bytes only.
        let obfuscated = super::header::parse(payload).ok().and_then(|h| {
            let head = h.model.bytes(payload);
            let head = &head[..head.len().min(8)];
            obfuscation::decode(head).map(|(_, o)| o)
        });
        super::header::json(payload, at, obfuscated)
    }

    /// The header, then the IR it locates; never the weights.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        let region = |p: &[u8]| super::header::parse(p).ok().map(|h| h.model);
        payload_fetch::header_then(payload, have, super::header::LEN as u64, region)
    }
}

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        let mut ops = BTreeMap::new();
        let (mut nodes, mut values) = (0, 0);
        if let Some(m) = &self.model {
            nodes = m.layers.len();
            for l in &m.layers {
                *ops.entry(l.kind.clone()).or_default() += 1;
                values += l.outputs.len();
            }
        }
        let consts = self.consts.iter();
        Summary::graph(
            super::BACKEND_ID,
            nodes,
            values,
            ops,
            consts.filter_map(|c| Some((c.element_type.clone(), *c.bytes.as_ref().ok()?))),
        )
    }

    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)> {
        self.consts
            .iter()
            .map(|c| {
                let first = c.users.first();
                let field = |k: &str| first.and_then(|u| u[k].as_str()).map(str::to_owned);
                let name = WeightName {
                    name: c.stem.clone(),
                    layer: field("name"),
                    role: field("port").map_or("unused".to_owned(), |p| format!("input{p}")),
                    value_id: u32::try_from(c.layer).unwrap_or(u32::MAX),
                    datatype: c.element_type.clone(),
                    dims: c
                        .shape
                        .iter()
                        .flatten()
                        .map(|&d| u32::try_from(d).unwrap_or(u32::MAX))
                        .collect(),
                    key: None,
                };
                (name, c.bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        let h = self.header;
        let mut files = vec![
            File::Bytes {
                path: "custom_data.xml".into(),
                bytes: Bytes::Payload(h.custom_data),
            },
            File::Bytes {
                path: "consts.bin".into(),
                bytes: Bytes::Payload(h.consts),
            },
            File::Bytes {
                path: "model.stored.bin".into(),
                bytes: Bytes::Payload(h.model),
            },
        ];
        if self.xml.is_some() {
            files.push(File::Rendered {
                path: "model.xml".into(),
            });
        }
        if self.model.is_some() {
            files.extend(graph_files::files());
        }
        Layout {
            files,
            weights: self.model.as_ref().map(|_| Weights {
                lacking: "constants lack files for their bytes",
                items: self.consts.iter().map(constant).collect(),
            }),
            errors: self.errors.clone(),
        }
    }

    fn render<'r>(&'r self, path: &str, paths: &'r Paths) -> Rendered<'r> {
        match (path, &self.model) {
            ("model.xml", _) => self.xml.clone().map_or(Rendered::None, Rendered::Bytes),
            (_, Some(m)) => graph_files::render(
                path,
                || render::graph_json(self, m, paths),
                || render::code(m, self.consts.len()),
                || render::dot(m),
            ),
            _ => Rendered::None,
        }
    }
}

/// One `Const` layer's files and `index.json` entry.
fn constant<'s>(c: &'s Const<'_>) -> folder::Weight<'s> {
    let entry = Fields::new(move |put| {
        put("layer", json!(c.layer));
        put("element_type", json!(c.element_type));
        put("shape", json!(c.shape));
        put("numpy_dtype", json!(c.npy.as_ref().map(|n| n.descr)));
        put("offset", json!(c.offset));
        put("size", json!(c.size));
        put(
            "payload_offset",
            json!(c.bytes.as_ref().ok().map(|b| b.span().offset)),
        );
        put("users", json!(c.users));
    });
    folder::Weight {
        stem: c.stem.clone(),
        bytes: c.bytes.clone(),
        dtype: dtype_name(&c.element_type),
        dims: c
            .shape
            .iter()
            .flatten()
            .map(|&d| i64::try_from(d).unwrap_or(i64::MAX))
            .collect(),
        npy: c.npy.clone(),
        id: u32::try_from(c.layer).unwrap_or(u32::MAX),
        value: Some(c.layer),
        entry,
        parts: Vec::new(),
        view: None,
    }
}

/// The element type as a `'static` name for extended attributes.
fn dtype_name(et: &str) -> &'static str {
    const KNOWN: [&str; 24] = [
        "boolean", "bf16", "f16", "f32", "f64", "i4", "i8", "i16", "i32", "i64", "u1", "u2", "u3",
        "u4", "u6", "u8", "u16", "u32", "u64", "nf4", "f8e4m3", "f8e5m2", "f4e2m1", "string",
    ];
    KNOWN
        .iter()
        .find(|k| **k == et)
        .copied()
        .unwrap_or("unknown")
}
