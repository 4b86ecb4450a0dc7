//! The verified `XNNGraph` flatbuffer and its values by id.

use crate::format::{Result, Span};
use crate::schema::xnnpack as fb;

/// A tensor value of the graph.
#[derive(Debug, Clone)]
pub struct Value<'a> {
    /// Position in `XNNGraph.xvalues`.
    pub index: usize,
    /// The plain tensor value (for a quantized value, its `tensor_value`).
    pub tensor: fb::XNNTensorValue<'a>,
    /// The quantized wrapper, when the value is quantized.
    pub quantized: Option<fb::XNNQuantizedTensorValue<'a>>,
}

impl Value<'_> {
    /// The id nodes use (`id_out`).
    pub fn id(&self) -> u32 {
        self.tensor.id_out()
    }

    /// `dims`, empty when absent.
    pub fn dims(&self) -> Vec<u32> {
        self.tensor
            .dims()
            .map(|d| d.iter().collect())
            .unwrap_or_default()
    }
}

/// Positions in the graph's values by value id.
pub type ById = foldhash::HashMap<u32, usize>;

/// Verifies the flatbuffer at `span` of `payload` and returns its root.
pub fn verify<'a>(payload: &'a [u8], span: Span) -> Result<fb::XNNGraph<'a>> {
    crate::delegate::flatbuffer::root::<fb::XNNGraph>(payload, span, "XNNGraph")
}

/// The graph's tensor values in order, and each id's first value. Values
/// with no tensor are skipped: nothing can refer to them.
pub fn values<'a>(g: fb::XNNGraph<'a>) -> (Vec<Value<'a>>, ById) {
    let count = g.xvalues().map_or(0, |v| v.len());
    let mut out = Vec::with_capacity(count);
    let mut by_id = ById::with_capacity_and_hasher(count, Default::default());
    for (index, x) in g.xvalues().iter().flatten().enumerate() {
        let quantized = x.xvalue_union_as_xnnquantized_tensor_value();
        let tensor = match quantized {
            Some(q) => q.tensor_value(),
            None => x.xvalue_union_as_xnntensor_value(),
        };
        let Some(tensor) = tensor else { continue };
        by_id.entry(tensor.id_out()).or_insert(out.len());
        out.push(Value {
            index,
            tensor,
            quantized,
        });
    }
    (out, by_id)
}
