//! The graph's constants: the first `num_constant_tensors` tensor slots,
//! each named by a named slot whose name is the named-data key holding its
//! bytes (in the program or an attached `.ptd`), typed by the slot's
//! `tensor_meta`, with the instructions that read it as its users.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::graph::{self, Instr};
use super::operands::{self, is_output};
use crate::delegate::folder::Npy;
use crate::delegate::{Bytes, Lookup};
use crate::format::scalar;
use crate::schema::ScalarType;
use crate::schema::mlx as fb;

/// An instruction reading a constant.
#[derive(Debug, Clone, Serialize)]
pub struct Use {
    /// The instruction (`000-AddmmNode`; `1.000-…` outside chain 0).
    pub layer: String,
    /// The field that names the constant (`bias`).
    pub field: String,
}

/// One constant tensor.
#[derive(Debug, Clone)]
pub struct Constant<'a> {
    /// Its tensor slot.
    pub tid: u32,
    /// The named-data key.
    pub key: &'a str,
    /// File stem: the key after its last `/`, made a plain file name.
    pub stem: String,
    /// The scalar type, when the slot has metadata.
    pub dtype: Option<ScalarType>,
    /// Dims (`-1` dynamic).
    pub dims: Vec<i64>,
    /// Where the bytes are, or why they cannot be found.
    pub bytes: Result<Bytes<'a>, String>,
    /// How NumPy views them.
    pub npy: Option<Npy>,
    /// Instructions reading it.
    pub users: Vec<Use>,
}

/// An instruction's name in the tree.
pub fn layer(i: &Instr) -> String {
    if i.chain == 0 {
        format!("{:03}-{}", i.index, i.op)
    } else {
        format!("{}.{:03}-{}", i.chain, i.index, i.op)
    }
}

fn stem(key: &str, tid: u32, seen: &mut HashSet<String>) -> String {
    let tail = key.rsplit('/').next().unwrap_or(key);
    let mut s: String = tail
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert_str(0, &format!("t{tid}"));
    }
    if !seen.insert(s.clone()) {
        s = format!("{s}-{tid}");
        seen.insert(s.clone());
    }
    s
}

/// The NumPy view of `len` stored bytes of `dtype` with `dims`.
fn npy(dtype: ScalarType, dims: &[i64], len: u64) -> Option<Npy> {
    let elem = scalar::element_size(dtype)?;
    let np = scalar::numpy(dtype)?;
    let widen = dtype == ScalarType::BFLOAT16;
    if np.raw_bits && !widen {
        return None;
    }
    let shape: Vec<u64> = dims
        .iter()
        .map(|&d| u64::try_from(d).ok())
        .collect::<Option<_>>()?;
    let need = shape
        .iter()
        .try_fold(elem, |a, &d| a.checked_mul(d))
        .filter(|&n| n == len)?;
    Some(Npy {
        descr: if widen { "<f4" } else { np.descr },
        shape,
        nbytes: need,
        widen,
    })
}

/// Every constant slot named by a named slot, in named-slot order.
pub fn collect<'a>(
    g: fb::MLXGraph<'a>,
    instrs: &[Instr],
    named: &dyn Lookup<'a>,
) -> Vec<Constant<'a>> {
    let metas = g.tensor_meta();
    let mut readers = readers(instrs);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for s in g.named_slots().iter().flatten() {
        let slot = s.slot();
        if slot.slot_type() != fb::SlotType::TensorSlot || slot.idx() >= g.num_constant_tensors() {
            continue;
        }
        let tid = slot.idx();
        let key = s.name();
        let meta = metas.and_then(|m| {
            let i = usize::try_from(tid).ok()?;
            (i < m.len()).then(|| m.get(i))
        });
        let (dtype, dims) = match &meta {
            Some(m) => (Some(graph::scalar_type(m)), graph::dims(m)),
            None => (None, Vec::new()),
        };
        let bytes = named.len(key).map(|n| Bytes::named(key, n)).ok_or_else(|| {
            format!("constant %{tid}: named data {key:?} is not in the program nor an attached data file")
        });
        let npy = match (&bytes, dtype) {
            (Ok(b), Some(t)) => npy(t, &dims, b.len()),
            _ => None,
        };
        out.push(Constant {
            tid,
            key,
            stem: stem(key, tid, &mut seen),
            dtype,
            dims,
            bytes,
            npy,
            users: readers.remove(&u64::from(tid)).unwrap_or_default(),
        });
    }
    out
}

/// The instructions that read each tensor slot, in one pass.
fn readers(instrs: &[Instr]) -> HashMap<u64, Vec<Use>> {
    let mut out: HashMap<u64, Vec<Use>> = HashMap::new();
    for i in instrs {
        for (key, operand) in operands::fields(&i.op, &i.fields) {
            if is_output(key) {
                continue;
            }
            let mut t = Vec::new();
            operand.tids(&mut t);
            t.dedup();
            for tid in t {
                out.entry(tid).or_default().push(Use {
                    layer: layer(i),
                    field: key.to_owned(),
                });
            }
        }
    }
    out
}
