//! `graph.json` of a VGF payload: every section with the fields Arm's
//! `vgf_dump` prints, under the same names (`header`, `modules`,
//! `model_sequence`, `resources`, `constants`), plus what ptefs adds:
//! where each module's code and each constant's bytes are (`code_offset`,
//! `code_size`, `data_offset`, `size`, `ptefs_path`), a resource's
//! `alias_group_id` and `extra_config`, and each part's own file
//! (`model_sequence.json`, `resources.json`, `constants.json`).

use serde_json::{Map, Value, json};

use super::{Payload, category, module_type, tables, vulkan};
use crate::delegate::folder::Paths;
use crate::schema::vgf as fb;

/// The whole file as `vgf_dump` shows it, with the additions.
pub fn graph(p: &Payload<'_>, paths: &Paths) -> Value {
    json!({
        "header": {
            "major": p.header.version[0],
            "minor": p.header.version[1],
            "patch": p.header.version[2],
        },
        "modules": modules(p),
        "model_sequence": sequence(p),
        "resources": resources(p),
        "constants": constants(p, paths),
    })
}

/// `modules`: index, type, name, entry point, code kind and whether code
/// is there, and where it is in the payload.
pub fn modules(p: &Payload<'_>) -> Value {
    let list: Vec<Value> = p
        .module_list()
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let (kind, available) = tables::code_kind(m);
            let at = tables::code_span(p.bytes, m);
            json!({
                "index": i,
                "type": module_type(m.type_()),
                "name": m.name().unwrap_or(""),
                "entry_point": m.entry_point().unwrap_or(""),
                "shader_type": kind,
                "shader_code_available": available,
                "code_offset": at.map(|(s, _)| s.offset),
                "code_size": at.map(|(s, _)| s.len),
            })
        })
        .collect();
    Value::Array(list)
}

fn slot(index: usize, s: fb::BindingSlot<'_>) -> Value {
    json!({"index": index, "binding": s.binding(), "mrt_index": s.mrt_index()})
}

fn slots(
    v: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fb::BindingSlot<'_>>>>,
) -> Value {
    Value::Array(
        v.into_iter()
            .flatten()
            .enumerate()
            .map(|(i, s)| slot(i, s))
            .collect(),
    )
}

/// Model inputs or outputs with their names (`""` past the names given).
fn named(
    v: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fb::BindingSlot<'_>>>>,
    names: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<&str>>>,
) -> Value {
    let names: Vec<&str> = names.map(|n| n.iter().collect()).unwrap_or_default();
    Value::Array(
        v.into_iter()
            .flatten()
            .enumerate()
            .map(|(i, s)| {
                json!({
                    "index": i,
                    "name": names.get(i).copied().unwrap_or(""),
                    "binding": s.binding(),
                    "mrt_index": s.mrt_index(),
                })
            })
            .collect(),
    )
}

/// `model_sequence`: its inputs and outputs and every segment.
pub fn sequence(p: &Payload<'_>) -> Value {
    let Some(s) = p.sequence else {
        return Value::Null;
    };
    let segments: Vec<Value> = p
        .segments()
        .into_iter()
        .enumerate()
        .map(|(i, seg)| segment(i, seg))
        .collect();
    json!({
        "inputs": named(s.inputs(), s.input_names()),
        "outputs": named(s.outputs(), s.output_names()),
        "segments": segments,
    })
}

fn segment(index: usize, s: fb::SegmentInfo<'_>) -> Value {
    let sets: Vec<Value> = s
        .set_infos()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(k, d)| {
            // Files before 0.4.3 do not write the set: it is the position.
            let set = match d.set_index() {
                u32::MAX => k as u64,
                n => u64::from(n),
            };
            json!({"bindings": slots(d.bindings()), "set_index": set})
        })
        .collect();
    let push: Vec<Value> = s
        .push_constant_ranges()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(k, r)| {
            json!({"index": k, "stage_flags": r.stage_flags(), "offset": r.offset(), "size": r.size()})
        })
        .collect();
    let constants: Vec<u32> = s
        .constants()
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    // Files before 0.5 bind graph constant k to the segment's k-th
    // constant; vgf_dump shows that as the binding.
    let bindings: Vec<Value> = match s.constant_bindings() {
        Some(b) => b
            .iter()
            .map(|b| {
                json!({"graph_constant_id": b.graph_constant_id(), "constant_table_index": b.constant_table_index()})
            })
            .collect(),
        None => constants
            .iter()
            .map(|&c| json!({"graph_constant_id": c, "constant_table_index": c}))
            .collect(),
    };
    json!({
        "index": index,
        "type": module_type(s.type_()),
        "module_index": s.module_index(),
        "name": s.name().unwrap_or(""),
        "inputs": slots(s.inputs()),
        "outputs": slots(s.outputs()),
        "descriptor_set_infos": sets,
        "push_constant_ranges": push,
        "constants": constants,
        "dispatch_shape": s.dispatch_shape().map(|d| d.iter().collect::<Vec<u32>>()).unwrap_or_default(),
        "constant_bindings": bindings,
        "constant_bindings_written": s.constant_bindings().is_some(),
    })
}

/// `resources`: each entry's category, Vulkan descriptor type and format
/// by name, shape and strides, and the fields vgf_dump leaves out.
pub fn resources(p: &Payload<'_>) -> Value {
    let list: Vec<Value> = p
        .resources
        .and_then(|r| r.mrt_entry())
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, r)| {
            let d = r.description();
            let mut m = Map::new();
            m.insert("index".into(), json!(i));
            m.insert("category".into(), json!(category(r.category())));
            m.insert(
                "vk_descriptor_type".into(),
                json!(vulkan::descriptor_type(r.vk_descriptor_type())),
            );
            m.insert("vk_format".into(), json!(vulkan::format(r.vk_format())));
            m.insert(
                "shape".into(),
                json!(super::dims(d.and_then(|d| d.shape()))),
            );
            m.insert(
                "stride".into(),
                json!(super::dims(d.and_then(|d| d.strides()))),
            );
            m.insert(
                "vk_descriptor_type_value".into(),
                json!(r.vk_descriptor_type()),
            );
            m.insert("vk_format_value".into(), json!(r.vk_format()));
            m.insert(
                "alias_group_id".into(),
                json!((r.alias_group_id() != u32::MAX).then_some(r.alias_group_id())),
            );
            if let Some(c) = r.extra_config_as_sampler_config() {
                m.insert(
                    "extra_config".into(),
                    json!({"sampler": {
                        "min_filter": c.min_filter(),
                        "mag_filter": c.mag_filter(),
                        "address_mode_u": c.address_mode_u(),
                        "address_mode_v": c.address_mode_v(),
                        "border_color": c.border_color(),
                    }}),
                );
            }
            Value::Object(m)
        })
        .collect();
    Value::Array(list)
}

/// `constants`: each entry's resource and sparsity, and where its bytes
/// are.
pub fn constants(p: &Payload<'_>, paths: &Paths) -> Value {
    let kind = p.constants.as_ref().map(|c| c.0);
    let list: Vec<Value> = p
        .constant_list()
        .iter()
        .map(|c| {
            let b = c.bytes.as_ref().ok();
            let mut v = json!({
                "index": c.index,
                "mrt_index": c.mrt_index,
                "sparsity_dimension": c.sparsity_dimension,
                "data_offset": b.map(|b| b.span().offset),
                "size": b.map(|b| b.len()),
                "layout": kind.map(|k| match k {
                    super::constants::Kind::Raw => "CONST00",
                    super::constants::Kind::Flatbuffer => "ConstantSection",
                }),
            });
            if let (Some(p), Some(o)) = (paths.get(&c.index), v.as_object_mut()) {
                o.insert("ptefs_path".into(), json!(p));
            }
            v
        })
        .collect();
    Value::Array(list)
}
