//! A method's memory plan: the planned buffers and the tensors placed in
//! each.

use serde::Serialize;

use super::io::TensorSpec;
use crate::schema::program as fb;

/// A tensor value with its recorded type and placement.
#[derive(Debug, Clone, Serialize)]
pub struct PlacedValue {
    /// Index in `ExecutionPlan.values`.
    pub value: usize,
    /// Type, shape and placement.
    #[serde(flatten)]
    pub spec: TensorSpec,
}

/// One planned buffer.
#[derive(Debug, Clone, Serialize)]
pub struct Buffer {
    /// The memory id tensors refer to.
    pub mem_id: usize,
    /// `non_const_buffer_sizes[mem_id]`.
    pub size: i64,
    /// Tensors placed in it, by offset then value index.
    pub values: Vec<PlacedValue>,
}

/// `memory.json`.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryPlan {
    /// `non_const_buffer_sizes` as recorded (index 0 is reserved).
    pub non_const_buffer_sizes: Vec<i64>,
    /// The buffers from memory id 1 on, and any other id a tensor names.
    pub buffers: Vec<Buffer>,
}

/// Every tensor value of `plan`, with its index.
pub fn tensors(plan: fb::ExecutionPlan<'_>) -> Vec<PlacedValue> {
    plan.values()
        .iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            v.val_as_tensor().map(|t| PlacedValue {
                value: i,
                spec: TensorSpec::of(t),
            })
        })
        .collect()
}

/// The memory plan of `plan`.
pub fn plan(plan: fb::ExecutionPlan<'_>) -> MemoryPlan {
    let sizes: Vec<i64> = plan.non_const_buffer_sizes().iter().flatten().collect();
    let mut buffers: Vec<Buffer> = sizes
        .iter()
        .enumerate()
        .skip(1)
        .map(|(mem_id, &size)| Buffer {
            mem_id,
            size,
            values: Vec::new(),
        })
        .collect();
    let planned = plan
        .values()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            let t = v
                .val_as_tensor()
                .filter(|t| t.allocation_info().is_some())?;
            Some(PlacedValue {
                value: i,
                spec: TensorSpec::of(t),
            })
        });
    for t in planned {
        let Some(id) = t.spec.mem_id else { continue };
        let id = id as usize;
        match buffers.iter_mut().find(|b| b.mem_id == id) {
            Some(b) => b.values.push(t),
            None => buffers.push(Buffer {
                mem_id: id,
                size: -1,
                values: vec![t],
            }),
        }
    }
    for b in &mut buffers {
        b.values.sort_by_key(|t| (t.spec.mem_offset, t.value));
    }
    MemoryPlan {
        non_const_buffer_sizes: sizes,
        buffers,
    }
}
