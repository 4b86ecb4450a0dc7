//! `code.txt`, `graph.dot` and `graph.json` of an MLX graph.
//!
//! ```text
//! # MLXGraph 1: 1 chains, 5 instructions, 9 tensor slots (5 constants, 1 inputs, 1 outputs, 0 mutable, 2 temporaries), 0 values
//! 001 AddmmNode mat1=%5:float[1,16] mat2=%8 bias=%1:float[32] alpha=1.0 beta=1.0 -> %7
//! ```
//! Tensor slots print as `%id` (with `:dtype[dims]` where the slot has
//! metadata), value slots as `$id`; chains after the first get a heading.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::{Value, json};

use super::Payload;
use super::constants::layer;
use super::graph::{self, Instr};
use super::operands::{self, Operand, is_output};
use crate::delegate::folder::Paths;
use crate::escape::dot_quote as quote;

/// Most list items shown per field.
const MAX_ITEMS: usize = 16;

fn show(g: crate::schema::mlx::MLXGraph<'_>, o: &Operand) -> String {
    match o {
        Operand::Tid(n) => graph::tid_label(g, *n),
        Operand::Vid(n) => format!("${n}"),
        Operand::Literal(Value::String(s)) => format!("{s:?}"),
        Operand::Literal(v) => v.to_string(),
        Operand::List(l) => {
            let mut items: Vec<String> = l.iter().take(MAX_ITEMS).map(|x| show(g, x)).collect();
            if l.len() > MAX_ITEMS {
                items.push(format!("…{} more", l.len() - MAX_ITEMS));
            }
            format!("[{}]", items.join(","))
        }
    }
}

fn map_ids(
    v: Option<
        flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<crate::schema::mlx::SlotVariant<'_>>>,
    >,
) -> String {
    let ids: Vec<String> = v
        .iter()
        .flatten()
        .map(|s| match s.slot_type() {
            crate::schema::mlx::SlotType::TensorSlot => format!("%{}", s.idx()),
            _ => format!("${}", s.idx()),
        })
        .collect();
    if ids.is_empty() {
        "none".into()
    } else {
        ids.join(" ")
    }
}

/// `code.txt`.
pub fn code(p: &Payload<'_>) -> String {
    let g = p.graph;
    let mut out = format!(
        "# MLXGraph {}: {} chains, {} instructions, {} tensor slots ({} constants, {} inputs, {} outputs, {} mutable, {} temporaries), {} values\n",
        g.version().unwrap_or(""),
        g.instruction_chains().len(),
        p.instrs.len(),
        p.tensor_slots(),
        g.num_constant_tensors(),
        g.num_input_tensors(),
        g.num_output_tensors(),
        g.num_mutable_buffer_tensors(),
        g.num_temp_tensors(),
        g.num_values(),
    );
    let _ = writeln!(
        out,
        "inputs: {}\noutputs: {}\nmain chain {}, init chain {}",
        map_ids(g.input_map()),
        map_ids(g.output_map()),
        g.main_chain_idx(),
        g.init_chain_idx()
    );
    let mut chain = usize::MAX;
    for i in &p.instrs {
        if i.chain != chain && g.instruction_chains().len() > 1 {
            let _ = writeln!(out, "chain {}:", i.chain);
        }
        chain = i.chain;
        line(&mut out, g, i);
    }
    out
}

fn line(out: &mut String, g: crate::schema::mlx::MLXGraph<'_>, i: &Instr) {
    let _ = write!(out, "{:03} {}", i.index, i.op);
    let fields = operands::fields(&i.op, &i.fields);
    let mut results = Vec::new();
    for (k, o) in &fields {
        if is_output(k) {
            results.push(show(g, o));
        } else {
            let _ = write!(out, " {k}={}", show(g, o));
        }
    }
    if i.fields.is_null() {
        let _ = write!(out, " (op type {} not known)", i.op_type);
    }
    if !results.is_empty() {
        let _ = write!(out, " -> {}", results.join(" "));
    }
    out.push('\n');
}

/// `graph.dot`: instructions as boxes, constants and inputs as their own
/// nodes, an edge from the last writer of each tensor slot to its reader,
/// labelled with the slot.
pub fn dot(p: &Payload<'_>) -> String {
    let g = p.graph;
    let mut out = String::from("digraph mlx {\n  rankdir=TB;\n  node [shape=box];\n");
    let names: HashMap<u32, &str> = p.constants.iter().map(|c| (c.tid, c.key)).collect();
    let mut writer: HashMap<u64, String> = HashMap::new();
    let mut sources: Vec<u64> = Vec::new();
    for i in &p.instrs {
        let id = format!("i{}_{}", i.chain, i.index);
        let _ = writeln!(out, "  {} [label={}];", quote(&id), quote(&layer(i)));
        let fields = operands::fields(&i.op, &i.fields);
        for (k, o) in fields.iter().filter(|(k, _)| !is_output(k)) {
            let mut tids = Vec::new();
            o.tids(&mut tids);
            for t in tids {
                let from = writer.get(&t).cloned().unwrap_or_else(|| {
                    sources.push(t);
                    format!("t{t}")
                });
                let _ = writeln!(
                    out,
                    "  {} -> {} [label={}];",
                    quote(&from),
                    quote(&id),
                    quote(&format!("{k} {}", graph::tid_label(g, t)))
                );
            }
        }
        for (_, o) in fields.iter().filter(|(k, _)| is_output(k)) {
            let mut tids = Vec::new();
            o.tids(&mut tids);
            for t in tids {
                writer.insert(t, id.clone());
            }
        }
    }
    sources.sort_unstable();
    sources.dedup();
    for t in sources {
        let label = match u32::try_from(t).ok().and_then(|t| names.get(&t)) {
            Some(key) => format!("{key}\n{}", graph::tid_label(g, t)),
            None => graph::tid_label(g, t),
        };
        let _ = writeln!(
            out,
            "  {} [label={}, shape=ellipse];",
            quote(&format!("t{t}")),
            quote(&label)
        );
    }
    out.push_str("}\n");
    out
}

fn slot(s: crate::schema::mlx::SlotVariant<'_>) -> Value {
    json!({"idx": s.idx(), "slot_type": graph::slot_type(s.slot_type())})
}

/// `graph.json`: the graph's fields in schema order, each instruction's op
/// as its table's fields, each constant's named slot with the path of its
/// `.bin` (`ptefs_path`).
pub fn graph_json(p: &Payload<'_>, paths: &Paths) -> Value {
    let g = p.graph;
    let map = |v: Option<
        flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<crate::schema::mlx::SlotVariant<'_>>>,
    >|
     -> Vec<Value> { v.iter().flatten().map(slot).collect() };
    let mut chains: Vec<Vec<Value>> = vec![Vec::new(); g.instruction_chains().len()];
    for i in &p.instrs {
        if let Some(c) = chains.get_mut(i.chain) {
            c.push(json!({"op_type": i.op, "op_type_id": i.op_type, "op": i.fields}));
        }
    }
    let by_tid: HashMap<u32, usize> = p
        .constants
        .iter()
        .enumerate()
        .map(|(k, c)| (c.tid, k))
        .collect();
    let named: Vec<Value> = g
        .named_slots()
        .iter()
        .flatten()
        .map(|s| {
            let mut v = json!({"name": s.name(), "slot": slot(s.slot())});
            let constant = by_tid
                .get(&s.slot().idx())
                .filter(|_| s.slot().slot_type() == crate::schema::mlx::SlotType::TensorSlot);
            if let (Some(k), Some(o)) = (constant, v.as_object_mut())
                && let Some(path) = paths.get(k)
            {
                o.insert("ptefs_path".into(), json!(path));
            }
            v
        })
        .collect();
    let metas: Vec<Value> = g
        .tensor_meta()
        .iter()
        .flatten()
        .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
        .collect();
    json!({
        "version": g.version(),
        "num_constant_tensors": g.num_constant_tensors(),
        "num_input_tensors": g.num_input_tensors(),
        "num_output_tensors": g.num_output_tensors(),
        "num_mutable_buffer_tensors": g.num_mutable_buffer_tensors(),
        "num_temp_tensors": g.num_temp_tensors(),
        "num_values": g.num_values(),
        "instruction_chains": chains.into_iter().map(|c| json!({"instructions": c})).collect::<Vec<_>>(),
        "main_chain_idx": g.main_chain_idx(),
        "init_chain_idx": g.init_chain_idx(),
        "input_map": map(g.input_map()),
        "output_map": map(g.output_map()),
        "mutable_buffer_map": map(g.mutable_buffer_map()),
        "named_slots": named,
        "tensor_meta": metas,
    })
}
