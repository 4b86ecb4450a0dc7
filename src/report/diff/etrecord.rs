//! Two ETRecords: for each program they record (by name: the exported
//! program, the edge program of each method, extra graphs), the graph
//! nodes added, removed or changed, paired by node name (op, target,
//! arguments, module stack), and the state-dict and constant tensors paired
//! by name and compared as the tensor section of two programs is.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::tensors::{Item, Tensors, pair};
use super::values::Tolerance;
use crate::escape::escape;
use crate::format::EtRecordFile;
use crate::format::etrecord::SavedTensor;
use crate::meta::etrecord_graph::{self, Node};

/// What differs between two ETRecords.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The first ETRecord, as named.
    pub a: String,
    /// The second, as named.
    pub b: String,
    /// Whether anything differs.
    pub differ: bool,
    /// Programs only B records.
    pub graphs_added: Vec<String>,
    /// Programs only A records.
    pub graphs_removed: Vec<String>,
    /// Each program both record, in B's order, with what differs in it.
    pub graphs: Vec<Graph>,
    /// What could not be read on either side, and so was not compared
    /// (a tensor one side cannot read is left out on both).
    pub problems: Vec<String>,
}

/// One program both ETRecords record.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Graph {
    /// Its name (`exported_program`, `edge_dialect_exported_program/forward`).
    pub name: String,
    /// Nodes only B's has, in B's order.
    pub nodes_added: Vec<NodeRef>,
    /// Nodes only A's has, in A's order.
    pub nodes_removed: Vec<NodeRef>,
    /// Nodes of both whose op, target, arguments or module stack differ,
    /// in B's order.
    pub nodes_changed: Vec<NodeChange>,
    /// Its state-dict and constant tensors
    /// (`graphs/<name>/state_dict/<fqn>.npy`, `.../constants/...`).
    pub tensors: Tensors,
}

impl Graph {
    fn differs(&self) -> bool {
        !(self.nodes_added.is_empty()
            && self.nodes_removed.is_empty()
            && self.nodes_changed.is_empty()
            && self.tensors.changes() == 0)
    }
}

/// A node, as `graph.txt` names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRef {
    /// Its name.
    pub name: String,
    /// `placeholder`, `call_function` or `output`.
    pub op: String,
    /// Its target (`aten.addmm.default`).
    pub target: String,
}

/// A node of both graphs that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeChange {
    /// Its name.
    pub name: String,
    /// Each field that differs: `op`, `target`, `args` or `module` (the
    /// module stack as `path:class;...`), with A's text and B's.
    pub fields: Vec<FieldChange>,
}

/// One field of a node, in A and in B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    /// Which field.
    pub field: &'static str,
    /// A's.
    pub a: String,
    /// B's.
    pub b: String,
}

fn node_ref(n: &Node) -> NodeRef {
    NodeRef {
        name: n.name.clone(),
        op: n.op.to_owned(),
        target: n.target.clone(),
    }
}

fn module_stack(n: &Node) -> String {
    (n.module_stack.iter())
        .map(|m| format!("{}:{}", m.path, m.class))
        .collect::<Vec<_>>()
        .join(";")
}

/// The nodes of `b` against those of `a`, by name.
fn nodes(a: &[Node], b: &[Node], g: &mut Graph) {
    let by_name: BTreeMap<&str, &Node> = a.iter().map(|n| (n.name.as_str(), n)).collect();
    let in_b: BTreeMap<&str, ()> = b.iter().map(|n| (n.name.as_str(), ())).collect();
    g.nodes_removed = (a.iter())
        .filter(|n| !in_b.contains_key(n.name.as_str()))
        .map(node_ref)
        .collect();
    for n in b {
        let Some(old) = by_name.get(n.name.as_str()) else {
            g.nodes_added.push(node_ref(n));
            continue;
        };
        let fields: Vec<FieldChange> = [
            ("op", old.op.to_owned(), n.op.to_owned()),
            ("target", old.target.clone(), n.target.clone()),
            ("args", old.args.join(", "), n.args.join(", ")),
            ("module", module_stack(old), module_stack(n)),
        ]
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(field, a, b)| FieldChange { field, a, b })
        .collect();
        if !fields.is_empty() {
            g.nodes_changed.push(NodeChange {
                name: n.name.clone(),
                fields,
            });
        }
    }
}

/// The archives of the tensors compared, with the directory each is
/// shown in.
const ARCHIVES: [(usize, &str); 2] = [(0, "state_dict"), (1, "constants")];

/// A tensor of one side: its name, tree path, type and layout, and bytes.
type Saved<'a> = (String, String, SavedTensor, Cow<'a, [u8]>);

/// The state-dict and constant tensors of graph `gi` of `r`, each with its
/// name (`state_dict/l1.weight`), tree path and row-major bytes. What
/// cannot be read goes to `problems` (unless `r.errors` says so already)
/// and its name, or its archive's directory (`state_dict/`), to
/// `unread`.
fn saved<'a>(
    (side, r): (&str, &EtRecordFile<'a>),
    gi: usize,
    problems: &mut Vec<String>,
    unread: &mut Vec<String>,
) -> Vec<Saved<'a>> {
    let g = &r.graphs[gi];
    let mut out = Vec::new();
    for (i, dir) in ARCHIVES {
        match &g.archives[i] {
            None => {}
            Some(Err(why)) => {
                if !r.errors.contains(why) {
                    problems.push(format!("{side}: {}: {dir}: {why}", g.name));
                }
                unread.push(format!("{dir}/"));
            }
            Some(Ok(archive)) => {
                for (path, why) in archive.value.problems() {
                    problems.push(format!("{side}: {}: {dir}/{path}: {why}", g.name));
                    unread.push(format!("{dir}/{path}"));
                }
                for (fqn, t) in archive.value.tensors() {
                    let bytes = match t.contiguous() {
                        Some(span) => Cow::Borrowed(span.bytes(r.bytes)),
                        None => Cow::Owned(t.gather(r.bytes)),
                    };
                    out.push((
                        format!("{dir}/{fqn}"),
                        format!("graphs/{}/{dir}/{fqn}.npy", g.name),
                        t.clone(),
                        bytes,
                    ));
                }
            }
        }
    }
    out
}

/// The tensors of [`saved`] as the tensor pairing takes them.
/// A tensor one side could not read is compared on neither: it would
/// look added or removed.
fn items<'s>(saved: &'s [Saved<'_>], unread: &[String]) -> Vec<Item<'s>> {
    let readable = |name: &str| {
        !unread
            .iter()
            .any(|u| name == u || (u.ends_with('/') && name.starts_with(u.as_str())))
    };
    (saved.iter())
        .filter(|(name, ..)| readable(name))
        .map(|(name, path, t, bytes)| {
            let sizes = t.shape.iter().map(|&d| d as i64).collect();
            Item::named(name.clone(), path.clone(), t.scalar_type, sizes, bytes)
        })
        .collect()
}

/// Compares ETRecord `b` with `a` (named `names`), elements within `tol`
/// counting as equal.
pub fn compare(
    a: &EtRecordFile<'_>,
    b: &EtRecordFile<'_>,
    names: (&str, &str),
    tol: Tolerance,
) -> Report {
    let mut r = Report {
        a: names.0.to_owned(),
        b: names.1.to_owned(),
        ..Report::default()
    };
    for (side, f) in [(names.0, a), (names.1, b)] {
        r.problems
            .extend(f.errors.iter().map(|e| format!("{side}: {e}")));
    }
    let a_at: BTreeMap<&str, usize> = (a.graphs.iter().enumerate())
        .map(|(i, g)| (g.name.as_str(), i))
        .collect();
    r.graphs_removed = (a.graphs.iter())
        .filter(|g| !b.graphs.iter().any(|h| h.name == g.name))
        .map(|g| g.name.clone())
        .collect();
    for (bi, gb) in b.graphs.iter().enumerate() {
        let Some(&ai) = a_at.get(gb.name.as_str()) else {
            r.graphs_added.push(gb.name.clone());
            continue;
        };
        let mut g = Graph {
            name: gb.name.clone(),
            ..Graph::default()
        };
        let read = |f: &EtRecordFile<'_>, i: usize| {
            etrecord_graph::nodes(f.graphs[i].program.bytes(f.bytes))
        };
        match (read(a, ai), read(b, bi)) {
            (Ok(na), Ok(nb)) => nodes(&na, &nb, &mut g),
            (Err(e), _) => r.problems.push(format!("{}: {}: {e}", names.0, g.name)),
            (_, Err(e)) => r.problems.push(format!("{}: {}: {e}", names.1, g.name)),
        }
        let mut unread = Vec::new();
        let sa = saved((names.0, a), ai, &mut r.problems, &mut unread);
        let sb = saved((names.1, b), bi, &mut r.problems, &mut unread);
        g.tensors = pair(items(&sa, &unread), items(&sb, &unread), tol);
        if g.differs() {
            r.graphs.push(g);
        }
    }
    r.differ = !(r.graphs.is_empty() && r.graphs_added.is_empty() && r.graphs_removed.is_empty());
    r
}

impl Report {
    /// The report as text: a line per graph added or removed, per node
    /// added, removed or changed (a line per field), and per tensor that
    /// differs, as the tensor section of two programs words it.
    pub fn text(&self) -> String {
        let mut o = format!("--- {}\n+++ {}\n", escape(&self.a), escape(&self.b));
        for g in &self.graphs_added {
            let _ = writeln!(o, "graph added: {}", escape(g));
        }
        for g in &self.graphs_removed {
            let _ = writeln!(o, "graph removed: {}", escape(g));
        }
        for g in &self.graphs {
            let scope = format!("graph {}: ", escape(&g.name));
            for n in &g.nodes_added {
                let _ = writeln!(o, "{scope}node added: %{} = {}", escape(&n.name), n.target);
            }
            for n in &g.nodes_removed {
                let _ = writeln!(
                    o,
                    "{scope}node removed: %{} = {}",
                    escape(&n.name),
                    n.target
                );
            }
            for n in &g.nodes_changed {
                for f in &n.fields {
                    let _ = writeln!(
                        o,
                        "{scope}node changed: %{}: {} {} -> {}",
                        escape(&n.name),
                        f.field,
                        escape(&f.a),
                        escape(&f.b)
                    );
                }
            }
            super::text::tensors(&mut o, &scope, &g.tensors);
        }
        for p in &self.problems {
            let _ = writeln!(o, "not compared: {}", escape(p));
        }
        match (self.differ, self.problems.is_empty()) {
            (false, true) => o.push_str("no differences\n"),
            (false, false) => o.push_str("no differences in what could be read\n"),
            (true, _) => {}
        }
        o
    }

    /// `--stat`: a line per graph added, removed or changed, with its
    /// counts of nodes and tensors, then a total.
    pub fn stat(&self) -> String {
        let mut o = String::new();
        for g in &self.graphs_added {
            let _ = writeln!(o, "graph {}: added", escape(g));
        }
        for g in &self.graphs_removed {
            let _ = writeln!(o, "graph {}: removed", escape(g));
        }
        for g in &self.graphs {
            let t = &g.tensors;
            let _ = writeln!(
                o,
                "graph {}: nodes {} added, {} removed, {} changed; tensors {} changed, {} added, {} removed, {} moved",
                escape(&g.name),
                g.nodes_added.len(),
                g.nodes_removed.len(),
                g.nodes_changed.len(),
                t.changed.len(),
                t.added.len(),
                t.removed.len(),
                t.moved.len()
            );
        }
        let _ = writeln!(
            o,
            "{} graph(s) differ, {} added, {} removed; {} not compared",
            self.graphs.len(),
            self.graphs_added.len(),
            self.graphs_removed.len(),
            self.problems.len()
        );
        o
    }
}
