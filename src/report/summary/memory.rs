//! The memory plan: per method the planned buffers, and for each planned
//! value the range of instructions from its first use to its last (its
//! lifetime), for the lifetime chart.

use serde::Serialize;

use crate::format::Parsed;

/// One method's memory plan.
#[derive(Debug, Clone, Serialize)]
pub struct MethodMemory {
    /// The file holding it.
    pub file: String,
    /// The method.
    pub method: String,
    /// Instructions over all chains, in order.
    pub instructions: u64,
    /// The planned buffers (memory id 1 on).
    pub buffers: Vec<PlannedBuffer>,
    /// Planned values with their place and lifetime, by buffer and offset.
    pub values: Vec<Lifetime>,
}

/// A planned buffer.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedBuffer {
    /// Its memory id.
    pub mem_id: usize,
    /// Bytes (`non_const_buffer_sizes`; -1 when the plan lacks it).
    pub bytes: i64,
    /// Values placed in it.
    pub values: u64,
}

/// A planned value.
#[derive(Debug, Clone, Serialize)]
pub struct Lifetime {
    /// Index in `ExecutionPlan.values`.
    pub value: usize,
    /// Buffer.
    pub mem_id: u32,
    /// Offset in it.
    pub offset: u64,
    /// Bytes (elements × element size, upper bound for dynamic shapes).
    pub bytes: u64,
    /// First instruction using it (chains counted one after another);
    /// `None` when no instruction names it (a method input or output only).
    pub first: Option<u64>,
    /// Last instruction using it.
    pub last: Option<u64>,
}

pub(super) fn memory(file: &str, p: &Parsed<'_>) -> Vec<MethodMemory> {
    let program = match p {
        Parsed::Program(p) => p,
        Parsed::Bundled(b) => &b.program,
        _ => return Vec::new(),
    };
    program
        .methods
        .iter()
        .map(|m| {
            let plan = crate::meta::memory_plan::plan(m.plan);
            let users = crate::meta::users::users(m.plan);
            // Where each chain's instructions start in one count.
            let mut starts = Vec::new();
            let mut total = 0u64;
            for c in m.plan.chains().iter().flatten() {
                starts.push(total);
                total += c.instructions().map_or(0, |i| i.len() as u64);
            }
            let mut values = Vec::new();
            for b in &plan.buffers {
                for v in &b.values {
                    let uses = users.of(v.value);
                    let at = |u: &crate::meta::users::Use| {
                        starts.get(u.chain as usize).copied().unwrap_or(0)
                            + u64::from(u.instruction)
                    };
                    values.push(Lifetime {
                        value: v.value,
                        mem_id: b.mem_id as u32,
                        offset: v.spec.mem_offset.unwrap_or(0),
                        bytes: v.spec.nbytes.unwrap_or(0),
                        first: uses.iter().map(at).min(),
                        last: uses.iter().map(at).max(),
                    });
                }
            }
            MethodMemory {
                file: file.to_owned(),
                method: m.name.to_string(),
                instructions: total,
                buffers: plan
                    .buffers
                    .iter()
                    .map(|b| PlannedBuffer {
                        mem_id: b.mem_id,
                        bytes: b.size,
                        values: b.values.len() as u64,
                    })
                    .collect(),
                values,
            }
        })
        .collect()
}
