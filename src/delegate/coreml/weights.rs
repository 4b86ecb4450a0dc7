//! The model's weights: every MIL value stored in a weight file
//! (`blobFileValue`, mostly a `const` op's `val`), located through the
//! blob's metadata record and named by the op and argument that first use
//! it (`main.004-linear.weight`), so names stay put when bytes change.

use std::collections::{HashMap, HashSet};

use super::flattened::Directory;
use super::{Store, blob, mil};
use crate::delegate::Bytes;
use crate::schema::coreml as pb;

/// The prefix Core ML puts before paths inside the model's own folder.
pub const MODEL_PATH: &str = "@model_path/";

/// One weight.
#[derive(Debug, Clone)]
pub struct Weight<'a> {
    /// File stem under `weights/` (`main.004-linear.weight`).
    pub stem: String,
    /// The function it is in.
    pub function: String,
    /// Index of the op holding the value, in the function's block.
    pub op_index: usize,
    /// That op's type (`const`).
    pub op_type: String,
    /// That op's first output (`linear_0_weight_0`).
    pub output: String,
    /// Where in the op the value sits (`val`, or an argument name).
    pub argument: String,
    /// The layer that uses it (`main.004-linear`; the op itself when
    /// nothing uses it) and the argument it is used as (`weight`).
    pub layer: String,
    /// The role: the argument of its first user, or `argument`.
    pub role: String,
    /// Every use, as `<op index>-<op type>.<argument>`.
    pub users: Vec<String>,
    /// MIL data type code.
    pub dtype: i32,
    /// Dims (`-1`: unknown).
    pub dims: Vec<i64>,
    /// The weight file as the model names it.
    pub file_name: String,
    /// The path of that file in the folder, when it is there.
    pub file_path: Option<String>,
    /// Offset of the blob's metadata record in the weight file.
    pub metadata_offset: u64,
    /// The blob, or why it cannot be found.
    pub blob: Result<blob::Blob, String>,
    /// The blob's data, or why it cannot be shown.
    pub bytes: Result<Bytes<'a>, String>,
}

/// Every weight of `program`, whose `model.mlmodel` is in folder
/// `model_dir` of `dir` (bytes in `store`).
pub fn collect<'a>(
    program: &pb::Program,
    dir: &Directory,
    store: &Store<'a>,
    model_dir: &str,
) -> Vec<Weight<'a>> {
    let mut out = Vec::new();
    let mut stems = HashSet::new();
    for (fname, f) in &program.functions {
        let Some((_, block)) = mil::block(f) else {
            continue;
        };
        let users = users(block);
        for (i, op) in block.operations.iter().enumerate() {
            let output = op
                .outputs
                .first()
                .map(|o| o.name.clone())
                .unwrap_or_default();
            let out_type = op.outputs.first().and_then(|o| o.r#type.as_ref());
            let mut found: Vec<(&str, &pb::Value)> =
                op.attributes.iter().map(|(k, v)| (k.as_str(), v)).collect();
            for (arg, a) in &op.inputs {
                for b in &a.arguments {
                    if let Some(pb::argument::binding::Binding::Value(v)) = &b.binding {
                        found.push((arg.as_str(), v));
                    }
                }
            }
            for (argument, v) in found {
                let Some(r) = mil::blob_ref(v) else {
                    continue;
                };
                let uses = users
                    .get(output.as_str())
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let (layer, role) = match (op.r#type.as_str(), uses.first()) {
                    ("const", Some((j, t, arg))) => (format!("{fname}.{j:03}-{t}"), arg.clone()),
                    _ => (format!("{fname}.{i:03}-{}", op.r#type), argument.to_owned()),
                };
                let mut stem = format!("{layer}.{role}");
                let mut k = 1;
                while !stems.insert(stem.clone()) {
                    stem = format!("{layer}.{role}-{k}");
                    k += 1;
                }
                let ty = tensor_type(v, out_type);
                let file_path = r
                    .file_name
                    .strip_prefix(MODEL_PATH)
                    .map(|rest| format!("{model_dir}/{rest}"));
                let blob = locate(dir, store, file_path.as_deref(), &r.file_name, r.offset);
                let bytes = match (&blob, file_path.as_deref().and_then(|p| dir.file(p))) {
                    (Ok(b), Some(f)) => Ok(store.range(crate::format::Span {
                        offset: f.span.offset + b.data.offset,
                        len: b.data.len,
                    })),
                    (Err(e), _) => Err(e.clone()),
                    (Ok(_), None) => Err("weight file missing".into()),
                };
                out.push(Weight {
                    stem,
                    function: fname.clone(),
                    op_index: i,
                    op_type: op.r#type.clone(),
                    output: output.clone(),
                    argument: argument.to_owned(),
                    layer,
                    role,
                    users: uses
                        .iter()
                        .map(|(j, t, a)| format!("{j:03}-{t}.{a}"))
                        .collect(),
                    dtype: ty.map_or(0, |t| t.data_type),
                    dims: ty.map(mil::dims).unwrap_or_default(),
                    file_name: r.file_name.clone(),
                    file_path,
                    metadata_offset: r.offset,
                    blob,
                    bytes,
                });
            }
        }
    }
    out
}

/// Who uses each name in `block`: (op index, op type, argument), in op
/// order.
fn users(block: &pb::Block) -> HashMap<&str, Vec<(usize, String, String)>> {
    let mut map: HashMap<&str, Vec<(usize, String, String)>> = HashMap::new();
    for (j, op) in block.operations.iter().enumerate() {
        for (arg, a) in &op.inputs {
            for name in mil::bound_names(a).flatten() {
                map.entry(name)
                    .or_default()
                    .push((j, op.r#type.clone(), arg.clone()));
            }
        }
    }
    map
}

/// The tensor type of a stored value: its own, else the op output's.
fn tensor_type<'m>(
    v: &'m pb::Value,
    out_type: Option<&'m pb::ValueType>,
) -> Option<&'m pb::TensorType> {
    mil::tensor(v.r#type.as_ref()).or_else(|| mil::tensor(out_type))
}

/// The blob whose metadata record is at `offset` of the weight file.
fn locate(
    dir: &Directory,
    store: &Store<'_>,
    path: Option<&str>,
    name: &str,
    offset: u64,
) -> Result<blob::Blob, String> {
    let Some(path) = path else {
        return Err(format!(
            "weight file {name:?} is not under {MODEL_PATH}, so not in this folder"
        ));
    };
    let Some(file) = dir.file(path) else {
        return Err(format!("weight file {path} is not in the directory"));
    };
    blob::at(store.slice(file.span), offset, path).map_err(|e| e.to_string())
}
