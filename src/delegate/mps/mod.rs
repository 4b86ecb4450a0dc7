//! The MPS delegate payload (`MPSBackend`, Apple's Metal Performance
//! Shaders): a 24-byte `MP00` header ([`HEADER`]), an `MPSGraph` flatbuffer
//! (identifier `MP00`) of nodes over tensor values ([`nodes`]), then the
//! constant data the values' segment offsets point into ([`constants`]).
//! Constants never live in named data.

mod backend;
pub mod constants;
pub mod nodes;
pub mod render;

use std::collections::BTreeMap;

pub use backend::Mps;
pub use constants::Constant;
pub use nodes::Node;

use crate::delegate::segment_header::{Format, Header};
use crate::delegate::{Bytes, flatbuffer};
use crate::format::{Error, Result, Span};
use crate::schema::mps as fb;

/// The backend id this module decodes (the name the runtime registers).
pub const BACKEND_ID: &str = "MPSBackend";

/// The header: the segment after the graph is the constant data, and
/// leading bytes that are not zero suggest a graph written bare.
pub const HEADER: Format = Format {
    name: "MPS",
    magic: b"MP00",
    segment: "constant data",
    bare: Some("an MPSGraph flatbuffer without the MP00 header?"),
};

/// A decoded payload.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The payload.
    pub bytes: &'a [u8],
    /// Where the graph and constant data are.
    pub header: Header,
    /// The verified graph.
    pub graph: fb::MPSGraph<'a>,
    /// Every node.
    pub nodes: Vec<Node>,
    /// The constants.
    pub constants: Vec<Constant<'a>>,
    /// What is wrong with parts of the graph that are still shown.
    pub errors: Vec<String>,
}

/// Verifies the graph at `span` of `payload`, identifier first.
pub fn verify(payload: &[u8], span: Span) -> Result<fb::MPSGraph<'_>> {
    let bytes = span.bytes(payload);
    if let Some(id) = bytes.get(4..8)
        && id != fb::MPSGRAPH_IDENTIFIER.as_bytes()
    {
        return Err(Error::new(format!(
            "MPSGraph flatbuffer at payload offset {}: identifier {:?}, not \"MP00\"",
            span.offset + 4,
            String::from_utf8_lossy(id)
        )));
    }
    flatbuffer::root::<fb::MPSGraph>(payload, span, "MPSGraph")
}

/// Decodes `payload`.
pub fn decode(payload: &[u8]) -> Result<Payload<'_>> {
    let header = HEADER.parse(payload)?;
    let graph = verify(payload, header.flatbuffer)?;
    let nodes: Vec<Node> = graph
        .mps_nodes()
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, n)| nodes::node(i, n))
        .collect();
    let (constants, errors) = constants::collect(payload, graph, header.segment, &nodes);
    Ok(Payload {
        bytes: payload,
        header,
        graph,
        nodes,
        constants,
        errors,
    })
}

impl Payload<'_> {
    /// Node counts by op.
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for n in &self.nodes {
            *m.entry(n.op.clone()).or_default() += 1;
        }
        m
    }

    /// Each constant's dtype name and stored bytes.
    pub fn stored(&self) -> Vec<(String, Bytes<'_>)> {
        self.constants
            .iter()
            .filter_map(|c| Some((constants::dtype_name(c.dtype), *c.bytes.as_ref().ok()?)))
            .collect()
    }
}
