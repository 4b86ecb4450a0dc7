//! `vulkan/` inside a Vulkan delegate's directory: the payload header, the
//! graph as JSON and as text, and every constant as typed, named files that
//! are byte ranges of the source (payload, named data or a `.ptd`).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::delegate::{NamedIndex, Npy, Place, locate};
use super::index::Source;
use super::{Builder, Dir};
use crate::delegate::vulkan::{Constant, Header, Payload, Use, graph};
use crate::delegate::{self, Decoded};
use crate::schema::vulkan as fb;
use crate::tree::Dtype;
use crate::tree::render;

impl Builder {
    pub(super) fn vulkan(
        &mut self,
        x: &mut Dir,
        place: &Place<'_, '_>,
        named: &NamedIndex<'_>,
        p: &Payload<'_>,
    ) {
        self.json(x, "header.json", &header_json(&p.header, p.bytes, place));
        let base = format!("{}/vulkan/weights", place.dir_path);
        let mut wdir = self.subdir(x, "weights");
        let mut paths: HashMap<u32, String> = HashMap::new();
        let mut index = Vec::with_capacity(p.constants.len());
        for c in &p.constants {
            let entry = self.constant(&mut wdir, place, named, c);
            if let Some(bin) = &entry.name {
                paths.insert(c.value_id, format!("{base}/{bin}"));
            }
            index.push(entry);
        }
        let missing: Vec<&IndexEntry<'_>> = index.iter().filter(|e| e.missing.is_some()).collect();
        if let Some(first) = missing.first() {
            self.warnings.push(format!(
                "{}: {base}: {} of {} constants lack files for their bytes (see index.json); value {}: {}",
                place.file_name,
                missing.len(),
                index.len(),
                first.value_id,
                first.missing.as_deref().unwrap_or_default(),
            ));
        }
        self.json(&mut wdir, "index.json", &index);
        let from = (delegate::vulkan::BACKEND_ID, place, named);
        self.lazy_decoded(x, "graph.json", from, move |d, out| match d {
            Decoded::Vulkan(p) => render::json_to(out, &graph_json(p.graph, &paths)),
            _ => Ok(()),
        });
        self.lazy_decoded(x, "code.txt", from, |d, out| match d {
            Decoded::Vulkan(p) => out.write_all(p.code().as_bytes()),
            _ => Ok(()),
        });
    }

    /// `<name>.bin` and `<name>.npy` of one constant.
    fn constant<'w>(
        &mut self,
        wdir: &mut Dir,
        place: &Place<'_, '_>,
        named: &NamedIndex<'w>,
        c: &'w Constant<'_>,
    ) -> IndexEntry<'w> {
        let mut e = IndexEntry {
            name: None,
            npy: None,
            value_id: c.value_id,
            constant_id: c.constant_id,
            layer: c.layer.as_deref(),
            role: &c.role,
            datatype: graph::datatype_name(c.datatype),
            dims: &c.dims,
            numpy_dtype: c.size.as_ref().map(|s| s.1),
            npy_shape: c.size.as_ref().map(|s| s.2.as_slice()),
            nbytes: None,
            source: None,
            key: c.key,
            users: &c.users,
            missing: None,
        };
        let located = match &c.bytes {
            Ok(b) => locate(b, place, named).ok_or_else(|| "named data entry vanished".to_owned()),
            Err(why) => Err(why.clone()),
        };
        let (o, span, file) = match located {
            Ok(l) => l,
            Err(why) => {
                e.missing = Some(why);
                return e;
            }
        };
        let numpy = c
            .size
            .as_ref()
            .filter(|(n, ..)| *n == span.len)
            .map(|(_, descr, shape)| Npy {
                descr,
                shape,
                widen: false,
            });
        let dims = c.dims.iter().map(|&d| i64::from(d)).collect();
        let dtype = c.datatype.variant_name().unwrap_or("unknown");
        let meta = self.meta(Dtype::Named(dtype), dims);
        let (bin, npy) = self.typed_pair(wdir, &c.name, (o, span), numpy, meta);
        e.name = Some(bin);
        e.npy = npy;
        e.nbytes = Some(span.len);
        e.source = Some(Source {
            file,
            offset: o.shifted(span).offset,
        });
        e
    }
}

/// One entry of `weights/index.json`.
#[derive(Serialize)]
struct IndexEntry<'w> {
    name: Option<String>,
    npy: Option<String>,
    value_id: u32,
    constant_id: u32,
    layer: Option<&'w str>,
    role: &'w str,
    datatype: String,
    dims: &'w [u32],
    numpy_dtype: Option<&'static str>,
    npy_shape: Option<&'w [u64]>,
    nbytes: Option<u64>,
    source: Option<Source<'w>>,
    key: Option<&'w str>,
    users: &'w [Use],
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<String>,
}

/// `header.json`: the header fields, with absolute offsets in the file.
pub(super) fn header_json(h: &Header, payload: &[u8], place: &Place<'_, '_>) -> Value {
    let start = place.origin.shifted(place.processed).offset;
    let at = h.flatbuffer.offset as usize + 4;
    json!({
        "magic": "VH00",
        "header_length": h.header_length,
        "identifier": payload.get(at..at + 4).map(|id| String::from_utf8_lossy(id).into_owned()),
        "payload_size": payload.len(),
        "payload_file_offset": start,
        "flatbuffer_offset": h.flatbuffer.offset,
        "flatbuffer_size": h.flatbuffer.len,
        "flatbuffer_file_offset": start + h.flatbuffer.offset,
        "constant_data_offset": h.constant_data.offset,
        "constant_data_size": h.constant_data.len,
        "constant_data_size_field": h.constant_data_size_field,
        "constant_data_file_offset": start + h.constant_data.offset,
    })
}

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
fn graph_json(g: fb::VkGraph<'_>, paths: &HashMap<u32, String>) -> Value {
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
            .map(|(i, v)| value_json(v, paths.get(&(i as u32))))
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
