//! `code.txt` of an XNNPACK graph: one line per node, deterministic.
//!
//! ```text
//! # XNNGraph 0: 67 nodes, 174 values, inputs %0, outputs %173, 106 constants
//! 1: conv2d %1:fp32[1,224,224,3] filter=%2:fp32[32,3,3,3] bias=%4:fp32[32] -> %3:fp32[1,112,112,32] kernel=3x3 stride=2x2 dilation=1x1 padding=1,1,1,1 group_input_channels=3 group_output_channels=32 groups=1 min=0 max=6
//! ```
//! The main input(s) print bare, other inputs as `role=%id`; each id with
//! its datatype and dims (`?` when no value has that id).

use std::collections::HashMap;
use std::fmt::Write;

use super::{Field, Node, Payload, Value, datatype};

/// The text of `code.txt`.
pub fn render(p: &Payload<'_>) -> String {
    // Each value's `:dtype[dims]`, written once however often it is used.
    let mut labels: HashMap<u32, String> = HashMap::with_capacity(p.values.len());
    for v in p.values.iter().rev() {
        labels.insert(v.id(), label(v));
    }
    let g = p.graph;
    let mut out = String::with_capacity(64 + p.nodes.len() * 160);
    let _ = write!(
        out,
        "# XNNGraph {}: {} nodes, {} values, inputs ",
        g.version().unwrap_or(""),
        p.nodes.len(),
        p.values.len(),
    );
    ids(&mut out, g.input_ids());
    out.push_str(", outputs ");
    ids(&mut out, g.output_ids());
    let _ = writeln!(out, ", {} constants", p.weights.len());
    for n in &p.nodes {
        line(&mut out, n, &labels);
    }
    out
}

fn ids(out: &mut String, v: Option<flatbuffers::Vector<'_, u32>>) {
    let mut any = false;
    for (k, id) in v.iter().flatten().enumerate() {
        let sep = if k == 0 { "" } else { " " };
        let _ = write!(out, "{sep}%{id}");
        any = true;
    }
    if !any {
        out.push_str("none");
    }
}

/// Most dims shown per use of a value: nodes may name one value a million
/// times, so a line must not grow with its rank.
const MAX_DIMS: usize = 16;

/// `:dtype[d0,d1,…]` of a value, at most [`MAX_DIMS`] dims.
pub(super) fn label(v: &Value<'_>) -> String {
    let mut s = format!(":{}[", datatype::short(v.tensor.datatype()));
    let dims = v.tensor.dims();
    for (k, d) in dims
        .iter()
        .flat_map(|d| d.iter().take(MAX_DIMS))
        .enumerate()
    {
        let sep = if k == 0 { "" } else { "," };
        let _ = write!(s, "{sep}{d}");
    }
    let rank = dims.map_or(0, |d| d.len());
    if rank > MAX_DIMS {
        let _ = write!(s, ",… {rank} dims");
    }
    s.push(']');
    s
}

/// ` role=%id:dtype[dims]` (no `role=` for `bare`).
fn value(out: &mut String, role: &str, bare: bool, id: u32, labels: &HashMap<u32, String>) {
    out.push(' ');
    if !bare {
        out.push_str(role);
        out.push('=');
    }
    let _ = write!(out, "%{id}");
    out.push_str(labels.get(&id).map_or(":?", String::as_str));
}

fn float(v: f32) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v}")
    }
}

fn line(out: &mut String, n: &Node, labels: &HashMap<u32, String>) {
    let _ = write!(out, "{}: {}", n.index, n.short);
    for (role, id) in n.inputs() {
        value(out, role, role.starts_with("input"), id, labels);
    }
    out.push_str(" ->");
    for (role, id) in n.outputs() {
        value(out, role, role == "output", id, labels);
    }
    for a in attributes(n) {
        out.push(' ');
        out.push_str(&a);
    }
    if let Some((lo, hi)) = n.output_min_max {
        let _ = write!(out, " min={} max={}", float(lo), float(hi));
    }
    out.push('\n');
}

/// Attributes, with height/width pairs and the four paddings joined.
fn attributes(n: &Node) -> Vec<String> {
    let get = |k: &str| {
        n.fields.iter().find_map(|(f, v)| match v {
            Field::U32(x) if *f == k => Some(*x),
            _ => None,
        })
    };
    let pairs = [
        ("kernel", "kernel_height", "kernel_width"),
        ("pool", "pooling_height", "pooling_width"),
        ("stride", "subsampling_height", "subsampling_width"),
        ("stride", "stride_height", "stride_width"),
        ("dilation", "dilation_height", "dilation_width"),
        ("adjustment", "adjustment_height", "adjustment_width"),
        ("size", "new_height", "new_width"),
    ];
    let mut used: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (name, h, w) in pairs {
        if let (Some(a), Some(b)) = (get(h), get(w)) {
            if name != "adjustment" || a != 0 || b != 0 {
                out.push(format!("{name}={a}x{b}"));
            }
            used.extend([h, w]);
        }
    }
    let pads = [
        "padding_top",
        "padding_right",
        "padding_bottom",
        "padding_left",
    ];
    if let [Some(t), Some(r), Some(b), Some(l)] = pads.map(get) {
        out.push(format!("padding={t},{r},{b},{l}"));
        used.extend(pads);
    }
    for (k, v) in n.attributes() {
        if used.contains(k) || (*k == "flags" && *v == Field::U32(0)) || *k == "num_dims" {
            continue;
        }
        let v = match v {
            Field::U32(x) if *k == "flags" => format!("{x:#x}"),
            Field::U32(x) => x.to_string(),
            Field::F32(x) => float(*x),
            Field::List(None) => continue,
            Field::List(Some(xs)) => {
                let xs: Vec<String> = xs.iter().map(u32::to_string).collect();
                format!("[{}]", xs.join(","))
            }
        };
        out.push(format!("{k}={v}"));
    }
    out
}
