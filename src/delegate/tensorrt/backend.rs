//! `tensorrt/` in a TensorRT delegate's directory: `header.json`,
//! `metadata.json` and `engine.plan`, each a byte range of the payload.

use std::ops::Range;

use serde_json::{Value, json};

use super::{BACKEND_ID, HEADER_LEN, header};
use crate::delegate::Backend;
use crate::delegate::artifact::{Artifact, field, fits, hex, region};
use crate::delegate::backend::backend_basics;
use crate::format::le::slice;
use crate::format::{Error, Result};

/// `TensorRTBackend`.
pub struct TensorRt;

impl Backend for TensorRt {
    backend_basics! {
        id: BACKEND_ID,
        folder: "tensorrt",
        decode: |payload, _named| decode(payload),
    }

    /// The header, then the metadata it bounds; never the engine.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        let total = payload.len() as u64;
        let head = 0..HEADER_LEN.min(total);
        if !have(&head) {
            return vec![head];
        }
        let mut out = vec![head];
        if let Some(h) = header(payload) {
            let (mo, ms) = (u64::from(h.metadata_offset), u64::from(h.metadata_size));
            if fits("", mo, ms, total).is_ok() {
                out.push(mo..mo + ms);
            }
        }
        out
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let h = header(payload)?;
        let total = payload.len() as u64;
        let refusals = h.refusals(total);
        let (mo, ms) = (u64::from(h.metadata_offset), u64::from(h.metadata_size));
        let eo = u64::from(h.engine_offset);
        Some(json!({
            "format": "TensorRT engine blob",
            "payload": region(at, 0, total),
            "header_size": HEADER_LEN,
            "magic": field(at, 0, String::from_utf8_lossy(&h.magic).into_owned()),
            "metadata_offset": field(at, 4, h.metadata_offset),
            "metadata_size": field(at, 8, h.metadata_size),
            "engine_offset": field(at, 12, h.engine_offset),
            "engine_size": field(at, 16, h.engine_size),
            "reserved": field(at, 24, hex(&h.reserved)),
            "metadata": fits("", mo, ms, total).is_ok().then(|| region(at, mo, ms)),
            "engine": fits("", eo, h.engine_size, total).is_ok().then(|| region(at, eo, h.engine_size)),
            "runtime_accepts": refusals.is_empty(),
            "runtime_refuses": refusals,
            "wraps": h.wraps(),
        }))
    }
}

/// Reads the payload: the files its header bounds, and what is wrong.
fn decode(payload: &[u8]) -> Result<Artifact<'_>> {
    let total = payload.len() as u64;
    let Some(h) = header(payload) else {
        return Err(Error::new(format!(
            "TensorRT blob: payload is {total} bytes, the header needs {HEADER_LEN}"
        )));
    };
    let mut a = Artifact::new(BACKEND_ID);
    a.fact("magic", String::from_utf8_lossy(&h.magic));
    a.errors = h
        .refusals(total)
        .into_iter()
        .map(|r| format!("the runtime would refuse this blob: {r}"))
        .collect();
    a.errors.extend(h.wraps());
    let (mo, ms) = (u64::from(h.metadata_offset), u64::from(h.metadata_size));
    if fits("metadata", mo, ms, total).is_ok() {
        a.payload_file("metadata.json", mo, ms);
        let bytes = slice(payload, mo, ms).unwrap_or_default();
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => metadata_facts(&mut a, &h.magic, &v),
            Err(e) => a.errors.push(format!("metadata.json is not JSON: {e}")),
        }
    }
    let eo = u64::from(h.engine_offset);
    if fits("engine", eo, h.engine_size, total).is_ok() {
        a.payload_file("engine.plan", eo, h.engine_size);
    }
    a.fact("engine_size", h.engine_size);
    a.fact("metadata_size", ms);
    Ok(a)
}

/// The metadata's key fields, and what the runtime's metadata reader
/// would refuse.
fn metadata_facts(a: &mut Artifact<'_>, magic: &[u8; 4], v: &Value) {
    let bindings = v.get("io_bindings").and_then(Value::as_array);
    match bindings {
        Some(b) => {
            let inputs = b.iter().filter(|x| x["is_input"] == json!(true)).count();
            a.fact(
                "io_bindings",
                format!("{inputs} in, {} out", b.len() - inputs),
            );
        }
        None => a
            .errors
            .push("the runtime would refuse this blob: metadata has no io_bindings".into()),
    }
    let aliased = v
        .get("aliased_io")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    a.fact("aliased_io", aliased);
    if (aliased > 0) != (magic == b"TR02") {
        a.errors.push(format!(
            "magic {} with {aliased} aliased I/O bindings: the writer marks blobs with aliased I/O TR02 and others TR01",
            String::from_utf8_lossy(magic)
        ));
    }
    for k in ["target_platform", "hardware_compatible", "device_id"] {
        if let Some(x) = v.get(k) {
            a.fact(k, x.to_string());
        }
    }
}
