//! Each `MPSNode` read generically: its union member's name, and its
//! table's fields as flatc would print them (through the serializers flatc
//! generates), split into value ids it reads (`*_id`, `*_ids` fields not
//! named `output…`), ids it writes (`output…`) and attributes.
//!
//! The generated serializers panic on an enum value or union tag the
//! schema does not know, and on a union tag without its table, so a node
//! is only handed to them once those are checked ([`fields`]); floats that
//! are not finite, which serde turns into `null`, are put back as the
//! strings `"inf"`, `"-inf"` and `"nan"` ([`float`]).

use serde_json::{Map, Value, json};

use crate::schema::mps as fb;

/// One node, decoded.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its position in `mps_nodes`.
    pub index: usize,
    /// The union member's name (`MPSConv2D`), or `op<tag>` for a tag the
    /// schema does not know.
    pub op: String,
    /// The member table's fields in schema order; `Null` when the node
    /// cannot be read (no table, an unknown tag or enum value).
    pub fields: Value,
    /// Value ids read, with the field naming each (`input2`; `input.0` for
    /// item 0 of `input_ids`).
    pub inputs: Vec<(String, i64)>,
    /// Value ids written, with their fields.
    pub outputs: Vec<(String, i64)>,
    /// The other fields.
    pub attrs: Vec<(String, Value)>,
    /// The node's output range (`min_max`), when set.
    pub min_max: Option<(Value, Value)>,
}

/// A float as JSON; not finite: `"inf"`, `"-inf"` or `"nan"`.
pub fn float(x: f32) -> Value {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

/// An enum as flatc prints it: by name, or as a number it has no name for.
pub fn enum_json(name: Option<&'static str>, n: i16) -> Value {
    name.map_or_else(|| json!(n), |s| json!(s))
}

fn dtype_ok(t: fb::MPSDataType) -> bool {
    t.variant_name().is_some()
}

/// True when the generated serializer can print `n` without panicking.
fn printable(n: fb::MPSNode<'_>) -> bool {
    let t = n.mpsnode_union_type();
    if t == fb::MPSNodeUnion::NONE || t.variant_name().is_none() || n.mpsnode_union().is_none() {
        return false;
    }
    let checks = [
        n.mpsnode_union_as_mpscast().map(|x| dtype_ok(x.dtype())),
        n.mpsnode_union_as_mpsfull().map(|x| dtype_ok(x.dtype())),
        n.mpsnode_union_as_mpsfull_like()
            .map(|x| dtype_ok(x.dtype())),
        n.mpsnode_union_as_mpsarange().map(|x| dtype_ok(x.dtype())),
        n.mpsnode_union_as_mpsdequantize_per_channel_group()
            .map(|x| dtype_ok(x.dtype()) && dtype_ok(x.output_dtype())),
    ];
    checks.iter().all(|c| c.unwrap_or(true))
}

/// The float field `key` of `n`'s table, for those serde cannot print.
fn float_field(n: fb::MPSNode<'_>, key: &str) -> Option<f32> {
    if let Some(x) = n
        .mpsnode_union_as_mpsadd()
        .or_else(|| n.mpsnode_union_as_mpssub())
    {
        return (key == "alpha").then(|| x.alpha());
    }
    if let Some(x) = n.mpsnode_union_as_mpshard_tanh() {
        return match key {
            "min_value" => Some(x.min_value()),
            "max_value" => Some(x.max_value()),
            _ => None,
        };
    }
    if let Some(x) = n.mpsnode_union_as_mpsleaky_re_lu() {
        return (key == "negative_slope").then(|| x.negative_slope());
    }
    if let Some(x) = n.mpsnode_union_as_mpsaddmm() {
        return match key {
            "alpha" => Some(x.alpha()),
            "beta" => Some(x.beta()),
            _ => None,
        };
    }
    if let Some(x) = n
        .mpsnode_union_as_mpsfull()
        .or_else(|| n.mpsnode_union_as_mpsfull_like())
    {
        return (key == "fill_value").then(|| x.fill_value());
    }
    if let Some(x) = n.mpsnode_union_as_mpsbatch_norm() {
        return match key {
            "momentum" => Some(x.momentum()),
            "epsilon" => Some(x.epsilon()),
            _ => None,
        };
    }
    if let Some(x) = n.mpsnode_union_as_mpslayer_norm() {
        return (key == "eps").then(|| x.eps());
    }
    if let Some(x) = n.mpsnode_union_as_mpsconstant_pad_nd() {
        return (key == "value").then(|| x.value());
    }
    if let Some(x) = n.mpsnode_union_as_mpsarange() {
        return match key {
            "start" => Some(x.start()),
            "end" => Some(x.end()),
            "step" => Some(x.step()),
            _ => None,
        };
    }
    None
}

/// The member table's fields, or `Null` when it cannot be printed.
pub fn fields(n: fb::MPSNode<'_>) -> Value {
    let whole = if printable(n) {
        serde_json::to_value(n).ok()
    } else {
        None
    };
    let Some(Value::Object(table)) = whole.and_then(|v| v.get("mpsnode_union").cloned()) else {
        return Value::Null;
    };
    let mut out = Map::new();
    for (k, v) in table {
        let v = if v.is_null() {
            float_field(n, &k).map_or(Value::Null, float)
        } else {
            v
        };
        out.insert(k, v);
    }
    Value::Object(out)
}

/// The node's `min_max` as JSON fields.
fn min_max(n: fb::MPSNode<'_>) -> Option<(Value, Value)> {
    n.min_max()
        .map(|m| (float(m.min_value()), float(m.max_value())))
}

/// `mps_nodes[index]`, decoded.
pub fn node(index: usize, n: fb::MPSNode<'_>) -> Node {
    let t = n.mpsnode_union_type();
    let op = t
        .variant_name()
        .map_or_else(|| format!("op{}", t.0), str::to_owned);
    let fields = fields(n);
    let (mut inputs, mut outputs, mut attrs) = (Vec::new(), Vec::new(), Vec::new());
    if let Value::Object(m) = &fields {
        for (k, v) in m {
            let out = k.starts_with("output");
            let list = if out { &mut outputs } else { &mut inputs };
            if let Some(role) = k.strip_suffix("_ids") {
                for (i, id) in v.as_array().into_iter().flatten().enumerate() {
                    list.push((format!("{role}.{i}"), id.as_i64().unwrap_or(-1)));
                }
            } else if let Some(role) = k.strip_suffix("_id") {
                // ReLU's table has a second input the writer never sets
                // and the runtime never reads.
                if op == "MPSReLU" && role == "input2" {
                    attrs.push((k.clone(), v.clone()));
                    continue;
                }
                list.push((role.to_owned(), v.as_i64().unwrap_or(-1)));
            } else {
                attrs.push((k.clone(), v.clone()));
            }
        }
    }
    Node {
        index,
        op,
        fields,
        inputs,
        outputs,
        attrs,
        min_max: min_max(n),
    }
}

/// The node as `graph.json` shows it: `mpsnode_union_type`,
/// `mpsnode_union` (when it can be read) and `min_max`.
pub fn json(n: fb::MPSNode<'_>, node: &Node) -> Value {
    let t = n.mpsnode_union_type();
    let mut m = Map::new();
    m.insert(
        "mpsnode_union_type".into(),
        t.variant_name().map_or_else(|| json!(t.0), |s| json!(s)),
    );
    if !node.fields.is_null() {
        m.insert("mpsnode_union".into(), node.fields.clone());
    }
    if let Some((lo, hi)) = &node.min_max {
        m.insert("min_max".into(), json!({"min_value": lo, "max_value": hi}));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_that_are_not_finite_are_strings() {
        assert_eq!(float(f32::INFINITY), json!("inf"));
        assert_eq!(float(f32::NEG_INFINITY), json!("-inf"));
        assert_eq!(float(f32::NAN), json!("nan"));
        assert_eq!(float(0.5), json!(0.5));
        assert_eq!(enum_json(None, 77), json!(77));
        assert_eq!(enum_json(Some("mps_graph"), 0), json!("mps_graph"));
    }
}
