//! The header OpenVINO's compiled-model export starts with: six
//! little-endian u64s, the offset and size of the custom data (an XML
//! document of the plugin's own), of the weights the IR's `Const` layers
//! point into, and of the IR (the model's XML), each from the payload's
//! first byte.

use serde_json::{Value, json};

use crate::format::{Error, Result, Span, le};

/// Bytes of the header.
pub const LEN: usize = 48;

/// The header's fields, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    /// Custom data offset and size (bytes 0..16).
    pub custom_data: (u64, u64),
    /// Weights offset and size (bytes 16..32).
    pub consts: (u64, u64),
    /// IR offset and size (bytes 32..48).
    pub model: (u64, u64),
}

/// The three regions, checked to lie inside the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The custom-data XML.
    pub custom_data: Span,
    /// The weights.
    pub consts: Span,
    /// The IR's XML, as stored (obfuscated or not).
    pub model: Span,
}

/// The fields of `payload`'s header, or why there is none.
pub fn fields(payload: &[u8]) -> Result<Fields> {
    let short = || {
        Error::new(format!(
            "OpenVINO header: payload is {} bytes, the header needs {LEN}",
            payload.len()
        ))
    };
    let u64_at = |at| le::u64_at(payload, at).ok_or_else(short);
    let pair = |at| Ok((u64_at(at)?, u64_at(at + 8)?));
    Ok(Fields {
        custom_data: pair(0)?,
        consts: pair(16)?,
        model: pair(32)?,
    })
}

/// Reads `payload`'s header and checks each region lies inside it.
pub fn parse(payload: &[u8]) -> Result<Header> {
    let f = fields(payload)?;
    let total = payload.len() as u64;
    let region = |(offset, size): (u64, u64), at: usize, what: &str| {
        Span::checked(offset, size, total, || {
            format!("OpenVINO header (offsets {at}..{}): {what}", at + 16)
        })
    };
    Ok(Header {
        custom_data: region(f.custom_data, 0, "custom data")?,
        consts: region(f.consts, 16, "weights")?,
        model: region(f.model, 32, "model XML")?,
    })
}

/// `header.json`: the fields with their offsets in the file (`at`: the
/// payload's file offset); a file offset that would overflow is null.
pub fn json(payload: &[u8], at: u64, obfuscated: Option<bool>) -> Option<Value> {
    let f = fields(payload).ok()?;
    let region = |(offset, size): (u64, u64)| {
        json!({
            "offset": offset,
            "size": size,
            "file_offset": at.checked_add(offset),
        })
    };
    Some(json!({
        "format": "OpenVINO compiled model export",
        "header_size": LEN,
        "payload_size": payload.len(),
        "payload_file_offset": at,
        "custom_data": region(f.custom_data),
        "weights": region(f.consts),
        "model": region(f.model),
        "model_xor_obfuscated": obfuscated,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(regions: [(u64, u64); 3], total: usize) -> Vec<u8> {
        let mut p = vec![0u8; total];
        for (i, (o, s)) in regions.iter().enumerate() {
            p[i * 16..i * 16 + 8].copy_from_slice(&o.to_le_bytes());
            p[i * 16 + 8..i * 16 + 16].copy_from_slice(&s.to_le_bytes());
        }
        p
    }

    #[test]
    fn regions_are_checked() {
        let h = parse(&header([(48, 2), (50, 4), (54, 10)], 64)).unwrap();
        assert_eq!(
            h.model,
            Span {
                offset: 54,
                len: 10
            }
        );
        let e = parse(&header([(48, 2), (50, 4), (54, 11)], 64)).unwrap_err();
        assert!(e.to_string().contains("offsets 32..48): model XML"), "{e}");
        let e = parse(&header([(48, 2), (u64::MAX, 4), (54, 1)], 64)).unwrap_err();
        assert!(e.to_string().contains("offsets 16..32): weights"), "{e}");
        assert!(
            parse(&[0; 47])
                .unwrap_err()
                .to_string()
                .contains("needs 48")
        );
    }
}
