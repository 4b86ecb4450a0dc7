//! `graph.dot` of a decoded delegate, for Graphviz, drawn the same way for
//! every backend as a method's `graph.dot` is: operators as nodes, values
//! as edges labelled with their id, type and shape; values no operator
//! writes (graph inputs, constants) as nodes of their own, and the graph's
//! outputs gathered in one node. A backend states its operators and how
//! its values read; this draws them.

use std::collections::HashMap;
use std::fmt::Write;

use crate::escape::dot_quote as quote;

/// A delegate's graph, as its backend describes it.
#[derive(Debug, Default)]
pub struct Graph {
    /// The graph's name (`XNNGraph`).
    pub name: String,
    /// Operators in order.
    pub ops: Vec<Op>,
    /// How each value id reads, and what it is.
    pub values: HashMap<u32, Value>,
    /// The graph's outputs.
    pub outputs: Vec<u32>,
}

/// One operator.
#[derive(Debug, Default)]
pub struct Op {
    /// Its label (`3: conv2d`).
    pub label: String,
    /// Value ids it reads.
    pub inputs: Vec<u32>,
    /// Value ids it writes.
    pub outputs: Vec<u32>,
}

/// One value.
#[derive(Debug, Default)]
pub struct Value {
    /// Its label (`%3 f32[1,64]`).
    pub label: String,
    /// True for a constant (weights), drawn as a note.
    pub constant: bool,
}

impl Graph {
    /// The DOT text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "digraph {} {{", quote(&self.name));
        out.push_str("  rankdir=TB;\n  node [fontname=\"monospace\"];\n  edge [fontname=\"monospace\", fontsize=10];\n");
        let mut producer: HashMap<u32, usize> = HashMap::new();
        for (i, op) in self.ops.iter().enumerate() {
            for &v in &op.outputs {
                producer.entry(v).or_insert(i);
            }
        }
        let label = |v: u32| {
            self.values
                .get(&v)
                .map_or_else(|| format!("%{v}"), |x| x.label.clone())
        };
        let mut sources = Vec::new();
        for op in &self.ops {
            for &v in &op.inputs {
                if !producer.contains_key(&v) && !sources.contains(&v) {
                    sources.push(v);
                }
            }
        }
        for &v in &sources {
            let constant = self.values.get(&v).is_some_and(|x| x.constant);
            let shape = if constant { "note" } else { "invhouse" };
            let _ = writeln!(out, "  v{v} [shape={shape}, label={}];", quote(&label(v)));
        }
        for (i, op) in self.ops.iter().enumerate() {
            let _ = writeln!(out, "  n{i} [shape=ellipse, label={}];", quote(&op.label));
        }
        for (i, op) in self.ops.iter().enumerate() {
            for &v in &op.inputs {
                let from = producer
                    .get(&v)
                    .map_or_else(|| format!("v{v}"), |p| format!("n{p}"));
                let _ = writeln!(out, "  {from} -> n{i} [label={}];", quote(&label(v)));
            }
        }
        let shown: Vec<(usize, u32)> = self
            .outputs
            .iter()
            .filter_map(|v| Some((*producer.get(v)?, *v)))
            .collect();
        if !shown.is_empty() {
            out.push_str("  outputs [shape=house, label=\"outputs\"];\n");
        }
        for (p, v) in shown {
            let _ = writeln!(out, "  n{p} -> outputs [label={}];", quote(&label(v)));
        }
        out.push_str("}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_ops_and_outputs_are_drawn() {
        let mut g = Graph {
            name: "g\"1".into(),
            outputs: vec![2],
            ..Graph::default()
        };
        g.values.insert(
            1,
            Value {
                label: "%1 w".into(),
                constant: true,
            },
        );
        g.ops.push(Op {
            label: "0: add".into(),
            inputs: vec![0, 1],
            outputs: vec![2],
        });
        let dot = g.render();
        assert!(dot.starts_with("digraph \"g\\\"1\" {"), "{dot}");
        assert!(dot.contains("v0 [shape=invhouse, label=\"%0\"]"), "{dot}");
        assert!(dot.contains("v1 [shape=note, label=\"%1 w\"]"), "{dot}");
        assert!(dot.contains("v1 -> n0"), "{dot}");
        assert!(dot.contains("n0 -> outputs"), "{dot}");
    }
}
