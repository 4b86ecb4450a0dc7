//! The Arm TOSA delegate payload (`TOSABackend`): the whole payload is one
//! `TosaGraph` flatbuffer (identifier `TOSA`) of regions of basic blocks,
//! each a list of operators over named tensors and shapes, with constant
//! values kept inside the flatbuffer as the bytes of their tensors.

pub mod attributes;
mod backend;
pub mod code;
pub mod constants;
pub mod dot;
pub mod dtype;
pub mod graph;
pub mod graph_json;

use std::collections::BTreeMap;

pub use backend::Tosa;
pub use constants::{Constant, Use};
pub use graph::Block;

use crate::format::Result;
use crate::schema::tosa as fb;

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "TOSABackend";

/// A decoded payload. Spans are relative to the payload's first byte.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The payload.
    pub bytes: &'a [u8],
    /// The verified graph.
    pub graph: fb::TosaGraph<'a>,
    /// Every block of every region, in order.
    pub blocks: Vec<Block<'a>>,
    /// Every constant tensor and shape, in block order.
    pub constants: Vec<Constant<'a>>,
    /// What is wrong without stopping the graph from being shown.
    pub problems: Vec<String>,
}

/// Decodes `payload`. Errors name what is wrong and where; a constant
/// whose bytes cannot be shown is not an error but a constant whose
/// `bytes` says why.
pub fn decode(payload: &[u8]) -> Result<Payload<'_>> {
    let graph = graph::verify(payload)?;
    let blocks = graph::blocks(graph);
    let constants = constants::collect(payload, &blocks);
    Ok(Payload {
        bytes: payload,
        graph,
        blocks,
        constants,
        problems: graph::identifier_problem(payload).into_iter().collect(),
    })
}

impl Payload<'_> {
    /// Operator counts by name (`CONV2D`), over every block.
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for b in &self.blocks {
            for op in b.operators() {
                *counts.entry(graph::op_name(op.op())).or_default() += 1;
            }
        }
        counts
    }

    /// Number of operators over every block.
    pub fn operators(&self) -> usize {
        self.blocks
            .iter()
            .map(|b| b.block.operators().map_or(0, |o| o.len()))
            .sum()
    }

    /// Number of tensors and shapes over every block.
    pub fn values(&self) -> usize {
        self.blocks
            .iter()
            .map(|b| {
                b.block.tensors().map_or(0, |t| t.len()) + b.block.shapes().map_or(0, |s| s.len())
            })
            .sum()
    }

    /// Bytes of constants by element type name (`FP32`, `SHAPE`).
    pub fn stored(&self) -> Vec<(String, crate::delegate::Bytes<'_>)> {
        self.constants
            .iter()
            .filter_map(|c| Some((dtype::name(c.dtype), *c.bytes.as_ref().ok()?)))
            .collect()
    }
}
