//! `vgf/` in a VGF delegate's directory: the backend behind the seam, and
//! what its folder shows: `header.json`, each section's bytes under
//! `sections/`, each module's code under `modules/`, `graph.json` (with
//! its parts as `model_sequence.json`, `resources.json` and
//! `constants.json`), `code.txt`, `graph.dot`, and `weights/` with each
//! constant's files.

use std::ops::Range;

use serde_json::{Value, json};

use super::{Constant, Payload, constants, header, tables, vulkan};
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, File, Layout, Npy, Paths, Weights};
use crate::delegate::{Backend, Bytes, Decoded, Rendered, Summary, WeightName, graph_files};

/// `VgfBackend`.
pub struct Vgf;

impl Backend for Vgf {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "vgf",
        decode: |payload, _named| super::decode(payload),
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        Some(header::parse(payload).ok()?.json(payload.len(), at))
    }

    /// The header, the three tables and the constants' records; never the
    /// constants' data, which can be most of the file.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        let head = 0..(payload.len() as u64).min(header::LEN as u64);
        if !have(&head) {
            return std::iter::once(head).collect();
        }
        // An invalid header needs nothing more: decoding reports it.
        let Ok(h) = header::parse(payload) else {
            return Vec::new();
        };
        let mut want: Vec<Range<u64>> = (0..3)
            .filter_map(|i| h.section(i))
            .map(|s| s.offset..s.end())
            .collect();
        if let Some(c) = h.section(3) {
            want.extend(constants::fetch(payload, c, have));
        }
        want
    }
}

/// The parts of `graph.json` that are files of their own too (constants
/// without `ptefs_path`).
const PARTS: [&str; 4] = [
    "modules.json",
    "model_sequence.json",
    "resources.json",
    "constants.json",
];

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        Summary::graph(
            super::BACKEND_ID,
            self.segments().len(),
            self.resource_count(),
            self.op_counts(),
            self.stored(),
        )
    }

    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)> {
        let users = users(self);
        self.constant_list()
            .iter()
            .map(|c| {
                let r = self.resource(c.mrt_index);
                let name = WeightName {
                    name: stem(c),
                    layer: users.get(c.index).and_then(|u| u.first()).cloned(),
                    role: "constant".to_owned(),
                    value_id: c.mrt_index,
                    datatype: r
                        .map_or_else(|| "unknown".to_owned(), |r| vulkan::format(r.vk_format())),
                    dims: shape(self, c)
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
        let mut files = Vec::new();
        for (i, (name, _)) in header::SECTIONS.iter().enumerate() {
            if let Some(span) = self.header.section(i) {
                files.push(File::Bytes {
                    path: format!("sections/{name}.bin"),
                    bytes: Bytes::Payload(span),
                });
            }
        }
        for (i, m) in self.module_list().into_iter().enumerate() {
            if let Some((span, ext)) = tables::code_span(self.bytes, m) {
                files.push(File::Bytes {
                    path: format!("modules/{i}-{}.{ext}", file_part(m.name().unwrap_or(""))),
                    bytes: Bytes::Payload(span),
                });
            }
        }
        files.extend(graph_files::files());
        // The parts are small, and made now: each lazily rendered file
        // decodes the payload again when read.
        let no_paths = Paths::new();
        let parts = [
            super::dump::modules(self),
            super::dump::sequence(self),
            super::dump::resources(self),
            super::dump::constants(self, &no_paths),
        ];
        for (path, value) in PARTS.into_iter().zip(parts) {
            files.push(File::Json {
                path: path.into(),
                value,
            });
        }
        let users = users(self);
        Layout {
            files,
            weights: self.constants.as_ref().map(|_| Weights {
                lacking: "constants lack files for their bytes",
                items: self
                    .constant_list()
                    .iter()
                    .map(|c| weight(self, c, users.get(c.index).cloned()))
                    .collect(),
            }),
            errors: self.errors.clone(),
        }
    }

    fn render<'r>(&'r self, path: &str, paths: &'r Paths) -> Rendered<'r> {
        graph_files::render(
            path,
            || super::dump::graph(self, paths),
            || super::code::render(self),
            || super::dot::render(self),
        )
    }
}

/// A name as part of a file name: characters other than letters, digits,
/// `.`, `_` and `-` become `_`.
fn file_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A constant's file stem: `constant_<index>`, zero-padded to 3 digits.
fn stem(c: &Constant<'_>) -> String {
    format!("constant_{:03}", c.index)
}

/// The shape of the constant's resource, empty when it has none.
fn shape(p: &Payload<'_>, c: &Constant<'_>) -> Vec<i64> {
    p.resource(c.mrt_index)
        .and_then(|r| r.description())
        .map(|d| super::dims(d.shape()))
        .unwrap_or_default()
}

/// The segments binding each constant, as `<segment>-<name>`, by
/// constant index: one pass over the segments, however many constants
/// each lists (or lists again).
fn users(p: &Payload<'_>) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new(); p.constant_list().len()];
    for (i, s) in p.segments().into_iter().enumerate() {
        let name = format!("{i:03}-{}", file_part(s.name().unwrap_or("")));
        for k in s.constants().into_iter().flatten() {
            if let Some(u) = out.get_mut(k as usize)
                && u.last() != Some(&name)
            {
                u.push(name.clone());
            }
        }
    }
    out
}

/// One constant's files and `index.json` entry: its resource's format and
/// shape give the `.npy` view of a dense constant.
fn weight<'s>(
    p: &'s Payload<'_>,
    c: &'s Constant<'_>,
    users: Option<Vec<String>>,
) -> folder::Weight<'s> {
    let r = p.resource(c.mrt_index);
    let format = r.map(|r| r.vk_format());
    let dims = shape(p, c);
    let npy = format
        .and_then(vulkan::numpy)
        .filter(|_| c.sparsity_dimension < 0)
        .and_then(|(size, descr)| {
            let shape: Vec<u64> = dims
                .iter()
                .map(|&d| u64::try_from(d).ok())
                .collect::<Option<_>>()?;
            let nbytes = shape.iter().try_fold(size, |n, &d| n.checked_mul(d))?;
            Some(Npy {
                descr,
                shape,
                nbytes,
                widen: false,
            })
        });
    let (shown, view) = (dims.clone(), npy.clone());
    let entry = Fields::new(move |put| {
        put("index", json!(c.index));
        put("mrt_index", json!(c.mrt_index));
        put("sparsity_dimension", json!(c.sparsity_dimension));
        put("vk_format", json!(format.map(vulkan::format)));
        put("shape", json!(shown));
        put("numpy_dtype", json!(view.as_ref().map(|n| n.descr)));
        put("npy_shape", json!(view.as_ref().map(|n| &n.shape)));
        put(
            "payload_offset",
            json!(c.bytes.as_ref().ok().map(|b| b.span().offset)),
        );
        put("users", json!(users));
    });
    folder::Weight {
        stem: stem(c),
        bytes: c.bytes.clone(),
        dtype: format.and_then(vulkan::format_name).unwrap_or("unknown"),
        dims,
        npy,
        id: c.mrt_index,
        value: Some(c.index),
        entry,
        parts: Vec::new(),
        view: None,
    }
}
