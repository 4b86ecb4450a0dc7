//! The constants section: in current files `CONST00` — the 8-byte version
//! string, a u64 count, that many 24-byte records (u32 resource index, i32
//! sparsity dimension, u64 size, u64 offset into the data after the
//! records) and the data; in files before format 0.4 a `ConstantSection`
//! flatbuffer whose entries hold their bytes.

use crate::delegate::Bytes;
use crate::format::{Error, Result, Span, le};
use crate::schema::vgf as fb;

/// The version string that starts a raw constants section.
pub const VERSION: &[u8; 8] = b"CONST00\0";

/// Bytes of a raw section's version and count.
const HEAD: u64 = 16;

/// Bytes of one raw record.
const RECORD: u64 = 24;

/// How the section is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `CONST00`.
    Raw,
    /// The `ConstantSection` flatbuffer of older files.
    Flatbuffer,
}

/// One constant.
#[derive(Debug, Clone)]
pub struct Constant<'a> {
    /// Position in the section.
    pub index: usize,
    /// The model resource table entry describing it.
    pub mrt_index: u32,
    /// The dimension it is sparse along, -1 for a dense constant.
    pub sparsity_dimension: i64,
    /// Where its bytes are; `Err` says why they cannot be shown.
    pub bytes: std::result::Result<Bytes<'a>, String>,
}

/// The constants of the section at `span` of `payload`, and its kind.
pub fn read(payload: &[u8], span: Span) -> Result<(Kind, Vec<Constant<'_>>)> {
    let bytes = span.bytes(payload);
    if bytes.starts_with(VERSION) {
        return raw(bytes, span).map(|c| (Kind::Raw, c));
    }
    let section =
        crate::delegate::flatbuffer::root::<fb::ConstantSection>(payload, span, "ConstantSection")?;
    let list = section
        .data()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(index, d)| Constant {
            index,
            mrt_index: d.mrt_index(),
            sparsity_dimension: d.sparsity_dimension(),
            bytes: d
                .raw()
                .and_then(|r| Span::of_vector(payload, Some(r.bytes())))
                .map(Bytes::Payload)
                .ok_or_else(|| format!("constants[{index}]: no raw bytes")),
        })
        .collect();
    Ok((Kind::Flatbuffer, list))
}

/// The records of a `CONST00` section (`bytes`, at `span` of the payload).
fn raw(bytes: &[u8], span: Span) -> Result<Vec<Constant<'static>>> {
    let at = span.offset;
    if (bytes.len() as u64) < HEAD {
        return Err(Error::new(format!(
            "constants section at payload offset {at}: {} bytes, CONST00 needs {HEAD}",
            bytes.len()
        )));
    }
    let short = || Error::new(format!("constants section at payload offset {at}: cut off"));
    let count = le::u64_at(bytes, 8).ok_or_else(short)?;
    let records = count
        .checked_mul(RECORD)
        .filter(|n| *n <= span.len - HEAD)
        .ok_or_else(|| {
            Error::new(format!(
                "constants section at payload offset {} (count): {count} records of {RECORD} bytes do not fit in {} bytes",
                at + 8,
                span.len - HEAD
            ))
        })?;
    let data = Span {
        offset: at + HEAD + records,
        len: span.len - HEAD - records,
    };
    let mut out = Vec::new();
    for i in 0..count {
        // In range: the records fit in the section.
        let r = HEAD + i * RECORD;
        let u32_at = |at| le::u32_at(bytes, at).ok_or_else(short);
        let u64_at = |at| le::u64_at(bytes, at).ok_or_else(short);
        let (offset, size) = (u64_at(r + 16)?, u64_at(r + 8)?);
        let index = i as usize;
        out.push(Constant {
            index,
            mrt_index: u32_at(r)?,
            sparsity_dimension: i64::from(u32_at(r + 4)? as i32),
            bytes: data
                .sub(offset, size, || {
                    format!(
                        "constants[{i}] (record at payload offset {}): data offset and size",
                        at + r
                    )
                })
                .map(Bytes::Payload)
                .map_err(|e| e.to_string()),
        });
    }
    Ok(out)
}

/// The payload ranges reading the section at `span` needs beyond `have`:
/// its first 16 bytes, then for `CONST00` the records, else (a
/// flatbuffer) all of it. Never the raw data.
pub fn fetch(
    payload: &[u8],
    span: Span,
    have: &dyn Fn(&std::ops::Range<u64>) -> bool,
) -> Vec<std::ops::Range<u64>> {
    let head = span.offset..span.offset + span.len.min(HEAD);
    if !have(&head) {
        return std::iter::once(head).collect();
    }
    let bytes = span.bytes(payload);
    let count = le::u64_at(bytes, 8).filter(|_| bytes.starts_with(VERSION));
    let (Some(count), true) = (count, bytes.len() >= HEAD as usize) else {
        return std::iter::once(span.offset..span.end()).collect();
    };
    let records = count.saturating_mul(RECORD).min(span.len - HEAD);
    vec![head, span.offset + HEAD..span.offset + HEAD + records]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(count: u64, records: &[(u32, i32, u64, u64)], data: usize) -> Vec<u8> {
        let mut s = VERSION.to_vec();
        s.extend_from_slice(&count.to_le_bytes());
        for (m, d, size, off) in records {
            s.extend_from_slice(&m.to_le_bytes());
            s.extend_from_slice(&d.to_le_bytes());
            s.extend_from_slice(&size.to_le_bytes());
            s.extend_from_slice(&off.to_le_bytes());
        }
        s.resize(s.len() + data, 7);
        s
    }

    fn whole(s: &[u8]) -> Span {
        Span {
            offset: 0,
            len: s.len() as u64,
        }
    }

    #[test]
    fn records_locate_their_data() {
        let s = section(2, &[(3, -1, 8, 0), (4, 1, 4, 8)], 12);
        let (kind, c) = read(&s, whole(&s)).unwrap();
        assert_eq!(kind, Kind::Raw);
        assert_eq!(c[1].mrt_index, 4);
        assert_eq!(c[1].sparsity_dimension, 1);
        assert_eq!(
            c[1].bytes,
            Ok(Bytes::Payload(Span {
                offset: 16 + 48 + 8,
                len: 4
            }))
        );
    }

    #[test]
    fn bad_records_and_counts_are_named() {
        let s = section(2, &[(3, -1, 8, 0), (4, -1, 8, 8)], 12);
        let (_, c) = read(&s, whole(&s)).unwrap();
        assert!(c[1].bytes.as_ref().unwrap_err().contains("constants[1]"));
        let s = section(u64::MAX, &[], 0);
        let e = read(&s, whole(&s)).unwrap_err().to_string();
        assert!(e.contains("(count)"), "{e}");
        let e = read(&s[..10], whole(&s[..10])).unwrap_err().to_string();
        assert!(e.contains("CONST00 needs 16"), "{e}");
    }
}
