//! The `VH00` header in front of a Vulkan payload.

use crate::delegate::header::{self, KNOWN_LEN};
use crate::format::{Error, Result, Span};

/// The header magic at bytes 4..8.
pub const MAGIC: &[u8; 4] = b"VH00";

/// The flatbuffer identifier.
pub const IDENTIFIER: &[u8; 4] = b"VK00";

/// Where a payload's flatbuffer and constant bytes are, relative to the
/// payload's first byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header length field.
    pub header_length: u16,
    /// The flatbuffer.
    pub flatbuffer: Span,
    /// The constant bytes (`VkBytes` offsets count from its start).
    pub constant_data: Span,
    /// The size field as written: 0 means "to the end of the payload".
    pub constant_data_size_field: u64,
}

/// Reads the header of `payload`: `VH00` at 4..8, then (little-endian) a
/// u16 header length at 8, the flatbuffer's u32 offset and size at 10 and
/// 14, the constant bytes' u32 offset at 18 and u64 size at 22 (0: the rest
/// of the payload). Both regions must lie inside the payload, in that
/// order, and the flatbuffer must carry the identifier `VK00`.
pub fn parse(payload: &[u8]) -> Result<Header> {
    let total = payload.len() as u64;
    if payload.len() < usize::from(KNOWN_LEN) {
        return Err(Error::new(format!(
            "payload is {total} bytes, the VH00 header needs {KNOWN_LEN}"
        )));
    }
    if &payload[4..8] != MAGIC {
        return Err(Error::new(format!(
            "payload offset 4: header magic is \"{}\", expected VH00",
            payload[4..8].escape_ascii()
        )));
    }
    let fields = header::read(payload)?;
    let (length, flatbuffer) = (fields.length, fields.flatbuffer);
    if flatbuffer.offset < u64::from(length) {
        return Err(Error::new(format!(
            "payload header (offset 10): flatbuffer offset {} is inside the {length}-byte header",
            flatbuffer.offset
        )));
    }
    header::check_flatbuffer_size(flatbuffer)?;
    let (data_offset, size_field) = (fields.constant_data_offset, fields.constant_data_size);
    if data_offset < flatbuffer.end() {
        return Err(Error::new(format!(
            "payload header (offset 18): constant bytes offset {data_offset} is before the flatbuffer's end at {}",
            flatbuffer.end()
        )));
    }
    let size = match size_field {
        0 => total.saturating_sub(data_offset),
        n => n,
    };
    let constant_data = Span::checked(data_offset, size, total, || {
        "payload header (offsets 18..30): constant bytes".to_owned()
    })?;
    let (at, id) = header::identifier(payload, flatbuffer);
    if id != IDENTIFIER {
        return Err(Error::new(format!(
            "payload offset {at}: flatbuffer identifier is \"{}\", expected VK00",
            id.escape_ascii()
        )));
    }
    Ok(Header {
        header_length: length,
        flatbuffer,
        constant_data,
        constant_data_size_field: size_field,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(fb_off: u32, fb_len: u32, cd_off: u32, cd_len: u64, total: usize) -> Vec<u8> {
        crate::delegate::header::test_payload(
            (MAGIC, IDENTIFIER),
            (fb_off, fb_len),
            (cd_off, cd_len),
            total,
        )
    }

    #[test]
    fn regions_and_a_zero_size_meaning_the_rest() {
        let h = parse(&payload(32, 64, 96, 0, 200)).unwrap();
        assert_eq!(
            h.flatbuffer,
            Span {
                offset: 32,
                len: 64
            }
        );
        assert_eq!(
            h.constant_data,
            Span {
                offset: 96,
                len: 104
            }
        );
        assert_eq!(h.constant_data_size_field, 0);
        let h = parse(&payload(32, 64, 96, 8, 200)).unwrap();
        assert_eq!(h.constant_data.len, 8);
    }

    #[test]
    fn bad_headers_name_the_field() {
        let cases: [(Vec<u8>, &str); 6] = [
            (vec![0; 10], "needs 30"),
            (payload(32, 64, 96, 0, 200)[..40].to_vec(), "flatbuffer"),
            (payload(16, 64, 96, 0, 200), "inside the 30-byte header"),
            (
                payload(32, 64, 90, 0, 200),
                "before the flatbuffer's end at 96",
            ),
            (payload(32, 64, 96, 500, 200), "constant bytes"),
            (payload(32, 4, 96, 0, 200), "too small"),
        ];
        for (p, want) in cases {
            let e = parse(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
        let mut p = payload(32, 64, 96, 0, 200);
        p[36..40].copy_from_slice(b"XN01");
        assert!(parse(&p).unwrap_err().to_string().contains("expected VK00"));
        p[4..8].copy_from_slice(b"XH00");
        assert!(parse(&p).unwrap_err().to_string().contains("expected VH00"));
    }
}
