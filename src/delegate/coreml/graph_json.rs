//! `graph.json`: the model's description and its MIL program as JSON:
//! every function's inputs, outputs and ops (type, arguments by name as
//! names or values, outputs with types, attributes), weight-file values
//! with the path of their `.bin` in the tree (`ptefs_path`).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::{Payload, mil};
use crate::delegate::folder::Paths;
use crate::schema::coreml as pb;

/// The value of `graph.json`.
pub fn render(p: &Payload<'_>, paths: &Paths) -> Value {
    let Some(m) = &p.model else {
        return Value::Null;
    };
    // Each weight's path, by (function, op index, argument).
    let weight_paths: HashMap<(&str, usize, &str), &String> = p
        .weights
        .iter()
        .enumerate()
        .filter_map(|(k, w)| {
            paths
                .get(&k)
                .map(|path| ((w.function.as_str(), w.op_index, w.argument.as_str()), path))
        })
        .collect();
    let mut functions = Map::new();
    for (fname, f, opset, block) in p.functions() {
        let ops: Vec<Value> = block
            .operations
            .iter()
            .enumerate()
            .map(|(i, op)| {
                let mut v = op_json(op);
                let mine: Map<String, Value> = op
                    .attributes
                    .keys()
                    .chain(op.inputs.keys())
                    .filter_map(|a| {
                        weight_paths
                            .get(&(fname, i, a.as_str()))
                            .map(|p| (a.clone(), json!(p)))
                    })
                    .collect();
                if !mine.is_empty() {
                    v["ptefs_path"] = Value::Object(mine);
                }
                v
            })
            .collect();
        functions.insert(
            fname.to_owned(),
            json!({
                "opset": opset,
                "inputs": f.inputs.iter().map(named_json).collect::<Vec<_>>(),
                "outputs": block.outputs,
                "operations": ops,
            }),
        );
    }
    let d = m.spec.description.clone().unwrap_or_default();
    json!({
        "path": m.path,
        "specification_version": m.spec.specification_version,
        "is_updatable": m.spec.is_updatable,
        "description": {
            "inputs": d.input.iter().map(feature_json).collect::<Vec<_>>(),
            "outputs": d.output.iter().map(feature_json).collect::<Vec<_>>(),
            "states": d.state.iter().map(feature_json).collect::<Vec<_>>(),
            "functions": d.functions.iter().map(|f| json!({
                "name": f.name,
                "inputs": f.input.iter().map(feature_json).collect::<Vec<_>>(),
                "outputs": f.output.iter().map(feature_json).collect::<Vec<_>>(),
                "states": f.state.iter().map(feature_json).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "default_function": d.default_function_name,
            "metadata": d.metadata.as_ref().map(|md| json!({
                "short_description": md.short_description,
                "version": md.version_string,
                "author": md.author,
                "license": md.license,
                "user_defined": md.user_defined,
            })),
        },
        "program": mil::program(&m.spec).map(|pr| json!({
            "version": pr.version,
            "doc_string": pr.doc_string,
            "attributes": attrs_json(&pr.attributes),
            "functions": functions,
        })),
    })
}

fn feature_json(f: &pb::FeatureDescription) -> Value {
    let array = f.r#type.as_ref().and_then(|t| t.multi_array_type.as_ref());
    json!({
        "name": f.name,
        "short_description": f.short_description,
        "multi_array": array.map(|a| json!({"shape": a.shape, "data_type": a.data_type})),
    })
}

fn named_json(n: &pb::NamedValueType) -> Value {
    json!({"name": n.name, "type": mil::type_text(n.r#type.as_ref())})
}

fn attrs_json(a: &std::collections::BTreeMap<String, pb::Value>) -> Value {
    Value::Object(a.iter().map(|(k, v)| (k.clone(), value_json(v))).collect())
}

/// A value: its type, then a blob reference or the immediate elements.
fn value_json(v: &pb::Value) -> Value {
    use pb::value::Value as V;
    let ty = mil::type_text(v.r#type.as_ref());
    match &v.value {
        Some(V::BlobFileValue(b)) => {
            json!({"type": ty, "blob": {"file": b.file_name, "offset": b.offset}})
        }
        Some(V::ImmediateValue(i)) => {
            use pb::value::immediate_value::Value as I;
            match &i.value {
                Some(I::Tensor(t)) => json!({
                    "type": ty,
                    "value": mil::tensor_values(t).iter().map(mil::Value2::json).collect::<Vec<_>>(),
                }),
                Some(I::Tuple(t)) => {
                    json!({"type": ty, "tuple": t.values.iter().map(value_json).collect::<Vec<_>>()})
                }
                Some(I::List(l)) => {
                    json!({"type": ty, "list": l.values.iter().map(value_json).collect::<Vec<_>>()})
                }
                Some(I::Dictionary(d)) => json!({
                    "type": ty,
                    "dictionary": d.values.iter().map(|kv| json!({
                        "key": kv.key.as_ref().map(value_json),
                        "value": kv.value.as_ref().map(value_json),
                    })).collect::<Vec<_>>(),
                }),
                None => json!({"type": ty}),
            }
        }
        None => json!({"type": ty}),
    }
}

fn op_json(op: &pb::Operation) -> Value {
    use pb::argument::binding::Binding;
    let inputs: Map<String, Value> = op
        .inputs
        .iter()
        .map(|(k, a)| {
            let bound: Vec<Value> = a
                .arguments
                .iter()
                .map(|b| match &b.binding {
                    Some(Binding::Name(n)) => json!({"name": n}),
                    Some(Binding::Value(v)) => json!({"value": value_json(v)}),
                    None => Value::Null,
                })
                .collect();
            (k.clone(), Value::Array(bound))
        })
        .collect();
    json!({
        "type": op.r#type,
        "inputs": inputs,
        "outputs": op.outputs.iter().map(named_json).collect::<Vec<_>>(),
        "attributes": attrs_json(&op.attributes),
        "blocks": op.blocks.iter().map(|b| json!({
            "inputs": b.inputs.iter().map(named_json).collect::<Vec<_>>(),
            "outputs": b.outputs,
            "operations": b.operations.iter().map(op_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
