//! `graph.json` of a TOSA payload: the graph as `flatc --strict-json
//! --defaults-json` prints it with the schema (every scalar, defaults
//! included; vectors and strings when present), plus `ptefs_path` on each
//! constant tensor and shape whose bytes are under `weights/`. Tensor data
//! over [`MAX_INLINE_DATA`] bytes is left out.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::attributes;
use super::graph::Block;
use crate::delegate::folder::Paths;
use crate::schema::tosa as fb;

/// Most bytes of a tensor's `data` printed; a longer one is left out
/// (`data_omitted` says how long it is, `ptefs_path` where it is).
pub const MAX_INLINE_DATA: usize = 1 << 20;

/// Where each constant's `.bin` is, by (block position, tensor or shape
/// position, is a shape).
pub type ConstantPaths<'p> = HashMap<(usize, usize, bool), &'p String>;

fn strings(
    v: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<&str>>>,
) -> Option<Value> {
    v.map(|v| json!(v.iter().collect::<Vec<&str>>()))
}

fn put(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(key.to_owned(), v);
    }
}

fn enum_json(name: Option<&'static str>, n: u32) -> Value {
    name.map_or_else(|| json!(n), |s| json!(s))
}

/// The graph as flatc prints it, with `ptefs_path`s from `paths`.
pub fn graph_json(g: fb::TosaGraph<'_>, blocks: &[Block<'_>], paths: &ConstantPaths<'_>) -> Value {
    let mut o = Map::new();
    let v = g.version();
    o.insert(
        "version".into(),
        json!({
            "_major": v._major(),
            "_minor": v._minor(),
            "_patch": v._patch(),
            "_draft": v._draft(),
        }),
    );
    if let Some(regions) = g.regions() {
        let mut b = 0usize;
        let regions: Vec<Value> = regions
            .iter()
            .map(|r| {
                let mut m = Map::new();
                put(&mut m, "name", r.name().map(|n| json!(n)));
                if let Some(list) = r.blocks() {
                    let list: Vec<Value> = list
                        .iter()
                        .map(|_| {
                            let j = blocks
                                .get(b)
                                .map_or(Value::Null, |blk| block_json(b, blk, paths));
                            b += 1;
                            j
                        })
                        .collect();
                    m.insert("blocks".into(), Value::Array(list));
                }
                Value::Object(m)
            })
            .collect();
        o.insert("regions".into(), Value::Array(regions));
    }
    if let Some(s) = g.software_version() {
        let mut m = Map::new();
        m.insert("_major".into(), json!(s._major()));
        m.insert("_minor".into(), json!(s._minor()));
        m.insert("_micro".into(), json!(s._micro()));
        put(&mut m, "_modifier", s._modifier().map(|x| json!(x)));
        o.insert("software_version".into(), Value::Object(m));
    }
    Value::Object(o)
}

fn block_json(b: usize, blk: &Block<'_>, paths: &ConstantPaths<'_>) -> Value {
    let block = blk.block;
    let mut m = Map::new();
    put(&mut m, "name", block.name().map(|n| json!(n)));
    if let Some(ops) = block.operators() {
        m.insert(
            "operators".into(),
            Value::Array(ops.iter().map(operator_json).collect()),
        );
    }
    if let Some(tensors) = block.tensors() {
        let list = tensors
            .iter()
            .enumerate()
            .map(|(i, t)| tensor_json(t, paths.get(&(b, i, false)).copied()))
            .collect();
        m.insert("tensors".into(), Value::Array(list));
    }
    put(&mut m, "inputs", strings(block.inputs()));
    put(&mut m, "outputs", strings(block.outputs()));
    if let Some(shapes) = block.shapes() {
        let list = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut x = Map::new();
                put(&mut x, "name", s.name().map(|n| json!(n)));
                x.insert("rank".into(), json!(s.rank()));
                put(&mut x, "data", s.data().map(|d| json!(d.bytes())));
                put(
                    &mut x,
                    "ptefs_path",
                    paths.get(&(b, i, true)).map(|p| json!(p)),
                );
                Value::Object(x)
            })
            .collect();
        m.insert("shapes".into(), Value::Array(list));
    }
    Value::Object(m)
}

fn operator_json(op: fb::TosaOperator<'_>) -> Value {
    let mut m = Map::new();
    m.insert("op".into(), enum_json(op.op().variant_name(), op.op().0));
    m.insert(
        "attribute_type".into(),
        attributes::type_json(op.attribute_type()),
    );
    if let Some(fields) = attributes::fields(op) {
        let mut a = Map::new();
        for (name, f) in fields {
            put(&mut a, name, f.json());
        }
        m.insert("attribute".into(), Value::Object(a));
    }
    put(&mut m, "inputs", strings(op.inputs()));
    put(&mut m, "outputs", strings(op.outputs()));
    if let Some(l) = op.location() {
        let mut x = Map::new();
        put(&mut x, "text", l.text().map(|t| json!(t)));
        m.insert("location".into(), Value::Object(x));
    }
    Value::Object(m)
}

fn tensor_json(t: fb::TosaTensor<'_>, path: Option<&String>) -> Value {
    let mut m = Map::new();
    put(&mut m, "name", t.name().map(|n| json!(n)));
    put(
        &mut m,
        "shape",
        t.shape().map(|s| json!(s.iter().collect::<Vec<i32>>())),
    );
    m.insert(
        "type".into(),
        enum_json(t.type_().variant_name(), t.type_().0),
    );
    match t.data() {
        // A large constant's bytes are in `weights/`: printed as numbers
        // they would make the file several times their size.
        Some(d) if d.len() > MAX_INLINE_DATA => {
            m.insert("data_omitted".into(), json!({ "bytes": d.len() }));
        }
        d => put(&mut m, "data", d.map(|d| json!(d.bytes()))),
    }
    m.insert("variable".into(), json!(t.variable()));
    m.insert("is_unranked".into(), json!(t.is_unranked()));
    put(&mut m, "variable_name", t.variable_name().map(|n| json!(n)));
    m.insert("offset".into(), json!(t.offset()));
    m.insert("size".into(), json!(t.size()));
    put(&mut m, "ptefs_path", path.map(|p| json!(p)));
    Value::Object(m)
}

/// The paths of constants' `.bin`s keyed as [`graph_json`] looks them up.
pub fn constant_paths<'p>(
    constants: &[super::Constant<'_>],
    paths: &'p Paths,
) -> ConstantPaths<'p> {
    constants
        .iter()
        .filter_map(|c| Some(((c.block, c.index, c.is_shape), paths.get(&c.key)?)))
        .collect()
}
