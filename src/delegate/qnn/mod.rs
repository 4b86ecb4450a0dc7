//! Qualcomm AI Engine Direct context binaries (`QnnBackend`). The payload
//! is the runtime's custom protocol: a u32 magic `0x5678ABCD`, an i64
//! signature, a u64 context-binary size, zeros up to 256 bytes
//! (`QNN_CTX_BIN_ALIGNMENT`), then the context binary. A payload without
//! the magic is what the runtime first tries as a raw context binary
//! (pre-generated ones) and then prepares online as a DLC. The
//! `qnn_compile_spec` compile spec is a `QnnExecuTorchOptions` flatbuffer.

pub mod options;

use std::ops::Range;

use serde_json::{Value, json};

use crate::delegate::artifact::{Artifact, Specs, field, fits, hex, region, spec};
use crate::delegate::backend::backend_basics;
use crate::delegate::{Backend, Decoded, Lookup};
use crate::format::le::{i64_at, u32_at, u64_at};
use crate::format::{Error, Result};

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "QnnBackend";

/// The custom protocol's magic.
pub const MAGIC: u32 = 0x5678_ABCD;

/// Where the context binary starts (`QNN_CTX_BIN_ALIGNMENT`).
pub const ALIGNMENT: u64 = 256;

/// The compile spec holding the options.
pub const SPEC_KEY: &str = "qnn_compile_spec";

/// `QnnBackend`.
pub struct Qnn;

/// The custom-protocol fields, when the magic is there.
fn protocol(p: &[u8]) -> Option<(i64, u64)> {
    (u32_at(p, 0)? == MAGIC).then_some(())?;
    Some((i64_at(p, 4)?, u64_at(p, 12)?))
}

impl Backend for Qnn {
    backend_basics! {
        id: BACKEND_ID,
        folder: "qnn",
    }

    fn decode<'a>(
        &self,
        payload: &'a [u8],
        specs: Specs<'_, 'a>,
        _named: &dyn Lookup<'a>,
    ) -> Result<Box<dyn Decoded<'a> + 'a>> {
        let total = payload.len() as u64;
        if u32_at(payload, 0) == Some(MAGIC) && protocol(payload).is_none() {
            return Err(Error::new(format!(
                "QNN custom protocol: payload of {total} bytes has the magic but ends inside the 20 bytes of header fields"
            )));
        }
        let mut a = Artifact::new(BACKEND_ID);
        match protocol(payload) {
            Some((signature, size)) => {
                a.fact("form", "custom protocol");
                a.fact("signature", signature);
                a.fact("context_size", size);
                match fits("context binary", ALIGNMENT, size, total) {
                    Ok(()) => a.payload_file("context.bin", ALIGNMENT, size),
                    Err(e) => a.errors.push(e),
                }
                let pad = payload.get(20..256.min(payload.len())).unwrap_or_default();
                if pad.iter().any(|&b| b != 0) {
                    a.errors
                        .push("the padding between byte 20 and 256 is not all zeros".into());
                }
            }
            None => {
                a.fact("form", "raw context binary or DLC");
                a.payload_file("context.bin", 0, total);
            }
        }
        if let Some(v) = spec(specs, SPEC_KEY) {
            match options::decode(v) {
                Some(mut o) => {
                    for k in ["soc_info", "online_prepare", "profile_level"] {
                        if let Some(x) = o.get(k) {
                            a.fact(k, x.to_string());
                        }
                    }
                    if let Some(m) = o.as_object_mut() {
                        m.insert("raw_hex".into(), json!(hex(v)));
                    }
                    a.json("compile_specs.json", o);
                }
                None => {
                    a.json("compile_specs.json", json!({"raw_hex": hex(v)}));
                    a.errors.push(format!(
                        "compile spec {SPEC_KEY}: {} bytes that do not read as QnnExecuTorchOptions",
                        v.len()
                    ));
                }
            }
        }
        Ok(Box::new(a))
    }

    /// The custom-protocol header and its padding; never the context.
    fn fetch(&self, payload: &[u8], _have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        std::iter::once(0..ALIGNMENT.min(payload.len() as u64)).collect()
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let total = payload.len() as u64;
        if u32_at(payload, 0) == Some(MAGIC) && protocol(payload).is_none() {
            return None;
        }
        Some(match protocol(payload) {
            Some((signature, size)) => json!({
                "format": "QNN context custom protocol",
                "payload": region(at, 0, total),
                "magic": field(at, 0, format!("{MAGIC:#010x}")),
                "signature": field(at, 4, signature),
                "context_binary_size": field(at, 12, size),
                "padding": region(at, 20, ALIGNMENT.min(total).saturating_sub(20)),
                "alignment": ALIGNMENT,
                "context_binary": fits("", ALIGNMENT, size, total).is_ok().then(|| region(at, ALIGNMENT, size)),
                "trailing_bytes": total.saturating_sub(ALIGNMENT.saturating_add(size)),
            }),
            None => json!({
                "format": "no custom-protocol magic",
                "payload": region(at, 0, total),
                "first_word": u32_at(payload, 0).map(|w| format!("{w:#010x}")),
                "zip_archive": payload.starts_with(b"PK\x03\x04"),
                "context_binary": region(at, 0, total),
                "runtime_reads_it_as": "a raw context binary first (pre-generated, e.g. from AI Hub), then as a DLC prepared online",
            }),
        })
    }
}
