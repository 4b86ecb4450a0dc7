//! `code.txt`, `graph.dot` and `graph.json` of an MPS graph.
//!
//! ```text
//! # MPSGraph 0 (mps_graph): 2 nodes, 5 values, inputs %0, outputs %4, 2 constants
//! 0: MPSConv2D %0:float32[1,3,4,4] input2=%1:float32[2,3,3,3] input3=%2:float32[2] -> %3:float32[1,2,2,2] stride_x=1 …
//! ```

use std::fmt::Write;

use serde_json::{Map, Value, json};

use super::Payload;
use super::constants::dtype_name;
use super::nodes::{self, Node, enum_json};
use crate::delegate::dot;
use crate::delegate::folder::Paths;
use crate::schema::mps as fb;

/// Most list items shown per attribute or shape.
const MAX_ITEMS: usize = 16;

fn list<T: ToString>(items: impl ExactSizeIterator<Item = T>) -> String {
    let n = items.len();
    let mut shown: Vec<String> = items.take(MAX_ITEMS).map(|x| x.to_string()).collect();
    if n > MAX_ITEMS {
        shown.push(format!("… {n} in all"));
    }
    shown.join(",")
}

/// `dtype[dims]` of value `id`, or nothing for an id no value has.
fn typed(g: fb::MPSGraph<'_>, id: i64) -> Option<String> {
    let v = g.mps_values()?;
    let i = usize::try_from(id).ok().filter(|&i| i < v.len())?;
    let t = v.get(i);
    let dims: Vec<i32> = t.dims().iter().flatten().collect();
    Some(format!(
        "{}[{}]",
        dtype_name(t.datatype()),
        list(dims.iter())
    ))
}

/// `%id:dtype[dims]` (`%id` alone for an id no value has; `none` below 0).
fn operand(g: fb::MPSGraph<'_>, id: i64) -> String {
    if id < 0 {
        return "none".into();
    }
    typed(g, id).map_or_else(|| format!("%{id}"), |t| format!("%{id}:{t}"))
}

fn attr(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("[{}]", list(a.iter())),
        other => other.to_string(),
    }
}

fn ids(v: Option<flatbuffers::Vector<'_, i32>>) -> String {
    let ids: Vec<String> = v.iter().flatten().map(|i| format!("%{i}")).collect();
    if ids.is_empty() {
        "none".into()
    } else {
        ids.join(" ")
    }
}

/// Inputs shown bare: the first, and the items of a list of inputs.
fn is_main(role: &str) -> bool {
    role == "input" || role == "input1" || role.starts_with("input.")
}

fn graph_type(g: fb::MPSGraph<'_>) -> Value {
    let t = g.graph_type();
    enum_json(t.variant_name(), t.0)
}

/// `code.txt`.
pub fn code(p: &Payload<'_>) -> String {
    let g = p.graph;
    let gt = graph_type(g);
    let mut out = format!(
        "# MPSGraph {} ({}): {} nodes, {} values, inputs {}, outputs {}, {} constants\n",
        g.version().unwrap_or(""),
        gt.as_str().map_or_else(|| gt.to_string(), str::to_owned),
        p.nodes.len(),
        g.mps_values().map_or(0, |v| v.len()),
        ids(g.input_ids()),
        ids(g.output_ids()),
        p.constants.len(),
    );
    for n in &p.nodes {
        line(&mut out, g, n);
    }
    out
}

fn line(out: &mut String, g: fb::MPSGraph<'_>, n: &Node) {
    let _ = write!(out, "{}: {}", n.index, n.op);
    for (role, id) in &n.inputs {
        if is_main(role) {
            let _ = write!(out, " {}", operand(g, *id));
        } else {
            let _ = write!(out, " {role}={}", operand(g, *id));
        }
    }
    if !n.outputs.is_empty() {
        let outs: Vec<String> = n.outputs.iter().map(|(_, id)| operand(g, *id)).collect();
        let _ = write!(out, " -> {}", outs.join(" "));
    }
    for (k, v) in &n.attrs {
        let _ = write!(out, " {k}={}", attr(v));
    }
    if let Some((lo, hi)) = &n.min_max {
        let _ = write!(out, " min={} max={}", attr(lo), attr(hi));
    }
    if n.fields.is_null() {
        out.push_str(" (not decoded)");
    }
    out.push('\n');
}

/// `graph.dot`, drawn by [`dot`].
pub fn dot(p: &Payload<'_>) -> String {
    let g = p.graph;
    let mut d = dot::Graph {
        name: "MPSGraph".into(),
        outputs: g
            .output_ids()
            .iter()
            .flatten()
            .filter_map(|i| u32::try_from(i).ok())
            .collect(),
        ..dot::Graph::default()
    };
    let constant: std::collections::HashSet<u32> = p.constants.iter().map(|c| c.id).collect();
    let label = |id: u32, d: &mut dot::Graph| {
        d.values.entry(id).or_insert_with(|| dot::Value {
            label: typed(g, i64::from(id))
                .map_or_else(|| format!("%{id}"), |t| format!("%{id} {t}")),
            constant: constant.contains(&id),
        });
    };
    for n in &p.nodes {
        let ids = |l: &[(String, i64)]| -> Vec<u32> {
            l.iter()
                .filter_map(|(_, i)| u32::try_from(*i).ok())
                .collect()
        };
        let op = dot::Op {
            label: format!("{}: {}", n.index, n.op),
            inputs: ids(&n.inputs),
            outputs: ids(&n.outputs),
        };
        for &v in op.inputs.iter().chain(&op.outputs) {
            label(v, &mut d);
        }
        d.ops.push(op);
    }
    for v in d.outputs.clone() {
        label(v, &mut d);
    }
    d.render()
}

fn tensor(t: fb::MPSTensor<'_>, path: Option<&String>) -> Value {
    let dt = t.datatype();
    let mut m = Map::new();
    m.insert("datatype".into(), enum_json(dt.variant_name(), dt.0));
    m.insert("num_dims".into(), json!(t.num_dims()));
    if let Some(d) = t.dims() {
        m.insert("dims".into(), json!(d.iter().collect::<Vec<_>>()));
    }
    m.insert(
        "constant_buffer_size".into(),
        json!(t.constant_buffer_size()),
    );
    if let Some(b) = t.constant_buffer() {
        let mut bm = Map::new();
        if let Some(s) = b.storage() {
            bm.insert("storage".into(), json!(s.bytes()));
        }
        m.insert("constant_buffer".into(), Value::Object(bm));
    }
    m.insert("segment_offset".into(), json!(t.segment_offset()));
    if let Some(p) = path {
        m.insert("ptefs_path".into(), json!(p));
    }
    Value::Object(m)
}

/// `graph.json`: the graph as `flatc --strict-json --defaults-json` prints
/// it, with `ptefs_path` on each constant value.
pub fn graph_json(p: &Payload<'_>, paths: &Paths) -> Value {
    let g = p.graph;
    let by_id: std::collections::HashMap<u32, usize> = p
        .constants
        .iter()
        .enumerate()
        .map(|(k, c)| (c.id, k))
        .collect();
    let mut m = Map::new();
    if let Some(v) = g.version() {
        m.insert("version".into(), json!(v));
    }
    if let Some(ns) = g.mps_nodes() {
        let nodes: Vec<Value> = ns
            .iter()
            .zip(&p.nodes)
            .map(|(n, d)| nodes::json(n, d))
            .collect();
        m.insert("mps_nodes".into(), Value::Array(nodes));
    }
    if let Some(vs) = g.mps_values() {
        let values: Vec<Value> = vs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let path = u32::try_from(i)
                    .ok()
                    .and_then(|i| by_id.get(&i))
                    .and_then(|k| paths.get(k));
                tensor(t, path)
            })
            .collect();
        m.insert("mps_values".into(), Value::Array(values));
    }
    for (k, v) in [
        ("input_ids", g.input_ids()),
        ("output_ids", g.output_ids()),
        ("constant_ids", g.constant_ids()),
    ] {
        if let Some(v) = v {
            m.insert(k.into(), json!(v.iter().collect::<Vec<_>>()));
        }
    }
    m.insert("graph_type".into(), graph_type(g));
    if let Some(s) = g.constant_segment() {
        m.insert(
            "constant_segment".into(),
            json!({"offset": s.offset(), "size": s.size()}),
        );
    }
    Value::Object(m)
}
