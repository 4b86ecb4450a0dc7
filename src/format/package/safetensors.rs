//! `program.safetensors`: the package's tensors, located in the package.
//!
//! The `safetensors` crate parses and validates the header (offsets
//! contiguous from 0, each range exactly dtype × shape long, the member
//! exactly header + data long); this module turns its answer into spans of
//! the package file and the project's own dtype names.

use safetensors::{Dtype, SafeTensors};

use super::super::{Error, Result, Span};
use crate::format::scalar;
use crate::schema::ScalarType;

/// One tensor of the safetensors member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTensor {
    /// The key (a data key of the graph).
    pub key: String,
    /// The safetensors dtype code: `F32`, `BF16`, `F8_E4M3`, ...
    pub dtype: &'static str,
    /// The ExecuTorch element type of the same bits, when there is one.
    pub scalar_type: Option<ScalarType>,
    /// Shape as stored.
    pub shape: Vec<u64>,
    /// The bytes, as a span of the package file.
    pub span: Span,
}

/// The parsed member.
#[derive(Debug, Clone, Default)]
pub struct Tensors {
    /// Tensors in the order of their bytes.
    pub tensors: Vec<StoredTensor>,
    /// Length of the JSON header.
    pub header_len: u64,
    /// The `__metadata__` map, when the header has one.
    pub metadata: Option<std::collections::BTreeMap<String, String>>,
}

/// Parses the safetensors member whose bytes are `member` in the file.
pub fn parse(file: &[u8], member: Span) -> Result<Tensors> {
    let bytes = member.bytes(file);
    let (n, meta) = SafeTensors::read_metadata(bytes).map_err(|e| {
        Error::new(format!(
            "program.safetensors (at offset {}): {e}",
            member.offset
        ))
    })?;
    // read_metadata has checked that 8 + n + the data fill the member.
    let data_start = member.offset + 8 + n as u64;
    let infos = meta.tensors();
    let mut tensors = Vec::with_capacity(infos.len());
    for key in meta.offset_keys() {
        let Some(info) = infos.get(&key) else {
            continue;
        };
        let (start, end) = info.data_offsets;
        let span = Span {
            offset: data_start + start as u64,
            len: (end - start) as u64,
        };
        let (dtype, scalar_type) = dtype(info.dtype).ok_or_else(|| {
            Error::new(format!(
                "program.safetensors: tensor {key} has dtype {}, which this reader does not know",
                info.dtype
            ))
        })?;
        tensors.push(StoredTensor {
            key,
            dtype,
            scalar_type,
            shape: info.shape.iter().map(|&d| d as u64).collect(),
            span,
        });
    }
    Ok(Tensors {
        tensors,
        header_len: n as u64,
        metadata: meta
            .metadata()
            .as_ref()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
    })
}

/// The dtype code and the matching ExecuTorch element type. Types with no
/// ExecuTorch equivalent of whole bytes (4- and 6-bit floats) keep only
/// their code; their bytes are still served raw.
fn dtype(d: Dtype) -> Option<(&'static str, Option<ScalarType>)> {
    use ScalarType as S;
    Some(match d {
        Dtype::BOOL => ("BOOL", Some(S::BOOL)),
        Dtype::U8 => ("U8", Some(S::BYTE)),
        Dtype::I8 => ("I8", Some(S::CHAR)),
        Dtype::I16 => ("I16", Some(S::SHORT)),
        Dtype::U16 => ("U16", Some(S::UINT16)),
        Dtype::I32 => ("I32", Some(S::INT)),
        Dtype::U32 => ("U32", Some(S::UINT32)),
        Dtype::I64 => ("I64", Some(S::LONG)),
        Dtype::U64 => ("U64", Some(S::UINT64)),
        Dtype::F16 => ("F16", Some(S::HALF)),
        Dtype::BF16 => ("BF16", Some(S::BFLOAT16)),
        Dtype::F32 => ("F32", Some(S::FLOAT)),
        Dtype::F64 => ("F64", Some(S::DOUBLE)),
        Dtype::C64 => ("C64", Some(scalar::COMPLEX_FLOAT)),
        Dtype::F8_E5M2 => ("F8_E5M2", Some(S::FLOAT8E5M2)),
        Dtype::F8_E4M3 => ("F8_E4M3", Some(S::FLOAT8E4M3FN)),
        Dtype::F8_E8M0 => ("F8_E8M0", None),
        Dtype::F4 => ("F4", None),
        Dtype::F6_E2M3 => ("F6_E2M3", None),
        Dtype::F6_E3M2 => ("F6_E3M2", None),
        _ => return None,
    })
}
