//! The verified `MLXGraph` and its instructions, each rendered once as
//! JSON through the generated serde code (one printer for every op), and
//! its tensor slots: a Tid's dtype and shape from `tensor_meta`.

use serde_json::{Value, json};

use crate::format::{Result, Span, scalar};
use crate::schema::ScalarType;
use crate::schema::mlx as fb;

/// Verifies the graph at `span` of `payload`.
pub fn verify(payload: &[u8], span: Span) -> Result<fb::MLXGraph<'_>> {
    crate::delegate::flatbuffer::root::<fb::MLXGraph>(payload, span, "MLXGraph")
}

/// One instruction of a chain.
#[derive(Debug, Clone)]
pub struct Instr {
    /// Chain index.
    pub chain: usize,
    /// Position in the chain.
    pub index: usize,
    /// Op name (`AddmmNode`), or the union tag as a number for a tag this
    /// schema does not know.
    pub op: String,
    /// Union tag.
    pub op_type: u8,
    /// The op table's fields (`null` for an unknown op).
    pub fields: Value,
}

/// Every instruction of every chain, in order.
pub fn instructions(g: fb::MLXGraph<'_>) -> Vec<Instr> {
    let mut out = Vec::new();
    for (chain, c) in g.instruction_chains().iter().enumerate() {
        for (index, i) in c.instructions().iter().enumerate() {
            let t = i.op_type();
            // The generated serializer panics on tags it does not know
            // (the verifier lets unknown union tags through), so only
            // known ones reach it.
            let known = t != fb::OpNode::NONE && t.variant_name().is_some();
            let fields = if known {
                serde_json::to_value(i)
                    .ok()
                    .and_then(|mut v| v.get_mut("op").map(Value::take))
                    .unwrap_or(Value::Null)
            } else {
                Value::Null
            };
            out.push(Instr {
                chain,
                index,
                op: t
                    .variant_name()
                    .map_or_else(|| format!("op{}", t.0), str::to_owned),
                op_type: t.0,
                fields,
            });
        }
    }
    out
}

/// The slot type's name, or its number.
pub fn slot_type(t: fb::SlotType) -> Value {
    t.variant_name().map_or_else(|| json!(t.0), |n| json!(n))
}

/// The scalar type of a tensor's metadata, as ExecuTorch numbers it.
pub fn scalar_type(m: &fb::TensorMeta<'_>) -> ScalarType {
    ScalarType(m.scalar_type())
}

/// A tensor's dims: static sizes, `-1` for dynamic ones.
pub fn dims(m: &fb::TensorMeta<'_>) -> Vec<i64> {
    m.shape().iter().map(|d| i64::from(d.value())).collect()
}

/// Most dims shown in a label, so a line does not grow with a hostile rank.
const MAX_DIMS: usize = 16;

/// `%id` with `:dtype[dims]` when the slot has metadata.
pub fn tid_label(g: fb::MLXGraph<'_>, id: u64) -> String {
    let meta = g.tensor_meta().and_then(|v| {
        usize::try_from(id)
            .ok()
            .filter(|&i| i < v.len())
            .map(|i| v.get(i))
    });
    match meta {
        Some(m) => {
            let d = dims(&m);
            let mut shown: Vec<String> = d.iter().take(MAX_DIMS).map(i64::to_string).collect();
            if d.len() > MAX_DIMS {
                shown.push("…".into());
            }
            format!(
                "%{id}:{}[{}]",
                scalar::name(scalar_type(&m)).to_lowercase(),
                shown.join(",")
            )
        }
        None => format!("%{id}"),
    }
}
