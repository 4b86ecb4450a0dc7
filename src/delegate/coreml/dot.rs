//! `graph.dot`: each function as a Graphviz cluster, one node per input
//! and per op, an edge from the op (or input) that makes a value to each op
//! that uses it, labelled with the argument; `const` ops are boxes.

use std::collections::HashMap;
use std::fmt::Write;

use crate::escape::dot_quote as quote;

use super::{Payload, mil};

/// The text of `graph.dot`.
pub fn render(p: &Payload<'_>) -> String {
    let mut out =
        String::from("digraph coreml {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n");
    for (k, (fname, f, _, block)) in p.functions().into_iter().enumerate() {
        let _ = writeln!(
            out,
            "  subgraph cluster_{k} {{\n    label={};",
            quote(fname)
        );
        // The node that makes each value.
        let mut makers: HashMap<&str, String> = HashMap::new();
        for (i, input) in f.inputs.iter().enumerate() {
            let id = format!("f{k}_in{i}");
            let label = format!("{}: {}", input.name, mil::type_text(input.r#type.as_ref()));
            let _ = writeln!(out, "    {id} [shape=ellipse, label={}];", quote(&label));
            makers.insert(input.name.as_str(), id);
        }
        for (i, op) in block.operations.iter().enumerate() {
            let id = format!("f{k}_op{i}");
            let shape = if op.r#type == "const" { "box" } else { "oval" };
            let outs: Vec<String> = op
                .outputs
                .iter()
                .map(|o| format!("{}: {}", o.name, mil::type_text(o.r#type.as_ref())))
                .collect();
            let label = format!("{i:03} {}\n{}", op.r#type, outs.join("\n"));
            let _ = writeln!(out, "    {id} [shape={shape}, label={}];", quote(&label));
            for (arg, a) in &op.inputs {
                for name in mil::bound_names(a).flatten() {
                    if let Some(from) = makers.get(name) {
                        let _ = writeln!(out, "    {from} -> {id} [label={}];", quote(arg));
                    }
                }
            }
            for o in &op.outputs {
                makers.insert(o.name.as_str(), id.clone());
            }
        }
        for (i, name) in block.outputs.iter().enumerate() {
            let id = format!("f{k}_out{i}");
            let _ = writeln!(out, "    {id} [shape=ellipse, label={}];", quote(name));
            if let Some(from) = makers.get(name.as_str()) {
                let _ = writeln!(out, "    {from} -> {id};");
            }
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}
