//! The NPTG graph of a `.ptn` as JSON, in the conventions of
//! `flatc --strict-json --defaults-json` (see [`super::flatc_json`]):
//! `program.json` is the whole `Program`, each method's `graph.json` its
//! `Method`.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::flatc_json::{Enum, Fields, Scalars, Tables, enum_of, table};
use crate::schema::native_graph as ng;

/// The whole program.
pub struct Program<'a>(pub ng::Program<'a>);

impl Serialize for Program<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut o = Fields(s.serialize_map(None)?);
        o.opt("version", p.version())?;
        o.put("methods", &Tables(p.methods(), Method))?;
        o.0.end()
    }
}

/// One method.
pub struct Method<'a>(pub ng::Method<'a>);

impl Serialize for Method<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut o = Fields(s.serialize_map(None)?);
        o.put("name", m.name())?;
        o.put("graph", &Graph(m.graph()))?;
        o.opt(
            "constants",
            m.constants().map(|v| Tables(v, NamedTensorRef)),
        )?;
        o.opt(
            "output_specs",
            m.output_specs().map(|v| Tables(v, OutputSpec)),
        )?;
        o.opt(
            "mutable_buffers",
            m.mutable_buffers().map(|v| Tables(v, MutableBufferSpec)),
        )?;
        o.0.end()
    }
}

table!(Graph, ng::Graph, |g, o| {
    o.put("nodes", &Tables(g.nodes(), Node))?;
    o.opt("inputs", g.inputs().map(Strings))?;
    o.opt("outputs", g.outputs().map(Strings))?;
    o.opt(
        "tensor_values",
        g.tensor_values().map(|v| Tables(v, TensorValue)),
    )?;
});

table!(Node, ng::Node, |n, o| {
    o.put("name", n.name())?;
    o.put("op_kind", &enum_of!(n.op_kind()))?;
    o.opt("target", n.target())?;
    o.opt("inputs", n.inputs().map(|v| Tables(v, NamedArgument)))?;
    o.opt("outputs", n.outputs().map(|v| Tables(v, Output)))?;
    o.opt("metadata", n.metadata().map(|v| Tables(v, KeyValue)))?;
});

table!(Output, ng::Output, |x, o| {
    o.put("name", x.name())?;
    o.opt("alias_of", x.alias_of())?;
    o.put("kind", &enum_of!(x.kind()))?;
    o.opt("names", x.names().map(Strings))?;
});

table!(KeyValue, ng::KeyValue, |x, o| {
    o.put("key", x.key())?;
    o.put("value", x.value())?;
});

table!(NamedArgument, ng::NamedArgument, |a, o| {
    o.opt("name", a.name())?;
    o.put("arg", &Argument(a.arg()))?;
    o.put("mutated", &a.mutated())?;
});

table!(Argument, ng::Argument, |a, o| {
    o.put("value_type", &enum_of!(a.value_type()))?;
    if let Some(x) = a.value_as_tensor_arg() {
        o.put("value", &TensorArg(x))?;
    } else if a.value_as_none_arg().is_some() {
        o.put("value", &Empty)?;
    } else if let Some(x) = a.value_as_int_arg() {
        o.put("value", &IntArg(x))?;
    } else if let Some(x) = a.value_as_float_arg() {
        o.put("value", &FloatArg(x))?;
    } else if let Some(x) = a.value_as_bool_arg() {
        o.put("value", &BoolArg(x))?;
    } else if let Some(x) = a.value_as_string_arg() {
        o.put("value", &StringArg(x))?;
    } else if let Some(x) = a.value_as_scalar_type_arg() {
        o.put("value", &ScalarTypeArg(x))?;
    } else if let Some(x) = a.value_as_int_list_arg() {
        o.put("value", &IntListArg(x))?;
    } else if let Some(x) = a.value_as_float_list_arg() {
        o.put("value", &FloatListArg(x))?;
    } else if let Some(x) = a.value_as_bool_list_arg() {
        o.put("value", &BoolListArg(x))?;
    } else if let Some(x) = a.value_as_tensor_list_arg() {
        o.put("value", &TensorListArg(x))?;
    } else if let Some(x) = a.value_as_optional_tensor_list_arg() {
        o.put("value", &OptionalTensorListArg(x))?;
    } else if let Some(x) = a.value_as_graph_arg() {
        o.put("value", &GraphArg(x))?;
    }
});

/// A table with no fields.
struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_map(Some(0))?.end()
    }
}

table!(TensorArg, ng::TensorArg, |x, o| {
    o.put("name", x.name())?;
});

table!(IntArg, ng::IntArg, |x, o| {
    o.put("value", &x.value())?;
    o.opt("ref", x.ref_())?;
});

table!(FloatArg, ng::FloatArg, |x, o| {
    o.put("value", &x.value())?;
    o.opt("ref", x.ref_())?;
});

table!(BoolArg, ng::BoolArg, |x, o| {
    o.put("value", &x.value())?;
    o.opt("ref", x.ref_())?;
});

table!(StringArg, ng::StringArg, |x, o| {
    o.put("value", x.value())?;
});

table!(ScalarTypeArg, ng::ScalarTypeArg, |x, o| {
    o.put("value", &enum_of!(x.value()))?;
});

table!(IntListArg, ng::IntListArg, |x, o| {
    o.put("values", &Scalars(x.values()))?;
    o.opt("refs", x.refs().map(Strings))?;
});

table!(FloatListArg, ng::FloatListArg, |x, o| {
    o.put("values", &Scalars(x.values()))?;
});

table!(BoolListArg, ng::BoolListArg, |x, o| {
    o.put("values", &Scalars(x.values()))?;
});

table!(TensorListArg, ng::TensorListArg, |x, o| {
    o.put("names", &Strings(x.names()))?;
});

table!(OptionalTensorListArg, ng::OptionalTensorListArg, |x, o| {
    o.put("names", &Strings(x.names()))?;
    o.put("has_value", &Scalars(x.has_value()))?;
});

table!(GraphArg, ng::GraphArg, |x, o| {
    o.put("name", x.name())?;
    o.put("graph", &Graph(x.graph()))?;
});

table!(TensorValue, ng::TensorValue, |x, o| {
    o.put("name", x.name())?;
    o.put("meta", &TensorMeta(x.meta()))?;
});

table!(TensorMeta, ng::TensorMeta, |m, o| {
    o.put("dtype", &enum_of!(m.dtype()))?;
    o.opt("sizes", m.sizes().map(|v| Tables(v, Dim)))?;
    o.opt("dim_order", m.dim_order().map(Scalars))?;
    o.opt("quant", m.quant().map(QuantSpec))?;
});

table!(Dim, ng::Dim, |d, o| {
    o.put("min", &d.min())?;
    o.put("max", &d.max())?;
});

table!(QuantSpec, ng::QuantSpec, |q, o| {
    o.put("scheme_type", &enum_of!(q.scheme_type()))?;
    if let Some(x) = q.scheme_as_affine_group() {
        o.put("scheme", &AffineGroup(x))?;
    } else if let Some(x) = q.scheme_as_packed_quant() {
        o.put("scheme", &PackedQuant(x))?;
    }
});

table!(AffineGroup, ng::AffineGroup, |x, o| {
    o.put("scale_data_key", x.scale_data_key())?;
    o.put("scale_dtype", &enum_of!(x.scale_dtype()))?;
    o.put("quant_min", &x.quant_min())?;
    o.put("quant_max", &x.quant_max())?;
    o.put("group_size", &x.group_size())?;
    o.opt("zero_point_data_key", x.zero_point_data_key())?;
    o.put("zero_point_dtype", &enum_of!(x.zero_point_dtype()))?;
});

table!(PackedQuant, ng::PackedQuant, |x, o| {
    o.put("codec", x.codec())?;
});

table!(NamedTensorRef, ng::NamedTensorRef, |c, o| {
    o.put("name", c.name())?;
    o.put("data_key", c.data_key())?;
    o.put("meta", &TensorMeta(c.meta()))?;
    o.put("kind", &enum_of!(c.kind()))?;
    o.put("mutated", &c.mutated())?;
});

table!(OutputSpec, ng::OutputSpec, |x, o| {
    o.put("name", x.name())?;
    o.put("kind", &enum_of!(x.kind()))?;
    o.opt("target", x.target())?;
});

table!(MutableBufferSpec, ng::MutableBufferSpec, |x, o| {
    o.put("name", x.name())?;
    o.put("fqn", x.fqn())?;
});

/// A vector of strings.
struct Strings<'a>(flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<&'a str>>);

impl Serialize for Strings<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}
