//! The whole fetch plan of a file: the container's
//! ([`crate::format::fetch`]) and, for each delegate payload of a program,
//! what its decoder reads. XNNPACK: the payload header, then the
//! flatbuffer it locates; never the constant data after it.

use std::ops::Range;

use super::xnnpack;
use crate::format::fetch::plan;
use crate::format::{Ranges, Span};

/// Payload bytes asked for before the header says more: the XNNPACK
/// header's known fields.
const PAYLOAD_HEAD: u64 = 64;

/// The ranges reading `image` still needs, given the bytes `have` holds
/// (see [`crate::format::fetch`]).
pub fn needed(image: &[u8], have: &Ranges) -> Vec<Range<u64>> {
    let p = plan(image, have);
    let mut out = p.ranges;
    for (backend, span) in p.payloads {
        if backend == xnnpack::BACKEND_ID {
            xnnpack_payload(image, span, have, &mut out);
        }
    }
    out
}

fn xnnpack_payload(image: &[u8], span: Span, have: &Ranges, out: &mut Vec<Range<u64>>) {
    let head = span.offset..span.offset + span.len.min(PAYLOAD_HEAD);
    if !have.covers(&head) {
        out.push(head);
        return;
    }
    // An invalid header needs nothing more: decoding reports it.
    if let Ok(h) = xnnpack::header::parse(span.bytes(image)) {
        let fb = span.offset + h.flatbuffer.offset;
        out.push(fb..fb + h.flatbuffer.len);
    }
}
