//! What the vendor-binary backends (QNN, TensorRT, AOTInductor, MediaTek,
//! NXP) share: a payload that is a small header around an artifact only
//! the vendor's runtime runs. Each backend reads its header into an
//! [`Artifact`]: the files its folder shows (byte ranges of the payload or
//! of named data, never copies), the sizes and header fields `inspect`
//! prints, and what the runtime would refuse. Reads here are bounds
//! checked and offsets added without wrapping, so hostile bytes give
//! errors, never a read past the payload.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::folder::{File, Layout, Paths, Weight, Weights};
use super::{Bytes, Decoded, Rendered, Summary, WeightName};
use crate::format::Span;

/// A decoded vendor payload.
#[derive(Debug, Default)]
pub struct Artifact<'a> {
    /// The backend id.
    pub backend: &'static str,
    /// The files of its folder beside `header.json`.
    pub files: Vec<File<'a>>,
    /// Weights named by the payload, with what their `index.json` entry
    /// says (AOTInductor's CUDA form).
    pub weights: Vec<Named<'a>>,
    /// What is wrong, shown in `ERROR.txt` beside what could be read.
    pub errors: Vec<String>,
    /// Bytes of each artifact file, for `inspect` and `diff`.
    pub sizes: BTreeMap<String, u64>,
    /// Key header fields, for `inspect` and `diff`.
    pub facts: Vec<(String, String)>,
    /// The named-data keys the payload refers to, found or not
    /// (`keys.json` when there are any).
    pub keys: Vec<Value>,
    /// Files rendered when first read, from bytes the payload refers to
    /// (a remote source fetches them only then): path, bytes, renderer.
    pub lazy: Vec<(String, &'a [u8], Render)>,
}

/// Renders a lazily made file from the bytes it reads.
pub type Render = fn(&[u8]) -> String;

/// A weight the payload names, kept in a form the layout is made from.
#[derive(Debug, Clone)]
pub struct Named<'a> {
    /// File stem.
    pub stem: String,
    /// Where the bytes are, or why they cannot be shown.
    pub bytes: Result<Bytes<'a>, String>,
    /// Type name.
    pub dtype: &'static str,
    /// Dimensions.
    pub dims: Vec<i64>,
    /// NumPy descr, when NumPy can view the bytes.
    pub descr: Option<&'static str>,
    /// Bytes the NumPy view needs.
    pub npy_bytes: u64,
    /// True when the stored values are bfloat16, widened to float32 in
    /// the `.npy`.
    pub widen: bool,
    /// The backend's fields of the `index.json` entry.
    pub entry: serde_json::Map<String, Value>,
    /// A strided view into `bytes` that is not one range of it.
    pub view: Option<super::strided::Strided>,
}

fn clone_file<'a>(f: &File<'a>) -> File<'a> {
    match f {
        File::Bytes { path, bytes } => File::Bytes {
            path: path.clone(),
            bytes: *bytes,
        },
        File::Json { path, value } => File::Json {
            path: path.clone(),
            value: value.clone(),
        },
        File::Text { path, text } => File::Text {
            path: path.clone(),
            text: text.clone(),
        },
        File::Rendered { path } => File::Rendered { path: path.clone() },
    }
}

impl<'a> Artifact<'a> {
    /// An empty artifact of backend `backend`.
    pub fn new(backend: &'static str) -> Self {
        Artifact {
            backend,
            ..Artifact::default()
        }
    }

    /// Adds file `path`, `len` bytes at `offset` of the payload, counted as
    /// an artifact of that size.
    pub fn payload_file(&mut self, path: &str, offset: u64, len: u64) {
        self.sizes.insert(path.to_owned(), len);
        self.files.push(File::Bytes {
            path: path.to_owned(),
            bytes: Bytes::Payload(Span { offset, len }),
        });
    }

    /// Adds file `path`, the whole named-data entry `key` of `len` bytes.
    pub fn named_file(&mut self, path: &str, key: &'a str, len: u64) {
        self.sizes.insert(path.to_owned(), len);
        self.files.push(File::Bytes {
            path: path.to_owned(),
            bytes: Bytes::named(key, len),
        });
    }

    /// Adds file `path`, the named-data entry `key` when `named` has it;
    /// else the file is listed as missing (the tree warns), and `keys`
    /// says so. Returns whether the key resolved.
    pub fn named_entry(&mut self, path: &str, key: &'a str, named: &dyn super::Lookup<'a>) -> bool {
        let len = named.len(key);
        self.keys
            .push(json!({"file": path, "key": key, "found": len.is_some(), "size": len}));
        match len {
            Some(len) => self.named_file(path, key, len),
            None => self.files.push(File::Bytes {
                path: path.to_owned(),
                bytes: Bytes::named(key, 0),
            }),
        }
        len.is_some()
    }

    /// Adds JSON file `path`.
    pub fn json(&mut self, path: &str, value: Value) {
        self.files.push(File::Json {
            path: path.to_owned(),
            value,
        });
    }

    /// Adds text file `path`.
    pub fn text(&mut self, path: &str, text: String) {
        self.files.push(File::Text {
            path: path.to_owned(),
            text,
        });
    }

    /// Records a header field for `inspect`.
    pub fn fact(&mut self, key: &str, value: impl ToString) {
        self.facts.push((key.to_owned(), value.to_string()));
    }
}

impl<'a> Decoded<'a> for Artifact<'a> {
    fn summary(&self) -> Summary {
        Summary {
            backend: self.backend.to_owned(),
            constant_bytes: self.sizes.clone(),
            ..Summary::default()
        }
    }

    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)> {
        self.weights
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let name = WeightName {
                    name: w.stem.clone(),
                    layer: None,
                    role: "weight".to_owned(),
                    value_id: u32::try_from(i).unwrap_or(u32::MAX),
                    datatype: w.dtype.to_owned(),
                    dims: w
                        .dims
                        .iter()
                        .map(|&d| u32::try_from(d).unwrap_or(u32::MAX))
                        .collect(),
                    key: w
                        .bytes
                        .as_ref()
                        .ok()
                        .and_then(|b| b.key())
                        .map(str::to_owned),
                };
                (name, w.bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        let weights = (!self.weights.is_empty()).then(|| Weights {
            lacking: "weights lack files for their bytes",
            items: self
                .weights
                .iter()
                .enumerate()
                .map(|(i, w)| Weight {
                    stem: w.stem.clone(),
                    bytes: w.bytes.clone(),
                    dtype: w.dtype,
                    dims: w.dims.clone(),
                    npy: w.descr.map(|descr| super::folder::Npy {
                        descr,
                        shape: w.dims.iter().map(|&d| d.max(0) as u64).collect(),
                        nbytes: w.npy_bytes,
                        widen: w.widen,
                    }),
                    id: u32::try_from(i).unwrap_or(u32::MAX),
                    value: Some(i),
                    entry: super::folder::Fields::new(|put| {
                        w.entry.iter().for_each(|(k, v)| put(k, v.clone()))
                    }),
                    parts: Vec::new(),
                    view: w.view.clone(),
                })
                .collect(),
        });
        let mut files: Vec<File<'a>> = self.files.iter().map(clone_file).collect();
        for (path, _, _) in &self.lazy {
            files.push(File::Rendered { path: path.clone() });
        }
        if !self.keys.is_empty() {
            files.push(File::Json {
                path: "keys.json".into(),
                value: Value::Array(self.keys.clone()),
            });
        }
        Layout {
            files,
            weights,
            errors: self.errors.clone(),
        }
    }

    fn render<'r>(&'r self, path: &str, _paths: &'r Paths) -> Rendered<'r> {
        self.lazy
            .iter()
            .find(|(p, _, _)| p == path)
            .map_or(Rendered::None, |(_, bytes, f)| Rendered::text(f(bytes)))
    }

    fn facts(&self) -> Vec<(String, String)> {
        self.facts.clone()
    }
}

/// A header field in `header.json`: its file offset and value.
pub fn field(at: u64, offset: u64, value: impl Into<Value>) -> Value {
    json!({"at": at.saturating_add(offset), "value": value.into()})
}

/// A region in `header.json`: file offset and size.
pub fn region(at: u64, offset: u64, len: u64) -> Value {
    json!({"offset": at.saturating_add(offset), "size": len})
}

/// Bytes as lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether `len` bytes at `offset` fit in `total`, said as an error
/// naming `what` when they do not (offsets that wrap included).
pub fn fits(what: &str, offset: u64, len: u64, total: u64) -> Result<(), String> {
    match offset.checked_add(len) {
        Some(end) if end <= total => Ok(()),
        Some(end) => Err(format!(
            "{what}: {len} bytes at payload offset {offset} end at {end}, past the payload's {total} bytes"
        )),
        None => Err(format!(
            "{what}: {len} bytes at payload offset {offset} wrap past 2^64"
        )),
    }
}

/// Interns `s` for the life of the process: keys a payload does not hold
/// itself (AOTInductor's method-name keys) yet must be borrowed like the
/// ones it does. Each distinct key is kept once.
pub fn intern(s: String) -> &'static str {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static KEYS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut keys = KEYS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let keys = keys.get_or_insert_with(HashSet::new);
    if let Some(k) = keys.get(s.as_str()) {
        return k;
    }
    let k: &'static str = Box::leak(s.into_boxed_str());
    keys.insert(k);
    k
}

/// Compile specs as the seam hands them: key and value bytes.
pub type Specs<'s, 'a> = &'s [(&'a str, &'a [u8])];

/// The value of compile spec `key`.
pub fn spec<'a>(specs: Specs<'_, 'a>, key: &str) -> Option<&'a [u8]> {
    specs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_do_not_wrap() {
        assert!(fits("x", 1, 4, 5).is_ok());
        assert!(fits("x", 2, 4, 5).unwrap_err().contains("end at 6"));
        assert!(fits("x", 8, u64::MAX, 5).unwrap_err().contains("wrap"));
    }

    #[test]
    fn interned_keys_are_kept_once() {
        let a = intern("m_so_blob".to_owned());
        let b = intern(String::from("m_so_blob"));
        assert!(std::ptr::eq(a, b));
    }
}
