//! Delegate payloads decoded, one module per backend, behind one seam:
//! [`decode`] takes a backend id, the payload bytes and a way to look up
//! named data, and returns a decoded view, an error, or nothing for a
//! backend without a decoder (whose payload stays opaque).

pub mod fetch;
pub mod header;
mod program;
pub mod vulkan;
pub mod xnnpack;

pub use program::{NamedData, ProgramDelegate, decode_program, referenced_named_keys};

use std::collections::BTreeMap;

use serde::Serialize;

use crate::format::Result;

/// A decoded payload, by backend.
#[derive(Debug)]
pub enum Decoded<'a> {
    /// `XnnpackBackend`.
    Xnnpack(xnnpack::Payload<'a>),
    /// `VulkanBackend`.
    Vulkan(vulkan::Payload<'a>),
}

/// Decodes the payload of a delegate of backend `backend`. `named` gives
/// the length of a named-data entry by key (the program's own
/// `named_data`, then attached data files). `None`: no decoder for that
/// backend.
pub fn decode<'a>(
    backend: &str,
    payload: &'a [u8],
    named: &dyn Fn(&str) -> Option<u64>,
) -> Option<Result<Decoded<'a>>> {
    match backend {
        xnnpack::BACKEND_ID => Some(xnnpack::decode(payload, named).map(Decoded::Xnnpack)),
        vulkan::BACKEND_ID => Some(vulkan::decode(payload, named).map(Decoded::Vulkan)),
        _ => None,
    }
}

/// The named-data keys a payload of backend `backend` refers to, so that
/// the data files holding them can be found. `None`: no decoder for that
/// backend.
pub fn named_keys<'a>(backend: &str, payload: &'a [u8]) -> Option<Result<Vec<&'a str>>> {
    match backend {
        xnnpack::BACKEND_ID => Some(xnnpack::named_keys(payload)),
        vulkan::BACKEND_ID => Some(vulkan::named_keys(payload)),
        _ => None,
    }
}

/// Verifier limits for a payload's flatbuffer of `len` bytes: depth is
/// bounded, and more tables than 4-byte slots means shared objects, which
/// is how a small hostile payload would make a decoder work out of
/// proportion.
pub(crate) fn verifier_options(len: usize) -> flatbuffers::VerifierOptions {
    flatbuffers::VerifierOptions {
        max_depth: 32,
        max_tables: len / 4 + 16,
        max_apparent_size: len.saturating_mul(4).saturating_add(1 << 20),
        ignore_missing_null_terminator: false,
    }
}

/// What a delegate holds, for reports (`inspect`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The backend id.
    pub backend: String,
    /// Number of nodes.
    pub nodes: usize,
    /// Number of values.
    pub values: usize,
    /// Node counts per operator.
    pub ops: BTreeMap<String, usize>,
    /// Constant bytes per datatype (scale blobs under `scales`).
    pub constant_bytes: BTreeMap<String, u64>,
}

/// A weight's stable identity across two versions of a model: layer and
/// role of its first user, independent of the named-data key (a sha256 of
/// the bytes), so `diff` can pair weights whose bytes changed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct WeightName {
    /// The file stem under `xnnpack/weights/` (`012-conv2d.filter`) or
    /// `vulkan/weights/`.
    pub name: String,
    /// Layer (`012-conv2d`); `None` for a constant no node uses.
    pub layer: Option<String>,
    /// Role (`filter`, `bias`, `unused`).
    pub role: String,
    /// The value id.
    pub value_id: u32,
    /// Datatype name (`xnn_datatype_fp32`).
    pub datatype: String,
    /// Dimensions as stored.
    pub dims: Vec<u32>,
    /// Named-data key, if the bytes are there.
    pub key: Option<String>,
}

impl Decoded<'_> {
    /// Backend, node counts per operator and constant bytes per datatype.
    pub fn summary(&self) -> Summary {
        match self {
            Decoded::Xnnpack(p) => Summary {
                backend: xnnpack::BACKEND_ID.to_owned(),
                nodes: p.nodes.len(),
                values: p.values.len(),
                ops: p.op_counts(),
                constant_bytes: p.constant_bytes(),
            },
            Decoded::Vulkan(p) => Summary {
                backend: vulkan::BACKEND_ID.to_owned(),
                nodes: p.calls.len(),
                values: p.graph.values().map_or(0, |v| v.len()),
                ops: p.op_counts(),
                constant_bytes: p.constant_bytes(),
            },
        }
    }

    /// Every weight with its stable name, in value order.
    pub fn weight_names(&self) -> Vec<WeightName> {
        match self {
            Decoded::Xnnpack(p) => p
                .weights
                .iter()
                .map(|w| WeightName {
                    name: w.name.clone(),
                    layer: w.layer.clone(),
                    role: w.role.to_owned(),
                    value_id: w.value_id,
                    datatype: xnnpack::datatype::name(w.datatype),
                    dims: w.dims.clone(),
                    key: w.key.map(str::to_owned),
                })
                .collect(),
            Decoded::Vulkan(p) => p
                .constants
                .iter()
                .map(|c| WeightName {
                    name: c.name.clone(),
                    layer: c.layer.clone(),
                    role: c.role.clone(),
                    value_id: c.value_id,
                    datatype: vulkan::graph::datatype_name(c.datatype),
                    dims: c.dims.clone(),
                    key: c.key.map(str::to_owned),
                })
                .collect(),
        }
    }
}
