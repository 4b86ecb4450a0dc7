//! The model's weights: every MIL value stored in a weight file
//! (`blobFileValue`, mostly a `const` op's `val`), located through the
//! blob's metadata record, and every `const` tensor stored inline in
//! `model.mlmodel` whose elements are raw bytes there (floats, doubles,
//! bools, bytes), located by finding that encoding in the file. Each is
//! named by the op and argument that first use it
//! (`main.004-linear.weight`), so names stay put when bytes change.

use std::collections::{HashMap, HashSet};

use memchr::memmem;

use super::flattened::{Directory, FileEntry};
use super::{Store, blob, mil};
use crate::delegate::Bytes;
use crate::format::Span;
use crate::schema::coreml as pb;

/// The prefix Core ML puts before paths inside the model's own folder.
pub const MODEL_PATH: &str = "@model_path/";

/// Most bytes of `model.mlmodel` scanned in all when locating inline
/// values, so a model of many inline constants stays linear in its size.
const SCAN_BUDGET: u64 = 256 << 20;

/// Most uses listed per weight: a hostile model may name one value from
/// every op, and listing them all for each of many weights would multiply.
pub const MAX_USERS: usize = 64;

/// Stems given so far, and the next suffix to try for each.
#[derive(Default)]
struct Stems {
    given: HashSet<String>,
    next: HashMap<String, usize>,
}

/// `base`, or `base-<k>` for the first `k` not given yet, so that many
/// weights of one layer and role are named in linear time.
fn unique(stems: &mut Stems, base: String) -> String {
    if stems.given.insert(base.clone()) {
        return base;
    }
    let k = stems.next.entry(base.clone()).or_insert(1);
    loop {
        let stem = format!("{base}-{k}");
        *k += 1;
        if stems.given.insert(stem.clone()) {
            return stem;
        }
    }
}

/// Where a weight's bytes are kept.
#[derive(Debug, Clone)]
pub enum Stored {
    /// In a weight file, at a blob.
    Blob {
        /// The weight file as the model names it.
        file_name: String,
        /// The path of that file in the folder, when it is there.
        file_path: Option<String>,
        /// Offset of the blob's metadata record in the weight file.
        metadata_offset: u64,
        /// The blob, or why it cannot be found.
        blob: Result<blob::Blob, String>,
    },
    /// Inline in `model.mlmodel`, as a packed protobuf field.
    Inline {
        /// The `TensorValue` field (`floats`, `doubles`, `bools`, `bytes`).
        field: &'static str,
        /// Offset of the elements in `model.mlmodel`, when found.
        offset: Option<u64>,
    },
}

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
    /// nothing uses it).
    pub layer: String,
    /// The role: the argument of its first user, or `argument`.
    pub role: String,
    /// Its uses, as `<op index>-<op type>.<argument>`: the first
    /// [`MAX_USERS`].
    pub users: Vec<String>,
    /// How many uses there are.
    pub user_count: usize,
    /// MIL data type code.
    pub dtype: i32,
    /// Dims (`-1`: unknown).
    pub dims: Vec<i64>,
    /// Where it is kept.
    pub stored: Stored,
    /// Its bytes, or why they cannot be shown.
    pub bytes: Result<Bytes<'a>, String>,
}

/// What weights are found in: the directory, its bytes, the folder
/// `@model_path/` names, and `model.mlmodel`.
pub struct Context<'c, 'a> {
    /// The directory.
    pub dir: &'c Directory,
    /// Its bytes.
    pub store: &'c Store<'a>,
    /// The folder holding `model.mlmodel`.
    pub model_dir: &'c str,
    /// `model.mlmodel` itself.
    pub model: &'c FileEntry,
}

/// Every weight of `program`.
pub fn collect<'a>(program: &pb::Program, cx: &Context<'_, 'a>) -> Vec<Weight<'a>> {
    let mut out = Vec::new();
    let mut stems = Stems::default();
    let mut finder = Finder {
        haystack: cx.store.slice(cx.model.span),
        cursor: 0,
        scanned: 0,
    };
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
                let ty = tensor_type(v, out_type);
                let (stored, bytes) = if let Some(r) = mil::blob_ref(v) {
                    in_blob(cx, r)
                } else if let (true, Some((field, raw))) =
                    (op.r#type == "const" && argument == "val", inline_raw(v))
                {
                    if ty.is_none_or(|t| t.rank < 1) {
                        continue;
                    }
                    let offset = finder.find(&raw);
                    let bytes = match offset {
                        Some(at) => Ok(cx.store.range(Span {
                            offset: cx.model.span.offset + at,
                            len: raw.encoded_len,
                        })),
                        None => Err(format!(
                            "the inline {field} are not found as one packed field in {}",
                            cx.model.path
                        )),
                    };
                    (Stored::Inline { field, offset }, bytes)
                } else {
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
                let stem = unique(&mut stems, format!("{layer}.{role}"));
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
                        .take(MAX_USERS)
                        .map(|(j, t, a)| format!("{j:03}-{t}.{a}"))
                        .collect(),
                    user_count: uses.len(),
                    dtype: ty.map_or(0, |t| t.data_type),
                    dims: ty.map(mil::dims).unwrap_or_default(),
                    stored,
                    bytes,
                });
            }
        }
    }
    out
}

/// A weight-file value: its blob and data.
fn in_blob<'a>(
    cx: &Context<'_, 'a>,
    r: &pb::value::BlobFileValue,
) -> (Stored, Result<Bytes<'a>, String>) {
    let file_path = r
        .file_name
        .strip_prefix(MODEL_PATH)
        .map(|rest| format!("{}/{rest}", cx.model_dir));
    let file = file_path.as_deref().and_then(|p| cx.dir.file(p));
    let blob = match (file_path.as_deref(), file) {
        (None, _) => Err(format!(
            "weight file {:?} is not under {MODEL_PATH}, so not in this folder",
            r.file_name
        )),
        (Some(p), None) => Err(format!("weight file {p} is not in the directory")),
        (Some(p), Some(f)) => {
            blob::at(cx.store.slice(f.span), r.offset, p).map_err(|e| e.to_string())
        }
    };
    let bytes = match (&blob, file) {
        (Ok(b), Some(f)) => Ok(cx.store.range(Span {
            offset: f.span.offset + b.data.offset,
            len: b.data.len,
        })),
        (Err(e), _) => Err(e.clone()),
        (Ok(_), None) => Err("weight file missing".into()),
    };
    let stored = Stored::Blob {
        file_name: r.file_name.clone(),
        file_path,
        metadata_offset: r.offset,
        blob,
    };
    (stored, bytes)
}

/// An inline tensor's elements as protobuf stores them packed: the field
/// key and length in front (to find them), then the raw element bytes.
struct Raw {
    needle: Vec<u8>,
    encoded_len: u64,
}

/// The packed encoding of an inline tensor whose elements are raw bytes.
fn inline_raw(v: &pb::Value) -> Option<(&'static str, Raw)> {
    use pb::tensor_value::Value as T;
    let Some(pb::value::Value::ImmediateValue(i)) = &v.value else {
        return None;
    };
    let Some(pb::value::immediate_value::Value::Tensor(t)) = &i.value else {
        return None;
    };
    let (field, raw): (&'static str, Vec<u8>) = match t.value.as_ref()? {
        T::Floats(f) => (
            "floats",
            f.values.iter().flat_map(|x| x.to_le_bytes()).collect(),
        ),
        T::Doubles(d) => (
            "doubles",
            d.values.iter().flat_map(|x| x.to_le_bytes()).collect(),
        ),
        T::Bools(b) => ("bools", b.values.iter().map(|&x| u8::from(x)).collect()),
        T::Bytes(b) => ("bytes", b.values.clone()),
        _ => return None,
    };
    if raw.is_empty() {
        return None;
    }
    // Field 1, length-delimited (key byte 0x0a), then the length varint.
    let mut needle = vec![0x0a];
    let mut n = raw.len() as u64;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            needle.push(byte);
            break;
        }
        needle.push(byte | 0x80);
    }
    let prefix = needle.len() as u64;
    needle.extend_from_slice(&raw);
    Some((
        field,
        Raw {
            encoded_len: needle.len() as u64 - prefix,
            needle,
        },
    ))
}

/// Finds encodings in `model.mlmodel`, in file order first (values are
/// written in op order), within a scanning budget.
struct Finder<'h> {
    haystack: &'h [u8],
    cursor: usize,
    scanned: u64,
}

impl Finder<'_> {
    /// The offset of `raw`'s elements, when its encoding is there.
    fn find(&mut self, raw: &Raw) -> Option<u64> {
        let prefix = raw.needle.len() as u64 - raw.encoded_len;
        for from in [self.cursor, 0] {
            if self.scanned > SCAN_BUDGET {
                return None;
            }
            let hay = self.haystack.get(from..)?;
            let found = memmem::find(hay, &raw.needle);
            // Count what was read: up to the match, or all of it.
            self.scanned += found.map_or(hay.len(), |at| at + raw.needle.len()) as u64;
            if let Some(at) = found {
                let start = from + at;
                self.cursor = start + raw.needle.len();
                return Some(start as u64 + prefix);
            }
            if from == 0 {
                break;
            }
        }
        None
    }
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
