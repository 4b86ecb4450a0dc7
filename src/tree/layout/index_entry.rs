//! The entries of `index.json` files: one type, so every directory's index
//! has the same field names in the same order.

use std::sync::Arc;

use serde::Serialize;

use crate::format::{Name, scalar};
use crate::schema::ScalarType;

/// One entry of an `index.json`. Fields that do not apply to an entry are
/// left out.
#[derive(Debug, Default, Serialize)]
pub(super) struct IndexEntry<'a> {
    /// The `.bin` file's name; absent for a missing external tensor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The `.npy` twin's name, `null` when NumPy cannot describe it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub npy: Option<Option<String>>,
    /// Test case values: `input` or `expected`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// Test case values: position among the inputs or outputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// Program tensors: index in `ExecutionPlan.values`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_index: Option<usize>,
    /// Named data: the original key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Name<'a>>,
    /// Program tensors: the fully qualified name, or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqn: Option<Option<Name<'a>>>,
    /// Present (`true`) when `key` or `fqn` is not UTF-8: both are then
    /// shown with `%` and each byte outside a UTF-8 character as `%XX`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent_encoded: Option<bool>,
    /// Test case values: `Tensor`, `Int`, `Bool`, `Double`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// Type and shape, for tensors.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
    /// Test case values that are not tensors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Bytes of the `.bin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nbytes: Option<u64>,
    /// Named data: the segment holding the bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment_index: Option<u32>,
    /// Where the bytes are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source<'a>>,
    /// `constant`, `mutable_initial_state`, `external`, `named` or `tensor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<&'static str>,
    /// Constants and initial states: `Tensor.data_buffer_idx`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_index: Option<u32>,
    /// Initial states: index into `Program.mutable_data_segments`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutable_data_segments_index: Option<u64>,
    /// External tensors found in no attached data file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<bool>,
    /// Package tensors: the safetensors dtype code (`F32`, `BF16`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<&'static str>,
    /// Package tensors: the key whose bytes this alias names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<&'a str>,
    /// Package tensors: the graph's sizes when they differ from the stored
    /// shape (quantized tensors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logical_sizes: Option<Vec<i64>>,
    /// Package tensors: the quantization scheme, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quant: Option<&'static str>,
    /// Package tensors: the graph's input kind (`PARAMETER`, `BUFFER`,
    /// `CONSTANT_TENSOR`, `MUTABLE_BUFFER` for those without bytes).
    #[serde(rename = "kind", skip_serializing_if = "Option::is_none")]
    pub input_kind: Option<&'static str>,
    /// Package tensors: written by some method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutated: Option<bool>,
    /// Package tensors: `(method, placeholder)` of every use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_by: Option<Vec<(&'a str, &'a str)>>,
    /// What the program says of the value beyond its bytes; boxed, since
    /// most entries of a large index have none of it.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub meaning: Option<Box<Meaning>>,
}

impl IndexEntry<'_> {
    /// Sets `percent_encoded` when a name of the entry needs it.
    pub fn flag_escaped_names(&mut self) {
        let fqn = self.fqn.flatten();
        if self.key.into_iter().chain(fqn).any(Name::is_escaped) {
            self.percent_encoded = Some(true);
        }
    }
}

/// The fields of an `index.json` entry that say what a value means.
#[derive(Debug, Default, Serialize)]
pub(super) struct Meaning {
    /// `none` for a value listed for its recorded name or placement that
    /// has no bytes in any file (a planned buffer such as a KV cache).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<&'static str>,
    /// Planned values: the memory id of their buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_id: Option<u32>,
    /// Planned values: the offset in that buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_offset: Option<u64>,
    /// Program tensors: a further name of the `.bin`, from the first use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Training programs: the parameter or gradient this output is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<crate::meta::training::TrainingName>,
    /// Checkpoint keys (`--names`) whose bytes these are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_names: Option<Vec<String>>,
    /// Program tensors: every instruction argument that is this value
    /// (absent when none is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<serde_json::Value>>,
}

impl Meaning {
    /// `None` when it says nothing, so the entry stays small.
    pub fn boxed(self) -> Option<Box<Meaning>> {
        let empty = self.bytes.is_none()
            && self.mem_id.is_none()
            && self.mem_offset.is_none()
            && self.alias.is_none()
            && self.training.is_none()
            && self.checkpoint_names.is_none()
            && self.users.is_none();
        (!empty).then(|| Box::new(self))
    }
}

impl IndexEntry<'_> {
    /// The meaning fields, made on first use.
    pub fn meaning(&mut self) -> &mut Meaning {
        self.meaning.get_or_insert_with(Box::default)
    }
}

/// Where bytes are: `file` is the data file's name for bytes from an
/// attached `.ptd`, `null` for the file the tree shows (so that two
/// exports under different names compare equal where their bytes do).
#[derive(Debug, Serialize)]
pub(super) struct Source<'a> {
    pub file: Option<&'a str>,
    pub offset: u64,
}

/// A tensor's type and shape, as `index.json` describes it. The sizes and
/// dim order are shared with the tensor (and with every value that shares
/// its table); the NumPy shape is worked out while writing.
#[derive(Debug)]
pub(super) struct Shape(TensorShape);

impl Serialize for Shape {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let t = &self.0;
        let np = scalar::numpy(t.scalar_type);
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("scalar_type", &scalar::name(t.scalar_type))?;
        m.serialize_entry("numpy_dtype", &np.map(|n| n.descr))?;
        m.serialize_entry("raw_bits", &np.is_some_and(|n| n.raw_bits))?;
        m.serialize_entry("sizes", &*t.sizes)?;
        m.serialize_entry("dim_order", &*t.dim_order)?;
        m.serialize_entry("npy_shape", &t.physical())?;
        m.end()
    }
}

/// Element type, logical sizes and dim order of a tensor file.
#[derive(Debug, Clone)]
pub(super) struct TensorShape {
    pub scalar_type: ScalarType,
    pub sizes: Arc<[i64]>,
    pub dim_order: Arc<[u8]>,
}

impl TensorShape {
    /// The sizes as laid out in memory: logical sizes in dim order, when the
    /// dim order is a permutation; otherwise the logical sizes.
    pub fn physical(&self) -> Vec<u64> {
        let logical: Vec<u64> = self.sizes.iter().map(|&s| s.max(0) as u64).collect();
        let mut seen = vec![false; logical.len()];
        let permutation = self.dim_order.len() == logical.len()
            && self.dim_order.iter().all(|&d| {
                let d = d as usize;
                d < seen.len() && !std::mem::replace(&mut seen[d], true)
            });
        if permutation {
            self.dim_order
                .iter()
                .map(|&d| logical[d as usize])
                .collect()
        } else {
            logical
        }
    }

    /// The `index.json` description.
    pub fn describe(&self) -> Shape {
        Shape(self.clone())
    }
}
