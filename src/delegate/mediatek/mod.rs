//! MediaTek NeuroPilot networks (`NeuropilotBackend`): a packed 13-byte
//! header `<BIII` (version, input count, output count, model size), then
//! the compiled model. With the `ExtractSharedBlobKey` compile spec the
//! weights several models share sit in named data under that key.

use std::ops::Range;

use serde_json::{Value, json};

use crate::delegate::artifact::{Artifact, Specs, field, fits, region, spec};
use crate::delegate::backend::backend_basics;
use crate::delegate::{Backend, Decoded, Lookup};
use crate::format::le::{u8_at, u32_at};
use crate::format::{Error, Result};

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "NeuropilotBackend";

/// Bytes of the header.
pub const HEADER_LEN: u64 = 13;

/// The header version the writer puts.
pub const VERSION: u8 = 1;

/// The compile spec naming the shared blob.
pub const SHARED_KEY_SPEC: &str = "ExtractSharedBlobKey";

/// `NeuropilotBackend`.
pub struct MediaTek;

struct Header {
    version: u8,
    inputs: u32,
    outputs: u32,
    model_size: u32,
}

fn header(payload: &[u8]) -> Option<Header> {
    Some(Header {
        version: u8_at(payload, 0)?,
        inputs: u32_at(payload, 1)?,
        outputs: u32_at(payload, 5)?,
        model_size: u32_at(payload, 9)?,
    })
}

fn shared_key<'a>(specs: Specs<'_, 'a>) -> Option<&'a str> {
    spec(specs, SHARED_KEY_SPEC).and_then(|v| std::str::from_utf8(v).ok())
}

impl Backend for MediaTek {
    backend_basics! {
        id: BACKEND_ID,
        folder: "mediatek",
    }

    fn decode<'a>(
        &self,
        payload: &'a [u8],
        specs: Specs<'_, 'a>,
        named: &dyn Lookup<'a>,
    ) -> Result<Box<dyn Decoded<'a> + 'a>> {
        let total = payload.len() as u64;
        let h = header(payload).ok_or_else(|| {
            Error::new(format!(
                "NeuroPilot header: payload is {total} bytes, the header needs {HEADER_LEN}"
            ))
        })?;
        let mut a = Artifact::new(BACKEND_ID);
        a.fact("version", h.version);
        a.fact("inputs", h.inputs);
        a.fact("outputs", h.outputs);
        a.fact("model_size", h.model_size);
        if h.version != VERSION {
            a.errors.push(format!(
                "header version {} is not {VERSION}, the only one the writer puts",
                h.version
            ));
        }
        let size = u64::from(h.model_size);
        match fits("model", HEADER_LEN, size, total) {
            Ok(()) => a.payload_file("model.bin", HEADER_LEN, size),
            Err(e) => a.errors.push(e),
        }
        if let Some(key) = shared_key(specs) {
            a.fact("shared_blob_key", key);
            a.named_entry("shared_weights.bin", key, named);
        }
        Ok(Box::new(a))
    }

    fn named_keys<'a>(&self, _payload: &'a [u8], specs: Specs<'_, 'a>) -> Result<Vec<&'a str>> {
        Ok(shared_key(specs).into_iter().collect())
    }

    /// The header; never the model.
    fn fetch(&self, payload: &[u8], _have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        std::iter::once(0..HEADER_LEN.min(payload.len() as u64)).collect()
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let h = header(payload)?;
        let total = payload.len() as u64;
        let size = u64::from(h.model_size);
        let rest = total - HEADER_LEN;
        Some(json!({
            "format": "NeuroPilot compiled network",
            "payload": region(at, 0, total),
            "header_size": HEADER_LEN,
            "version": field(at, 0, h.version),
            "input_count": field(at, 1, h.inputs),
            "output_count": field(at, 5, h.outputs),
            "model_size": field(at, 9, h.model_size),
            "model": (size <= rest).then(|| region(at, HEADER_LEN, size)),
            "bytes_after_header": rest,
            "trailing_bytes": rest.saturating_sub(size),
        }))
    }
}
