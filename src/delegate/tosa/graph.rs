//! The verified `TosaGraph` and its blocks: regions hold basic blocks,
//! blocks hold operators over tensors and shapes named by string.

use std::collections::HashMap;

use crate::format::{Result, Span};
use crate::schema::tosa as fb;

/// The flatbuffer identifier at payload bytes 4..8.
pub const IDENTIFIER: &[u8; 4] = b"TOSA";

/// Verifies the whole payload as a `TosaGraph` and returns its root.
pub fn verify(payload: &[u8]) -> Result<fb::TosaGraph<'_>> {
    let span = Span {
        offset: 0,
        len: payload.len() as u64,
    };
    crate::delegate::flatbuffer::root::<fb::TosaGraph>(payload, span, "TosaGraph")
}

/// Why the identifier is not `TOSA`, if it is not: the graph may still
/// verify (and is then shown), but the runtime would not take it.
pub fn identifier_problem(payload: &[u8]) -> Option<String> {
    let id = payload.get(4..8).unwrap_or_default();
    (id != IDENTIFIER).then(|| {
        format!(
            "payload offset 4: flatbuffer identifier is \"{}\", expected TOSA",
            id.escape_ascii()
        )
    })
}

/// A basic block and where it is.
#[derive(Debug, Clone)]
pub struct Block<'a> {
    /// Position of its region in `TosaGraph.regions`.
    pub region: usize,
    /// Position in the region's `blocks`.
    pub index: usize,
    /// The region's name (empty when absent).
    pub region_name: &'a str,
    /// The block itself.
    pub block: fb::TosaBasicBlock<'a>,
    /// The block's tensors by name (the first of a name wins).
    pub tensors: HashMap<&'a str, usize>,
    /// The block's shapes by name.
    pub shapes: HashMap<&'a str, usize>,
}

impl<'a> Block<'a> {
    /// The block's name (empty when absent).
    pub fn name(&self) -> &'a str {
        self.block.name().unwrap_or("")
    }

    /// `region/block`, as `code.txt` and weight names say it.
    pub fn path(&self) -> String {
        format!("{}/{}", self.region_name, self.name())
    }

    /// Tensor `i`, if there is one.
    pub fn tensor(&self, i: usize) -> Option<fb::TosaTensor<'a>> {
        let t = self.block.tensors()?;
        (i < t.len()).then(|| t.get(i))
    }

    /// Shape `i`, if there is one.
    pub fn shape(&self, i: usize) -> Option<fb::TosaShape<'a>> {
        let s = self.block.shapes()?;
        (i < s.len()).then(|| s.get(i))
    }

    /// What operand `name` is: a tensor, a shape, or neither.
    pub fn operand(&self, name: &str) -> Operand<'a> {
        if let Some(t) = self.tensors.get(name).and_then(|&i| self.tensor(i)) {
            Operand::Tensor(t)
        } else if let Some(s) = self.shapes.get(name).and_then(|&i| self.shape(i)) {
            Operand::Shape(s)
        } else {
            Operand::Unknown
        }
    }

    /// Operators in order.
    pub fn operators(&self) -> impl Iterator<Item = fb::TosaOperator<'a>> + use<'a> {
        self.block.operators().into_iter().flatten()
    }
}

/// An operator's operand, found by name.
#[derive(Debug, Clone, Copy)]
pub enum Operand<'a> {
    /// A tensor of the block.
    Tensor(fb::TosaTensor<'a>),
    /// A shape of the block.
    Shape(fb::TosaShape<'a>),
    /// A name the block does not define.
    Unknown,
}

/// Every block of every region, in order.
pub fn blocks<'a>(g: fb::TosaGraph<'a>) -> Vec<Block<'a>> {
    let mut out = Vec::new();
    for (r, region) in g.regions().into_iter().flatten().enumerate() {
        for (index, block) in region.blocks().into_iter().flatten().enumerate() {
            let mut tensors = HashMap::new();
            for (i, t) in block.tensors().into_iter().flatten().enumerate() {
                tensors.entry(t.name().unwrap_or("")).or_insert(i);
            }
            let mut shapes = HashMap::new();
            for (i, s) in block.shapes().into_iter().flatten().enumerate() {
                shapes.entry(s.name().unwrap_or("")).or_insert(i);
            }
            out.push(Block {
                region: r,
                index,
                region_name: region.name().unwrap_or(""),
                block,
                tensors,
                shapes,
            });
        }
    }
    out
}

/// The operator's name (`CONV2D`), or its number.
pub fn op_name(op: fb::Op) -> String {
    op.variant_name()
        .map_or_else(|| format!("op{}", op.0), str::to_owned)
}
