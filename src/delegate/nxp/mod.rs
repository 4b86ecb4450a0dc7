//! NXP Neutron networks (`NeutronBackend`): a header of u8 fields (the
//! Neutron input and output counts, the input argument count, a format
//! flag per input and output, an index map per input and output, the
//! payload version), padded to 16 bytes; then the microcode, weights and
//! kernels, each padded to 16 bytes. Only the microcode's own header
//! (magic `nMCd`, its size at word 6, the weights' size at word 7) bounds
//! the regions, as the runtime reads it; the kernels run to the end of the
//! payload.

use std::ops::Range;

use serde_json::{Value, json};

use crate::delegate::artifact::Specs;
use crate::delegate::artifact::{Artifact, field, fits, region};
use crate::delegate::backend::backend_basics;
use crate::delegate::{Backend, Decoded, Lookup};
use crate::format::le::{slice, u8_at, u32_at};
use crate::format::{Error, Result};

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "NeutronBackend";

/// The alignment of each region.
pub const ALIGNMENT: u64 = 16;

/// The microcode's magic word, little-endian (`nMCd`).
pub const MICROCODE_MAGIC: u32 = 0x6443_4D6E;

/// Bytes of the microcode's header the runtime reads (words 0 to 14).
pub const MICROCODE_HEADER: u64 = 64;

/// `NeutronBackend`.
pub struct Nxp;

fn align(n: u64) -> Option<u64> {
    n.checked_add(ALIGNMENT - 1).map(|n| n & !(ALIGNMENT - 1))
}

struct Header<'a> {
    inputs: u8,
    outputs: u8,
    input_args: u8,
    input_formats: &'a [u8],
    output_formats: &'a [u8],
    input_map: &'a [u8],
    output_map: &'a [u8],
    version: u8,
    /// Bytes of the header before padding.
    len: u64,
}

fn header(p: &[u8]) -> Option<Header<'_>> {
    let (i, o) = (u64::from(u8_at(p, 0)?), u64::from(u8_at(p, 1)?));
    let at = |n: u64| 3 + n;
    Some(Header {
        inputs: u8_at(p, 0)?,
        outputs: u8_at(p, 1)?,
        input_args: u8_at(p, 2)?,
        input_formats: slice(p, at(0), i)?,
        output_formats: slice(p, at(i), o)?,
        input_map: slice(p, at(i + o), i)?,
        output_map: slice(p, at(2 * i + o), o)?,
        version: u8_at(p, at(2 * i + 2 * o))?,
        len: 4 + 2 * i + 2 * o,
    })
}

/// The microcode's header words the runtime reads, by payload version.
fn microcode_words(version: u8) -> &'static [(usize, &'static str)] {
    match version {
        0 => &[
            (0, "magic"),
            (6, "microcode_size"),
            (7, "weights_size"),
            (9, "scratch_size"),
            (10, "sram_scratch_size"),
            (11, "inputs"),
            (12, "outputs"),
        ],
        _ => &[
            (0, "magic"),
            (6, "microcode_size"),
            (7, "weights_size"),
            (9, "scratch_size"),
            (10, "profile_size"),
            (11, "debug_size"),
            (12, "sram_scratch_size"),
            (13, "inputs"),
            (14, "outputs"),
        ],
    }
}

impl Backend for Nxp {
    backend_basics! {
        id: BACKEND_ID,
        folder: "nxp",
    }

    fn decode<'a>(
        &self,
        payload: &'a [u8],
        _specs: Specs<'_, 'a>,
        _named: &dyn Lookup<'a>,
    ) -> Result<Box<dyn Decoded<'a> + 'a>> {
        let total = payload.len() as u64;
        let h = header(payload).ok_or_else(|| {
            Error::new(format!(
                "Neutron header: payload of {total} bytes ends inside the header"
            ))
        })?;
        let mut a = Artifact::new(BACKEND_ID);
        a.fact("inputs", h.inputs);
        a.fact("outputs", h.outputs);
        a.fact("payload_version", h.version);
        let start = align(h.len).unwrap_or(u64::MAX);
        if start > total {
            a.errors.push(format!(
                "no microcode: the padded header ends at {start}, past the payload's {total} bytes"
            ));
            return Ok(Box::new(a));
        }
        if h.version > 1 {
            a.errors.push(format!(
                "payload version {} is unknown to the runtime (it reads 0 and 1)",
                h.version
            ));
        }
        let word = |i: u64| u32_at(payload, start + 4 * i);
        match word(0) {
            Some(MICROCODE_MAGIC) => {}
            Some(m) => a.errors.push(format!(
                "microcode magic at payload offset {start} is {m:#010x}, not {MICROCODE_MAGIC:#010x}: the runtime would refuse it"
            )),
            None => a.errors.push(format!("no microcode header at payload offset {start}")),
        }
        let (Some(mc), Some(w)) = (word(6), word(7)) else {
            a.payload_file("after_header.bin", start, total - start);
            a.errors
                .push("the microcode header is cut short: its regions are not bounded".into());
            return Ok(Box::new(a));
        };
        let n_in = if h.version == 0 { word(11) } else { word(13) };
        let n_out = if h.version == 0 { word(12) } else { word(14) };
        let show = |n: Option<u32>| n.map_or_else(|| "no".to_owned(), |n| n.to_string());
        if n_in != Some(u32::from(h.inputs)) || n_out != Some(u32::from(h.outputs)) {
            a.errors.push(format!(
                "the microcode states {} inputs and {} outputs, the header {} and {}: the runtime would refuse it",
                show(n_in),
                show(n_out),
                h.inputs,
                h.outputs
            ));
        }
        let (mc, w) = (u64::from(mc), u64::from(w));
        let weights_at = align(mc).and_then(|n| n.checked_add(start));
        let kernels_at = weights_at.zip(align(w)).and_then(|(a, b)| a.checked_add(b));
        match fits("microcode", start, mc, total) {
            Ok(()) => a.payload_file("microcode.bin", start, mc),
            Err(e) => a.errors.push(e),
        }
        match weights_at.map(|at| (at, fits("weights", at, w, total))) {
            Some((at, Ok(()))) => a.payload_file("weights.bin", at, w),
            Some((_, Err(e))) => a.errors.push(e),
            None => a.errors.push("weights: offset wraps".into()),
        }
        match kernels_at {
            Some(at) if at <= total => a.payload_file("kernels.bin", at, total - at),
            _ => a.errors.push(format!(
                "kernels: they would start at {}, past the payload's {total} bytes",
                kernels_at.map_or_else(|| "an offset past 2^64".to_owned(), |k| k.to_string())
            )),
        }
        Ok(Box::new(a))
    }

    /// The counts, then the header they size and the microcode's own
    /// header; never the regions.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        let total = payload.len() as u64;
        let counts = 0..2.min(total);
        if !have(&counts) {
            return vec![counts];
        }
        let (i, o) = (
            u64::from(u8_at(payload, 0).unwrap_or(0)),
            u64::from(u8_at(payload, 1).unwrap_or(0)),
        );
        let start = align(4 + 2 * i + 2 * o).unwrap_or(u64::MAX);
        vec![counts, 0..start.saturating_add(MICROCODE_HEADER).min(total)]
    }

    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let h = header(payload)?;
        let total = payload.len() as u64;
        let (i, o) = (u64::from(h.inputs), u64::from(h.outputs));
        let list = |off: u64, v: &[u8]| json!({"at": at + off, "values": v});
        let start = align(h.len).unwrap_or(u64::MAX);
        let mut micro = serde_json::Map::new();
        for &(w, name) in microcode_words(h.version) {
            let off = start.saturating_add(4 * w as u64);
            if let Some(v) = u32_at(payload, off) {
                micro.insert(name.into(), field(at, off, v));
            }
        }
        Some(json!({
            "format": "Neutron payload",
            "payload": region(at, 0, total),
            "neutron_inputs": field(at, 0, h.inputs),
            "neutron_outputs": field(at, 1, h.outputs),
            "input_args": field(at, 2, h.input_args),
            "input_formats": list(3, h.input_formats),
            "output_formats": list(3 + i, h.output_formats),
            "input_map": list(3 + i + o, h.input_map),
            "output_map": list(3 + 2 * i + o, h.output_map),
            "payload_version": field(at, 3 + 2 * i + 2 * o, h.version),
            "header_size": h.len,
            "header_padded_size": start,
            "format_flags": "1: channels last, 0: no format",
            "microcode_header": micro,
            "not_bounded": "the kernels region runs to the end of the payload: no field states its size",
        }))
    }
}
