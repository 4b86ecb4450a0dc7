//! Checkpoint names (`--names`): which tensors of a program hold the bytes
//! of which checkpoint keys.
//!
//! A checkpoint is a safetensors file or a JSON map from name to the
//! SHA-256 of the tensor's bytes (a hex string, or an object with a
//! `sha256` field, as `state_dicts.json` records them). A key matches a
//! tensor whose stored bytes have the same digest; several keys may share
//! one tensor (tied weights, equal buffers).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use sha2::{Digest, Sha256};

/// A SHA-256 digest.
pub type Digest32 = [u8; 32];

/// The keys of a checkpoint with the digests of their bytes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Key → digest, in key order.
    pub keys: BTreeMap<String, Digest32>,
    /// Key → the sizes and element size of 4-d fp32/fp16 tensors, whose
    /// bytes XNNPACK may store permuted (OIHW as OHWI).
    pub filters: BTreeMap<String, ([usize; 4], usize)>,
    /// Key → bytes and shape, where the checkpoint holds the tensor
    /// itself (safetensors): what a new value under that name must fill.
    pub sizes: BTreeMap<String, (u64, Vec<u64>)>,
}

/// Sizes and element size of a 4-d fp32 or fp16 tensor.
fn filter(dtype: &str, shape: &[usize]) -> Option<([usize; 4], usize)> {
    let elem = match dtype {
        "F32" | "float32" => 4,
        "F16" | "float16" => 2,
        _ => return None,
    };
    Some((shape.try_into().ok()?, elem))
}

/// A checkpoint that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum NamesError {
    /// Neither safetensors nor a JSON object.
    #[error("neither a safetensors file ({safetensors}) nor a JSON map of name to sha256 ({json})")]
    Unreadable {
        /// What the safetensors reader said.
        safetensors: String,
        /// What the JSON reader said.
        json: String,
    },
    /// A JSON entry without a usable digest.
    #[error("key {key:?}: {why}")]
    BadEntry {
        /// The key.
        key: String,
        /// What is wrong.
        why: String,
    },
}

/// The digest of `bytes`.
pub fn digest(bytes: &[u8]) -> Digest32 {
    Sha256::digest(bytes).into()
}

fn parse_hex(s: &str) -> Option<Digest32> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl Checkpoint {
    /// Reads a checkpoint from its bytes: safetensors, else JSON.
    pub fn parse(bytes: &[u8]) -> Result<Checkpoint, NamesError> {
        let st = match safetensors::SafeTensors::deserialize(bytes) {
            Ok(st) => {
                let mut c = Checkpoint::default();
                for (name, view) in st.tensors() {
                    if let Some(f) = filter(&format!("{:?}", view.dtype()), view.shape()) {
                        c.filters.insert(name.clone(), f);
                    }
                    let shape = view.shape().iter().map(|&d| d as u64).collect();
                    c.sizes
                        .insert(name.clone(), (view.data().len() as u64, shape));
                    c.keys.insert(name, digest(view.data()));
                }
                return Ok(c);
            }
            Err(e) => e.to_string(),
        };
        let map: serde_json::Map<String, Value> = match serde_json::from_slice(bytes) {
            Ok(m) => m,
            Err(e) => {
                return Err(NamesError::Unreadable {
                    safetensors: st,
                    json: e.to_string(),
                });
            }
        };
        let mut c = Checkpoint::default();
        for (key, v) in map {
            let shape: Option<Vec<usize>> = v
                .get("shape")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(|d| d.as_u64().map(|d| d as usize)).collect());
            let dtype = v.get("dtype").and_then(Value::as_str);
            if let Some(f) = shape.zip(dtype).and_then(|(s, d)| filter(d, &s)) {
                c.filters.insert(key.clone(), f);
            }
            let hex = v
                .as_str()
                .or_else(|| v.get("sha256").and_then(Value::as_str));
            let Some(d) = hex.and_then(parse_hex) else {
                return Err(NamesError::BadEntry {
                    key,
                    why: "expected 64 hex digits of SHA-256, or an object with \"sha256\"".into(),
                });
            };
            c.keys.insert(key, d);
        }
        Ok(c)
    }

    /// The 4-d fp32/fp16 keys whose bytes, stored OHWI, would be `bytes`:
    /// XNNPACK's layout of a convolution filter.
    pub fn permuted_matches(&self, bytes: &[u8]) -> Vec<&str> {
        let mut out = Vec::new();
        for (key, &(oihw, elem)) in &self.filters {
            let back = ohwi_to_oihw(bytes, oihw, elem);
            if back.is_some_and(|b| Some(&digest(&b)) == self.keys.get(key)) {
                out.push(key.as_str());
            }
        }
        out
    }

    /// The keys whose bytes have the sha256 `hex` (64 hex digits, as
    /// XNNPACK names the blobs it keeps in a data file).
    pub fn named_by_digest(&self, hex: &str) -> Vec<&str> {
        let Some(d) = parse_hex(hex) else {
            return Vec::new();
        };
        (self.keys.iter())
            .filter(|(_, k)| **k == d)
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Digest → keys.
    pub fn index(&self) -> HashMap<Digest32, Vec<&str>> {
        let mut by: HashMap<Digest32, Vec<&str>> = HashMap::new();
        for (k, d) in &self.keys {
            by.entry(*d).or_default().push(k);
        }
        by
    }
}

/// How many keys of a checkpoint found their bytes in a program.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MatchReport {
    /// Keys in the checkpoint.
    pub keys: usize,
    /// Keys whose bytes a tensor holds.
    pub matched: usize,
    /// Keys that found no tensor, in key order.
    pub unmatched: Vec<String>,
}

/// Which keys of `checkpoint` are among `digests` (of the program's
/// tensors, however they were laid out).
pub fn report<'d>(
    checkpoint: &Checkpoint,
    digests: impl IntoIterator<Item = &'d Digest32>,
) -> MatchReport {
    let have: std::collections::HashSet<&Digest32> = digests.into_iter().collect();
    let unmatched: Vec<String> = checkpoint
        .keys
        .iter()
        .filter(|(_, d)| !have.contains(d))
        .map(|(k, _)| k.clone())
        .collect();
    MatchReport {
        keys: checkpoint.keys.len(),
        matched: checkpoint.keys.len() - unmatched.len(),
        unmatched,
    }
}

/// `bytes` of a 4-d tensor of `elem`-byte elements in PyTorch's OIHW
/// order (sizes `oihw`), laid out OHWI as XNNPACK stores a convolution
/// filter: the inverse of [`ohwi_to_oihw`]. `None` when the sizes do not
/// fit.
pub fn oihw_to_ohwi(bytes: &[u8], oihw: [usize; 4], elem: usize) -> Option<Vec<u8>> {
    permute_filter(bytes, oihw, elem, |oihw, ohwi| (oihw, ohwi))
}

/// `bytes` of a 4-d tensor of `elem`-byte elements stored OHWI, put back
/// in the OIHW order PyTorch keeps a convolution weight in (XNNPACK packs
/// fp32/fp16 convolution weights OHWI). `None` when the sizes do not fit.
pub fn ohwi_to_oihw(bytes: &[u8], oihw: [usize; 4], elem: usize) -> Option<Vec<u8>> {
    permute_filter(bytes, oihw, elem, |oihw, ohwi| (ohwi, oihw))
}

/// Copies each element of a filter of sizes `oihw` between its OIHW and
/// OHWI places; `from_to` picks which of the two (in that order) is read
/// and which written.
fn permute_filter(
    bytes: &[u8],
    oihw: [usize; 4],
    elem: usize,
    from_to: fn(usize, usize) -> (usize, usize),
) -> Option<Vec<u8>> {
    let [o, i, h, w] = oihw;
    let n = o
        .checked_mul(i)?
        .checked_mul(h)?
        .checked_mul(w)?
        .checked_mul(elem)?;
    if n != bytes.len() {
        return None;
    }
    let mut out = vec![0u8; n];
    for oo in 0..o {
        for ii in 0..i {
            for hh in 0..h {
                for ww in 0..w {
                    let at_oihw = (((oo * i + ii) * h + hh) * w + ww) * elem;
                    let at_ohwi = (((oo * h + hh) * w + ww) * i + ii) * elem;
                    let (src, dst) = from_to(at_oihw, at_ohwi);
                    out[dst..dst + elem].copy_from_slice(&bytes[src..src + elem]);
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_goes_to_ohwi_and_back() {
        // O=2, I=3, H=1, W=2 of one-byte elements, each its OIHW index.
        let oihw: Vec<u8> = (0..12).collect();
        let ohwi = oihw_to_ohwi(&oihw, [2, 3, 1, 2], 1).unwrap();
        // OHWI element (o, h, w, i) is OIHW element (o, i, h, w).
        assert_eq!(ohwi, [0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11]);
        assert_eq!(ohwi_to_oihw(&ohwi, [2, 3, 1, 2], 1).unwrap(), oihw);
        let wide: Vec<u8> = (0..48).collect();
        let back = ohwi_to_oihw(
            &oihw_to_ohwi(&wide, [2, 3, 1, 2], 4).unwrap(),
            [2, 3, 1, 2],
            4,
        );
        assert_eq!(back.unwrap(), wide);
        assert!(oihw_to_ohwi(&oihw, [2, 3, 2, 2], 1).is_none());
        assert!(oihw_to_ohwi(&oihw, [usize::MAX, 3, 2, 2], 1).is_none());
    }
}
