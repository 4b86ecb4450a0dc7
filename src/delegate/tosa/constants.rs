//! Constant tensors and shapes: the bytes of a `CONST` output tensor (its
//! `data`, or for graphs past 2 GB its `offset` and `size`) and of a
//! `CONST_SHAPE` output shape, named by block and tensor name.

use serde::Serialize;

use super::dtype::{self, Storage};
use super::graph::{Block, op_name};
use crate::delegate::Bytes;
use crate::format::Span;
use crate::schema::tosa as fb;

/// An operator using a constant: its position, name and input position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Use {
    /// Position among the block's operators.
    pub operator: usize,
    /// The operator's name (`CONV2D`).
    pub op: String,
    /// Position among its inputs.
    pub input: usize,
}

/// A tensor or shape with stored bytes.
#[derive(Debug, Clone)]
pub struct Constant<'a> {
    /// File stem under `weights/`: the tensor's name, behind
    /// `<region>.<block>.` unless the block is the only one.
    pub name: String,
    /// Position in [`super::Payload::constants`], the key renderers find
    /// its path by.
    pub key: usize,
    /// Position of its block in [`super::Payload::blocks`].
    pub block: usize,
    /// The tensor's (or shape's) name as written.
    pub tensor: &'a str,
    /// Position in the block's `tensors` (or `shapes`).
    pub index: usize,
    /// True for a `TosaShape`.
    pub is_shape: bool,
    /// Element type (`SHAPE` for a shape).
    pub dtype: fb::DType,
    /// Dimensions as written (a shape's: its rank).
    pub shape: Vec<i32>,
    /// Bytes the dims need, the `.npy` descr, its shape, and whether the
    /// `.npy` widens bfloat16, when the type has a NumPy view.
    pub npy: Option<(u64, &'static str, Vec<u64>, bool)>,
    /// Where the bytes are; `Err` says why they cannot be shown.
    pub bytes: Result<Bytes<'a>, String>,
    /// Operators using it, in order.
    pub users: Vec<Use>,
}

impl Constant<'_> {
    /// The first user as `<operator>-<OP>` (`008-CONV2D`).
    pub fn layer(&self) -> Option<String> {
        self.users
            .first()
            .map(|u| format!("{:03}-{}", u.operator, u.op))
    }

    /// The role in its first user (`input1`), `unused` for none.
    pub fn role(&self) -> String {
        self.users
            .first()
            .map_or_else(|| "unused".to_owned(), |u| format!("input{}", u.input))
    }
}

/// A name as part of a file name: characters other than letters, digits,
/// `.`, `_` and `-` become `_`, and an empty name `unnamed`.
fn file_part(name: &str) -> String {
    let part: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if part.is_empty() {
        "unnamed".to_owned()
    } else {
        part
    }
}

/// The NumPy view of `count`-element values of `s` shaped `shape`.
fn npy_of(s: Storage, shape: Vec<u64>, count: u64) -> Option<(u64, &'static str, Vec<u64>, bool)> {
    let descr = s.numpy?;
    let nbytes = dtype::bytes_for(s, count)?;
    Some((nbytes, descr, shape, s.widen))
}

/// Where a tensor's bytes are: its `data` vector, else (graphs past 2 GB)
/// `size` bytes at `offset` of the payload; `None` for a tensor without
/// stored bytes.
fn tensor_bytes<'a>(
    payload: &'a [u8],
    t: fb::TosaTensor<'a>,
    what: &str,
) -> Option<Result<Bytes<'a>, String>> {
    if let Some(data) = t.data().filter(|d| !d.is_empty()) {
        return Some(
            Span::of_vector(payload, Some(data.bytes()))
                .map(Bytes::Payload)
                .ok_or_else(|| format!("{what}: data is not inside the payload")),
        );
    }
    // Offsets of 0 and 1 mean "not stored outside the flatbuffer".
    if t.offset() > 1 && t.size() > 0 {
        return Some(
            Span::checked(t.offset(), t.size(), payload.len() as u64, || {
                format!("{what}: offset and size")
            })
            .map(Bytes::Payload)
            .map_err(|e| e.to_string()),
        );
    }
    None
}

/// `b`, cut to the `need` bytes the shape says when it holds more; fewer
/// is an error.
fn fit<'a>(b: Bytes<'a>, need: Option<u64>) -> Result<Bytes<'a>, String> {
    match need {
        Some(n) => b.take(n, "the shape"),
        None => Ok(b),
    }
}

/// Every constant tensor and shape of every block, in block order, tensors
/// before shapes.
pub fn collect<'a>(payload: &'a [u8], blocks: &[Block<'a>]) -> Vec<Constant<'a>> {
    let prefix = blocks.len() > 1;
    let mut out: Vec<Constant<'a>> = Vec::new();
    let mut taken = std::collections::HashSet::new();
    for (b, block) in blocks.iter().enumerate() {
        let users = users(block);
        let stem = |name: &str| {
            if prefix {
                format!(
                    "{}.{}.{}",
                    file_part(block.region_name),
                    file_part(block.name()),
                    file_part(name)
                )
            } else {
                file_part(name)
            }
        };
        for (i, t) in block.block.tensors().into_iter().flatten().enumerate() {
            let name = t.name().unwrap_or("");
            let what = format!("{} tensor {i} ({name:?})", block.path());
            let Some(found) = tensor_bytes(payload, t, &what) else {
                continue;
            };
            let shape: Vec<i32> = t.shape().map(|s| s.iter().collect()).unwrap_or_default();
            let dims: Option<Vec<u64>> = shape.iter().map(|&d| u64::try_from(d).ok()).collect();
            let storage = dtype::storage_of(t.type_());
            let count = dtype::elements(&shape);
            let need = storage.zip(count).and_then(|(s, n)| dtype::bytes_for(s, n));
            let npy = storage
                .zip(dims)
                .zip(count)
                .and_then(|((s, d), n)| npy_of(s, d, n));
            out.push(Constant {
                name: unique(&mut taken, stem(name)),
                key: out.len(),
                block: b,
                tensor: name,
                index: i,
                is_shape: false,
                dtype: t.type_(),
                shape,
                npy,
                bytes: found.and_then(|bytes| fit(bytes, need)),
                users: users.get(name).cloned().unwrap_or_default(),
            });
        }
        for (i, s) in block.block.shapes().into_iter().flatten().enumerate() {
            let Some(data) = s.data().filter(|d| !d.is_empty()) else {
                continue;
            };
            let name = s.name().unwrap_or("");
            let what = format!("{} shape {i} ({name:?})", block.path());
            let rank = u64::from(s.rank());
            let found = Span::of_vector(payload, Some(data.bytes()))
                .map(Bytes::Payload)
                .ok_or_else(|| format!("{what}: data is not inside the payload"));
            let storage = dtype::storage_of(fb::DType::SHAPE);
            let npy = storage.and_then(|st| npy_of(st, vec![rank], rank));
            let need = npy.as_ref().map(|n| n.0);
            out.push(Constant {
                name: unique(&mut taken, stem(name)),
                key: out.len(),
                block: b,
                tensor: name,
                index: i,
                is_shape: true,
                dtype: fb::DType::SHAPE,
                shape: vec![i32::try_from(s.rank()).unwrap_or(i32::MAX)],
                npy,
                bytes: found.and_then(|bytes| fit(bytes, need)),
                users: users.get(name).cloned().unwrap_or_default(),
            });
        }
    }
    out
}

/// `stem`, or `stem-<k>` for the first k from 2 that no earlier constant
/// took: names need not be unique in a hostile graph.
fn unique(taken: &mut std::collections::HashSet<String>, stem: String) -> String {
    if taken.insert(stem.clone()) {
        return stem;
    }
    let mut k = 2usize;
    loop {
        let s = format!("{stem}-{k}");
        if taken.insert(s.clone()) {
            return s;
        }
        k += 1;
    }
}

/// The operators using each name of `block`, in order.
fn users<'a>(block: &Block<'a>) -> std::collections::HashMap<&'a str, Vec<Use>> {
    let mut out: std::collections::HashMap<&'a str, Vec<Use>> = std::collections::HashMap::new();
    for (k, op) in block.operators().enumerate() {
        for (input, name) in op.inputs().into_iter().flatten().enumerate() {
            out.entry(name).or_default().push(Use {
                operator: k,
                op: op_name(op.op()),
                input,
            });
        }
    }
    out
}
