//! `vulkan/` in a Vulkan delegate's directory: the backend behind the
//! seam, and what its folder shows: `header.json`, `weights/` with each
//! constant's files, `graph.json` and `code.txt`.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::{Constant, Payload, graph, header};
use crate::delegate::artifact::Specs;
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, Layout, Npy, Paths, Weights};
use crate::delegate::{Backend, Bytes, Decoded, Rendered, Summary, WeightName, dot, graph_files};
use crate::format::Result;

/// `VulkanBackend`.
pub struct Vulkan;

impl Backend for Vulkan {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "vulkan",
        decode: |payload, named| super::decode(payload, named),
    }

    /// The fields, with the constant bytes' size field as written (0: to
    /// the end of the payload).
    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let h = header::parse(payload).ok()?;
        let fields = (Some("VH00"), Some(h.header_length));
        let mut json = crate::delegate::header::Json::new(
            fields,
            (h.flatbuffer, h.constant_data),
            payload,
            at,
        );
        json.constant_data_size_field = Some(h.constant_data_size_field);
        json.value()
    }

    fn named_keys<'a>(&self, payload: &'a [u8], _specs: Specs<'_, 'a>) -> Result<Vec<&'a str>> {
        super::named_keys(payload)
    }
}

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        Summary::graph(
            super::BACKEND_ID,
            self.calls.len(),
            self.graph.values().map_or(0, |v| v.len()),
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
                    layer: c.layer.clone(),
                    role: c.role.clone(),
                    value_id: c.value_id,
                    datatype: graph::datatype_name(c.datatype),
                    dims: c.dims.clone(),
                    key: c.key.map(str::to_owned),
                };
                (name, c.bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        Layout {
            files: graph_files::files().collect(),
            weights: Some(Weights {
                lacking: "constants lack files for their bytes",
                items: self.constants.iter().map(constant).collect(),
            }),
            errors: Vec::new(),
        }
    }

    fn render<'r>(&'r self, path: &str, paths: &'r Paths) -> Rendered<'r> {
        graph_files::render(
            path,
            || super::graph_json::graph_json(self.graph, paths),
            || self.code(),
            || self.dot().render(),
        )
    }
}

impl Payload<'_> {
    /// The graph for `graph.dot`. A call's arguments mix what it reads and
    /// writes, so a tensor is taken as written by the first call naming it
    /// unless it is a graph input or a constant; other arguments (ints,
    /// lists) are not drawn.
    fn dot(&self) -> dot::Graph {
        let g = self.graph;
        let ids = |v: Option<flatbuffers::Vector<'_, u32>>| -> Vec<u32> {
            v.map(|v| v.iter().collect()).unwrap_or_default()
        };
        let mut known: HashSet<u32> = ids(g.input_ids()).into_iter().collect();
        let mut values = HashMap::new();
        let mut ops = Vec::with_capacity(self.calls.len());
        for c in &self.calls {
            let mut op = dot::Op {
                label: format!(
                    "{}: {}",
                    c.index,
                    if c.name.is_empty() { "?" } else { c.name }
                ),
                ..dot::Op::default()
            };
            for &arg in &c.args {
                let Ok(id) = u32::try_from(arg) else { continue };
                let Some(t) = graph::value(g, arg).and_then(|v| v.value_as_vk_tensor()) else {
                    continue;
                };
                let constant = t.constant_id() >= 0;
                let label = graph::describe(g, arg).replacen(':', " ", 1);
                values.insert(id, dot::Value { label, constant });
                if constant || !known.insert(id) {
                    op.inputs.push(id);
                } else {
                    op.outputs.push(id);
                }
            }
            ops.push(op);
        }
        dot::Graph {
            name: format!("VkGraph {}", g.version().unwrap_or("")),
            ops,
            values,
            outputs: ids(g.output_ids()),
        }
    }
}

/// One constant's files and `index.json` entry.
fn constant<'s>(c: &'s Constant<'_>) -> folder::Weight<'s> {
    let entry = Fields::new(move |put| {
        put("value_id", json!(c.value_id));
        put("constant_id", json!(c.constant_id));
        put("layer", json!(c.layer));
        put("role", json!(c.role));
        put("datatype", json!(graph::datatype_name(c.datatype)));
        put("dims", json!(c.dims));
        put("numpy_dtype", json!(c.size.as_ref().map(|s| s.1)));
        put("npy_shape", json!(c.size.as_ref().map(|s| &s.2)));
        put("key", json!(c.key));
        put("users", json!(c.users));
    });
    folder::Weight {
        stem: c.name.clone(),
        bytes: c.bytes.clone(),
        dtype: c.datatype.variant_name().unwrap_or("unknown"),
        dims: c.dims.iter().map(|&d| i64::from(d)).collect(),
        npy: c.size.as_ref().map(|(n, descr, shape)| Npy {
            descr,
            shape: shape.clone(),
            nbytes: *n,
            widen: false,
        }),
        id: c.value_id,
        value: Some(c.value_id as usize),
        entry,
        parts: Vec::new(),
        view: None,
    }
}
