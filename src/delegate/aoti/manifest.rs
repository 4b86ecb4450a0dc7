//! CUDA's weight manifest (`ETCUDAFQN3`, written by ExecuTorch's
//! `encode_cuda_weight_metadata`): the magic, the library's key, a u32
//! count, then per weight its FQN and storage key (u32-length-prefixed
//! UTF-8), `<QiiqI` (storage bytes, dtype, device type, storage offset,
//! number of dimensions), and that many i64 sizes and i64 strides.

use serde_json::{Value, json};

use crate::delegate::artifact::{field, region};
use crate::format::le::{i32_at, i64_at, slice, u32_at, u64_at};
use crate::format::{Error, Result};

/// A read manifest.
#[derive(Debug)]
pub struct Manifest<'a> {
    /// The version digit after `ETCUDAFQN`.
    pub version: u8,
    /// The library's key.
    pub so_key: &'a str,
    /// The weights.
    pub entries: Vec<Entry<'a>>,
    /// Where each field is, for `header.json`.
    pub fields: Vec<Value>,
}

/// One weight.
#[derive(Debug)]
pub struct Entry<'a> {
    /// Its fully qualified name.
    pub fqn: &'a str,
    /// The named-data key of its storage.
    pub storage_key: &'a str,
    /// Bytes of the storage.
    pub nbytes: u64,
    /// `c10::ScalarType` code.
    pub dtype: i32,
    /// AOTI device type (0 CPU, 1 CUDA).
    pub device: i32,
    /// Offset in elements into the storage.
    pub storage_offset: i64,
    /// Sizes.
    pub sizes: Vec<i64>,
    /// Strides.
    pub strides: Vec<i64>,
}

struct Cursor<'a> {
    b: &'a [u8],
    at: u64,
}

impl<'a> Cursor<'a> {
    fn fail(&self, what: &str) -> Error {
        Error::new(format!(
            "ETCUDAFQN manifest: {what} at payload offset {} runs past the payload's {} bytes",
            self.at,
            self.b.len()
        ))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let v = u32_at(self.b, self.at).ok_or_else(|| self.fail(what))?;
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self, what: &str) -> Result<&'a str> {
        let len = u64::from(self.u32(what)?);
        let s = slice(self.b, self.at, len).ok_or_else(|| self.fail(what))?;
        let s = std::str::from_utf8(s)
            .map_err(|e| Error::new(format!("ETCUDAFQN manifest: {what} is not UTF-8: {e}")))?;
        self.at += len;
        Ok(s)
    }
}

/// Reads a manifest.
pub fn read(b: &[u8]) -> Result<Manifest<'_>> {
    let magic_len = super::MANIFEST_MAGIC.len() as u64 + 1;
    let version = b
        .get(super::MANIFEST_MAGIC.len())
        .copied()
        .ok_or_else(|| Error::new("ETCUDAFQN manifest: no version digit after the magic"))?;
    if version != b'3' {
        return Err(Error::new(format!(
            "ETCUDAFQN manifest: version {:?} is not 3, the one ExecuTorch 1.5.1 writes",
            char::from(version)
        )));
    }
    let mut c = Cursor { b, at: magic_len };
    let mut fields = vec![json!({"field": "magic", "at": 0, "value": "ETCUDAFQN3"})];
    let at = c.at;
    let so_key = c.string("the library's key")?;
    fields.push(json!({"field": "so_blob_key", "at": at, "value": so_key}));
    let at = c.at;
    let count = c.u32("the weight count")?;
    fields.push(json!({"field": "count", "at": at, "value": count}));
    let mut entries = Vec::new();
    for i in 0..count {
        let start = c.at;
        let fqn = c.string("an FQN")?;
        let storage_key = c.string("a storage key")?;
        let fixed = c.at;
        let (Some(nbytes), Some(dtype), Some(device), Some(offset), Some(ndim)) = (
            u64_at(b, fixed),
            i32_at(b, fixed + 8),
            i32_at(b, fixed + 12),
            i64_at(b, fixed + 16),
            u32_at(b, fixed + 24),
        ) else {
            return Err(c.fail(&format!("weight {i}'s fields")));
        };
        c.at = fixed + 28;
        let dims = u64::from(ndim);
        let all = slice(b, c.at, dims * 16)
            .ok_or_else(|| c.fail(&format!("weight {i}'s sizes and strides")))?;
        // In `all`: it holds `dims` sizes and as many strides.
        let read = |k: u64| i64_at(all, 8 * k).unwrap_or(0);
        let sizes: Vec<i64> = (0..dims).map(read).collect();
        let strides: Vec<i64> = (dims..2 * dims).map(read).collect();
        c.at += dims * 16;
        fields.push(json!({
            "field": "weight", "index": i, "at": start,
            "fqn": fqn, "storage_key": storage_key,
            "storage_nbytes_at": fixed, "storage_nbytes": nbytes,
            "dtype_at": fixed + 8, "dtype": dtype,
            "device_type_at": fixed + 12, "device_type": device,
            "storage_offset_at": fixed + 16, "storage_offset": offset,
            "ndim_at": fixed + 24, "ndim": ndim,
            "sizes_at": fixed + 28, "sizes": sizes,
            "strides_at": fixed + 28 + dims * 8, "strides": strides,
        }));
        entries.push(Entry {
            fqn,
            storage_key,
            nbytes,
            dtype,
            device,
            storage_offset: offset,
            sizes,
            strides,
        });
    }
    if c.at != b.len() as u64 {
        return Err(Error::new(format!(
            "ETCUDAFQN manifest: {} bytes after the last weight at payload offset {}",
            b.len() as u64 - c.at,
            c.at
        )));
    }
    Ok(Manifest {
        version: 3,
        so_key,
        entries,
        fields,
    })
}

/// `header.json` of a manifest: each field with its file offset.
pub fn header(m: &Manifest<'_>, at: u64, total: u64) -> Value {
    let shift = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            for (k, x) in o.iter_mut() {
                if let (true, Some(n)) = (k == "at" || k.ends_with("_at"), x.as_u64()) {
                    *x = json!(n + at);
                }
            }
        }
        v
    };
    json!({
        "format": format!("ETCUDAFQN{} weight manifest", m.version),
        "payload": region(at, 0, total),
        "magic": field(at, 0, "ETCUDAFQN3"),
        "so_blob_key": m.so_key,
        "weights": m.entries.len(),
        "fields": m.fields.iter().map(shift).collect::<Vec<_>>(),
    })
}

/// Type name, NumPy descr and item size of a `c10::ScalarType` code.
pub fn dtype(code: i32) -> (&'static str, Option<&'static str>, u64) {
    match code {
        0 => ("uint8", Some("|u1"), 1),
        1 => ("int8", Some("|i1"), 1),
        2 => ("int16", Some("<i2"), 2),
        3 => ("int32", Some("<i4"), 4),
        4 => ("int64", Some("<i8"), 8),
        5 => ("float16", Some("<f2"), 2),
        6 => ("float32", Some("<f4"), 4),
        7 => ("float64", Some("<f8"), 8),
        11 => ("bool", Some("|b1"), 1),
        15 => ("bfloat16", None, 2),
        _ => ("unknown", None, 1),
    }
}

/// The device type's name.
pub fn device(code: i32) -> Value {
    match code {
        0 => json!("cpu"),
        1 => json!("cuda"),
        n => json!(n),
    }
}
