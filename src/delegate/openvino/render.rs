//! The IR's `graph.json`, `code.txt` and `graph.dot`.
//!
//! ```text
//! # OpenVINO IR "Model0" version 11: 6 layers, 5 edges, 2 constants
//! 3 FullyConnected "aten_addmm_default/aten.addmm.default/Add" %0.0 %1.0 %2.0 -> %3.3:FP32[1,8] output_type=f32
//! ```
//! Each input names the producing layer and port (`%layer.port`), each
//! output its own with precision and dims.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::{Value, json};

use super::Payload;
use super::ir::{Model, Port};
use crate::delegate::folder::Paths;
use crate::escape::dot_quote as quote;

/// Most dims shown per port, so a line does not grow with a hostile rank.
const MAX_DIMS: usize = 16;

fn port_label(p: &Port) -> String {
    let mut dims: Vec<&str> = p.dims.iter().take(MAX_DIMS).map(String::as_str).collect();
    if p.dims.len() > MAX_DIMS {
        dims.push("…");
    }
    format!(
        "{}[{}]",
        p.precision.as_deref().unwrap_or("?"),
        dims.join(",")
    )
}

/// The producer of each (layer, port) input.
fn producers(m: &Model) -> HashMap<(&str, &str), (&str, &str)> {
    m.edges
        .iter()
        .map(|e| {
            (
                (e.to_layer.as_str(), e.to_port.as_str()),
                (e.from_layer.as_str(), e.from_port.as_str()),
            )
        })
        .collect()
}

/// `code.txt`: a heading, then a line per layer in IR order.
pub fn code(m: &Model, constants: usize) -> String {
    let from = producers(m);
    let mut out = format!(
        "# OpenVINO IR {:?} version {}: {} layers, {} edges, {} constants\n",
        m.name,
        m.version,
        m.layers.len(),
        m.edges.len(),
        constants
    );
    for l in &m.layers {
        let _ = write!(out, "{} {} {:?}", l.id, l.kind, l.name);
        for p in &l.inputs {
            match from.get(&(l.id.as_str(), p.id.as_str())) {
                Some((fl, fp)) => {
                    let _ = write!(out, " %{fl}.{fp}");
                }
                None => out.push_str(" ?"),
            }
        }
        if !l.outputs.is_empty() {
            out.push_str(" ->");
            for p in &l.outputs {
                let _ = write!(out, " %{}.{}:{}", l.id, p.id, port_label(p));
            }
        }
        for (k, v) in &l.data {
            let v = v.as_str().unwrap_or_default();
            // Quote values that would not read as one word.
            if v.is_empty() || v.contains(char::is_whitespace) {
                let _ = write!(out, " {k}={v:?}");
            } else {
                let _ = write!(out, " {k}={v}");
            }
        }
        out.push('\n');
    }
    out
}

/// `graph.dot`: a node per layer, an edge per IR edge labelled with the
/// producing port's precision and dims.
pub fn dot(m: &Model) -> String {
    let mut out = String::from("digraph openvino {\n  rankdir=TB;\n  node [shape=box];\n");
    let mut ports: HashMap<(&str, &str), &Port> = HashMap::new();
    for l in &m.layers {
        let shape = match l.kind.as_str() {
            "Const" => "note",
            "Parameter" | "Result" => "ellipse",
            _ => "box",
        };
        let label = format!("{}: {}\n{}", l.id, l.kind, l.name);
        let _ = writeln!(
            out,
            "  {} [label={}, shape={shape}];",
            quote(&format!("L{}", l.id)),
            quote(&label)
        );
        for p in &l.outputs {
            ports.insert((l.id.as_str(), p.id.as_str()), p);
        }
    }
    for e in &m.edges {
        let label = ports
            .get(&(e.from_layer.as_str(), e.from_port.as_str()))
            .map(|p| port_label(p))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} -> {} [label={}];",
            quote(&format!("L{}", e.from_layer)),
            quote(&format!("L{}", e.to_layer)),
            quote(&label)
        );
    }
    out.push_str("}\n");
    out
}

/// `graph.json`: the IR's layers and edges, each constant's layer with the
/// path of its `.bin` (`ptefs_path`).
pub fn graph_json(p: &Payload<'_>, m: &Model, paths: &Paths) -> Value {
    let mut layers: Vec<Value> = m
        .layers
        .iter()
        .map(|l| serde_json::to_value(l).unwrap_or(Value::Null))
        .collect();
    for c in &p.consts {
        if let (Some(Value::Object(o)), Some(path)) = (layers.get_mut(c.layer), paths.get(&c.layer))
        {
            o.insert("ptefs_path".into(), json!(path));
        }
    }
    json!({
        "name": m.name,
        "version": m.version,
        "layers": layers,
        "edges": m.edges,
    })
}
