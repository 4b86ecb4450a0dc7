//! A method's inputs and outputs as the exporter recorded them, and the
//! values of a constant method.

use serde::Serialize;
use serde_json::{Value as Json, json};

use crate::format::{scalar, strings, tensor_nbytes};
use crate::schema::program as fb;

/// A tensor's recorded type, shape and placement.
#[derive(Debug, Clone, Serialize)]
pub struct TensorSpec {
    /// `FLOAT`, `LONG`, ...
    pub scalar_type: String,
    /// Logical sizes (upper bounds for a dynamic shape).
    pub sizes: Vec<i64>,
    /// Dimension order, outermost first.
    pub dim_order: Vec<u8>,
    /// `STATIC`, `DYNAMIC_BOUND` or `DYNAMIC_UNBOUND`.
    pub shape_dynamism: String,
    /// Elements × element size, when the type is known.
    pub nbytes: Option<u64>,
    /// Placed by the memory planner (`allocation_info` present).
    pub memory_planned: bool,
    /// Memory id and offset in that buffer, when planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_id: Option<u32>,
    /// Offset in the planned buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_offset: Option<u64>,
    /// `extra_tensor_info.fully_qualified_name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqn: Option<String>,
    /// Has initial bytes in a file (a constant, an initial state or an
    /// external tensor).
    pub has_data: bool,
}

impl TensorSpec {
    /// Reads a tensor value.
    pub fn of(t: fb::Tensor<'_>) -> TensorSpec {
        let sizes: Vec<i64> = t.sizes().iter().flatten().map(i64::from).collect();
        let alloc = t.allocation_info();
        let eti = t.extra_tensor_info();
        let external = eti.is_some_and(|e| e.location() == fb::TensorDataLocation::EXTERNAL);
        TensorSpec {
            scalar_type: scalar::name(t.scalar_type()),
            nbytes: tensor_nbytes(t.scalar_type(), &sizes).ok().flatten(),
            sizes,
            dim_order: t.dim_order().iter().flatten().collect(),
            shape_dynamism: t
                .shape_dynamism()
                .variant_name()
                .map_or_else(|| t.shape_dynamism().0.to_string(), str::to_owned),
            memory_planned: alloc.is_some(),
            mem_id: alloc.map(|a| a.memory_id()),
            mem_offset: alloc.map(|a| {
                u64::from(a.memory_offset_high()) << 32 | u64::from(a.memory_offset_low())
            }),
            fqn: eti
                .and_then(strings::fully_qualified_name)
                .map(|n| n.show().into_owned()),
            has_data: external || t.data_buffer_idx() > 0,
        }
    }
}

/// One input or output.
#[derive(Debug, Clone, Serialize)]
pub struct IoValue {
    /// Index in `ExecutionPlan.values`.
    pub value: i64,
    /// `Tensor`, `Int`, `Bool`, `Double`, `String`, `IntList`, ..., `Null`.
    #[serde(rename = "type")]
    pub kind: String,
    /// For tensors.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub tensor: Option<TensorSpec>,
    /// For everything else: the recorded value.
    #[serde(rename = "literal", skip_serializing_if = "Option::is_none")]
    pub literal: Option<Json>,
}

/// `io.json`: a method's inputs and outputs.
#[derive(Debug, Clone, Serialize)]
pub struct Io {
    /// `ExecutionPlan.inputs`.
    pub inputs: Vec<IoValue>,
    /// `ExecutionPlan.outputs`.
    pub outputs: Vec<IoValue>,
}

/// The inputs and outputs of `plan`.
pub fn io(plan: fb::ExecutionPlan<'_>) -> Io {
    let list = |v: Option<flatbuffers::Vector<'_, i32>>| {
        v.iter()
            .flatten()
            .map(|i| describe(plan, i64::from(i)))
            .collect()
    };
    Io {
        inputs: list(plan.inputs()),
        outputs: list(plan.outputs()),
    }
}

/// Value `index` of `plan`.
pub fn value(plan: fb::ExecutionPlan<'_>, index: i64) -> Option<fb::EValue<'_>> {
    let i = usize::try_from(index).ok()?;
    plan.values().filter(|v| i < v.len()).map(|v| v.get(i))
}

fn describe(plan: fb::ExecutionPlan<'_>, index: i64) -> IoValue {
    let Some(v) = value(plan, index) else {
        return IoValue {
            value: index,
            kind: "<out of range>".to_owned(),
            tensor: None,
            literal: None,
        };
    };
    IoValue {
        value: index,
        kind: v
            .val_type()
            .variant_name()
            .map_or_else(|| v.val_type().0.to_string(), str::to_owned),
        tensor: v.val_as_tensor().map(TensorSpec::of),
        literal: literal(plan, v),
    }
}

/// The JSON of a value that is not a tensor (lists of value indices are
/// resolved to their Ints), or `None` for tensors and tensor lists.
pub fn literal(plan: fb::ExecutionPlan<'_>, v: fb::EValue<'_>) -> Option<Json> {
    Some(if let Some(x) = v.val_as_int() {
        json!(x.int_val())
    } else if let Some(x) = v.val_as_double() {
        json!(x.double_val())
    } else if let Some(x) = v.val_as_bool() {
        json!(x.bool_val())
    } else if let Some(x) = v.val_as_string() {
        json!(strings::string_val(x).unwrap_or_default().show())
    } else if v.val_as_null().is_some() {
        Json::Null
    } else if let Some(x) = v.val_as_int_list() {
        let items = x.items();
        let ints = items.iter().flatten().map(|i| {
            value(plan, i)
                .and_then(|v| v.val_as_int())
                .map_or(Json::Null, |x| json!(x.int_val()))
        });
        Json::Array(ints.collect())
    } else if let Some(x) = v.val_as_double_list() {
        json!(x.items().iter().flatten().collect::<Vec<f64>>())
    } else if let Some(x) = v.val_as_bool_list() {
        json!(x.items().iter().flatten().collect::<Vec<bool>>())
    } else {
        return None;
    })
}

/// For a constant method (no instructions, and every output a literal or
/// a tensor with stored bytes), the output values: one value alone, or a
/// list when there are several. `None` for any other method.
pub fn constant_value(plan: fb::ExecutionPlan<'_>) -> Option<Json> {
    let instructions = plan
        .chains()
        .iter()
        .flatten()
        .map(|c| c.instructions().map_or(0, |i| i.len()))
        .sum::<usize>();
    let outputs: Vec<i64> = plan.outputs().iter().flatten().map(i64::from).collect();
    if instructions > 0 || outputs.is_empty() {
        return None;
    }
    let mut values = Vec::new();
    for o in outputs {
        let v = value(plan, o)?;
        let j = match v.val_as_tensor() {
            Some(t) => {
                let spec = TensorSpec::of(t);
                if !spec.has_data {
                    return None;
                }
                json!({"tensor": o, "scalar_type": spec.scalar_type, "sizes": spec.sizes})
            }
            None => literal(plan, v)?,
        };
        values.push(j);
    }
    Some(if values.len() == 1 {
        values.remove(0)
    } else {
        Json::Array(values)
    })
}
