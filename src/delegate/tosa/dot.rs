//! `graph.dot` of a TOSA graph: Graphviz, one cluster per block, a box per
//! operator, an edge per tensor from the operator making it to each using
//! it, labelled with its name, type and dims; block inputs and constants
//! as small nodes of their own.

use std::collections::HashMap;
use std::fmt::Write;

use super::Payload;
use super::dtype;
use super::graph::{Block, Operand, op_name};

pub use crate::escape::dot_quote as quoted;

/// `name:type[dims]` of an operand, dims bounded.
fn label(b: &Block<'_>, name: &str) -> String {
    match b.operand(name) {
        Operand::Tensor(t) => {
            let shape: Vec<String> = t
                .shape()
                .into_iter()
                .flatten()
                .take(8)
                .map(|d| d.to_string())
                .collect();
            format!("{name}\n{}[{}]", dtype::short(t.type_()), shape.join(","))
        }
        Operand::Shape(s) => format!("{name}\nshape[{}]", s.rank()),
        Operand::Unknown => format!("{name}\n?"),
    }
}

/// The text of `graph.dot`.
pub fn render(p: &Payload<'_>) -> String {
    let mut out = String::from(
        "digraph tosa {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n",
    );
    for (bi, b) in p.blocks.iter().enumerate() {
        block(&mut out, bi, b);
    }
    out.push_str("}\n");
    out
}

fn block(out: &mut String, bi: usize, b: &Block<'_>) {
    let _ = writeln!(
        out,
        "  subgraph cluster_{bi} {{\n    label={};",
        quoted(&b.path())
    );
    // The operator making each name; block inputs and names no operator
    // makes become nodes of their own.
    let mut maker: HashMap<&str, String> = HashMap::new();
    for (k, name) in b.block.inputs().into_iter().flatten().enumerate() {
        let id = format!("b{bi}_in{k}");
        let _ = writeln!(
            out,
            "    {id} [shape=ellipse, label={}];",
            quoted(&label(b, name))
        );
        maker.entry(name).or_insert(id);
    }
    for (k, op) in b.operators().enumerate() {
        let id = format!("b{bi}_op{k}");
        let _ = writeln!(
            out,
            "    {id} [shape=box, style=rounded, label={}];",
            quoted(&format!("{k:03} {}", op_name(op.op())))
        );
        for name in op.outputs().into_iter().flatten() {
            maker.insert(name, id.clone());
        }
    }
    let mut orphans = 0usize;
    for (k, op) in b.operators().enumerate() {
        for name in op.inputs().into_iter().flatten() {
            let from = match maker.get(name) {
                Some(id) => id.clone(),
                None => {
                    let id = format!("b{bi}_x{orphans}");
                    orphans += 1;
                    let _ = writeln!(
                        out,
                        "    {id} [shape=note, label={}];",
                        quoted(&label(b, name))
                    );
                    id
                }
            };
            let _ = writeln!(
                out,
                "    {from} -> b{bi}_op{k} [label={}];",
                quoted(&label(b, name))
            );
        }
    }
    for (k, name) in b.block.outputs().into_iter().flatten().enumerate() {
        let id = format!("b{bi}_out{k}");
        let _ = writeln!(
            out,
            "    {id} [shape=ellipse, label={}];",
            quoted(&label(b, name))
        );
        if let Some(from) = maker.get(name) {
            let _ = writeln!(out, "    {from} -> {id};");
        }
    }
    out.push_str("  }\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_end_the_string() {
        assert_eq!(quoted("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd \"");
    }
}
