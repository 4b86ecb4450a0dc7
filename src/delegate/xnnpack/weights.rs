//! Constant values: where their bytes are, their names (layer and role of
//! the first node that uses them) and their quantization scales.

use serde::Serialize;

use super::datatype::{self, Storage};
use super::graph::{ById, Value};
use super::nodes::Node;
use super::weight_names::{self, Layout, Use};
use crate::delegate::{Bytes, Lookup};
use crate::format::Span;
use crate::schema::xnnpack as fb;

/// Quantization scales kept as bytes of their own.
#[derive(Debug, Clone)]
pub struct Scales<'a> {
    /// Where they are.
    pub bytes: Bytes<'a>,
    /// Number of scales.
    pub count: u64,
    /// True when stored as bfloat16 (4-bit group quantization), false for
    /// float32.
    pub bf16: bool,
    /// `constant_data` index of a scale blob; `None` for inline scales.
    pub buffer_index: Option<u32>,
}

/// A value's quantization parameters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Quant {
    /// `PerChannelQuant`, `PerTensorQuant`, `PerTokenDynamicQuant`,
    /// `PerChannelGroupQuant`, or the number of an unknown scheme.
    pub scheme: String,
    /// Per-channel schemes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel_dim: Option<i32>,
    /// Group quantization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_size: Option<i32>,
    /// Per-tensor scale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<f32>,
    /// Per-tensor zero point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zero_point: Option<i32>,
    /// Per-channel schemes: the number of scales.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_scales: Option<u64>,
    /// Per-token dynamic quantization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_nonbatch_dims: Option<i32>,
}

/// A constant value of the graph.
#[derive(Debug, Clone)]
pub struct Weight<'a> {
    /// File stem: `<node>-<op>.<role>` of the first user (`012-conv2d.filter`),
    /// or `unused.<id>`.
    pub name: String,
    /// The layer part of the name (`012-conv2d`), `None` when unused.
    pub layer: Option<String>,
    /// The role part (`filter`), `unused` when no node uses it.
    pub role: &'static str,
    /// Position in `XNNGraph.xvalues`.
    pub value_index: usize,
    /// The value id (`id_out`).
    pub value_id: u32,
    /// `constant_buffer_idx`.
    pub constant_index: u32,
    /// Element type.
    pub datatype: fb::XNNDatatype,
    /// Dimensions as stored.
    pub dims: Vec<u32>,
    /// Storage of the datatype, `None` when unknown.
    pub storage: Option<Storage>,
    /// Bytes the dims need and the `.npy` shape, when computable.
    pub size: Option<(u64, Vec<u64>)>,
    /// Where the bytes are; `Err` says why they cannot be shown.
    pub bytes: Result<Bytes<'a>, String>,
    /// Named-data key, if any.
    pub key: Option<&'a str>,
    /// Quantization, when the value is quantized.
    pub quant: Option<Quant>,
    /// Scales kept separately from the parameters, when there are any.
    pub scales: Option<Result<Scales<'a>, String>>,
    /// Nodes using the value, in node order.
    pub users: Vec<Use>,
    /// Stored versus PyTorch layout, where known.
    pub layout: Option<Layout>,
}

/// What the weights need to find their bytes.
pub struct Context<'a, 'n> {
    /// The payload.
    pub payload: &'a [u8],
    /// The verified graph.
    pub graph: fb::XNNGraph<'a>,
    /// The payload's constant data region.
    pub constant_data: Span,
    /// Named data.
    pub named: &'n dyn Lookup<'a>,
}

impl<'a> Context<'a, '_> {
    /// The bytes of `constant_data[idx]` (or, in old payloads,
    /// `constant_buffer[idx]`) and the named-data key holding them.
    fn constant(&self, idx: u32) -> Result<(Bytes<'a>, Option<&'a str>), String> {
        if let Some(table) = self.graph.constant_data().filter(|t| !t.is_empty()) {
            let Some(entry) = ((idx as usize) < table.len()).then(|| table.get(idx as usize))
            else {
                return Err(format!(
                    "constant index {idx} is out of range ({} constant_data entries)",
                    table.len()
                ));
            };
            if let Some(key) = entry.named_key().filter(|k| !k.is_empty()) {
                let len = self.named.len(key).ok_or_else(|| {
                    format!(
                        "named data key {key:?} is in neither the program nor an attached data file"
                    )
                })?;
                if entry.size() > len {
                    return Err(format!(
                        "constant_data[{idx}] says {} bytes, named data {key:?} has {len}",
                        entry.size()
                    ));
                }
                return Ok((Bytes::named(key, len), Some(key)));
            }
            let span = self
                .constant_data
                .sub(entry.offset(), entry.size(), || {
                    format!("constant_data[{idx}] in the payload's constant data")
                })
                .map_err(|e| e.to_string())?;
            return Ok((Bytes::Payload(span), None));
        }
        if let Some(buffers) = self.graph.constant_buffer().filter(|t| !t.is_empty()) {
            let Some(buffer) = ((idx as usize) < buffers.len()).then(|| buffers.get(idx as usize))
            else {
                return Err(format!(
                    "constant index {idx} is out of range ({} constant_buffer entries)",
                    buffers.len()
                ));
            };
            let storage = Span::of_vector(self.payload, buffer.storage().map(|s| s.bytes()));
            return storage
                .map(|s| (Bytes::Payload(s), None))
                .ok_or_else(|| format!("constant_buffer[{idx}] has no storage"));
        }
        Err(format!(
            "constant index {idx}, but the graph has neither constant_data nor constant_buffer"
        ))
    }
}

/// Every constant value with its users, in value order.
pub fn collect<'a>(
    cx: &Context<'a, '_>,
    nodes: &[Node],
    values: &[Value<'a>],
    by_id: &ById,
) -> Vec<Weight<'a>> {
    let users = weight_names::users(nodes, values, by_id);
    let mut out = Vec::new();
    for (value, users) in values.iter().zip(users) {
        let t = value.tensor;
        if t.constant_buffer_idx() == 0 {
            continue;
        }
        let (name, layer, role) = weight_names::name(users.first(), nodes.len(), t.id_out());
        let dims = value.dims();
        let storage = datatype::storage(t.datatype());
        let size = storage.and_then(|s| datatype::layout(s, &dims));
        let found = cx.constant(t.constant_buffer_idx());
        let key = found.as_ref().ok().and_then(|(_, k)| *k);
        let bytes = found.and_then(|(b, _)| match &size {
            Some((need, _)) => b.take(*need, "the value's dims"),
            None => Ok(b),
        });
        let first = users.first();
        out.push(Weight {
            layout: first.and_then(|u| weight_names::layout(u, nodes)),
            name,
            layer,
            role,
            value_index: value.index,
            value_id: t.id_out(),
            constant_index: t.constant_buffer_idx(),
            datatype: t.datatype(),
            dims,
            storage,
            size,
            bytes,
            key,
            quant: value.quantized.map(quant),
            scales: value.quantized.and_then(|q| scales(cx, q)),
            users,
        });
    }
    out
}

fn quant(q: fb::XNNQuantizedTensorValue<'_>) -> Quant {
    let scheme = q
        .quant_params_type()
        .variant_name()
        .map_or_else(|| q.quant_params_type().0.to_string(), str::to_owned);
    let mut out = Quant {
        scheme,
        ..Quant::default()
    };
    if let Some(p) = q.quant_params_as_per_channel_quant() {
        out.channel_dim = Some(p.channel_dim());
        out.num_scales = Some(match p.scale_buffer_idx() {
            0 => p.scale().map_or(0, |s| s.len() as u64),
            _ => u64::from(p.num_scales()),
        });
    } else if let Some(p) = q.quant_params_as_per_tensor_quant() {
        out.scale = Some(p.scale());
        out.zero_point = Some(p.zero_point());
    } else if let Some(p) = q.quant_params_as_per_token_dynamic_quant() {
        out.num_nonbatch_dims = Some(p.num_nonbatch_dims());
    } else if let Some(p) = q.quant_params_as_per_channel_group_quant() {
        out.channel_dim = Some(p.channel_dim());
        out.group_size = Some(p.group_size());
        out.num_scales = Some(match p.scale_buffer_idx() {
            0 => p
                .scale()
                .map(|s| s.len())
                .filter(|&n| n > 0)
                .or_else(|| p.scale_bf16().map(|s| s.len()))
                .unwrap_or(0) as u64,
            _ => u64::from(p.num_scales()),
        });
    }
    out
}

/// Scales stored apart from the quantization table: a `scale_buffer_idx`
/// blob, or an inline vector (a range of the flatbuffer).
fn scales<'a>(
    cx: &Context<'a, '_>,
    q: fb::XNNQuantizedTensorValue<'a>,
) -> Option<Result<Scales<'a>, String>> {
    let inline = |bytes: &'a [u8], count: usize, bf16| {
        (count > 0).then(|| {
            let span = Span::of_vector(cx.payload, Some(bytes))
                .ok_or_else(|| "inline scales lie outside the payload".to_owned())?;
            Ok(Scales {
                bytes: Bytes::Payload(span),
                count: count as u64,
                bf16,
                buffer_index: None,
            })
        })
    };
    let blob = |idx: u32, count: u32, bf16: bool| {
        let need = u64::from(count) * if bf16 { 2 } else { 4 };
        Some(
            cx.constant(idx)
                .and_then(|(b, _)| b.take(need, &format!("{count} scales")))
                .map(|bytes| Scales {
                    bytes,
                    count: u64::from(count),
                    bf16,
                    buffer_index: Some(idx),
                }),
        )
    };
    if let Some(p) = q.quant_params_as_per_channel_quant() {
        return match p.scale_buffer_idx() {
            0 => p.scale().and_then(|s| inline(s.bytes(), s.len(), false)),
            idx => blob(idx, p.num_scales(), false),
        };
    }
    let p = q.quant_params_as_per_channel_group_quant()?;
    match p.scale_buffer_idx() {
        0 => p
            .scale()
            .and_then(|s| inline(s.bytes(), s.len(), false))
            .or_else(|| {
                p.scale_bf16()
                    .and_then(|s| inline(s.bytes(), s.len(), true))
            }),
        idx => blob(idx, p.num_scales(), true),
    }
}
