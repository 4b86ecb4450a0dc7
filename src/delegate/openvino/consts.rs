//! The weights of an IR: each `Const` layer's `<data element_type shape
//! offset size>` points into the payload's weights region; its bytes are
//! served from there, typed by the element type and shape, with the layers
//! its output feeds as its users.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::ir::{Layer, Model};
use crate::delegate::Bytes;
use crate::delegate::folder::Npy;
use crate::format::Span;

/// One `Const` layer's weight.
#[derive(Debug, Clone)]
pub struct Const<'a> {
    /// The layer's position in the IR.
    pub layer: usize,
    /// File stem: the layer's name, made a plain file name.
    pub stem: String,
    /// `<data element_type>`.
    pub element_type: String,
    /// `<data shape>` read as numbers (`None` if it does not read).
    pub shape: Option<Vec<u64>>,
    /// `<data offset>` and `<data size>` as read.
    pub offset: Option<u64>,
    /// See `offset`.
    pub size: Option<u64>,
    /// Where the bytes are, or why they cannot be shown.
    pub bytes: Result<Bytes<'a>, String>,
    /// How NumPy views them, when it can.
    pub npy: Option<Npy>,
    /// Layers fed by the constant: `{layer, type, name, port}`.
    pub users: Vec<Value>,
}

/// Bytes per element, NumPy descr and whether the `.npy` widens bf16, of
/// an OpenVINO element type; `None` for types NumPy cannot hold (packed
/// 4-bit and 1-bit types, fp8, strings).
pub fn numpy(element_type: &str) -> Option<(u64, &'static str, bool)> {
    Some(match element_type {
        "boolean" => (1, "|b1", false),
        "u8" => (1, "|u1", false),
        "i8" => (1, "|i1", false),
        "f16" => (2, "<f2", false),
        "bf16" => (2, "<f4", true),
        "u16" => (2, "<u2", false),
        "i16" => (2, "<i2", false),
        "f32" => (4, "<f4", false),
        "u32" => (4, "<u4", false),
        "i32" => (4, "<i4", false),
        "f64" => (8, "<f8", false),
        "u64" => (8, "<u8", false),
        "i64" => (8, "<i8", false),
        _ => return None,
    })
}

/// `"8, 8"` as numbers; `""` is a scalar.
fn shape(s: &str) -> Option<Vec<u64>> {
    if s.trim().is_empty() {
        return Some(Vec::new());
    }
    s.split(',').map(|d| d.trim().parse().ok()).collect()
}

/// A layer name as a file stem: characters other than letters, digits,
/// `_`, `-` and `.` become `_`, and a leading `.` too.
pub fn stem(name: &str, id: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.starts_with('.') {
        s.replace_range(..1, "_");
    }
    if s.is_empty() {
        s = format!("layer{id}");
    }
    s
}

/// Every `Const` layer's weight, its bytes inside `consts` (the weights
/// region of the payload).
pub fn collect<'a>(model: &Model, consts: Span) -> Vec<Const<'a>> {
    let by_id: HashMap<&str, &Layer> = model.layers.iter().map(|l| (l.id.as_str(), l)).collect();
    let mut users: HashMap<&str, Vec<Value>> = HashMap::new();
    for e in &model.edges {
        let to = by_id.get(e.to_layer.as_str());
        users.entry(e.from_layer.as_str()).or_default().push(json!({
            "layer": e.to_layer,
            "type": to.map(|l| l.kind.as_str()),
            "name": to.map(|l| l.name.as_str()),
            "port": e.to_port,
        }));
    }
    model
        .layers
        .iter()
        .enumerate()
        .filter(|(_, l)| l.kind == "Const")
        .map(|(i, l)| {
            let et = l.attr("element_type").unwrap_or("").to_owned();
            let shape = l.attr("shape").and_then(shape);
            let num = |k: &str| l.attr(k).and_then(|v| v.trim().parse::<u64>().ok());
            let (offset, size) = (num("offset"), num("size"));
            let bytes = match (offset, size) {
                (Some(o), Some(s)) => consts
                    .sub(o, s, || {
                        format!(
                            "Const layer {} ({:?}): offset {o} and size {s} in the weights region",
                            l.id, l.name
                        )
                    })
                    .map(Bytes::Payload)
                    .map_err(|e| e.to_string()),
                _ => Err(format!(
                    "Const layer {} ({:?}): no numeric offset and size in <data>",
                    l.id, l.name
                )),
            };
            let npy = match (numpy(&et), &shape, &bytes) {
                (Some((elem, descr, widen)), Some(dims), Ok(b)) => {
                    let n = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
                    n.and_then(|n| n.checked_mul(elem))
                        .filter(|&need| need == b.len())
                        .map(|nbytes| Npy {
                            descr,
                            shape: dims.clone(),
                            nbytes,
                            widen,
                        })
                }
                _ => None,
            };
            Const {
                layer: i,
                stem: stem(&l.name, &l.id),
                element_type: et,
                shape,
                offset,
                size,
                bytes,
                npy,
                users: users.remove(l.id.as_str()).unwrap_or_default(),
            }
        })
        .collect()
}
