//! `graph.json`: an `XNNGraph` as `flatc --strict-json --defaults-json`
//! prints it (schema field names in order, scalars always present, absent
//! tables and vectors left out, enums by name, unions as `<field>_type`
//! plus `<field>`), with two differences: a constant value with a file
//! gains `ptefs_path`, and non-finite floats are the strings `"inf"`,
//! `"-inf"` and `"nan"`, since JSON has no literal for them.

use std::collections::HashMap;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::delegate::xnnpack::{Field, Node, Payload, Value};
use crate::schema::xnnpack as fb;

/// What `graph.json` shows: the payload's graph and, by value index, the
/// path of each constant's `.bin` from the root.
pub struct Graph<'a, 'p> {
    /// The decoded payload.
    pub payload: &'a Payload<'p>,
    /// Paths of constant files by value index.
    pub paths: &'a HashMap<usize, String>,
}

/// A small JSON tree that keeps `f32` as `f32`, so numbers print as
/// flatc prints them (`0.024605`, not the widened double).
enum J {
    U(u64),
    I(i64),
    F(f32),
    S(String),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
}

impl Serialize for J {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            J::U(v) => s.serialize_u64(*v),
            J::I(v) => s.serialize_i64(*v),
            J::F(v) if v.is_nan() => s.serialize_str("nan"),
            J::F(v) if v.is_infinite() => s.serialize_str(if *v > 0.0 { "inf" } else { "-inf" }),
            J::F(v) => s.serialize_f32(*v),
            J::S(v) => s.serialize_str(v),
            J::Arr(v) => s.collect_seq(v),
            J::Obj(fields) => {
                let mut m = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// An object under construction; `opt` leaves absent fields out.
#[derive(Default)]
struct Obj(Vec<(&'static str, J)>);

impl Obj {
    fn put(mut self, k: &'static str, v: J) -> Self {
        self.0.push((k, v));
        self
    }
    fn opt(mut self, k: &'static str, v: Option<J>) -> Self {
        if let Some(v) = v {
            self.0.push((k, v));
        }
        self
    }
    fn done(self) -> J {
        J::Obj(self.0)
    }
}

fn u(v: impl Into<u64>) -> J {
    J::U(v.into())
}

fn name_or_number(name: Option<&str>, n: i64) -> J {
    name.map_or(J::I(n), |s| J::S(s.to_owned()))
}

fn uints(v: Option<flatbuffers::Vector<'_, u32>>) -> Option<J> {
    v.map(|v| J::Arr(v.iter().map(u).collect()))
}

fn floats(v: Option<flatbuffers::Vector<'_, f32>>) -> Option<J> {
    v.map(|v| J::Arr(v.iter().map(J::F).collect()))
}

fn datatype(t: fb::XNNDatatype) -> J {
    name_or_number(t.variant_name(), i64::from(t.0))
}

fn node(n: &Node, x: fb::XNode<'_>) -> J {
    let tag = x.xnode_union_type();
    let fields = n.fields.iter().filter_map(|(k, f)| {
        let v = match f {
            Field::U32(v) => u(*v),
            Field::F32(v) => J::F(*v),
            Field::List(v) => J::Arr(v.as_ref()?.iter().map(|&e| u(e)).collect()),
        };
        Some((*k, v))
    });
    Obj::default()
        .put(
            "xnode_union_type",
            name_or_number(tag.variant_name(), i64::from(tag.0)),
        )
        .opt("xnode_union", n.op.map(|_| J::Obj(fields.collect())))
        .put("debug_handle", u(n.debug_handle))
        .opt(
            "output_min_max",
            n.output_min_max.map(|(lo, hi)| {
                Obj::default()
                    .put("output_min", J::F(lo))
                    .put("output_max", J::F(hi))
                    .done()
            }),
        )
        .done()
}

fn tensor(t: fb::XNNTensorValue<'_>, path: Option<&String>) -> J {
    Obj::default()
        .put("datatype", datatype(t.datatype()))
        .put("num_dims", u(t.num_dims()))
        .opt("dims", uints(t.dims()))
        .put("constant_buffer_idx", u(t.constant_buffer_idx()))
        .put("external_id", u(t.external_id()))
        .put("flags", u(t.flags()))
        .put("id_out", u(t.id_out()))
        .put("dq_datatype", datatype(t.dq_datatype()))
        .opt("ptefs_path", path.map(|p| J::S(p.clone())))
        .done()
}

fn quant_params(q: fb::XNNQuantizedTensorValue<'_>) -> Option<J> {
    if let Some(p) = q.quant_params_as_per_channel_quant() {
        return Some(
            Obj::default()
                .opt("scale", floats(p.scale()))
                .put("channel_dim", J::I(p.channel_dim().into()))
                .put("scale_buffer_idx", u(p.scale_buffer_idx()))
                .put("num_scales", u(p.num_scales()))
                .done(),
        );
    }
    if let Some(p) = q.quant_params_as_per_tensor_quant() {
        return Some(
            Obj::default()
                .put("scale", J::F(p.scale()))
                .put("zero_point", J::I(p.zero_point().into()))
                .done(),
        );
    }
    if let Some(p) = q.quant_params_as_per_token_dynamic_quant() {
        return Some(
            Obj::default()
                .put("num_nonbatch_dims", J::I(p.num_nonbatch_dims().into()))
                .done(),
        );
    }
    let p = q.quant_params_as_per_channel_group_quant()?;
    Some(
        Obj::default()
            .opt("scale", floats(p.scale()))
            .put("channel_dim", J::I(p.channel_dim().into()))
            .put("group_size", J::I(p.group_size().into()))
            .opt(
                "scale_bf16",
                p.scale_bf16().map(|v| J::Arr(v.iter().map(u).collect())),
            )
            .put("scale_buffer_idx", u(p.scale_buffer_idx()))
            .put("num_scales", u(p.num_scales()))
            .done(),
    )
}

fn value(x: fb::XValue<'_>, v: Option<&Value<'_>>, paths: &HashMap<usize, String>) -> J {
    let tag = x.xvalue_union_type();
    let path = v.and_then(|v| paths.get(&v.index));
    let body = if let Some(q) = x.xvalue_union_as_xnnquantized_tensor_value() {
        let qt = q.quant_params_type();
        Some(
            Obj::default()
                .opt("tensor_value", q.tensor_value().map(|t| tensor(t, path)))
                .put(
                    "quant_params_type",
                    name_or_number(qt.variant_name(), i64::from(qt.0)),
                )
                .opt("quant_params", quant_params(q))
                .done(),
        )
    } else {
        x.xvalue_union_as_xnntensor_value().map(|t| tensor(t, path))
    };
    Obj::default()
        .put(
            "xvalue_union_type",
            name_or_number(tag.variant_name(), i64::from(tag.0)),
        )
        .opt("xvalue_union", body)
        .done()
}

impl Serialize for Graph<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.payload;
        let g = p.graph;
        let by_index: HashMap<usize, &Value<'_>> = p.values.iter().map(|v| (v.index, v)).collect();
        let xnodes = g
            .xnodes()
            .map(|xs| J::Arr(xs.iter().zip(&p.nodes).map(|(x, n)| node(n, x)).collect()));
        let xvalues = g.xvalues().map(|xs| {
            J::Arr(
                xs.iter()
                    .enumerate()
                    .map(|(i, x)| value(x, by_index.get(&i).copied(), self.paths))
                    .collect(),
            )
        });
        let buffers = g.constant_buffer().map(|bs| {
            J::Arr(
                bs.iter()
                    .map(|b| {
                        Obj::default()
                            .opt(
                                "storage",
                                b.storage().map(|st| J::Arr(st.iter().map(u).collect())),
                            )
                            .done()
                    })
                    .collect(),
            )
        });
        let constant_data = g.constant_data().map(|cs| {
            J::Arr(
                cs.iter()
                    .map(|c| {
                        Obj::default()
                            .put("offset", u(c.offset()))
                            .put("size", u(c.size()))
                            .opt("named_key", c.named_key().map(|k| J::S(k.to_owned())))
                            .done()
                    })
                    .collect(),
            )
        });
        Obj::default()
            .opt("version", g.version().map(|v| J::S(v.to_owned())))
            .opt("xnodes", xnodes)
            .opt("xvalues", xvalues)
            .put("num_externs", u(g.num_externs()))
            .opt("input_ids", uints(g.input_ids()))
            .opt("output_ids", uints(g.output_ids()))
            .opt("constant_buffer", buffers)
            .opt("mem_buffer_sizes", uints(g.mem_buffer_sizes()))
            .opt("constant_data", constant_data)
            .done()
            .serialize(s)
    }
}
