//! The MLX delegate payload (`MLXBackend`): a 24-byte `MLX0` header ([`HEADER`]),
//! an `MLXGraph` flatbuffer of instruction chains over tensor and value
//! slots ([`graph`], [`operands`]), and a data segment; constants live in
//! named data, keyed by their named slots ([`constants`]).

mod backend;
pub mod constants;
pub mod graph;
pub mod operands;
pub mod render;

use std::collections::{BTreeMap, HashSet};

pub use backend::Mlx;
pub use constants::Constant;
pub use graph::Instr;

use crate::delegate::Lookup;
use crate::delegate::segment_header::{Format, Header};
use crate::format::{Result, scalar};
use crate::schema::mlx as fb;

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "MLXBackend";

/// The header: the segment after the graph is a data segment (empty in
/// what ExecuTorch 1.5.1 writes).
pub const HEADER: Format = Format {
    name: "MLX",
    magic: b"MLX0",
    segment: "data segment",
    bare: None,
};

/// A decoded payload.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The payload.
    pub bytes: &'a [u8],
    /// Where the graph and data segment are.
    pub header: Header,
    /// The verified graph.
    pub graph: fb::MLXGraph<'a>,
    /// Every instruction of every chain.
    pub instrs: Vec<Instr>,
    /// The constants.
    pub constants: Vec<Constant<'a>>,
}

/// Decodes `payload`, finding constants in `named`.
pub fn decode<'a>(payload: &'a [u8], named: &dyn Lookup<'a>) -> Result<Payload<'a>> {
    let header = HEADER.parse(payload)?;
    let graph = graph::verify(payload, header.flatbuffer)?;
    let instrs = graph::instructions(graph);
    let constants = constants::collect(graph, &instrs, named);
    Ok(Payload {
        bytes: payload,
        header,
        graph,
        instrs,
        constants,
    })
}

/// The named-data keys of `payload`'s constants, each once.
pub fn named_keys(payload: &[u8]) -> Result<Vec<&str>> {
    let header = HEADER.parse(payload)?;
    let g = graph::verify(payload, header.flatbuffer)?;
    let mut seen = HashSet::new();
    Ok(g.named_slots()
        .iter()
        .flatten()
        .filter(|s| {
            s.slot().slot_type() == fb::SlotType::TensorSlot
                && s.slot().idx() < g.num_constant_tensors()
        })
        .map(|s| s.name())
        .filter(|k| seen.insert(*k))
        .collect())
}

impl Payload<'_> {
    /// Tensor slots of every kind.
    pub fn tensor_slots(&self) -> u64 {
        let g = self.graph;
        [
            g.num_constant_tensors(),
            g.num_input_tensors(),
            g.num_output_tensors(),
            g.num_mutable_buffer_tensors(),
            g.num_temp_tensors(),
        ]
        .iter()
        .map(|&n| u64::from(n))
        .sum()
    }

    /// Instruction counts by op.
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for i in &self.instrs {
            *m.entry(i.op.clone()).or_default() += 1;
        }
        m
    }

    /// Each constant's dtype name and stored bytes.
    pub fn stored(&self) -> Vec<(String, crate::delegate::Bytes<'_>)> {
        self.constants
            .iter()
            .filter_map(|c| {
                let name = c.dtype.map_or_else(|| "unknown".to_owned(), scalar::name);
                Some((name, *c.bytes.as_ref().ok()?))
            })
            .collect()
    }
}
