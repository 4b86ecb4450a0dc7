//! An ETRecord joined with the program it records: for each instruction of
//! a method, the graph nodes its debug handles name (from the ETRecord's
//! debug-handle map and the method's edge-dialect program), with their
//! module stacks and source lines; and for each operator of a delegate
//! that the delegate map names by its debug id, its nodes likewise. This is how Inspector fills its
//! `module_hierarchy` and `stack_traces` columns.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::format::MethodInfo;
use crate::format::etrecord::{DEBUG_HANDLE_MAP, DELEGATE_MAP, EtRecordFile};
use crate::join::profile::Does;
use crate::meta::etrecord_graph::{self, Node};

/// One row of `source.tsv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRow {
    /// `instruction` or `delegate`.
    pub kind: &'static str,
    /// The instruction's index; for a delegate's operator, the delegate
    /// call's instruction and the operator's debug id in the delegate map
    /// (`0:3`, `0:Convolution (NHWC, F32) IGEMM #1`).
    pub id: String,
    /// The debug handles it carries.
    pub handles: Vec<i64>,
    /// The nodes those handles name, in graph order.
    pub nodes: Vec<Node>,
}

fn handles(v: &Json) -> Vec<i64> {
    match v {
        Json::Number(n) => n.as_i64().into_iter().collect(),
        Json::Array(a) => a.iter().flat_map(handles).collect(),
        Json::Object(o) => o.values().flat_map(handles).collect(),
        _ => Vec::new(),
    }
}

/// The edge-dialect program of `method`, falling back on the single edge
/// program of older ETRecords, then on the exported program.
fn graph_nodes(r: &EtRecordFile<'_>, method: &str) -> Result<Vec<Node>, String> {
    let wanted = [
        format!("edge_dialect_exported_program/{method}"),
        "edge_dialect_exported_program".to_owned(),
        "exported_program".to_owned(),
    ];
    let g = wanted
        .iter()
        .find_map(|w| r.graphs.iter().find(|g| &g.name == w))
        .ok_or_else(|| format!("the ETRecord records no program for method {method:?}"))?;
    etrecord_graph::nodes(g.program.bytes(r.bytes))
}

fn map(r: &EtRecordFile<'_>, i: usize, name: &str) -> Result<Json, String> {
    match r.map_bytes(i) {
        Some(b) => serde_json::from_slice(b).map_err(|e| format!("{name}: {e}")),
        None => Ok(Json::Null),
    }
}

/// The rows of `method`: each instruction the debug-handle map lists, then
/// each delegate operator the delegate map names (none for a delegate
/// whose map is empty, as XNNPACK's is).
pub fn rows(r: &EtRecordFile<'_>, method: &str) -> Result<Vec<SourceRow>, String> {
    let nodes = graph_nodes(r, method)?;
    // A `getitem` node only picks an output of the node before it, which
    // carries the same handle: Inspector's operator graph drops them, and
    // so do the lists here, which then pair with Inspector's.
    let by_handle = |hs: &[i64]| -> Vec<Node> {
        nodes
            .iter()
            .filter(|n| n.target != "getitem")
            .filter(|n| n.debug_handle.is_some_and(|h| hs.contains(&h)))
            .cloned()
            .collect()
    };
    let mut out = Vec::new();
    let dh = map(r, 0, DEBUG_HANDLE_MAP)?;
    let mut instructions: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    if let Some(m) = dh.get(method).and_then(Json::as_object) {
        for (k, v) in m {
            if let Ok(i) = k.parse() {
                instructions.insert(i, handles(v));
            }
        }
    }
    for (i, hs) in instructions {
        out.push(SourceRow {
            kind: "instruction",
            id: i.to_string(),
            nodes: by_handle(&hs),
            handles: hs,
        });
    }
    // The delegate map: per delegate call (by its instruction), the debug
    // handles of the nodes each of the delegate's own operators (by the
    // debug id its profile events carry) comes from.
    let dm = map(r, 1, DELEGATE_MAP)?;
    for (instruction, d) in dm
        .get(method)
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
    {
        let entries = d.get("delegate_map").and_then(Json::as_object);
        for (debug_id, v) in entries.into_iter().flatten() {
            let hs = handles(v);
            out.push(SourceRow {
                kind: "delegate",
                id: format!("{instruction}:{debug_id}"),
                nodes: by_handle(&hs),
                handles: hs,
            });
        }
    }
    Ok(out)
}

/// Why `rows` (an ETRecord's, of method `m`'s name) are not those of
/// method `m`: the debug-handle map lists an instruction the method lacks,
/// or pairs instructions with nodes of other operators (`aten::addmm.out`
/// with `aten.embedding.default`). Operators the runtime adds itself
/// (`executorch_prim::`), delegate calls and instructions naming no node
/// are not compared: a node may become another operator on its way to the
/// program (`view_copy` an `et_view`), but not each of them. `None` when
/// nothing disagrees.
pub fn disagreement(rows: &[SourceRow], m: &MethodInfo<'_>) -> Option<String> {
    let does = crate::join::profile::instructions(m.plan, &m.delegates);
    let chain: &[Does] = does.first().map_or(&[], Vec::as_slice);
    let listed: Vec<(usize, &SourceRow)> = (rows.iter())
        .filter(|r| r.kind == "instruction")
        .filter_map(|r| Some((r.id.parse().ok()?, r)))
        .collect();
    let method = m.name.show();
    if let Some(&(past, _)) = listed.iter().rev().find(|(i, _)| *i >= chain.len()) {
        return Some(format!(
            "its debug-handle map lists instruction {past} of method {method:?}, which has {} instructions",
            chain.len()
        ));
    }
    let base = |name: &str| -> String {
        let name = name.rsplit_once("::").map_or(name, |(_, n)| n);
        name.split('.').next().unwrap_or(name).to_owned()
    };
    let mut compared = 0;
    let mut wrong: Vec<(usize, &str, &SourceRow)> = Vec::new();
    for &(i, r) in &listed {
        let (op, agrees) = match &chain[i] {
            Does::Kernel(op) if !op.starts_with("executorch_prim::") && !r.nodes.is_empty() => {
                let op_base = base(op);
                // A node's target is `aten.addmm.default`: namespace,
                // name, overload.
                let agrees = (r.nodes.iter())
                    .any(|n| n.target.split('.').nth(1).unwrap_or(&n.target) == op_base);
                (op.as_str(), agrees)
            }
            // The map lists calls alone.
            Does::Other(what) => (*what, false),
            _ => continue,
        };
        compared += 1;
        if !agrees {
            wrong.push((i, op, r));
        }
    }
    let &(i, op, r) = wrong.first()?;
    let targets: Vec<&str> = r.nodes.iter().map(|n| n.target.as_str()).collect();
    Some(format!(
        "its debug-handle map pairs {} of the {compared} instructions of method {method:?} it \
         names with nodes of other operators; the first: instruction {i} ({op}) with {}",
        wrong.len(),
        if targets.is_empty() {
            "no node".to_owned()
        } else {
            targets.join(", ")
        }
    ))
}

/// A row's module paths with classes and its source lines, one per node,
/// `;` between nodes: the `module_hierarchy` and `stack_frame` columns of
/// `source.tsv` and of a joined profile's `ops.tsv`.
pub fn source_columns(r: &SourceRow) -> (String, String) {
    let clean = |s: String| s.replace(['\t', '\n'], " ");
    let join =
        |f: &dyn Fn(&Node) -> String| clean(r.nodes.iter().map(f).collect::<Vec<_>>().join(";"));
    (
        join(&|n| {
            let path = n.shown_module_path();
            let class = n.module().map_or("", |m| m.class.as_str());
            format!("{path} ({class})")
        }),
        join(&|n| n.source_line().unwrap_or_default()),
    )
}

/// The `module_hierarchy` and `stack_frame` columns of each instruction,
/// by instruction index.
pub fn instruction_sources(
    rows: &[SourceRow],
) -> std::collections::HashMap<usize, (String, String)> {
    rows.iter()
        .filter(|r| r.kind == "instruction")
        .filter_map(|r| Some((r.id.parse().ok()?, source_columns(r))))
        .collect()
}

/// The `module_hierarchy` and `stack_frame` columns of each row, by its
/// id: an instruction's index, or a delegate's operator's `<instruction>:<debug id>`.
pub fn row_sources(rows: &[SourceRow]) -> std::collections::HashMap<String, (String, String)> {
    rows.iter()
        .map(|r| (r.id.clone(), source_columns(r)))
        .collect()
}

/// `source.tsv`: one line per instruction or delegate operator: its debug handles,
/// node names, module paths with classes, and source lines (`;` between
/// nodes).
pub fn source_tsv(rows: &[SourceRow]) -> String {
    let mut o = String::from("kind\tid\tdebug_handles\tnodes\tmodule_hierarchy\tstack_frame\n");
    for r in rows {
        let names: Vec<String> = r
            .nodes
            .iter()
            .map(|n| n.name.replace(['\t', '\n'], " "))
            .collect();
        let (modules, frames) = source_columns(r);
        o.push_str(&format!(
            "{}\t{}\t{}\t{}\t{modules}\t{frames}\n",
            r.kind,
            r.id,
            r.handles
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(","),
            names.join(";"),
        ));
    }
    o
}

/// What `code.txt` adds to each instruction's line: `<module path>
/// (<class>) <file>:<line>` of its nodes, each distinct one once.
pub fn code_notes(rows: &[SourceRow]) -> std::collections::HashMap<u64, String> {
    rows.iter()
        .filter(|r| r.kind == "instruction")
        .filter_map(|r| {
            let mut seen: Vec<String> = Vec::new();
            for n in &r.nodes {
                let class = n.module().map_or("", |m| m.class.as_str());
                let note = format!(
                    "{} ({class}) {}",
                    n.shown_module_path(),
                    n.source_line().unwrap_or_default()
                );
                let note = note.trim_end().to_owned();
                if !seen.contains(&note) {
                    seen.push(note);
                }
            }
            let id = r.id.parse().ok()?;
            (!seen.is_empty()).then(|| (id, seen.join("; ")))
        })
        .collect()
}

/// `code` (a method's `code.txt`) with each instruction's line ending in
/// `# ` and its note.
pub fn annotate(code: &str, notes: &std::collections::HashMap<u64, String>) -> String {
    let mut out = String::with_capacity(code.len());
    for line in code.lines() {
        out.push_str(line);
        let note = line
            .split_once(": ")
            .and_then(|(i, _)| i.parse::<u64>().ok())
            .and_then(|i| notes.get(&i));
        if let Some(note) = note {
            out.push_str("  # ");
            out.push_str(note);
        }
        out.push('\n');
    }
    out
}
