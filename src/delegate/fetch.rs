//! The whole fetch plan of a file: the container's
//! ([`crate::format::fetch`]) and, for each delegate payload of a program,
//! what its backend's decoder reads ([`super::Backend::fetch`]). Payloads
//! of backends without a decoder stay opaque and are not fetched.

use std::ops::Range;

use crate::format::fetch::plan;
use crate::format::{Ranges, Span};

/// The ranges reading `image` still needs, given the bytes `have` holds
/// (see [`crate::format::fetch`]).
pub fn needed(image: &[u8], have: &Ranges) -> Vec<Range<u64>> {
    let p = plan(image, have);
    let mut out = p.ranges;
    for (id, span) in p.payloads {
        if let Some(backend) = super::backend(&id) {
            payload(backend, image, span, have, &mut out);
        }
    }
    out
}

/// What `backend` asks of the payload at `span`, as file ranges.
fn payload(
    backend: &dyn super::Backend,
    image: &[u8],
    span: Span,
    have: &Ranges,
    out: &mut Vec<Range<u64>>,
) {
    let at = |r: &Range<u64>| span.offset + r.start..span.offset + r.end.min(span.len);
    let held = |r: &Range<u64>| have.covers(&at(r));
    for r in backend.fetch(span.bytes(image), &held) {
        let r = at(&r);
        if r.start < r.end {
            out.push(r);
        }
    }
}
