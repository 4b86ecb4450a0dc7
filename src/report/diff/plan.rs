//! The `io` and `memory` sections: a method's inputs and outputs and its
//! memory plan, as the exporter recorded them, compared field by field.

use serde::Serialize;
use serde_json::Value;

use crate::meta::{io, memory_plan};
use crate::schema::program as fb;

/// A field of an input, output or planned value that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanChange {
    /// Which (`input 0`, `output 2`, `buffer 1`, `value 17`).
    pub at: String,
    /// The field (`sizes`, `shape_dynamism`, `mem_offset`, ...); `value`
    /// when the whole entry exists on one side only.
    pub field: String,
    /// Its value in A (null when absent).
    pub a: Value,
    /// Its value in B.
    pub b: Value,
}

/// Entries of two lists compared position by position, field by field.
fn fields(kind: &str, a: &[Value], b: &[Value], out: &mut Vec<PlanChange>) {
    for i in 0..a.len().max(b.len()) {
        let at = format!("{kind} {i}");
        match (a.get(i), b.get(i)) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.dedup();
                let mut seen = std::collections::HashSet::new();
                for k in keys {
                    if !seen.insert(k) {
                        continue;
                    }
                    let (u, v) = (x.get(k).cloned(), y.get(k).cloned());
                    if u != v {
                        out.push(PlanChange {
                            at: at.clone(),
                            field: k.clone(),
                            a: u.unwrap_or(Value::Null),
                            b: v.unwrap_or(Value::Null),
                        });
                    }
                }
            }
            (x, y) if x != y => out.push(PlanChange {
                at,
                field: "value".into(),
                a: x.cloned().unwrap_or(Value::Null),
                b: y.cloned().unwrap_or(Value::Null),
            }),
            _ => {}
        }
    }
}

fn list(v: &impl Serialize) -> Vec<Value> {
    match serde_json::to_value(v) {
        Ok(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

/// Inputs or outputs without where they are placed, which is the memory
/// section's.
fn signature(l: &[io::IoValue]) -> Vec<Value> {
    let mut items = list(&l);
    for v in &mut items {
        if let Value::Object(m) = v {
            m.remove("mem_id");
            m.remove("mem_offset");
        }
    }
    items
}

/// How two methods' inputs and outputs differ: type, sizes, dim order,
/// dynamism, planning.
pub(super) fn io(a: fb::ExecutionPlan<'_>, b: fb::ExecutionPlan<'_>) -> Vec<PlanChange> {
    let (x, y) = (io::io(a), io::io(b));
    let mut out = Vec::new();
    fields(
        "input",
        &signature(&x.inputs),
        &signature(&y.inputs),
        &mut out,
    );
    fields(
        "output",
        &signature(&x.outputs),
        &signature(&y.outputs),
        &mut out,
    );
    out
}

/// How two methods' memory plans differ: planned buffer sizes, and where
/// each tensor value is placed (by value index).
pub(super) fn memory(a: fb::ExecutionPlan<'_>, b: fb::ExecutionPlan<'_>) -> Vec<PlanChange> {
    let (x, y) = (memory_plan::plan(a), memory_plan::plan(b));
    let mut out = Vec::new();
    let sizes = |p: &memory_plan::MemoryPlan| -> Vec<Value> {
        p.non_const_buffer_sizes
            .iter()
            .map(|s| Value::from(*s))
            .collect()
    };
    fields("buffer", &sizes(&x), &sizes(&y), &mut out);
    let placements = |p: fb::ExecutionPlan<'_>| -> Vec<Value> {
        memory_plan::tensors(p)
            .into_iter()
            .map(|v| {
                serde_json::json!({
                    "value": v.value,
                    "mem_id": v.spec.mem_id,
                    "mem_offset": v.spec.mem_offset,
                })
            })
            .collect()
    };
    let (pa, pb) = (placements(a), placements(b));
    // Placements pair by value index, not by position in the list.
    let index = |l: &[Value]| -> std::collections::BTreeMap<u64, Value> {
        l.iter()
            .filter_map(|v| Some((v["value"].as_u64()?, v.clone())))
            .collect()
    };
    let (ia, ib) = (index(&pa), index(&pb));
    let ids: std::collections::BTreeSet<&u64> = ia.keys().chain(ib.keys()).collect();
    for id in ids {
        let (u, v) = (ia.get(id), ib.get(id));
        for field in ["mem_id", "mem_offset"] {
            let (p, q) = (
                u.map_or(Value::Null, |u| u[field].clone()),
                v.map_or(Value::Null, |v| v[field].clone()),
            );
            if p != q {
                out.push(PlanChange {
                    at: format!("value {id}"),
                    field: field.into(),
                    a: p,
                    b: q,
                });
            }
        }
    }
    out
}
