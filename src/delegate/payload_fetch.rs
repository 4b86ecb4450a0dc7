//! The whole fetch plan of a file: the container's
//! ([`crate::format::fetch_plan`]) and, for each delegate payload of a program,
//! what its backend's decoder reads ([`super::Backend::fetch`]). Payloads
//! of backends without a decoder stay opaque and are not fetched.

use std::ops::Range;

use crate::format::fetch_plan::plan;
use crate::format::{Ranges, Span};

/// The ranges reading `image` still needs, given the bytes `have` holds
/// (see [`crate::format::fetch_plan`]).
pub fn needed(image: &[u8], have: &Ranges) -> Vec<Range<u64>> {
    let p = plan(image, have);
    let mut out = p.ranges;
    let reads_named = !p.payloads.is_empty();
    for (id, span) in p.payloads {
        if let Some(backend) = super::backend(&id) {
            payload(backend, image, span, have, &mut out);
        }
    }
    if reads_named {
        named(image, &mut out);
    }
    out
}

/// The program's own named-data entries that backends render files from
/// ([`super::Backend::reads_named`]), read from payloads as held so far.
fn named(image: &[u8], out: &mut Vec<Range<u64>>) {
    let Ok(file) = crate::format::ProgramFile::parse(image) else {
        return;
    };
    for d in file.methods.iter().flat_map(|m| &m.delegates) {
        let (Some(id), Some(span)) = (d.id.as_str(), d.processed) else {
            continue;
        };
        let Some(backend) = super::backend(id) else {
            continue;
        };
        let specs = super::text_specs(&d.compile_specs);
        for key in backend.reads_named(span.bytes(image), &specs) {
            if let Some(n) = file.named.iter().find(|n| n.key.bytes() == key.as_bytes()) {
                out.push(n.span.offset..n.span.end());
            }
        }
    }
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

/// What a payload that is a header locating one region (its flatbuffer or
/// model) needs: its first `head` bytes, then the region `region` reads
/// from them; never what follows. An invalid header needs nothing more:
/// decoding reports it.
pub fn header_then(
    payload: &[u8],
    have: &dyn Fn(&Range<u64>) -> bool,
    head: u64,
    region: impl FnOnce(&[u8]) -> Option<Span>,
) -> Vec<Range<u64>> {
    let head = 0..(payload.len() as u64).min(head);
    if !have(&head) {
        return vec![head];
    }
    region(payload)
        .map(|r| r.offset..r.end())
        .into_iter()
        .collect()
}
