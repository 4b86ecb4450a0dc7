//! Flatbuffer tables as JSON in the conventions of
//! `flatc --strict-json --defaults-json`: schema field names in schema
//! order, scalars always present, absent tables, strings and vectors left
//! out, enums by name (by number when the schema has no name), unions as
//! `<field>_type` plus `<field>`.
//!
//! Each wrapper serializes straight from the verified flatbuffer, so a
//! plan of 100,000 values renders without building a JSON tree first.

use flatbuffers::{Follow, ForwardsUOffset, Vector};
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::format::strings;
use crate::schema::flat_tensor as ft;
use crate::schema::program as fb;

/// An object being written: fields in the order they are put.
pub(super) struct Fields<M>(pub(super) M);

impl<M: SerializeMap> Fields<M> {
    pub(super) fn put<V: Serialize + ?Sized>(&mut self, key: &str, v: &V) -> Result<(), M::Error> {
        self.0.serialize_entry(key, v)
    }
    /// Adds the field only when present, as flatc does for non-scalars.
    pub(super) fn opt<V: Serialize>(&mut self, key: &str, v: Option<V>) -> Result<(), M::Error> {
        match v {
            Some(v) => self.0.serialize_entry(key, &v),
            None => Ok(()),
        }
    }
}

/// An enum value by name, or by number when the schema does not name it.
pub(super) struct Enum(pub(super) Option<&'static str>, pub(super) i64);

impl Serialize for Enum {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(name) => s.serialize_str(name),
            None => s.serialize_i64(self.1),
        }
    }
}

macro_rules! enum_of {
    ($v:expr) => {{
        let v = $v;
        Enum(v.variant_name(), i64::from(v.0))
    }};
}
pub(super) use enum_of;

/// A vector of scalars.
pub(super) struct Scalars<'a, T: Follow<'a> + 'a>(pub(super) Vector<'a, T>);

impl<'a, T> Serialize for Scalars<'a, T>
where
    T: Follow<'a> + 'a,
    T::Inner: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

/// A vector of tables, each shown through `W`.
pub(super) struct Tables<'a, T: 'a, W>(
    pub(super) Vector<'a, ForwardsUOffset<T>>,
    pub(super) fn(T) -> W,
);

impl<'a, T: 'a, W: Serialize> Serialize for Tables<'a, T, W>
where
    ForwardsUOffset<T>: Follow<'a, Inner = T>,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(self.1))
    }
}

/// A vector of tables, each shown through `W` with the path of its file
/// (`paths[index]`).
struct WithPaths<'a, T: 'a, W>(
    Vector<'a, ForwardsUOffset<T>>,
    &'a [Option<String>],
    fn(T, Option<&'a str>) -> W,
);

impl<'a, T: 'a, W: Serialize> Serialize for WithPaths<'a, T, W>
where
    ForwardsUOffset<T>: Follow<'a, Inner = T>,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let paths = self.1;
        let show = |(i, t)| (self.2)(t, paths.get(i).and_then(Option::as_deref));
        s.collect_seq(self.0.iter().enumerate().map(show))
    }
}

/// Declares a wrapper that shows table `fb::$table` as a JSON object.
macro_rules! table {
    ($name:ident, $module:ident :: $table:ident, |$t:ident, $o:ident| $body:block) => {
        struct $name<'a>($module::$table<'a>);

        impl Serialize for $name<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let $t = self.0;
                let mut $o = Fields(s.serialize_map(None)?);
                $body
                $o.0.end()
            }
        }
    };
}
pub(super) use table;

/// `ExecutionPlan`, with `ptefs_path` added to the tensor values that have
/// a file (`paths[value index]`).
pub struct Plan<'a> {
    /// The plan.
    pub plan: fb::ExecutionPlan<'a>,
    /// Path of each value's file, by value index.
    pub paths: &'a [Option<String>],
}

impl Serialize for Plan<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.plan;
        let mut o = Fields(s.serialize_map(None)?);
        o.opt("name", strings::plan_name(p))?;
        o.opt(
            "container_meta_type",
            p.container_meta_type().map(ContainerMetadata),
        )?;
        o.opt(
            "values",
            p.values().map(|v| WithPaths(v, self.paths, EValue)),
        )?;
        o.opt("inputs", p.inputs().map(Scalars))?;
        o.opt("outputs", p.outputs().map(Scalars))?;
        o.opt("chains", p.chains().map(|v| Tables(v, Chain)))?;
        o.opt("operators", p.operators().map(|v| Tables(v, Operator)))?;
        o.opt("delegates", p.delegates().map(|v| Tables(v, Delegate)))?;
        o.opt(
            "non_const_buffer_sizes",
            p.non_const_buffer_sizes().map(Scalars),
        )?;
        o.opt(
            "non_const_buffer_device",
            p.non_const_buffer_device().map(|v| Tables(v, BufferDevice)),
        )?;
        o.0.end()
    }
}

table!(ContainerMetadata, fb::ContainerMetadata, |c, o| {
    o.opt("encoded_inp_str", strings::encoded_inp_str(c))?;
    o.opt("encoded_out_str", strings::encoded_out_str(c))?;
});

table!(Operator, fb::Operator, |op, o| {
    o.opt("name", strings::operator_name(op))?;
    o.opt("overload", strings::operator_overload(op))?;
});

table!(BufferDevice, fb::NonConstBufferDevice, |d, o| {
    o.put("buffer_idx", &d.buffer_idx())?;
    o.put("device_type", &enum_of!(d.device_type()))?;
    o.put("device_index", &d.device_index())?;
});

struct EValue<'a>(fb::EValue<'a>, Option<&'a str>);

impl Serialize for EValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let mut o = Fields(s.serialize_map(None)?);
        o.put("val_type", &enum_of!(e.val_type()))?;
        if let Some(t) = e.val_as_tensor() {
            o.put("val", &Tensor(t, self.1))?;
        } else if let Some(x) = e.val_as_int() {
            o.put("val", &Int(x))?;
        } else if let Some(x) = e.val_as_bool() {
            o.put("val", &Bool(x))?;
        } else if let Some(x) = e.val_as_double() {
            o.put("val", &Double(x))?;
        } else if let Some(x) = e.val_as_string() {
            o.put("val", &Str(x))?;
        } else if let Some(x) = e.val_as_int_list() {
            o.put("val", &Items(x.items().map(Scalars)))?;
        } else if let Some(x) = e.val_as_double_list() {
            o.put("val", &Items(x.items().map(Scalars)))?;
        } else if let Some(x) = e.val_as_bool_list() {
            o.put("val", &Items(x.items().map(Scalars)))?;
        } else if let Some(x) = e.val_as_tensor_list() {
            o.put("val", &Items(x.items().map(Scalars)))?;
        } else if let Some(x) = e.val_as_optional_tensor_list() {
            o.put("val", &Items(x.items().map(Scalars)))?;
        } else if e.val_as_null().is_some() {
            o.put("val", &Items::<()>(None))?;
        }
        o.0.end()
    }
}

/// `{"items": [...]}`, or `{}` when absent.
struct Items<T>(Option<T>);

impl<T: Serialize> Serialize for Items<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if let Some(items) = &self.0 {
            m.serialize_entry("items", items)?;
        }
        m.end()
    }
}

table!(Int, fb::Int, |x, o| {
    o.put("int_val", &x.int_val())?;
});

table!(Bool, fb::Bool, |x, o| {
    o.put("bool_val", &x.bool_val())?;
});

table!(Double, fb::Double, |x, o| {
    o.put("double_val", &x.double_val())?;
});

table!(Str, fb::String, |x, o| {
    o.opt("string_val", strings::string_val(x))?;
});

struct Tensor<'a>(fb::Tensor<'a>, Option<&'a str>);

impl Serialize for Tensor<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut o = Fields(s.serialize_map(None)?);
        o.put("scalar_type", &enum_of!(t.scalar_type()))?;
        o.put("storage_offset", &t.storage_offset())?;
        o.opt("sizes", t.sizes().map(Scalars))?;
        o.opt("dim_order", t.dim_order().map(Scalars))?;
        o.put("requires_grad", &t.requires_grad())?;
        o.put("data_buffer_idx", &t.data_buffer_idx())?;
        o.opt("allocation_info", t.allocation_info().map(Allocation))?;
        o.put("layout", &t.layout())?;
        o.put("shape_dynamism", &enum_of!(t.shape_dynamism()))?;
        o.opt(
            "extra_tensor_info",
            t.extra_tensor_info().map(ExtraTensorInfo),
        )?;
        o.opt("ptefs_path", self.1)?;
        o.0.end()
    }
}

table!(Allocation, fb::AllocationDetails, |a, o| {
    o.put("memory_id", &a.memory_id())?;
    o.put("memory_offset_low", &a.memory_offset_low())?;
    o.put("memory_offset_high", &a.memory_offset_high())?;
});

table!(ExtraTensorInfo, fb::ExtraTensorInfo, |e, o| {
    o.put("mutable_data_segments_idx", &e.mutable_data_segments_idx())?;
    o.opt("fully_qualified_name", strings::fully_qualified_name(e))?;
    o.put("location", &enum_of!(e.location()))?;
    o.put("device_type", &enum_of!(e.device_type()))?;
    o.put("device_index", &e.device_index())?;
});

table!(Chain, fb::Chain, |c, o| {
    o.opt("inputs", c.inputs().map(Scalars))?;
    o.opt("outputs", c.outputs().map(Scalars))?;
    o.opt(
        "instructions",
        c.instructions().map(|v| Tables(v, Instruction)),
    )?;
    o.opt("stacktrace", c.stacktrace().map(|v| Tables(v, FrameList)))?;
});

table!(FrameList, fb::FrameList, |l, o| {
    o.opt("items", l.items().map(|v| Tables(v, Frame)))?;
});

table!(Frame, fb::Frame, |f, o| {
    o.opt("filename", strings::frame_filename(f))?;
    o.put("lineno", &f.lineno())?;
    o.opt("name", strings::frame_name(f))?;
    o.opt("context", strings::frame_context(f))?;
});

table!(Instruction, fb::Instruction, |i, o| {
    o.put("instr_args_type", &enum_of!(i.instr_args_type()))?;
    if let Some(k) = i.instr_args_as_kernel_call() {
        o.put("instr_args", &KernelCall(k))?;
    } else if let Some(d) = i.instr_args_as_delegate_call() {
        o.put("instr_args", &DelegateCall(d))?;
    } else if let Some(m) = i.instr_args_as_move_call() {
        o.put("instr_args", &MoveCall(m))?;
    } else if let Some(j) = i.instr_args_as_jump_false_call() {
        o.put("instr_args", &JumpFalseCall(j))?;
    } else if let Some(f) = i.instr_args_as_free_call() {
        o.put("instr_args", &FreeCall(f))?;
    }
});

table!(KernelCall, fb::KernelCall, |k, o| {
    o.put("op_index", &k.op_index())?;
    o.opt("args", k.args().map(Scalars))?;
});

table!(DelegateCall, fb::DelegateCall, |d, o| {
    o.put("delegate_index", &d.delegate_index())?;
    o.opt("args", d.args().map(Scalars))?;
});

table!(MoveCall, fb::MoveCall, |m, o| {
    o.put("move_from", &m.move_from())?;
    o.put("move_to", &m.move_to())?;
});

table!(JumpFalseCall, fb::JumpFalseCall, |j, o| {
    o.put("cond_value_index", &j.cond_value_index())?;
    o.put("destination_instruction", &j.destination_instruction())?;
});

table!(FreeCall, fb::FreeCall, |f, o| {
    o.put("value_index", &f.value_index())?;
});

table!(Delegate, fb::BackendDelegate, |d, o| {
    o.opt("id", strings::backend_id(d))?;
    o.opt("processed", d.processed().map(DataReference))?;
    o.opt(
        "compile_specs",
        d.compile_specs().map(|v| Tables(v, CompileSpec)),
    )?;
});

table!(DataReference, fb::BackendDelegateDataReference, |r, o| {
    o.put("location", &enum_of!(r.location()))?;
    o.put("index", &r.index())?;
});

table!(CompileSpec, fb::CompileSpec, |c, o| {
    o.opt("key", strings::compile_spec_key(c))?;
    o.opt("value", c.value().map(Scalars))?;
});

/// `FlatTensor`, with `ptefs_path` added to each named entry
/// (`paths[entry index]`).
pub struct FlatTensor<'a> {
    /// The root table.
    pub flat: ft::FlatTensor<'a>,
    /// Path of each named entry's file, by index.
    pub paths: &'a [Option<String>],
}

impl Serialize for FlatTensor<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.flat;
        let mut o = Fields(s.serialize_map(None)?);
        o.put("version", &f.version())?;
        o.opt("segments", f.segments().map(|v| Tables(v, Segment)))?;
        let paths = self.paths;
        o.opt(
            "named_data",
            f.named_data().map(|v| WithPaths(v, paths, NamedEntry)),
        )?;
        o.0.end()
    }
}

table!(Segment, ft::DataSegment, |d, o| {
    o.put("offset", &d.offset())?;
    o.put("size", &d.size())?;
});

struct NamedEntry<'a>(ft::NamedData<'a>, Option<&'a str>);

impl Serialize for NamedEntry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let mut o = Fields(s.serialize_map(None)?);
        o.opt("key", strings::data_key(n))?;
        o.put("segment_index", &n.segment_index())?;
        o.opt("tensor_layout", n.tensor_layout().map(Layout))?;
        o.opt("ptefs_path", self.1)?;
        o.0.end()
    }
}

table!(Layout, ft::TensorLayout, |l, o| {
    o.put("scalar_type", &enum_of!(l.scalar_type()))?;
    o.opt("sizes", l.sizes().map(Scalars))?;
    o.opt("dim_order", l.dim_order().map(Scalars))?;
});
