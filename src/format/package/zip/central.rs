//! Central directory entries, with the zip64 extra field that widens their
//! sizes and offsets.

use super::super::super::{Error, Result, Span};
use super::local::local_data;
use super::member::Member;
use super::records::{CENTRAL_LEN, CENTRAL_SIG, ENCRYPTED, Reader, ZIP64_EXTRA};

/// A central directory entry's own fields.
pub(super) struct Record {
    pub(super) name: String,
    pub(super) method: u16,
    pub(super) crc32: u32,
    pub(super) compressed: u64,
    pub(super) uncompressed: u64,
    pub(super) header_offset: u64,
}

/// The central directory entry at `at` (the `index`-th), checked up to and
/// including its local header; returns it and where the next entry starts.
pub(super) fn central_entry(
    r: &Reader<'_>,
    at: u64,
    end: u64,
    index: u64,
) -> Result<(Member, u64)> {
    let (rec, next) = central_record(r, at, end, index)?;
    let data = local_data(r, rec.header_offset, rec.compressed, rec.method, &rec.name)?;
    let member = Member {
        name: rec.name,
        method: rec.method,
        crc32: rec.crc32,
        uncompressed_size: rec.uncompressed,
        header_offset: rec.header_offset,
        data,
        central_offset: at,
    };
    Ok((member, next))
}

/// The fields of the central directory entry at `at` and where the next
/// entry starts.
pub(super) fn central_record(
    r: &Reader<'_>,
    at: u64,
    end: u64,
    index: u64,
) -> Result<(Record, u64)> {
    let what = || format!("zip central directory entry {index}");
    let fixed = Span::checked(at, CENTRAL_LEN as u64, end, what)?;
    if r.u32(at) != CENTRAL_SIG {
        return Err(Error::new(format!(
            "zip central directory entry {index} at offset {at}: wrong signature"
        )));
    }
    let flags = r.u16(at + 8);
    let method = r.u16(at + 10);
    let crc32 = r.u32(at + 16);
    let mut compressed = u64::from(r.u32(at + 20));
    let mut uncompressed = u64::from(r.u32(at + 24));
    let name_len = u64::from(r.u16(at + 28));
    let extra_len = u64::from(r.u16(at + 30));
    let comment_len = u64::from(r.u16(at + 32));
    let mut header_offset = u64::from(r.u32(at + 42));
    let var = Span::checked(fixed.end(), name_len + extra_len + comment_len, end, || {
        format!("zip central directory entry {index} (name, extra field and comment)")
    })?;
    let name_span = var.prefix(name_len, what)?;
    let name = std::str::from_utf8(name_span.bytes(r.bytes))
        .map_err(|_| {
            Error::new(format!(
                "zip central directory entry {index} at offset {at}: name is not UTF-8"
            ))
        })?
        .to_owned();
    let extra = var.sub(name_len, extra_len, what)?;
    let mut wide = [
        (uncompressed == u64::from(u32::MAX)).then_some(&mut uncompressed),
        (compressed == u64::from(u32::MAX)).then_some(&mut compressed),
        (header_offset == u64::from(u32::MAX)).then_some(&mut header_offset),
    ];
    if wide.iter().any(Option::is_some) {
        zip64_extra(r, extra, &mut wide, &name)?;
    }
    if flags & ENCRYPTED != 0 {
        return Err(Error::new(format!("zip member {name} is encrypted")));
    }
    let rec = Record {
        name,
        method,
        crc32,
        compressed,
        uncompressed,
        header_offset,
    };
    Ok((rec, var.end()))
}

/// Fills the 0xFFFFFFFF fields from the zip64 extra field, in the order the
/// format gives them.
fn zip64_extra(
    r: &Reader<'_>,
    extra: Span,
    wide: &mut [Option<&mut u64>],
    name: &str,
) -> Result<()> {
    let mut at = extra.offset;
    while at + 4 <= extra.end() {
        let id = r.u16(at);
        let len = u64::from(r.u16(at + 2));
        let body = Span::checked(at + 4, len, extra.end(), || {
            format!("zip member {name}: extra field {id:#06x}")
        })?;
        if id == ZIP64_EXTRA {
            let mut p = body.offset;
            for field in wide.iter_mut().flatten() {
                if p + 8 > body.end() {
                    return Err(Error::new(format!(
                        "zip member {name}: zip64 extra field at offset {at} is too short for the sizes it must hold"
                    )));
                }
                **field = r.u64(p);
                p += 8;
            }
            return Ok(());
        }
        at = body.end();
    }
    Err(Error::new(format!(
        "zip member {name}: sizes or offset are 0xFFFFFFFF but there is no zip64 extra field"
    )))
}
