//! `graph.dot`: a method's instruction graph for Graphviz. Calls are
//! nodes (delegate calls as boxes), tensors are edges labelled with their
//! id, type and shape; method inputs, stored tensors and buffers read
//! before any write are nodes of their own.

use std::collections::HashSet;
use std::fmt::Write;

use super::quote;
use crate::format::{NAME_LIMIT, clip};
use crate::meta::dataflow::{Call, Graph, Node, Origin};
use crate::schema::program as fb;
use crate::tree::render::code_txt;

fn id(node: &Node) -> String {
    match node {
        Node::Call(c, n) => format!("c{c}_{n}"),
        Node::Value(v) => format!("v{v}"),
        Node::Outputs => "outputs".to_owned(),
    }
}

/// `%5 f32[64,3,3,3]`.
fn tensor_label(plan: fb::ExecutionPlan<'_>, v: u32) -> String {
    let t = crate::meta::io::value(plan, i64::from(v)).and_then(|x| x.val_as_tensor());
    match t {
        Some(t) => code_txt::tensor(i64::from(v), t, &mut HashSet::new()).replacen(':', " ", 1),
        None => format!("%{v}"),
    }
}

/// Renders `g`, the graph of `plan` shown as method `name`;
/// `delegate_dirs` names each delegate's directory.
pub fn render(
    name: &str,
    plan: fb::ExecutionPlan<'_>,
    g: &Graph,
    delegate_dirs: &[String],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(&clip(name, NAME_LIMIT)));
    out.push_str("  rankdir=TB;\n  node [fontname=\"monospace\"];\n  edge [fontname=\"monospace\", fontsize=10];\n");
    for (v, origin) in &g.sources {
        let fqn = crate::meta::io::value(plan, i64::from(*v))
            .and_then(|x| x.val_as_tensor())
            .and_then(|t| t.extra_tensor_info())
            .and_then(crate::format::strings::fully_qualified_name)
            .map(|f| format!(" {}", clip(&f.show(), NAME_LIMIT)))
            .unwrap_or_default();
        let (what, shape) = match origin {
            Origin::Input => ("input", "invhouse"),
            Origin::Stored => ("stored", "note"),
            Origin::Buffer => ("buffer", "cylinder"),
        };
        let label = format!("%{v} {what}{fqn}");
        let _ = writeln!(out, "  v{v} [shape={shape}, label={}];", quote(&label));
    }
    for (node, call) in &g.calls {
        let (label, shape) = match call {
            Call::Kernel(op) => (op.clone(), "ellipse"),
            Call::Delegate(d) => {
                let dir = delegate_dirs
                    .get(*d as usize)
                    .cloned()
                    .unwrap_or_else(|| d.to_string());
                (format!("delegate {dir}"), "box")
            }
        };
        let Node::Call(c, n) = node else { continue };
        let label = format!("{c}.{n}: {label}");
        let _ = writeln!(
            out,
            "  {} [shape={shape}, label={}];",
            id(node),
            quote(&label)
        );
    }
    if g.edges.iter().any(|e| e.1 == Node::Outputs) {
        out.push_str("  outputs [shape=house, label=\"outputs\"];\n");
    }
    for (from, to, v) in &g.edges {
        let _ = writeln!(
            out,
            "  {} -> {} [label={}];",
            id(from),
            id(to),
            quote(&tensor_label(plan, *v))
        );
    }
    out.push_str("}\n");
    out
}
