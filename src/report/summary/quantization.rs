//! How the weights are stored: per weight its stored type, quantization
//! scheme, bits and compression against float32; and the call-out for a
//! model whose weights are all float32 although a quantizer's operators
//! are in it (quantization that silently did not happen).

use serde::Serialize;

use super::coverage::MethodCoverage;
use crate::report::stats::Elem;
use crate::report::stored::Stored;
use crate::report::stored::{Name, Names};

/// The quantization summary.
#[derive(Debug, Clone, Serialize)]
pub struct Quantization {
    /// Each weight (tensors other than scales).
    pub weights: Vec<WeightQuant>,
    /// Operators of the program or its delegates that quantize or
    /// dequantize.
    pub quantizer_ops: Vec<String>,
    /// True when every weight of two or more dimensions is float32.
    pub all_fp32: bool,
    /// Set when `all_fp32` although `quantizer_ops` is not empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Bytes of the weights and their scales.
    pub stored_bytes: u64,
    /// Bytes the weights would take as float32.
    pub fp32_bytes: u64,
    /// `fp32_bytes / stored_bytes`.
    pub compression: f64,
}

/// One weight.
#[derive(Debug, Clone, Serialize)]
pub struct WeightQuant {
    /// Its path in the tree.
    pub path: Name,
    /// Its name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// Stored element type.
    pub dtype: Name,
    /// `none`, `per-tensor`, `per-channel`, `per-group`, or how the
    /// delegate names it.
    pub scheme: Name,
    /// Group size, for group schemes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u64>,
    /// Bits per stored element (0 when unknown).
    pub bits: u32,
    /// Stored bytes.
    pub bytes: u64,
    /// Bytes of its scales.
    pub scale_bytes: u64,
    /// Elements × 4.
    pub fp32_bytes: u64,
    /// `fp32_bytes / (bytes + scale_bytes)`.
    pub compression: f64,
}

fn bits(s: &Stored) -> u32 {
    let Some((descr, raw)) = &s.numpy else {
        return 0;
    };
    let dtype = s.dtype.as_deref().unwrap_or("");
    Elem::of(descr, *raw, dtype).map_or(0, Elem::bits)
}

fn is_float32(s: &Stored) -> bool {
    matches!(&s.numpy, Some((d, false)) if &**d == "<f4")
}

/// How `s` is quantized: `none` (floating point), `integer`,
/// `per-tensor`, `per-channel`, `per-group`, or a delegate's own name;
/// with the group size of a group scheme.
pub fn scheme(s: &Stored) -> (String, Option<u64>) {
    if let Some(q) = &s.quant {
        let name = match q.scheme.as_str() {
            "PerChannelQuant" => "per-channel".to_owned(),
            "PerTensorQuant" => "per-tensor".to_owned(),
            "PerChannelGroupQuant" => "per-group".to_owned(),
            other => other.to_owned(),
        };
        return (name, q.group_size);
    }
    for op in &s.ops {
        if op.contains("dequantize_per_channel_group") {
            return ("per-group".to_owned(), None);
        }
        if op.contains("dequantize_per_channel") {
            return ("per-channel".to_owned(), None);
        }
        if op.contains("dequantize_per_tensor") {
            return ("per-tensor".to_owned(), None);
        }
    }
    let float = matches!(&s.numpy, Some((d, _)) if d.contains('f'))
        || s.dtype
            .as_deref()
            .is_some_and(|d| d.eq_ignore_ascii_case("bfloat16"));
    if float {
        ("none".to_owned(), None)
    } else {
        ("integer".to_owned(), None)
    }
}

pub(super) fn summarize(items: &[Stored], coverage: &[MethodCoverage]) -> Quantization {
    let mut weights = Vec::with_capacity(items.len());
    let mut names = Names::default();
    for s in items.iter().filter(|s| s.is_tensor() && !s.is_scale) {
        let (scheme, group_size) = scheme(s);
        let scale_bytes = s
            .quant
            .as_ref()
            .and_then(|q| q.scales.as_ref())
            .map_or(0, |(_, span, _)| span.len);
        let fp32_bytes = s.elements().unwrap_or(0) * 4;
        let stored = s.span.len + scale_bytes;
        weights.push(WeightQuant {
            path: s.path.clone(),
            name: s.name.clone(),
            dtype: s.dtype.clone().unwrap_or_else(|| names.get("")),
            scheme: names.get(&scheme),
            group_size,
            bits: bits(s),
            bytes: s.span.len,
            scale_bytes,
            fp32_bytes,
            compression: ratio(fp32_bytes, stored),
        });
    }
    let mut quantizer_ops: Vec<String> = coverage
        .iter()
        .flat_map(|m| {
            m.kernels
                .iter()
                .map(|k| k.op.clone())
                .chain(m.delegates.iter().flat_map(|d| d.ops.keys().cloned()))
        })
        .filter(|op| op.to_ascii_lowercase().contains("quantize"))
        .collect();
    quantizer_ops.sort();
    quantizer_ops.dedup();
    let matrices: Vec<&Stored> = items
        .iter()
        .filter(|s| s.is_tensor() && !s.is_scale)
        .filter(|s| s.sizes.as_ref().is_some_and(|d| d.len() >= 2))
        .collect();
    let all_fp32 = !matrices.is_empty() && matrices.iter().all(|s| is_float32(s));
    let warning = (all_fp32 && !quantizer_ops.is_empty()).then(|| {
        format!(
            "every weight is float32, yet the program calls {}: quantization was set up but \
             the weights were not stored quantized",
            quantizer_ops.join(", ")
        )
    });
    let stored_bytes = weights.iter().map(|w| w.bytes + w.scale_bytes).sum();
    let fp32_bytes = weights.iter().map(|w| w.fp32_bytes).sum();
    Quantization {
        weights,
        quantizer_ops,
        all_fp32,
        warning,
        stored_bytes,
        fp32_bytes,
        compression: ratio(fp32_bytes, stored_bytes),
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        (a as f64 / b as f64 * 1000.0).round() / 1000.0
    }
}
