//! The XNNPACK delegate payload (`XnnpackBackend`): an optional `XH00`
//! header, an `XNNGraph` flatbuffer (identifier `XN01` or `XN00`) and
//! constant data, with weights often kept in named data instead.

mod backend;
pub mod code;
pub mod datatype;
pub mod graph;
pub mod graph_json;
pub mod header;
pub mod nodes;
pub mod profile;
pub mod weight_names;
pub mod weights;

use std::collections::BTreeMap;

pub use backend::Xnnpack;
pub use graph::Value;
pub use header::Header;
pub use nodes::{Field, Node};
pub use weight_names::{Layout, Use};
pub use weights::{Quant, Scales, Weight};

use crate::delegate::Lookup;
use crate::format::Result;
use crate::schema::xnnpack as fb;

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "XnnpackBackend";

/// A decoded payload. Spans are relative to the payload's first byte.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The payload.
    pub bytes: &'a [u8],
    /// Where the flatbuffer and constant data are.
    pub header: Header,
    /// The flatbuffer's identifier (`XN01`).
    pub identifier: String,
    /// The verified graph.
    pub graph: fb::XNNGraph<'a>,
    /// Every node, in order.
    pub nodes: Vec<Node>,
    /// Every tensor value, in order.
    pub values: Vec<Value<'a>>,
    /// Every constant value, in value order.
    pub weights: Vec<Weight<'a>>,
}

/// Decodes `payload`, finding the named data it refers to (of the program
/// or an attached data file) in `named`. Errors name what is wrong
/// and where; a constant whose bytes cannot be found is not an error but a
/// weight whose `bytes` says why.
pub fn decode<'a>(payload: &'a [u8], named: &dyn Lookup<'a>) -> Result<Payload<'a>> {
    let header = header::parse(payload)?;
    let graph = graph::verify(payload, header.flatbuffer)?;
    let id_at = header.flatbuffer.offset as usize + 4;
    let identifier = String::from_utf8_lossy(&payload[id_at..id_at + 4]).into_owned();
    let nodes: Vec<Node> = graph
        .xnodes()
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, x)| nodes::read(i, x))
        .collect();
    let (values, by_id) = graph::values(graph);
    let cx = weights::Context {
        payload,
        graph,
        constant_data: header.constant_data,
        named,
    };
    let weights = weights::collect(&cx, &nodes, &values, &by_id);
    Ok(Payload {
        bytes: payload,
        header,
        identifier,
        graph,
        nodes,
        values,
        weights,
    })
}

/// The named-data keys `payload` refers to (its `constant_data` entries
/// kept in named data), in table order, each once: read from the header
/// and the verified flatbuffer only, for finding the data files that hold
/// them before anything else is decoded.
pub fn named_keys(payload: &[u8]) -> Result<Vec<&str>> {
    let header = header::parse(payload)?;
    let graph = crate::delegate::flatbuffer::root::<crate::schema::xnnpack_keys::XNNGraph>(
        payload,
        header.flatbuffer,
        "XNNGraph",
    )?;
    let mut seen = std::collections::HashSet::new();
    Ok(graph
        .constant_data()
        .iter()
        .flatten()
        .filter_map(|entry| entry.named_key().filter(|k| !k.is_empty()))
        .filter(|key| seen.insert(*key))
        .collect())
}

impl Payload<'_> {
    /// Node counts by union member name (`XNNConv2d`).
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for n in &self.nodes {
            let op = n.op.map_or_else(|| format!("op{}", n.tag), str::to_owned);
            *counts.entry(op).or_default() += 1;
        }
        counts
    }

    /// Each constant's datatype name (`xnn_datatype_fp32`, `scales` for
    /// scale blobs) and stored bytes, in value order.
    pub fn stored(&self) -> Vec<(String, crate::delegate::Bytes<'_>)> {
        let mut out = Vec::new();
        for w in &self.weights {
            if let Ok(b) = &w.bytes {
                out.push((datatype::name(w.datatype), *b));
            }
            if let Some(Ok(s)) = &w.scales {
                out.push(("scales".to_owned(), s.bytes));
            }
        }
        out
    }
}
