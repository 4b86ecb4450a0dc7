//! `graph.json` of a Vulkan payload: the graph as `flatc --strict-json
//! --defaults-json` prints it with the schema, plus `ptefs_path` on each
//! constant tensor value.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::schema::vulkan as fb;

/// A double as strict JSON: non-finite values as the strings `"inf"`,
/// `"-inf"` and `"nan"`.
fn double(x: f64) -> Value {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

fn name_of<T: Copy>(v: T, name: impl Fn(T) -> Option<&'static str>, n: i64) -> Value {
    name(v).map_or_else(|| json!(n), |s| json!(s))
}

/// The graph as `flatc --strict-json --defaults-json` prints it with the
/// schema, plus `ptefs_path` on each constant tensor value.
pub fn graph_json(g: fb::VkGraph<'_>, paths: &HashMap<usize, String>) -> Value {
    let mut o = serde_json::Map::new();
    if let Some(v) = g.version() {
        o.insert("version".into(), json!(v));
    }
    if let Some(chain) = g.chain() {
        let calls: Vec<Value> = chain
            .iter()
            .map(|c| {
                let mut m = serde_json::Map::new();
                m.insert("node_id".into(), json!(c.node_id()));
                if let Some(n) = c.name() {
                    m.insert("name".into(), json!(n));
                }
                if let Some(a) = c.args() {
                    m.insert("args".into(), json!(a.iter().collect::<Vec<i32>>()));
                }
                Value::Object(m)
            })
            .collect();
        o.insert("chain".into(), Value::Array(calls));
    }
    if let Some(values) = g.values() {
        let values: Vec<Value> = values
            .iter()
            .enumerate()
            .map(|(i, v)| value_json(v, paths.get(&i)))
            .collect();
        o.insert("values".into(), Value::Array(values));
    }
    for (key, ids) in [("input_ids", g.input_ids()), ("output_ids", g.output_ids())] {
        if let Some(ids) = ids {
            o.insert(key.into(), json!(ids.iter().collect::<Vec<u32>>()));
        }
    }
    for (key, table) in [("constants", g.constants()), ("shaders", g.shaders())] {
        if let Some(t) = table {
            let entries: Vec<Value> = t
                .iter()
                .map(|b| {
                    let mut m = serde_json::Map::new();
                    m.insert("offset".into(), json!(b.offset()));
                    m.insert("length".into(), json!(b.length()));
                    if let Some(k) = b.named_key() {
                        m.insert("named_key".into(), json!(k));
                    }
                    Value::Object(m)
                })
                .collect();
            o.insert(key.into(), Value::Array(entries));
        }
    }
    let st = g.storage_type_override();
    o.insert(
        "storage_type_override".into(),
        name_of(st, fb::VkStorageType::variant_name, st.0.into()),
    );
    let ml = g.memory_layout_override();
    o.insert(
        "memory_layout_override".into(),
        name_of(ml, fb::VkMemoryLayout::variant_name, ml.0.into()),
    );
    Value::Object(o)
}

fn value_json(v: fb::VkValue<'_>, path: Option<&String>) -> Value {
    let t = v.value_type();
    let mut o = serde_json::Map::new();
    o.insert(
        "value_type".into(),
        name_of(t, fb::GraphTypes::variant_name, t.0.into()),
    );
    let inner = if let Some(x) = v.value_as_vk_tensor() {
        let mut m = serde_json::Map::new();
        let dt = x.datatype();
        m.insert(
            "datatype".into(),
            name_of(dt, fb::VkDataType::variant_name, dt.0.into()),
        );
        if let Some(d) = x.dims() {
            m.insert("dims".into(), json!(d.iter().collect::<Vec<u32>>()));
        }
        m.insert("constant_id".into(), json!(x.constant_id()));
        m.insert("mem_obj_id".into(), json!(x.mem_obj_id()));
        let st = x.storage_type();
        m.insert(
            "storage_type".into(),
            name_of(st, fb::VkStorageType::variant_name, st.0.into()),
        );
        let ml = x.memory_layout();
        m.insert(
            "memory_layout".into(),
            name_of(ml, fb::VkMemoryLayout::variant_name, ml.0.into()),
        );
        let sd = x.staging_datatype();
        m.insert(
            "staging_datatype".into(),
            name_of(sd, fb::VkDataType::variant_name, sd.0.into()),
        );
        if let Some(p) = path {
            m.insert("ptefs_path".into(), json!(p));
        }
        Some(Value::Object(m))
    } else if v.value_as_null().is_some() {
        Some(json!({}))
    } else if let Some(x) = v.value_as_int() {
        Some(json!({ "int_val": x.int_val() }))
    } else if let Some(x) = v.value_as_double() {
        Some(json!({ "double_val": double(x.double_val()) }))
    } else if let Some(x) = v.value_as_bool() {
        Some(json!({ "bool_val": x.bool_val() }))
    } else if let Some(x) = v.value_as_string() {
        Some(
            x.string_val()
                .map_or_else(|| json!({}), |s| json!({ "string_val": s })),
        )
    } else if let Some(x) = v.value_as_int_list() {
        Some(items(
            x.items().map(|i| i.iter().map(|v| json!(v)).collect()),
        ))
    } else if let Some(x) = v.value_as_double_list() {
        Some(items(x.items().map(|i| i.iter().map(double).collect())))
    } else if let Some(x) = v.value_as_bool_list() {
        Some(items(
            x.items().map(|i| i.iter().map(|v| json!(v)).collect()),
        ))
    } else if let Some(x) = v.value_as_value_list() {
        Some(items(
            x.items().map(|i| i.iter().map(|v| json!(v)).collect()),
        ))
    } else {
        v.value_as_sym_int().map(|x| json!({ "value": x.value() }))
    };
    if let Some(inner) = inner {
        o.insert("value".into(), inner);
    }
    Value::Object(o)
}

fn items(list: Option<Vec<Value>>) -> Value {
    list.map_or_else(|| json!({}), |l| json!({ "items": l }))
}
