//! Delegate payloads decoded, one module per backend, behind one seam:
//! [`decode`] takes a backend id, the payload bytes and a way to look up
//! named data, and returns a decoded view, an error, or nothing for a
//! backend without a decoder (whose payload stays opaque).

pub mod aoti;
pub mod artifact;
mod backend;
mod bytes;
pub mod coreml;
pub mod dot;
pub mod ethosu;
pub mod flatbuffer;
pub mod folder;
pub mod graph_files;
pub mod header;
pub mod mediatek;
pub mod mlx;
pub mod mps;
pub mod nxp;
pub mod openvino;
pub mod payload_fetch;
mod program;
pub mod qnn;
pub mod segment_header;
pub mod strided;
pub mod tensorrt;
pub mod tosa;
pub mod vgf;
pub mod vulkan;
pub mod xnnpack;

pub use backend::{Backend, Decoded, Rendered};
pub use bytes::{Bytes, Lookup, NoNamed};
pub use program::{
    NamedData, ProgramDelegate, decode_program, delegate_named_keys, named_index,
    referenced_named_keys,
};

use std::collections::BTreeMap;

use serde::Serialize;

use crate::format::Result;

/// Every backend with a decoder. Adding one is a module under
/// `delegate/` and a line here.
static BACKENDS: &[&dyn Backend] = &[
    &xnnpack::Xnnpack,
    &vulkan::Vulkan,
    &coreml::CoreMl,
    &ethosu::EthosU,
    &openvino::Openvino,
    &mlx::Mlx,
    &mps::Mps,
    &tosa::Tosa,
    &vgf::Vgf,
    &qnn::Qnn,
    &tensorrt::TensorRt,
    &aoti::Aoti::CUDA,
    &aoti::Aoti::METAL,
    &aoti::Aoti::BASE,
    &mediatek::MediaTek,
    &nxp::Nxp,
];

/// The backend that decodes delegates of id `id`.
pub fn backend(id: &str) -> Option<&'static dyn Backend> {
    BACKENDS.iter().copied().find(|b| b.id() == id)
}

/// Every backend with a decoder.
pub fn backends() -> &'static [&'static dyn Backend] {
    BACKENDS
}

/// A delegate's profiling events matched to the nodes of its payload
/// ([`Backend::profile_nodes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileNodes {
    /// Per event id given, the node it timed (index and operator) and how
    /// that was found, or `None` when it was not.
    pub nodes: Vec<Option<ProfileNode>>,
}

/// One event id's node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileNode {
    /// The node's index in the payload's node order.
    pub index: usize,
    /// Its operator, as the delegate's `code.txt` names it.
    pub op: String,
    /// How the match was made.
    pub how: &'static str,
}

/// The nodes of the payload of a delegate of backend `id` that its
/// profiling events (string debug ids, in the order first recorded)
/// timed; `None` when the backend's payloads cannot say.
pub fn profile_nodes(id: &str, payload: &[u8], ids: &[&str]) -> Option<ProfileNodes> {
    backend(id)?.profile_nodes(payload, ids)
}

/// Decodes the payload of a delegate of backend `id` with its compile
/// specs, finding named data in `named`. `None`: no decoder for that
/// backend.
pub fn decode<'a>(
    id: &str,
    payload: &'a [u8],
    specs: artifact::Specs<'_, 'a>,
    named: &dyn Lookup<'a>,
) -> Option<Result<Box<dyn Decoded<'a> + 'a>>> {
    backend(id).map(|b| b.decode(payload, specs, named))
}

/// Compile specs whose keys are text, as the seam hands them.
pub fn text_specs<'a>(specs: &[(crate::format::Name<'a>, &'a [u8])]) -> Vec<(&'a str, &'a [u8])> {
    specs
        .iter()
        .filter_map(|(k, v)| k.as_str().map(|k| (k, *v)))
        .collect()
}

/// The named-data keys a payload of backend `id` (with its compile specs)
/// refers to, so that the data files holding them can be found. `None`:
/// no decoder for that backend.
pub fn named_keys<'a>(
    id: &str,
    payload: &'a [u8],
    specs: artifact::Specs<'_, 'a>,
) -> Option<Result<Vec<&'a str>>> {
    backend(id).map(|b| b.named_keys(payload, specs))
}

/// What a delegate holds, for reports (`inspect`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The backend id.
    pub backend: String,
    /// Number of nodes.
    pub nodes: usize,
    /// Number of values.
    pub values: usize,
    /// Node counts per operator.
    pub ops: BTreeMap<String, usize>,
    /// Constant bytes per datatype (scale blobs under `scales`), each
    /// stored byte range counted once.
    pub constant_bytes: BTreeMap<String, u64>,
    /// Values whose bytes are a range another value holds too (counted in
    /// `constant_bytes` once).
    #[serde(skip_serializing_if = "is_zero")]
    pub shared_values: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Summary {
    /// The summary of a graph of `nodes` nodes (`ops` counts them per
    /// operator) and `values` values, whose constants are `stored`: each
    /// value's datatype name and stored bytes. A range several values
    /// share is counted once, under the datatype of the first.
    pub fn graph<'a>(
        backend: &str,
        nodes: usize,
        values: usize,
        ops: BTreeMap<String, usize>,
        stored: impl IntoIterator<Item = (String, Bytes<'a>)>,
    ) -> Summary {
        let mut s = Summary {
            backend: backend.to_owned(),
            nodes,
            values,
            ops,
            ..Summary::default()
        };
        let mut seen = std::collections::HashSet::new();
        for (dtype, bytes) in stored {
            if !seen.insert(bytes) {
                s.shared_values += 1;
                continue;
            }
            *s.constant_bytes.entry(dtype).or_default() += bytes.len();
        }
        s
    }
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
