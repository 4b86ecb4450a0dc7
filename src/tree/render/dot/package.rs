//! `graph.dot`: a package method's graph for Graphviz. Call nodes are boxes
//! labelled with their operator, placeholders and outputs are ellipses,
//! and each edge is a tensor labelled with its name, dtype and shape. A
//! subgraph of a higher-order op is a cluster beside its call.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::quote;
use crate::format::package::graph;
use crate::format::{NAME_LIMIT, clip};
use crate::schema::native_graph as ng;
use crate::tree::render::package_code::meta;

/// Renders method `m`.
pub fn render(m: ng::Method<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(m.name()));
    out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
    out.push_str("  edge [fontname=\"monospace\", fontsize=10];\n");
    let constants: BTreeMap<&str, ng::NamedTensorRef<'_>> = (m.constants().iter().flatten())
        .map(|c| (c.name(), c))
        .collect();
    let mut clusters = 0;
    body(&mut out, m.graph(), "", &constants, &mut clusters);
    out.push_str("}\n");
    out
}

/// Nodes and edges of `g`; ids are prefixed with `scope` so that a
/// subgraph's names, which are its own, do not meet the method's.
fn body(
    out: &mut String,
    g: ng::Graph<'_>,
    scope: &str,
    constants: &BTreeMap<&str, ng::NamedTensorRef<'_>>,
    clusters: &mut usize,
) {
    let mut metas = graph::value_metas(&g);
    // Constants' metadata is on the method, not in the graph's value table.
    metas.extend(constants.iter().map(|(k, c)| (*k, c.meta())));
    let id = |name: &str| quote(&format!("{scope}{name}"));
    let mut producer: BTreeMap<&str, &str> = BTreeMap::new();
    for n in g.nodes() {
        let label = match n.op_kind() {
            ng::OpKind::PLACEHOLDER => {
                let what = constants.get(n.name()).map_or("input", |c| c.data_key());
                let shape = metas.get(n.name()).map(meta).unwrap_or_default();
                format!(
                    "{}\n{}\n{shape}",
                    clip(n.name(), NAME_LIMIT),
                    clip(what, NAME_LIMIT)
                )
            }
            ng::OpKind::OUTPUT => "output".to_owned(),
            _ => short(n.target().unwrap_or("")),
        };
        let shape = if n.op_kind() == ng::OpKind::CALL_FUNCTION {
            "box"
        } else {
            "ellipse"
        };
        let _ = writeln!(
            out,
            "  {} [shape={shape}, label={}];",
            id(n.name()),
            quote(&label)
        );
        producer.insert(n.name(), n.name());
        for o in graph::output_names(&n) {
            producer.insert(o, n.name());
        }
    }
    for n in g.nodes() {
        let mut seen = BTreeSet::new();
        for a in n.inputs().iter().flatten() {
            for value in graph::argument_names(&a) {
                let Some(from) = producer.get(value) else {
                    continue;
                };
                if !seen.insert(value) {
                    continue;
                }
                let mut label = clip(value, NAME_LIMIT).into_owned();
                if let Some(m) = metas.get(value) {
                    let _ = write!(label, "\n{}", meta(m));
                }
                let _ = writeln!(
                    out,
                    "  {} -> {} [label={}];",
                    id(from),
                    id(n.name()),
                    quote(&label)
                );
            }
            if let Some(sub) = a.arg().value_as_graph_arg() {
                *clusters += 1;
                let inner = format!("{scope}{}/{}/", n.name(), sub.name());
                let _ = writeln!(
                    out,
                    "  subgraph {} {{",
                    quote(&format!("cluster_{clusters}"))
                );
                let _ = writeln!(out, "  label={};", quote(&clip(sub.name(), NAME_LIMIT)));
                body(out, sub.graph(), &inner, &BTreeMap::new(), clusters);
                out.push_str("  }\n");
            }
        }
    }
}

/// `torch.ops.aten.add.Tensor` → `aten.add.Tensor`.
fn short(target: &str) -> String {
    clip(
        target.strip_prefix("torch.ops.").unwrap_or(target),
        NAME_LIMIT,
    )
    .into_owned()
}
