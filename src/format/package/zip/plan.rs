//! The fetch plan of a zip ([`crate::format::fetch_plan`]): which records
//! reading the members needs, found one step at a time.

use std::ops::Range;

use super::central::central_record;
use super::end::{directory, end_record};
use super::member::Member;
use super::read::members;
use super::records::{CENTRAL_LEN, EOCD_LEN, LOCAL_LEN, Reader, ZIP64_EOCD_LEN, ZIP64_LOCATOR_LEN};
use crate::format::Ranges;

/// What reading the members needs, as far as the bytes `have` holds tell
/// ([`crate::format::fetch_plan`]): the end record (the last 64 KiB), its zip64
/// twin, the central directory, then each local header. `None` while
/// something is missing (pushed to `out`), then the members. A zip that
/// turns out unsound needs nothing more (`None`, nothing pushed): parsing
/// reports it.
pub fn plan(bytes: &[u8], have: &Ranges, out: &mut Vec<Range<u64>>) -> Option<Vec<Member>> {
    let r = Reader { bytes };
    let len = bytes.len() as u64;
    let mut need = |range: Range<u64>| {
        let held = have.covers(&range);
        if !held {
            out.push(range);
        }
        held
    };
    if !need(len.saturating_sub((EOCD_LEN + 0xffff) as u64)..len) {
        return None;
    }
    let eocd = end_record(&r).ok()?;
    if r.u16(eocd + 10) == 0xffff || r.u32(eocd + 12) == u32::MAX || r.u32(eocd + 16) == u32::MAX {
        let locator = eocd.checked_sub(ZIP64_LOCATOR_LEN as u64)?;
        if !need(locator..eocd) {
            return None;
        }
        let at = r.u64(locator + 8);
        if !need(at..at.saturating_add(ZIP64_EOCD_LEN as u64).min(len)) {
            return None;
        }
    }
    let dir = directory(&r).ok()?;
    let cd = r.span(dir.offset, dir.size, String::new).ok()?;
    if !need(cd.offset..cd.end()) {
        return None;
    }
    let mut at = cd.offset;
    let mut complete = true;
    for i in 0..dir.entries.min(cd.len / CENTRAL_LEN as u64) {
        let (rec, next) = central_record(&r, at, cd.end(), i).ok()?;
        let fixed = rec.header_offset..rec.header_offset.saturating_add(LOCAL_LEN as u64);
        if fixed.end > len {
            // Parsing reports the local header outside the file.
            return None;
        }
        if need(fixed.clone()) {
            let var = u64::from(r.u16(fixed.start + 26)) + u64::from(r.u16(fixed.start + 28));
            complete &= need(fixed.start..fixed.end.saturating_add(var).min(len));
        } else {
            complete = false;
        }
        at = next;
    }
    if !complete {
        return None;
    }
    members(bytes).ok()
}
