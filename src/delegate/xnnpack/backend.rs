//! `xnnpack/` in an XNNPACK delegate's directory: the backend behind the
//! seam, and what its folder shows: `header.json`, `weights/` with each
//! constant's files and scales, `graph.json` and `code.txt`.

use std::ops::Range;

use serde_json::{Value, json};

use super::{Payload, Scales, Weight, datatype, header};
use crate::delegate::artifact::Specs;
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, Layout, Npy, Paths, Weights};
use crate::delegate::{
    Backend, Bytes, Decoded, Rendered, Summary, WeightName, dot, graph_files, payload_fetch,
};
use crate::format::Result;

/// `XnnpackBackend`.
pub struct Xnnpack;

/// Payload bytes asked for before the header says more: the header's
/// known fields.
const HEAD: u64 = 64;

impl Backend for Xnnpack {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "xnnpack",
        decode: |payload, named| super::decode(payload, named),
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let h = header::parse(payload).ok()?;
        let fields = (h.magic, h.header_length);
        crate::delegate::header::Json::new(fields, (h.flatbuffer, h.constant_data), payload, at)
            .value()
    }

    fn named_keys<'a>(&self, payload: &'a [u8], _specs: Specs<'_, 'a>) -> Result<Vec<&'a str>> {
        super::named_keys(payload)
    }

    fn profile_nodes(&self, payload: &[u8], ids: &[&str]) -> Option<crate::delegate::ProfileNodes> {
        super::profile::nodes(payload, ids)
    }

    /// The header, then the flatbuffer it locates; never the constant data
    /// after it.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        let region = |p: &[u8]| header::parse(p).ok().map(|h| h.flatbuffer);
        payload_fetch::header_then(payload, have, HEAD, region)
    }
}

impl<'a> Decoded<'a> for Payload<'a> {
    fn summary(&self) -> Summary {
        Summary::graph(
            super::BACKEND_ID,
            self.nodes.len(),
            self.values.len(),
            self.op_counts(),
            self.stored(),
        )
    }

    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)> {
        self.weights
            .iter()
            .map(|w| {
                let name = WeightName {
                    name: w.name.clone(),
                    layer: w.layer.clone(),
                    role: w.role.to_owned(),
                    value_id: w.value_id,
                    datatype: datatype::name(w.datatype),
                    dims: w.dims.clone(),
                    key: w.key.map(str::to_owned),
                };
                (name, w.bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        let items = self.weights.iter().map(weight).collect();
        Layout {
            files: graph_files::files().collect(),
            weights: Some(Weights {
                lacking: "weights lack files for their bytes or scales",
                items,
            }),
            errors: Vec::new(),
        }
    }

    fn render<'r>(&'r self, path: &str, paths: &'r Paths) -> Rendered<'r> {
        graph_files::render(
            path,
            || super::graph_json::Graph {
                payload: self,
                paths,
            },
            || super::code::render(self),
            || self.dot().render(),
        )
    }
}

impl Payload<'_> {
    /// The graph for `graph.dot`: nodes in order, values as `%id dtype[dims]`.
    fn dot(&self) -> dot::Graph {
        let values = self
            .values
            .iter()
            .map(|v| {
                let label = format!("%{}{}", v.id(), super::code::label(v)).replacen(':', " ", 1);
                let constant = v.tensor.constant_buffer_idx() != 0;
                (v.id(), dot::Value { label, constant })
            })
            .collect();
        let ops = self
            .nodes
            .iter()
            .map(|n| dot::Op {
                label: format!("{}: {}", n.index, n.short),
                inputs: n.inputs().into_iter().map(|(_, id)| id).collect(),
                outputs: n.outputs().into_iter().map(|(_, id)| id).collect(),
            })
            .collect();
        dot::Graph {
            name: format!("XNNGraph {}", self.identifier),
            ops,
            values,
            outputs: self
                .graph
                .output_ids()
                .map(|v| v.iter().collect())
                .unwrap_or_default(),
        }
    }
}

const PACKED: &str = "two 4-bit values per byte along the last dimension: element 2k in the low nibble, 2k+1 in the high, each stored as value + 8";

/// One constant: its files' stem, bytes and NumPy view, and what its
/// `index.json` entry says.
fn weight<'s>(w: &'s Weight<'_>) -> folder::Weight<'s> {
    let entry = Fields::new(move |put| {
        put("value_id", json!(w.value_id));
        put("value_index", json!(w.value_index));
        put("constant_index", json!(w.constant_index));
        put("layer", json!(w.layer));
        put("role", json!(w.role));
        put("datatype", json!(datatype::name(w.datatype)));
        put("dims", json!(w.dims));
        put("numpy_dtype", json!(w.storage.map(|s| s.numpy)));
        put("raw_bits", json!(w.storage.is_some_and(|s| s.raw_bits)));
        if w.storage.is_some_and(|s| s.bits == 4) {
            put("packed", json!(PACKED));
        }
        put("npy_shape", json!(w.size.as_ref().map(|(_, s)| s)));
        put("key", json!(w.key));
        put("quantization", json!(w.quant));
        put("users", json!(w.users));
        put("layout", json!(w.layout));
    });
    // A .npy only when the bytes are exactly what the dims need.
    let npy = w.storage.zip(w.size.as_ref()).map(|(s, (n, shape))| Npy {
        descr: s.numpy,
        shape: shape.clone(),
        nbytes: *n,
        widen: false,
    });
    let parts = w
        .scales
        .as_ref()
        .map(|s| vec![("scales", scales(&w.name, w.value_id, s))])
        .unwrap_or_default();
    folder::Weight {
        stem: w.name.clone(),
        bytes: w.bytes.clone(),
        dtype: w.datatype.variant_name().unwrap_or("unknown"),
        dims: w.dims.iter().map(|&d| i64::from(d)).collect(),
        npy,
        id: w.value_id,
        value: Some(w.value_index),
        entry,
        parts,
        view: None,
    }
}

/// `<name>.scale.bin` and `.npy`: bf16 scales are widened to `<f4` in the
/// `.npy`, which NumPy reads as it reads every other scale file.
fn scales<'s>(
    name: &str,
    id: u32,
    s: &'s std::result::Result<Scales<'_>, String>,
) -> folder::Weight<'s> {
    let stem = format!("{name}.scale");
    let Ok(s) = s else {
        return folder::Weight {
            stem,
            bytes: Err(s.as_ref().err().cloned().unwrap_or_default()),
            dtype: "float32",
            dims: Vec::new(),
            npy: None,
            id,
            value: None,
            entry: Fields::none(),
            parts: Vec::new(),
            view: None,
        };
    };
    let stored = if s.bf16 { "bfloat16" } else { "float32" };
    let entry = Fields::new(move |put| {
        put("count", json!(s.count));
        put("numpy_dtype", json!("<f4"));
        put("stored_dtype", json!(stored));
        put("widened", json!(s.bf16));
        put("buffer_index", json!(s.buffer_index));
        put("key", json!(s.bytes.key()));
    });
    folder::Weight {
        stem,
        bytes: Ok(s.bytes),
        dtype: stored,
        dims: vec![s.count as i64],
        npy: Some(Npy {
            descr: "<f4",
            shape: vec![s.count],
            nbytes: s.bytes.len(),
            widen: s.bf16,
        }),
        id,
        value: None,
        entry,
        parts: Vec::new(),
        view: None,
    }
}
