//! What the XNNPACK (`XH00`) and Vulkan (`VH00`) payload headers share:
//! after the magic at bytes 4..8, little-endian, a u16 header length at 8,
//! the flatbuffer's u32 offset and size at 10 and 14, and the constant
//! data's u32 offset at 18 and u64 size at 22. Each backend checks the
//! magic and gives the constant data's fields its own meaning.

use serde::Serialize;

use crate::format::le;
use crate::format::{Error, Result, Span};

/// Bytes the known header fields cover.
pub const KNOWN_LEN: u16 = 30;

/// The fields after the magic, with the flatbuffer's region checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    /// The header length field, at least [`KNOWN_LEN`].
    pub length: u16,
    /// The flatbuffer, inside the payload.
    pub flatbuffer: Span,
    /// The constant data's offset field as written.
    pub constant_data_offset: u64,
    /// The constant data's size field as written.
    pub constant_data_size: u64,
}

/// Reads the fields of `payload`'s header, checking that the header length
/// covers them and that the flatbuffer lies inside the payload.
pub fn read(payload: &[u8]) -> Result<Fields> {
    let total = payload.len() as u64;
    let short = || {
        Error::new(format!(
            "payload header: payload is {total} bytes, the header needs {KNOWN_LEN}"
        ))
    };
    if payload.len() < usize::from(KNOWN_LEN) {
        return Err(short());
    }
    let u32_at = |at| le::u32_at(payload, at).map(u64::from).ok_or_else(short);
    let length = le::u16_at(payload, 8).ok_or_else(short)?;
    if length < KNOWN_LEN {
        return Err(Error::new(format!(
            "payload header at offset 8: header length {length} is below {KNOWN_LEN}"
        )));
    }
    let flatbuffer = Span::checked(u32_at(10)?, u32_at(14)?, total, || {
        "payload header (offsets 10..18): flatbuffer".to_owned()
    })?;
    Ok(Fields {
        length,
        flatbuffer,
        constant_data_offset: u32_at(18)?,
        constant_data_size: le::u64_at(payload, 22).ok_or_else(short)?,
    })
}

/// Checks that the flatbuffer has room for its root offset and identifier.
pub fn check_flatbuffer_size(flatbuffer: Span) -> Result<()> {
    if flatbuffer.len < 8 {
        return Err(Error::new(format!(
            "payload header (offset 14): flatbuffer size {} is too small for a flatbuffer",
            flatbuffer.len
        )));
    }
    Ok(())
}

/// The payload offset and bytes of a flatbuffer's identifier: empty
/// unless the flatbuffer passed [`read`] and [`check_flatbuffer_size`].
pub fn identifier(payload: &[u8], flatbuffer: Span) -> (usize, &[u8]) {
    let at = usize::try_from(flatbuffer.offset).map_or(usize::MAX, |o| o.saturating_add(4));
    let id = at
        .checked_add(4)
        .and_then(|end| payload.get(at..end))
        .unwrap_or_default();
    (at, id)
}

/// `header.json` of an `XH00` or `VH00` payload: its fields, with
/// offsets in the payload and in the file.
#[derive(Debug, Serialize)]
pub struct Json {
    magic: Option<&'static str>,
    header_length: Option<u16>,
    identifier: Option<String>,
    payload_size: usize,
    payload_file_offset: u64,
    flatbuffer_offset: u64,
    flatbuffer_size: u64,
    flatbuffer_file_offset: u64,
    constant_data_offset: u64,
    constant_data_size: u64,
    /// The size as written where a backend gives it a meaning of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constant_data_size_field: Option<u64>,
    constant_data_file_offset: u64,
}

impl Json {
    /// The fields every header has, for a payload at file offset `at`:
    /// `magic` and `header_length` are `None` for a payload without a
    /// header.
    pub fn new(
        (magic, header_length): (Option<&'static str>, Option<u16>),
        (flatbuffer, constant_data): (Span, Span),
        payload: &[u8],
        at: u64,
    ) -> Self {
        let (_, id) = identifier(payload, flatbuffer);
        Json {
            magic,
            header_length,
            identifier: (id.len() == 4).then(|| String::from_utf8_lossy(id).into_owned()),
            payload_size: payload.len(),
            payload_file_offset: at,
            flatbuffer_offset: flatbuffer.offset,
            flatbuffer_size: flatbuffer.len,
            flatbuffer_file_offset: at + flatbuffer.offset,
            constant_data_offset: constant_data.offset,
            constant_data_size: constant_data.len,
            constant_data_size_field: None,
            constant_data_file_offset: at + constant_data.offset,
        }
    }

    /// As a JSON value.
    pub fn value(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }
}

/// A test payload of `total` bytes: `magic`, a 30-byte header with the
/// flatbuffer's and constant data's offset and size, and `id` as the
/// flatbuffer's identifier where it fits.
#[cfg(test)]
pub(crate) fn test_payload(
    (magic, id): (&[u8; 4], &[u8; 4]),
    (fb_off, fb_len): (u32, u32),
    (cd_off, cd_len): (u32, u64),
    total: usize,
) -> Vec<u8> {
    let mut p = vec![0u8; total.max(30)];
    p[4..8].copy_from_slice(magic);
    p[8..10].copy_from_slice(&30u16.to_le_bytes());
    p[10..14].copy_from_slice(&fb_off.to_le_bytes());
    p[14..18].copy_from_slice(&fb_len.to_le_bytes());
    p[18..22].copy_from_slice(&cd_off.to_le_bytes());
    p[22..30].copy_from_slice(&cd_len.to_le_bytes());
    if let Some(at) = p.get_mut(fb_off as usize + 4..fb_off as usize + 8) {
        at.copy_from_slice(id);
    }
    p.truncate(total);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(length: u16, fb: (u32, u32), cd: (u32, u64), total: usize) -> Vec<u8> {
        let mut p = test_payload((b"XH00", b"XN01"), fb, cd, 64);
        p[8..10].copy_from_slice(&length.to_le_bytes());
        p.truncate(total);
        p
    }

    #[test]
    fn fields_are_read_little_endian() {
        let f = read(&header(30, (32, 16), (48, u64::MAX), 64)).unwrap();
        let want = Fields {
            length: 30,
            flatbuffer: Span {
                offset: 32,
                len: 16,
            },
            constant_data_offset: 48,
            constant_data_size: u64::MAX,
        };
        assert_eq!(f, want);
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (
                header(30, (32, 16), (48, 8), 64)[..29].to_vec(),
                "payload is 29 bytes",
            ),
            (
                header(12, (32, 16), (48, 8), 64),
                "header length 12 is below 30",
            ),
            (
                header(30, (60, 16), (48, 8), 64),
                "(offsets 10..18): flatbuffer",
            ),
        ];
        for (p, want) in cases {
            let e = read(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
        let small = Span { offset: 32, len: 4 };
        let e = check_flatbuffer_size(small).unwrap_err().to_string();
        assert!(e.contains("flatbuffer size 4 is too small"), "{e}");
    }

    #[test]
    fn an_identifier_past_the_payload_is_empty() {
        let p = [7u8; 10];
        let at = |offset| identifier(&p, Span { offset, len: 8 });
        assert_eq!(at(0), (4, &p[4..8]));
        assert_eq!(at(8), (12, &[][..] as &[u8]));
        assert!(at(u64::MAX).1.is_empty());
    }
}
