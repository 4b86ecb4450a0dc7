//! `model.mlmodel` decoded (Core ML's protobuf, through the prost types of
//! `schema/coreml.proto`), and how its types and values are written in
//! `code.txt`: `fp32[1,16]` for a tensor type, literals for small
//! immediate values, `blob(<file>, offset=<n>)` for a weight-file value.

use std::fmt::Write;

use prost::Message;

use crate::format::{Error, Result};
use crate::schema::coreml as pb;

/// Most immediate elements written out in `code.txt` before a summary.
const MAX_SHOWN: usize = 8;

/// Decodes `bytes` (the file at `path`) as a Core ML `Model`.
pub fn decode(bytes: &[u8], path: &str) -> Result<pb::Model> {
    pb::Model::decode(bytes).map_err(|e| Error::new(format!("{path}: protobuf Model: {e}")))
}

/// The ML Program of `model`, if it is one.
pub fn program(model: &pb::Model) -> Option<&pb::Program> {
    match &model.r#type {
        Some(pb::model::Type::MlProgram(p)) => Some(p),
        None => None,
    }
}

/// A function's active block: the specialization its opset names, else
/// the first.
pub fn block(f: &pb::Function) -> Option<(&str, &pb::Block)> {
    f.block_specializations
        .get_key_value(&f.opset)
        .or_else(|| f.block_specializations.iter().next())
        .map(|(k, b)| (k.as_str(), b))
}

/// The MIL data type's short name (`fp32`).
pub fn dtype_name(code: i32) -> String {
    let name = match code {
        1 => "bool",
        2 => "string",
        10 => "fp16",
        11 => "fp32",
        12 => "fp64",
        13 => "bf16",
        21 => "int8",
        22 => "int16",
        23 => "int32",
        24 => "int64",
        31 => "uint8",
        32 => "uint16",
        33 => "uint32",
        34 => "uint64",
        n => return format!("dtype{n}"),
    };
    name.to_owned()
}

/// How NumPy stores a MIL data type: descr and element size (bf16 is
/// widened to `<f4` in its `.npy`, so it reports the stored size 2).
pub fn numpy(code: i32) -> Option<(&'static str, u64)> {
    Some(match code {
        1 => ("|b1", 1),
        10 => ("<f2", 2),
        11 => ("<f4", 4),
        12 => ("<f8", 8),
        13 => ("<f4", 2),
        21 => ("|i1", 1),
        22 => ("<i2", 2),
        23 => ("<i4", 4),
        24 => ("<i8", 8),
        31 => ("|u1", 1),
        32 => ("<u2", 2),
        33 => ("<u4", 4),
        34 => ("<u8", 8),
        _ => return None,
    })
}

/// The tensor type inside `t`, if it is one.
pub fn tensor(t: Option<&pb::ValueType>) -> Option<&pb::TensorType> {
    match t?.r#type.as_ref()? {
        pb::value_type::Type::TensorType(t) => Some(t),
        _ => None,
    }
}

/// A tensor's dims, `-1` for an unknown one.
pub fn dims(t: &pb::TensorType) -> Vec<i64> {
    t.dimensions
        .iter()
        .map(|d| match &d.dimension {
            Some(pb::dimension::Dimension::Constant(c)) => i64::try_from(c.size).unwrap_or(-1),
            _ => -1,
        })
        .collect()
}

/// `fp32[1,16]`, `list<fp32[?]>`, … (`?`: unknown dimension).
pub fn type_text(t: Option<&pb::ValueType>) -> String {
    use pb::value_type::Type;
    let Some(ty) = t.and_then(|t| t.r#type.as_ref()) else {
        return "?".into();
    };
    match ty {
        Type::TensorType(t) => {
            let shown: Vec<String> = dims(t)
                .iter()
                .map(|&d| if d < 0 { "?".into() } else { d.to_string() })
                .collect();
            format!("{}[{}]", dtype_name(t.data_type), shown.join(","))
        }
        Type::ListType(l) => format!("list<{}>", type_text(l.r#type.as_deref())),
        Type::TupleType(t) => {
            let parts: Vec<String> = t.types.iter().map(|t| type_text(Some(t))).collect();
            format!("tuple<{}>", parts.join(","))
        }
        Type::DictionaryType(d) => format!(
            "dict<{},{}>",
            type_text(d.key_type.as_deref()),
            type_text(d.value_type.as_deref())
        ),
        Type::StateType(s) => format!("state<{}>", type_text(s.wrapped_type.as_deref())),
    }
}

/// The weight-file reference of `v`, if it has one.
pub fn blob_ref(v: &pb::Value) -> Option<&pb::value::BlobFileValue> {
    match &v.value {
        Some(pb::value::Value::BlobFileValue(b)) => Some(b),
        _ => None,
    }
}

/// A value as `code.txt` writes it.
pub fn value_text(v: &pb::Value) -> String {
    use pb::value::Value;
    match &v.value {
        Some(Value::BlobFileValue(b)) => format!("blob({:?}, offset={})", b.file_name, b.offset),
        Some(Value::ImmediateValue(i)) => immediate_text(i, v.r#type.as_ref()),
        None => "none".into(),
    }
}

fn immediate_text(i: &pb::value::ImmediateValue, ty: Option<&pb::ValueType>) -> String {
    use pb::value::immediate_value::Value;
    let list = |vs: &[Value2]| -> String {
        let shown: Vec<String> = vs.iter().take(MAX_SHOWN).map(Value2::text).collect();
        let more = if vs.len() > MAX_SHOWN {
            format!(", … {} values", vs.len())
        } else {
            String::new()
        };
        shown.join(", ") + &more
    };
    match &i.value {
        Some(Value::Tensor(t)) => {
            let vs = tensor_values(t);
            let scalar = tensor(ty).is_some_and(|t| t.rank == 0) && vs.len() == 1;
            if scalar {
                vs[0].text()
            } else {
                format!("[{}]", list(&vs))
            }
        }
        Some(Value::Tuple(t)) => {
            let parts: Vec<String> = t.values.iter().map(value_text).collect();
            format!("({})", parts.join(", "))
        }
        Some(Value::List(l)) => {
            let parts: Vec<String> = l.values.iter().map(value_text).collect();
            format!("[{}]", parts.join(", "))
        }
        Some(Value::Dictionary(d)) => {
            let mut out = String::from("{");
            for (k, kv) in d.values.iter().enumerate() {
                let sep = if k == 0 { "" } else { ", " };
                let text = |v: &Option<pb::Value>| v.as_ref().map_or("none".into(), value_text);
                let _ = write!(out, "{sep}{}: {}", text(&kv.key), text(&kv.value));
            }
            out + "}"
        }
        None => "none".into(),
    }
}

/// One element of an immediate tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum Value2 {
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    Float(f64),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
    /// Raw bytes (their count).
    Bytes(usize),
}

impl Value2 {
    fn text(&self) -> String {
        match self {
            Value2::F32(f) => format!("{f}"),
            Value2::Float(f) => format!("{f}"),
            Value2::Int(i) => i.to_string(),
            Value2::Bool(b) => b.to_string(),
            Value2::Str(s) => format!("{s:?}"),
            Value2::Bytes(n) => format!("<{n} bytes>"),
        }
    }

    /// As JSON.
    pub fn json(&self) -> serde_json::Value {
        match self {
            Value2::F32(f) => serde_json::json!(f),
            Value2::Float(f) => serde_json::json!(f),
            Value2::Int(i) => serde_json::json!(i),
            Value2::Bool(b) => serde_json::json!(b),
            Value2::Str(s) => serde_json::json!(s),
            Value2::Bytes(n) => serde_json::json!({ "bytes": n }),
        }
    }
}

/// The elements of an immediate tensor.
pub fn tensor_values(t: &pb::TensorValue) -> Vec<Value2> {
    use pb::tensor_value::Value;
    match &t.value {
        Some(Value::Floats(v)) => v.values.iter().map(|&f| Value2::F32(f)).collect(),
        Some(Value::Doubles(v)) => v.values.iter().map(|&f| Value2::Float(f)).collect(),
        Some(Value::Ints(v)) => v
            .values
            .iter()
            .map(|&i| Value2::Int(i64::from(i)))
            .collect(),
        Some(Value::LongInts(v)) => v.values.iter().map(|&i| Value2::Int(i)).collect(),
        Some(Value::Bools(v)) => v.values.iter().map(|&b| Value2::Bool(b)).collect(),
        Some(Value::Strings(v)) => v.values.iter().map(|s| Value2::Str(s.clone())).collect(),
        Some(Value::Bytes(v)) => vec![Value2::Bytes(v.values.len())],
        None => Vec::new(),
    }
}

/// The names an argument binds, in order (`None` for a literal value).
pub fn bound_names(a: &pb::Argument) -> impl Iterator<Item = Option<&str>> {
    a.arguments.iter().map(|b| match &b.binding {
        Some(pb::argument::binding::Binding::Name(n)) => Some(n.as_str()),
        _ => None,
    })
}

/// An argument as `code.txt` writes it: `%name`, a literal, or a list.
pub fn argument_text(a: &pb::Argument) -> String {
    use pb::argument::binding::Binding;
    let parts: Vec<String> = a
        .arguments
        .iter()
        .map(|b| match &b.binding {
            Some(Binding::Name(n)) => format!("%{n}"),
            Some(Binding::Value(v)) => value_text(v),
            None => "none".into(),
        })
        .collect();
    match parts.len() {
        1 => parts.into_iter().next().unwrap_or_default(),
        _ => format!("({})", parts.join(", ")),
    }
}
