//! AOTInductor libraries (`CudaBackend`, `MetalBackend`, and the shared
//! `AotiBackend` base): the payload only names named-data entries holding
//! a shared library and its weights, in one of three forms:
//! text `<so key>\n<weights key>`; CUDA's `ETCUDAFQN3` manifest (the
//! library's key, then per weight its FQN, storage key, byte count, dtype,
//! device, storage offset, sizes and strides, each weight its own entry);
//! or nothing, when the runtime takes `<method>_so_blob` and
//! `<method>_weights_blob` (`method` from the `method_name` compile spec).

mod manifest;

use serde_json::{Map, Value, json};

pub use manifest::{Entry, Manifest};

use crate::delegate::artifact::{Artifact, Named, Specs, field, intern, region, spec};
use crate::delegate::strided::Strided;
use crate::delegate::{Backend, Bytes, Decoded, Lookup};
use crate::format::{Error, Result, Span};

/// An AOTInductor backend id.
pub struct Aoti {
    id: &'static str,
}

impl Aoti {
    /// `CudaBackend`.
    pub const CUDA: Aoti = Aoti { id: "CudaBackend" };
    /// `MetalBackend`.
    pub const METAL: Aoti = Aoti { id: "MetalBackend" };
    /// `AotiBackend`, the Python base class's name.
    pub const BASE: Aoti = Aoti { id: "AotiBackend" };
}

/// The manifest magic's stem; the digit after it is its version.
pub const MANIFEST_MAGIC: &[u8] = b"ETCUDAFQN";

/// What a payload says, keys resolved.
enum Form<'a> {
    Text {
        so: &'a str,
        weights: &'a str,
    },
    Empty {
        so: &'static str,
        weights: &'static str,
        method: Option<&'a str>,
    },
    Manifest(Manifest<'a>),
}

fn method_name<'a>(specs: Specs<'_, 'a>) -> Option<&'a str> {
    spec(specs, "method_name").and_then(|v| std::str::from_utf8(v).ok())
}

fn form<'a>(payload: &'a [u8], specs: Specs<'_, 'a>) -> Result<Form<'a>> {
    if payload.is_empty() {
        let method = method_name(specs).filter(|m| !m.is_empty());
        let key = |s: &str| intern(method.map_or_else(|| s.to_owned(), |m| format!("{m}_{s}")));
        return Ok(Form::Empty {
            so: key("so_blob"),
            weights: key("weights_blob"),
            method,
        });
    }
    if payload.starts_with(MANIFEST_MAGIC) {
        return manifest::read(payload).map(Form::Manifest);
    }
    let text = std::str::from_utf8(payload)
        .map_err(|e| Error::new(format!("AOTInductor keys: payload is not UTF-8 text: {e}")))?;
    let (so, weights) = text.split_once('\n').ok_or_else(|| {
        Error::new("AOTInductor keys: no newline between the library's key and the weights' key (the runtime refuses this)")
    })?;
    Ok(Form::Text { so, weights })
}

impl Backend for Aoti {
    fn id(&self) -> &'static str {
        self.id
    }

    fn folder(&self) -> &'static str {
        "aoti"
    }

    fn decode<'a>(
        &self,
        payload: &'a [u8],
        specs: Specs<'_, 'a>,
        named: &dyn Lookup<'a>,
    ) -> Result<Box<dyn Decoded<'a> + 'a>> {
        let mut a = Artifact::new(self.id);
        let so = match form(payload, specs)? {
            Form::Text { so, weights } => {
                a.fact("form", "keys");
                a.named_entry("weights.bin", weights, named);
                so
            }
            Form::Empty {
                so,
                weights,
                method,
            } => {
                a.fact("form", "empty payload, keys by method name");
                a.fact("method_name", method.unwrap_or("(none)"));
                a.named_entry("weights.bin", weights, named);
                so
            }
            Form::Manifest(m) => {
                a.fact("form", format!("ETCUDAFQN{} manifest", m.version));
                a.fact("weights", m.entries.len());
                for e in &m.entries {
                    a.weights.push(weight(e, named));
                }
                let stored: u64 = a
                    .weights
                    .iter()
                    .filter_map(|w| w.bytes.as_ref().ok())
                    .map(|b| b.len())
                    .sum();
                a.sizes.insert("weights/".to_owned(), stored);
                m.so_key
            }
        };
        a.fact("so_key", so);
        if a.named_entry("model.so", so, named) {
            let lib = named.bytes(so).unwrap_or_default();
            a.lazy.push(("symbols.txt".to_owned(), lib, symbols));
        }
        Ok(Box::new(a))
    }

    fn named_keys<'a>(&self, payload: &'a [u8], specs: Specs<'_, 'a>) -> Result<Vec<&'a str>> {
        Ok(match form(payload, specs)? {
            Form::Text { so, weights } => vec![so, weights],
            Form::Empty { so, weights, .. } => vec![so, weights],
            Form::Manifest(m) => {
                let mut keys = vec![m.so_key];
                for e in &m.entries {
                    if !keys.contains(&e.storage_key) {
                        keys.push(e.storage_key);
                    }
                }
                keys
            }
        })
    }

    /// The library, whose dynamic symbols `symbols.txt` lists.
    fn reads_named<'a>(&self, payload: &'a [u8], specs: Specs<'_, 'a>) -> Vec<&'a str> {
        match form(payload, specs) {
            Ok(Form::Text { so, .. }) => vec![so],
            Ok(Form::Empty { so, .. }) => vec![so],
            Ok(Form::Manifest(m)) => vec![m.so_key],
            Err(_) => Vec::new(),
        }
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let total = payload.len() as u64;
        Some(match form(payload, &[]) {
            Ok(Form::Text { so, weights }) => json!({
                "format": "AOTInductor keys (text)",
                "payload": region(at, 0, total),
                "so_blob_key": field(at, 0, so),
                "weights_blob_key": field(at, so.len() as u64 + 1, weights),
            }),
            Ok(Form::Empty { .. }) => json!({
                "format": "empty payload: the runtime takes <method_name>_so_blob and <method_name>_weights_blob",
                "payload": region(at, 0, total),
            }),
            Ok(Form::Manifest(m)) => manifest::header(&m, at, total),
            Err(e) => json!({
                "format": "unreadable",
                "payload": region(at, 0, total),
                "error": e.to_string(),
            }),
        })
    }
}

/// One CUDA weight: the bytes of the tensor, which may be a view into a
/// larger storage entry. A contiguous view is its byte range of the
/// storage; any other is gathered when read. A NumPy view goes with
/// either when its dtype is known.
fn weight<'a>(e: &Entry<'a>, named: &dyn Lookup<'a>) -> Named<'a> {
    let (dtype, descr, item) = manifest::dtype(e.dtype);
    let known = descr.is_some() || e.dtype == 15;
    let mut view = None;
    let bytes = match named.len(e.storage_key) {
        None => Err(format!(
            "named-data key {:?} is in no attached data",
            e.storage_key
        )),
        Some(len) if len != e.nbytes => Err(format!(
            "the manifest says {} bytes, entry {:?} holds {len}",
            e.nbytes, e.storage_key
        )),
        Some(len) => match Strided::new(item, e.storage_offset, &e.sizes, &e.strides, len) {
            Err(why) => Err(format!("entry {:?}: {why}", e.storage_key)),
            // Without an element size only the whole storage can be shown.
            Ok(v) if !known && (v.offset != 0 || !v.is_contiguous()) => Err(format!(
                "dtype code {} has no known element size, so its view of entry {:?} cannot be cut out",
                e.dtype, e.storage_key
            )),
            Ok(_) if !known => Ok(Bytes::named(e.storage_key, len)),
            Ok(v) => match v.range().filter(|_| v.is_contiguous()) {
                Some((offset, len)) => Ok(Bytes::Named {
                    key: e.storage_key,
                    span: Span { offset, len },
                }),
                None => {
                    view = Some(v);
                    Ok(Bytes::named(e.storage_key, len))
                }
            },
        },
    };
    let numel = e.sizes.iter().try_fold(1u64, |n, &d| {
        u64::try_from(d).ok().and_then(|d| n.checked_mul(d))
    });
    let mut entry = Map::new();
    entry.insert("fqn".into(), json!(e.fqn));
    entry.insert("storage_key".into(), json!(e.storage_key));
    entry.insert("storage_nbytes".into(), json!(e.nbytes));
    entry.insert("dtype".into(), json!(dtype));
    entry.insert("dtype_code".into(), json!(e.dtype));
    entry.insert("device".into(), json!(manifest::device(e.device)));
    entry.insert("storage_offset".into(), json!(e.storage_offset));
    entry.insert("sizes".into(), json!(e.sizes));
    entry.insert("strides".into(), json!(e.strides));
    if view.is_some() {
        entry.insert("gathered".into(), json!(true));
    }
    let widen = e.dtype == 15;
    Named {
        stem: e.fqn.to_owned(),
        bytes,
        dtype,
        dims: e.sizes.clone(),
        // bfloat16 is widened as it is read from one range; a gathered
        // view has no such file.
        descr: descr.or((widen && view.is_none()).then_some("<f4")),
        npy_bytes: numel.and_then(|n| n.checked_mul(item)).unwrap_or(u64::MAX),
        widen,
        entry,
        view,
    }
}

/// The dynamic symbols a shared library exports and imports, one a line:
/// `T name` for defined, `U name` for undefined; or why there are none.
fn symbols(lib: &[u8]) -> String {
    use object::{Object, ObjectSymbol};
    let file = match object::File::parse(lib) {
        Ok(f) => f,
        Err(e) => return format!("cannot read model.so as an object file: {e}\n"),
    };
    let mut lines: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| !s.name().unwrap_or("").is_empty())
        .map(|s| {
            let kind = if s.is_undefined() { 'U' } else { 'T' };
            format!("{kind} {}", s.name().unwrap_or("?"))
        })
        .collect();
    lines.sort();
    lines.dedup();
    let mut out = lines.join("\n");
    out.push('\n');
    out
}
