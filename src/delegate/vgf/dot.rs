//! `graph.dot` of a VGF payload: Graphviz, a box per segment (with its
//! module and how many constants it binds), an ellipse per resource it
//! reads or writes, edges in the direction data flows.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{Payload, module_type};
use crate::delegate::tosa::dot::quoted;

/// The text of `graph.dot`.
pub fn render(p: &Payload<'_>) -> String {
    let mut out = String::from(
        "digraph vgf {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n",
    );
    let mut shown = BTreeSet::new();
    let mut edges = String::new();
    for (i, s) in p.segments().into_iter().enumerate() {
        let label = format!(
            "segment {i} {}\n{}\nmodule {}, {} constants",
            module_type(s.type_()),
            s.name().unwrap_or(""),
            s.module_index(),
            s.constants().map_or(0, |c| c.len())
        );
        let _ = writeln!(
            out,
            "  s{i} [shape=box, style=rounded, label={}];",
            quoted(&label)
        );
        for b in s.inputs().into_iter().flatten() {
            shown.insert(b.mrt_index());
            let _ = writeln!(edges, "  r{} -> s{i};", b.mrt_index());
        }
        for b in s.outputs().into_iter().flatten() {
            shown.insert(b.mrt_index());
            let _ = writeln!(edges, "  s{i} -> r{};", b.mrt_index());
        }
    }
    for r in shown {
        let category = p
            .resource(r)
            .map_or_else(|| "?".to_owned(), |e| super::category(e.category()));
        let label = format!("{}\n{category}", super::code::resource(p, r));
        let _ = writeln!(out, "  r{r} [shape=ellipse, label={}];", quoted(&label));
    }
    out.push_str(&edges);
    out.push_str("}\n");
    out
}
