//! Flatbuffer tables as JSON in the conventions of
//! `flatc --strict-json --defaults-json`: schema field names in schema
//! order, scalars always present, absent tables, strings and vectors left
//! out, enums by name (by number when the schema has no name), unions as
//! `<field>_type` plus `<field>`.

use flatbuffers::{Follow, ForwardsUOffset, Vector};
use serde_json::{Map, Value, json};

use crate::schema::flat_tensor as ft;
use crate::schema::program as fb;

/// A JSON object under construction, in field order.
struct Obj(Map<String, Value>);

impl Obj {
    fn new() -> Self {
        Obj(Map::new())
    }
    fn put(mut self, key: &str, v: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), v.into());
        self
    }
    /// Adds the field only when present, as flatc does for non-scalars.
    fn opt(mut self, key: &str, v: Option<Value>) -> Self {
        if let Some(v) = v {
            self.0.insert(key.to_owned(), v);
        }
        self
    }
    fn done(self) -> Value {
        Value::Object(self.0)
    }
}

/// An enum value by name, or by number when the schema does not name it.
fn enum_value(name: Option<&str>, number: i64) -> Value {
    name.map_or_else(|| json!(number), |n| json!(n))
}

fn scalars<'a, T>(v: Option<Vector<'a, T>>) -> Option<Value>
where
    T: Follow<'a> + 'a,
    T::Inner: Into<Value>,
{
    v.map(|v| Value::Array(v.iter().map(Into::into).collect()))
}

fn tables<'a, T: 'a>(
    v: Option<Vector<'a, ForwardsUOffset<T>>>,
    f: impl Fn(T) -> Value,
) -> Option<Value>
where
    ForwardsUOffset<T>: Follow<'a, Inner = T>,
{
    v.map(|v| Value::Array(v.iter().map(f).collect()))
}

fn string(s: Option<&str>) -> Option<Value> {
    s.map(|s| json!(s))
}

/// `ExecutionPlan`.
pub fn plan(p: fb::ExecutionPlan<'_>) -> Value {
    Obj::new()
        .opt("name", string(p.name()))
        .opt(
            "container_meta_type",
            p.container_meta_type().map(|c| {
                Obj::new()
                    .opt("encoded_inp_str", string(c.encoded_inp_str()))
                    .opt("encoded_out_str", string(c.encoded_out_str()))
                    .done()
            }),
        )
        .opt("values", tables(p.values(), evalue))
        .opt("inputs", scalars(p.inputs()))
        .opt("outputs", scalars(p.outputs()))
        .opt("chains", tables(p.chains(), chain))
        .opt(
            "operators",
            tables(p.operators(), |o| {
                Obj::new()
                    .opt("name", string(o.name()))
                    .opt("overload", string(o.overload()))
                    .done()
            }),
        )
        .opt("delegates", tables(p.delegates(), delegate))
        .opt(
            "non_const_buffer_sizes",
            scalars(p.non_const_buffer_sizes()),
        )
        .opt(
            "non_const_buffer_device",
            tables(p.non_const_buffer_device(), |d| {
                Obj::new()
                    .put("buffer_idx", d.buffer_idx())
                    .put("device_type", device_type(d.device_type()))
                    .put("device_index", d.device_index())
                    .done()
            }),
        )
        .done()
}

fn device_type(d: fb::DeviceType) -> Value {
    enum_value(d.variant_name(), d.0.into())
}

fn items<'a, T>(v: Option<Vector<'a, T>>) -> Value
where
    T: Follow<'a> + 'a,
    T::Inner: Into<Value>,
{
    Obj::new().opt("items", scalars(v)).done()
}

fn evalue(e: fb::EValue<'_>) -> Value {
    let t = e.val_type();
    let val = if let Some(x) = e.val_as_tensor() {
        Some(tensor(x))
    } else if let Some(x) = e.val_as_int() {
        Some(Obj::new().put("int_val", x.int_val()).done())
    } else if let Some(x) = e.val_as_bool() {
        Some(Obj::new().put("bool_val", x.bool_val()).done())
    } else if let Some(x) = e.val_as_double() {
        Some(Obj::new().put("double_val", x.double_val()).done())
    } else if let Some(x) = e.val_as_string() {
        Some(Obj::new().opt("string_val", string(x.string_val())).done())
    } else if let Some(x) = e.val_as_int_list() {
        Some(items(x.items()))
    } else if let Some(x) = e.val_as_double_list() {
        Some(items(x.items()))
    } else if let Some(x) = e.val_as_bool_list() {
        Some(items(x.items()))
    } else if let Some(x) = e.val_as_tensor_list() {
        Some(items(x.items()))
    } else if let Some(x) = e.val_as_optional_tensor_list() {
        Some(items(x.items()))
    } else if e.val_as_null().is_some() {
        Some(json!({}))
    } else {
        None
    };
    Obj::new()
        .put("val_type", enum_value(t.variant_name(), t.0.into()))
        .opt("val", val)
        .done()
}

fn tensor(t: fb::Tensor<'_>) -> Value {
    Obj::new()
        .put(
            "scalar_type",
            enum_value(t.scalar_type().variant_name(), t.scalar_type().0.into()),
        )
        .put("storage_offset", t.storage_offset())
        .opt("sizes", scalars(t.sizes()))
        .opt("dim_order", scalars(t.dim_order()))
        .put("requires_grad", t.requires_grad())
        .put("data_buffer_idx", t.data_buffer_idx())
        .opt(
            "allocation_info",
            t.allocation_info().map(|a| {
                Obj::new()
                    .put("memory_id", a.memory_id())
                    .put("memory_offset_low", a.memory_offset_low())
                    .put("memory_offset_high", a.memory_offset_high())
                    .done()
            }),
        )
        .put("layout", t.layout())
        .put(
            "shape_dynamism",
            enum_value(
                t.shape_dynamism().variant_name(),
                t.shape_dynamism().0.into(),
            ),
        )
        .opt(
            "extra_tensor_info",
            t.extra_tensor_info().map(|e| {
                Obj::new()
                    .put("mutable_data_segments_idx", e.mutable_data_segments_idx())
                    .opt("fully_qualified_name", string(e.fully_qualified_name()))
                    .put(
                        "location",
                        enum_value(e.location().variant_name(), e.location().0.into()),
                    )
                    .put("device_type", device_type(e.device_type()))
                    .put("device_index", e.device_index())
                    .done()
            }),
        )
        .done()
}

fn chain(c: fb::Chain<'_>) -> Value {
    Obj::new()
        .opt("inputs", scalars(c.inputs()))
        .opt("outputs", scalars(c.outputs()))
        .opt("instructions", tables(c.instructions(), instruction))
        .opt(
            "stacktrace",
            tables(c.stacktrace(), |fl| {
                Obj::new()
                    .opt(
                        "items",
                        tables(fl.items(), |f| {
                            Obj::new()
                                .opt("filename", string(f.filename()))
                                .put("lineno", f.lineno())
                                .opt("name", string(f.name()))
                                .opt("context", string(f.context()))
                                .done()
                        }),
                    )
                    .done()
            }),
        )
        .done()
}

fn instruction(i: fb::Instruction<'_>) -> Value {
    let t = i.instr_args_type();
    let args = if let Some(k) = i.instr_args_as_kernel_call() {
        Some(
            Obj::new()
                .put("op_index", k.op_index())
                .opt("args", scalars(k.args()))
                .done(),
        )
    } else if let Some(d) = i.instr_args_as_delegate_call() {
        Some(
            Obj::new()
                .put("delegate_index", d.delegate_index())
                .opt("args", scalars(d.args()))
                .done(),
        )
    } else if let Some(m) = i.instr_args_as_move_call() {
        Some(
            Obj::new()
                .put("move_from", m.move_from())
                .put("move_to", m.move_to())
                .done(),
        )
    } else if let Some(j) = i.instr_args_as_jump_false_call() {
        Some(
            Obj::new()
                .put("cond_value_index", j.cond_value_index())
                .put("destination_instruction", j.destination_instruction())
                .done(),
        )
    } else {
        i.instr_args_as_free_call()
            .map(|f| Obj::new().put("value_index", f.value_index()).done())
    };
    Obj::new()
        .put("instr_args_type", enum_value(t.variant_name(), t.0.into()))
        .opt("instr_args", args)
        .done()
}

fn delegate(d: fb::BackendDelegate<'_>) -> Value {
    Obj::new()
        .opt("id", string(d.id()))
        .opt(
            "processed",
            d.processed().map(|p| {
                Obj::new()
                    .put(
                        "location",
                        enum_value(p.location().variant_name(), p.location().0.into()),
                    )
                    .put("index", p.index())
                    .done()
            }),
        )
        .opt(
            "compile_specs",
            tables(d.compile_specs(), |cs| {
                Obj::new()
                    .opt("key", string(cs.key()))
                    .opt("value", scalars(cs.value()))
                    .done()
            }),
        )
        .done()
}

/// `FlatTensor`.
pub fn flat_tensor(f: ft::FlatTensor<'_>) -> Value {
    Obj::new()
        .put("version", f.version())
        .opt(
            "segments",
            tables(f.segments(), |s| {
                Obj::new()
                    .put("offset", s.offset())
                    .put("size", s.size())
                    .done()
            }),
        )
        .opt(
            "named_data",
            tables(f.named_data(), |n| {
                Obj::new()
                    .opt("key", string(n.key()))
                    .put("segment_index", n.segment_index())
                    .opt(
                        "tensor_layout",
                        n.tensor_layout().map(|l| {
                            let st = l.scalar_type();
                            Obj::new()
                                .put("scalar_type", enum_value(st.variant_name(), st.0.into()))
                                .opt("sizes", scalars(l.sizes()))
                                .opt("dim_order", scalars(l.dim_order()))
                                .done()
                        }),
                    )
                    .done()
            }),
        )
        .done()
}
