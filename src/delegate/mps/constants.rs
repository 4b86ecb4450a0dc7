//! The graph's constants: the values `constant_ids` lists, then any other
//! value with `constant_buffer_size` set. A constant's bytes are
//! `constant_buffer_size` bytes at `segment_offset` of the payload's
//! constant data or, from older writers, its inline `constant_buffer`
//! (a vector inside the flatbuffer). Each is named by its first user,
//! `<node>-<op>.<role>` (`001-MPSConv2D.input2`), or `unused.<id>`.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::nodes::Node;
use crate::delegate::Bytes;
use crate::delegate::folder::Npy;
use crate::format::Span;
use crate::schema::mps as fb;

/// A node reading a constant.
#[derive(Debug, Clone, Serialize)]
pub struct Use {
    /// The node's index.
    pub node: usize,
    /// Its op (`MPSConv2D`).
    pub op: String,
    /// The field naming the constant, without `_id` (`input2`).
    pub role: String,
}

/// Where a constant's bytes are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Store {
    /// The payload's constant data, at `segment_offset`.
    ConstantData,
    /// The value's inline `constant_buffer.storage`.
    Flatbuffer,
}

/// One constant tensor.
#[derive(Debug, Clone)]
pub struct Constant<'a> {
    /// Its value id.
    pub id: u32,
    /// True when `constant_ids` lists it.
    pub listed: bool,
    /// File stem.
    pub stem: String,
    /// The value's datatype.
    pub dtype: fb::MPSDataType,
    /// Its dims.
    pub dims: Vec<i64>,
    /// `segment_offset` and `constant_buffer_size` as written.
    pub segment_offset: u64,
    /// See `segment_offset`.
    pub size: u64,
    /// Where the bytes are kept.
    pub store: Store,
    /// Where the bytes are, or why they cannot be found.
    pub bytes: Result<Bytes<'a>, String>,
    /// How NumPy views them.
    pub npy: Option<Npy>,
    /// Nodes reading it.
    pub users: Vec<Use>,
}

/// The datatype's name without its `mps_data_type_` prefix (`float32`),
/// or `dtype<n>` for one the schema does not name.
pub fn dtype_name(t: fb::MPSDataType) -> String {
    t.variant_name().map_or_else(
        || format!("dtype{}", t.0),
        |n| n.trim_start_matches("mps_data_type_").to_owned(),
    )
}

/// NumPy's descr for `t`, its element size, and whether it is bfloat16
/// (widened to float32 in the `.npy`).
fn numpy(t: fb::MPSDataType) -> Option<(&'static str, u64, bool)> {
    use fb::MPSDataType as D;
    Some(match t {
        D::mps_data_type_float16 => ("<f2", 2, false),
        D::mps_data_type_float32 => ("<f4", 4, false),
        D::mps_data_type_float64 => ("<f8", 8, false),
        D::mps_data_type_bfloat16 => ("<f4", 2, true),
        D::mps_data_type_int8 => ("|i1", 1, false),
        D::mps_data_type_int16 => ("<i2", 2, false),
        D::mps_data_type_int32 => ("<i4", 4, false),
        D::mps_data_type_int64 => ("<i8", 8, false),
        D::mps_data_type_uint8 => ("|u1", 1, false),
        D::mps_data_type_uint16 => ("<u2", 2, false),
        D::mps_data_type_uint32 => ("<u4", 4, false),
        D::mps_data_type_uint64 => ("<u8", 8, false),
        D::mps_data_type_bool => ("|b1", 1, false),
        _ => return None,
    })
}

/// The NumPy view of `len` stored bytes of `t` with `dims`.
fn npy(t: fb::MPSDataType, dims: &[i64], len: u64) -> Option<Npy> {
    let (descr, elem, widen) = numpy(t)?;
    let shape: Vec<u64> = dims
        .iter()
        .map(|&d| u64::try_from(d).ok())
        .collect::<Option<_>>()?;
    let need = shape
        .iter()
        .try_fold(elem, |a, &d| a.checked_mul(d))
        .filter(|&n| n == len)?;
    Some(Npy {
        descr,
        shape,
        nbytes: need,
        widen,
    })
}

/// A node's name in file stems (`001-MPSConv2D`).
pub fn layer(n: &Node) -> String {
    format!("{:03}-{}", n.index, n.op)
}

/// The nodes reading each value id, in one pass.
fn readers(nodes: &[Node]) -> HashMap<i64, Vec<Use>> {
    let mut out: HashMap<i64, Vec<Use>> = HashMap::new();
    for n in nodes {
        for (role, id) in &n.inputs {
            out.entry(*id).or_default().push(Use {
                node: n.index,
                op: n.op.clone(),
                role: role.clone(),
            });
        }
    }
    out
}

/// Every constant, and what is wrong with `constant_ids` entries that
/// name no value.
pub fn collect<'a>(
    payload: &'a [u8],
    g: fb::MPSGraph<'a>,
    constant_data: Span,
    nodes: &[Node],
) -> (Vec<Constant<'a>>, Vec<String>) {
    let values = g.mps_values();
    let count = values.map_or(0, |v| v.len());
    let mut errors = Vec::new();
    let mut ids: Vec<(u32, bool)> = Vec::new();
    let mut seen = HashSet::new();
    for (k, id) in g.constant_ids().iter().flatten().enumerate() {
        match u32::try_from(id).ok().filter(|&i| (i as usize) < count) {
            Some(i) if seen.insert(i) => ids.push((i, true)),
            Some(_) => {}
            None => errors.push(format!(
                "constant_ids[{k}]: value {id} is not among the {count} values"
            )),
        }
    }
    for (i, v) in values.iter().flatten().enumerate() {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        if v.constant_buffer_size() > 0 && seen.insert(i) {
            ids.push((i, false));
        }
    }
    let mut readers = readers(nodes);
    let mut stems = HashSet::new();
    let mut out = Vec::new();
    for (id, listed) in ids {
        let Some(v) = values.map(|v| v.get(id as usize)) else {
            continue;
        };
        let users = readers.remove(&i64::from(id)).unwrap_or_default();
        let mut stem = users.first().map_or_else(
            || format!("unused.{id}"),
            |u| format!("{:03}-{}.{}", u.node, u.op, u.role),
        );
        if !stems.insert(stem.clone()) {
            stem = format!("{stem}-{id}");
            stems.insert(stem.clone());
        }
        let dims: Vec<i64> = v.dims().iter().flatten().map(i64::from).collect();
        let size = v.constant_buffer_size();
        let inline = v
            .constant_buffer()
            .and_then(|b| b.storage())
            .filter(|s| !s.is_empty())
            .and_then(|s| Span::of_vector(payload, Some(s.bytes())));
        let (store, bytes) = match inline {
            Some(span) => (
                Store::Flatbuffer,
                Bytes::Payload(span).take(size, &format!("constant %{id}")),
            ),
            None => (
                Store::ConstantData,
                in_data(constant_data, v.segment_offset(), size, id),
            ),
        };
        let bytes = bytes.and_then(|b| {
            if b.is_empty() {
                Err(format!("constant %{id}: constant_buffer_size is 0"))
            } else {
                Ok(b)
            }
        });
        let npy = bytes
            .as_ref()
            .ok()
            .and_then(|b| npy(v.datatype(), &dims, b.len()));
        out.push(Constant {
            id,
            listed,
            stem,
            dtype: v.datatype(),
            dims,
            segment_offset: v.segment_offset(),
            size,
            store,
            bytes,
            npy,
            users,
        });
    }
    (out, errors)
}

/// `size` bytes at `offset` of the constant data.
fn in_data(data: Span, offset: u64, size: u64, id: u32) -> Result<Bytes<'static>, String> {
    match offset.checked_add(size) {
        Some(end) if end <= data.len => Ok(Bytes::Payload(Span {
            offset: data.offset + offset,
            len: size,
        })),
        _ => Err(format!(
            "constant %{id}: segment_offset {offset} + constant_buffer_size {size} is past the constant data's {} bytes",
            data.len
        )),
    }
}
