//! The optional `XH00` header in front of an XNNPACK payload.

use crate::delegate::header::{self, KNOWN_LEN};
use crate::format::{Error, Result, Span};

/// The header magic at bytes 4..8.
pub const MAGIC: &[u8; 4] = b"XH00";

/// Where a payload's flatbuffer and constant data are, relative to the
/// payload's first byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// `XH00`, or `None` when the payload has no header and is the
    /// flatbuffer itself.
    pub magic: Option<&'static str>,
    /// The header length field (bytes the header says it has).
    pub header_length: Option<u16>,
    /// The flatbuffer.
    pub flatbuffer: Span,
    /// The constant data (empty when everything is in named data).
    pub constant_data: Span,
}

/// Reads the header of `payload`, checking that both regions lie inside it.
/// Without `XH00` at bytes 4..8 the whole payload is the flatbuffer, which
/// must then carry the identifier `XN00` or `XN01`.
pub fn parse(payload: &[u8]) -> Result<Header> {
    let total = payload.len() as u64;
    if payload.len() < 8 {
        return Err(Error::new(format!(
            "payload is {total} bytes, too short for a header or flatbuffer (8 bytes)"
        )));
    }
    if &payload[4..8] != MAGIC {
        check_identifier(&payload[4..8], 0)?;
        return Ok(Header {
            magic: None,
            header_length: None,
            flatbuffer: Span {
                offset: 0,
                len: total,
            },
            constant_data: Span {
                offset: total,
                len: 0,
            },
        });
    }
    if payload.len() < usize::from(KNOWN_LEN) {
        return Err(Error::new(format!(
            "payload header: payload is {total} bytes, the XH00 header needs {KNOWN_LEN}"
        )));
    }
    let fields = header::read(payload)?;
    let constant_data = Span::checked(
        fields.constant_data_offset,
        fields.constant_data_size,
        total,
        || "payload header (offsets 18..30): constant data".to_owned(),
    )?;
    header::check_flatbuffer_size(fields.flatbuffer)?;
    let (at, id) = header::identifier(payload, fields.flatbuffer);
    check_identifier(id, at)?;
    Ok(Header {
        magic: Some("XH00"),
        header_length: Some(fields.length),
        flatbuffer: fields.flatbuffer,
        constant_data,
    })
}

/// The flatbuffer identifier of `payload` (where its `XH00` header puts
/// the flatbuffer, or at bytes 4..8 without one) when it is not one the
/// XNNPACK backend accepts (`XN00`, `XN01`); `None` when it is, or when
/// the header cannot be read.
pub fn refused_identifier(payload: &[u8]) -> Option<&[u8]> {
    let id = match payload.get(4..8)? {
        magic if magic == MAGIC => {
            header::identifier(payload, header::read(payload).ok()?.flatbuffer).1
        }
        id => id,
    };
    (!accepted(id)).then_some(id)
}

fn accepted(id: &[u8]) -> bool {
    id == b"XN01" || id == b"XN00"
}

fn check_identifier(id: &[u8], at: usize) -> Result<()> {
    if accepted(id) {
        return Ok(());
    }
    Err(Error::new(format!(
        "payload offset {at}: flatbuffer identifier is \"{}\", expected XN01 or XN00 (or an XH00 header at 4)",
        id.escape_ascii()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_header(fb_off: u32, fb_len: u32, cd_off: u32, cd_len: u64, total: usize) -> Vec<u8> {
        crate::delegate::header::test_payload(
            (MAGIC, b"XN01"),
            (fb_off, fb_len),
            (cd_off, cd_len),
            total,
        )
    }

    #[test]
    fn reads_the_regions() {
        let h = parse(&with_header(32, 16, 48, 8, 56)).unwrap();
        assert_eq!(
            h.flatbuffer,
            Span {
                offset: 32,
                len: 16
            }
        );
        assert_eq!(h.constant_data, Span { offset: 48, len: 8 });
        assert_eq!(h.header_length, Some(30));
    }

    #[test]
    fn no_header_means_the_whole_payload() {
        let mut p = vec![0u8; 24];
        p[4..8].copy_from_slice(b"XN00");
        let h = parse(&p).unwrap();
        assert_eq!(h.magic, None);
        assert_eq!(h.flatbuffer, Span { offset: 0, len: 24 });
    }

    #[test]
    fn rejects_what_does_not_fit() {
        let e = parse(&with_header(32, 100, 48, 0, 56)).unwrap_err();
        assert!(
            e.to_string()
                .contains("flatbuffer: bytes 32..132 extend past the end at 56"),
            "{e}"
        );
        let e = parse(&with_header(32, 16, 48, u64::MAX, 56)).unwrap_err();
        assert!(e.to_string().contains("constant data: offset 48"), "{e}");
        let mut short = with_header(32, 16, 48, 0, 56);
        short[8..10].copy_from_slice(&12u16.to_le_bytes());
        assert!(
            parse(&short)
                .unwrap_err()
                .to_string()
                .contains("header length 12")
        );
        assert!(
            parse(b"0000ZZZZ")
                .unwrap_err()
                .to_string()
                .contains("identifier is")
        );
        assert!(
            parse(b"1234")
                .unwrap_err()
                .to_string()
                .contains("too short")
        );
    }
}
