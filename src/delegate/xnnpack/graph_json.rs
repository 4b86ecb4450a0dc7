//! `graph.json`: an `XNNGraph` as `flatc --strict-json --defaults-json`
//! prints it (schema field names in order, scalars always present, absent
//! tables and vectors left out, enums by name, unions as `<field>_type`
//! plus `<field>`), with two differences: a constant value with a file
//! gains `ptefs_path`, and non-finite floats are the strings `"inf"`,
//! `"-inf"` and `"nan"`, since JSON has no literal for them.
//!
//! Serialized straight from the verified flatbuffer and the decoded nodes,
//! without building a JSON tree first.

use std::collections::HashMap;

use flatbuffers::{Follow, Vector};
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::{Field, Node, Payload};
use crate::schema::xnnpack as fb;

/// What `graph.json` shows: the payload's graph and, by value index, the
/// path of each constant's `.bin` from the root.
pub struct Graph<'a, 'p> {
    /// The decoded payload.
    pub payload: &'a Payload<'p>,
    /// Paths of constant files by value index.
    pub paths: &'a HashMap<usize, String>,
}

/// An `f32` as flatc prints it (shortest form, not the widened double),
/// non-finite values as strings.
#[derive(Clone, Copy)]
struct F(f32);

impl Serialize for F {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            v if v.is_nan() => s.serialize_str("nan"),
            v if v.is_infinite() => s.serialize_str(if v > 0.0 { "inf" } else { "-inf" }),
            v => s.serialize_f32(v),
        }
    }
}

/// An enum or union tag by name, or by number when the schema has none.
struct Tag(Option<&'static str>, i64);

impl Serialize for Tag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(name) => s.serialize_str(name),
            None => s.serialize_i64(self.1),
        }
    }
}

fn datatype(t: fb::XNNDatatype) -> Tag {
    Tag(t.variant_name(), i64::from(t.0))
}

/// A vector of scalars (floats through [`F`]).
struct Scalars<'a, T: Follow<'a> + 'a>(Vector<'a, T>);

impl<'a, T> Serialize for Scalars<'a, T>
where
    T: Follow<'a> + 'a,
    T::Inner: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

struct Floats<'a>(Vector<'a, f32>);

impl Serialize for Floats<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(F))
    }
}

/// Writes an object's fields in order; `opt` leaves absent ones out.
struct Fields<M>(M);

impl<M: SerializeMap> Fields<M> {
    fn put<V: Serialize + ?Sized>(&mut self, k: &str, v: &V) -> Result<(), M::Error> {
        self.0.serialize_entry(k, v)
    }
    fn opt<V: Serialize>(&mut self, k: &str, v: Option<V>) -> Result<(), M::Error> {
        v.map_or(Ok(()), |v| self.0.serialize_entry(k, &v))
    }
}

/// A node's table, from its decoded fields (already in schema order).
struct NodeFields<'a>(&'a [(&'static str, Field)]);

impl Serialize for NodeFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut o = Fields(s.serialize_map(None)?);
        for (k, f) in self.0 {
            match f {
                Field::U32(v) => o.put(k, v)?,
                Field::F32(v) => o.put(k, &F(*v))?,
                Field::List(v) => o.opt(k, v.as_ref())?,
            }
        }
        o.0.end()
    }
}

struct XNode<'a>(&'a Node, fb::XNode<'a>);

impl Serialize for XNode<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (n, x) = (self.0, self.1);
        let tag = x.xnode_union_type();
        let mut o = Fields(s.serialize_map(None)?);
        o.put(
            "xnode_union_type",
            &Tag(tag.variant_name(), i64::from(tag.0)),
        )?;
        o.opt("xnode_union", n.op.map(|_| NodeFields(&n.fields)))?;
        o.put("debug_handle", &n.debug_handle)?;
        o.opt("output_min_max", n.output_min_max.map(MinMax))?;
        o.0.end()
    }
}

struct MinMax((f32, f32));

impl Serialize for MinMax {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut o = Fields(s.serialize_map(Some(2))?);
        o.put("output_min", &F(self.0.0))?;
        o.put("output_max", &F(self.0.1))?;
        o.0.end()
    }
}

struct Tensor<'a>(fb::XNNTensorValue<'a>, Option<&'a str>);

impl Serialize for Tensor<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut o = Fields(s.serialize_map(None)?);
        o.put("datatype", &datatype(t.datatype()))?;
        o.put("num_dims", &t.num_dims())?;
        o.opt("dims", t.dims().map(Scalars))?;
        o.put("constant_buffer_idx", &t.constant_buffer_idx())?;
        o.put("external_id", &t.external_id())?;
        o.put("flags", &t.flags())?;
        o.put("id_out", &t.id_out())?;
        o.put("dq_datatype", &datatype(t.dq_datatype()))?;
        o.opt("ptefs_path", self.1)?;
        o.0.end()
    }
}

/// The member of `XNNQuantParams`, whichever it is.
struct QuantParams<'a>(fb::XNNQuantizedTensorValue<'a>);

impl Serialize for QuantParams<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let q = self.0;
        let mut o = Fields(s.serialize_map(None)?);
        if let Some(p) = q.quant_params_as_per_channel_quant() {
            o.opt("scale", p.scale().map(Floats))?;
            o.put("channel_dim", &p.channel_dim())?;
            o.put("scale_buffer_idx", &p.scale_buffer_idx())?;
            o.put("num_scales", &p.num_scales())?;
        } else if let Some(p) = q.quant_params_as_per_tensor_quant() {
            o.put("scale", &F(p.scale()))?;
            o.put("zero_point", &p.zero_point())?;
        } else if let Some(p) = q.quant_params_as_per_token_dynamic_quant() {
            o.put("num_nonbatch_dims", &p.num_nonbatch_dims())?;
        } else if let Some(p) = q.quant_params_as_per_channel_group_quant() {
            o.opt("scale", p.scale().map(Floats))?;
            o.put("channel_dim", &p.channel_dim())?;
            o.put("group_size", &p.group_size())?;
            o.opt("scale_bf16", p.scale_bf16().map(Scalars))?;
            o.put("scale_buffer_idx", &p.scale_buffer_idx())?;
            o.put("num_scales", &p.num_scales())?;
        }
        o.0.end()
    }
}

fn has_params(q: fb::XNNQuantizedTensorValue<'_>) -> bool {
    q.quant_params_as_per_channel_quant().is_some()
        || q.quant_params_as_per_tensor_quant().is_some()
        || q.quant_params_as_per_token_dynamic_quant().is_some()
        || q.quant_params_as_per_channel_group_quant().is_some()
}

struct Quantized<'a>(fb::XNNQuantizedTensorValue<'a>, Option<&'a str>);

impl Serialize for Quantized<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let q = self.0;
        let qt = q.quant_params_type();
        let mut o = Fields(s.serialize_map(None)?);
        o.opt("tensor_value", q.tensor_value().map(|t| Tensor(t, self.1)))?;
        o.put(
            "quant_params_type",
            &Tag(qt.variant_name(), i64::from(qt.0)),
        )?;
        o.opt("quant_params", has_params(q).then_some(QuantParams(q)))?;
        o.0.end()
    }
}

struct XValue<'a>(fb::XValue<'a>, Option<&'a str>);

impl Serialize for XValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (x, path) = (self.0, self.1);
        let tag = x.xvalue_union_type();
        let mut o = Fields(s.serialize_map(None)?);
        o.put(
            "xvalue_union_type",
            &Tag(tag.variant_name(), i64::from(tag.0)),
        )?;
        if let Some(q) = x.xvalue_union_as_xnnquantized_tensor_value() {
            o.put("xvalue_union", &Quantized(q, path))?;
        } else {
            let t = x.xvalue_union_as_xnntensor_value();
            o.opt("xvalue_union", t.map(|t| Tensor(t, path)))?;
        }
        o.0.end()
    }
}

struct Seq<I>(std::cell::Cell<Option<I>>);

impl<I: Iterator<Item = T>, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.take().into_iter().flatten())
    }
}

fn seq<I: Iterator<Item = T>, T: Serialize>(i: I) -> Seq<I> {
    Seq(std::cell::Cell::new(Some(i)))
}

struct Buffer<'a>(fb::Buffer<'a>);

impl Serialize for Buffer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut o = Fields(s.serialize_map(None)?);
        o.opt("storage", self.0.storage().map(Scalars))?;
        o.0.end()
    }
}

struct Constant<'a>(fb::ConstantDataOffset<'a>);

impl Serialize for Constant<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut o = Fields(s.serialize_map(None)?);
        o.put("offset", &c.offset())?;
        o.put("size", &c.size())?;
        o.opt("named_key", c.named_key())?;
        o.0.end()
    }
}

impl Serialize for Graph<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.payload;
        let g = p.graph;
        let path = |i: usize| self.paths.get(&i).map(String::as_str);
        let mut o = Fields(s.serialize_map(None)?);
        o.opt("version", g.version())?;
        o.opt(
            "xnodes",
            g.xnodes()
                .map(|xs| seq(xs.iter().zip(&p.nodes).map(|(x, n)| XNode(n, x)))),
        )?;
        o.opt(
            "xvalues",
            g.xvalues()
                .map(|xs| seq(xs.iter().enumerate().map(|(i, x)| XValue(x, path(i))))),
        )?;
        o.put("num_externs", &g.num_externs())?;
        o.opt("input_ids", g.input_ids().map(Scalars))?;
        o.opt("output_ids", g.output_ids().map(Scalars))?;
        o.opt(
            "constant_buffer",
            g.constant_buffer().map(|v| seq(v.iter().map(Buffer))),
        )?;
        o.opt("mem_buffer_sizes", g.mem_buffer_sizes().map(Scalars))?;
        o.opt(
            "constant_data",
            g.constant_data().map(|v| seq(v.iter().map(Constant))),
        )?;
        o.0.end()
    }
}
