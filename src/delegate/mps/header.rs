//! The 24-byte header of an MPS payload: 4 bytes written as zeros (where a
//! bare flatbuffer's root offset would be), the magic `MP00` at 4..8, then
//! the constant data's u64 offset (8..16) and u64 size (16..24),
//! little-endian, both relative to the payload's first byte. The graph's
//! flatbuffer starts at byte 24 and runs up to the constant data (the
//! writer pads it to 16 bytes in between).

use serde_json::{Value, json};

use crate::format::{Error, Result, Span};

/// Bytes of the header.
pub const LEN: u64 = 24;
/// The magic at bytes 4..8.
pub const MAGIC: &[u8; 4] = b"MP00";
/// Fewest bytes a flatbuffer with an identifier can have (root offset and
/// identifier).
const MIN_GRAPH: u64 = 8;

/// Where the flatbuffer and the constant data are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The first four bytes (0 as written).
    pub leading: u32,
    /// The graph's flatbuffer.
    pub flatbuffer: Span,
    /// The constant data.
    pub constant_data: Span,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        w.copy_from_slice(s);
    }
    u64::from_le_bytes(w)
}

/// Reads and checks `payload`'s header.
pub fn parse(payload: &[u8]) -> Result<Header> {
    let total = payload.len() as u64;
    if total < LEN {
        return Err(Error::new(format!(
            "MPS header: payload is {total} bytes, the header needs {LEN}"
        )));
    }
    if &payload[4..8] != MAGIC {
        return Err(Error::new(format!(
            "MPS header at offset 4: magic {:?}, not \"MP00\"",
            String::from_utf8_lossy(&payload[4..8])
        )));
    }
    let mut lead = [0u8; 4];
    lead.copy_from_slice(&payload[..4]);
    // A bare graph has its identifier where the magic is: its first bytes
    // (a root offset) then tell it from a header, which writes zeros.
    let hint = |e: Error| {
        if lead == [0; 4] {
            e
        } else {
            Error::new(format!(
                "{e} (bytes 0..4 are not zero: an MPSGraph flatbuffer without the MP00 header?)"
            ))
        }
    };
    let (offset, size) = (u64_at(payload, 8), u64_at(payload, 16));
    let constant_data = Span::checked(offset, size, total, || {
        "MPS header (offsets 8..24): constant data".to_owned()
    })
    .map_err(hint)?;
    if offset < LEN + MIN_GRAPH {
        return Err(hint(Error::new(format!(
            "MPS header (offset 8): constant data offset {offset} leaves no room for the graph after the {LEN}-byte header"
        ))));
    }
    Ok(Header {
        leading: u32::from_le_bytes(lead),
        flatbuffer: Span {
            offset: LEN,
            len: offset - LEN,
        },
        constant_data,
    })
}

/// `header.json` for a payload at file offset `at`.
pub fn json(payload: &[u8], at: u64) -> Option<Value> {
    let h = parse(payload).ok()?;
    Some(json!({
        "magic": "MP00",
        "header_length": LEN,
        "leading_bytes": h.leading,
        "payload_size": payload.len(),
        "payload_file_offset": at,
        "flatbuffer_offset": h.flatbuffer.offset,
        "flatbuffer_size": h.flatbuffer.len,
        "flatbuffer_file_offset": at + h.flatbuffer.offset,
        "constant_data_offset": h.constant_data.offset,
        "constant_data_size": h.constant_data.len,
        "constant_data_file_offset": at + h.constant_data.offset,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(offset: u64, size: u64, total: usize) -> Vec<u8> {
        let mut p = vec![0u8; total];
        p[4..8].copy_from_slice(MAGIC);
        p[8..16].copy_from_slice(&offset.to_le_bytes());
        p[16..24].copy_from_slice(&size.to_le_bytes());
        p
    }

    #[test]
    fn fields_are_checked() {
        let h = parse(&header(48, 16, 64)).unwrap();
        assert_eq!(
            h.flatbuffer,
            Span {
                offset: 24,
                len: 24
            }
        );
        assert_eq!(
            h.constant_data,
            Span {
                offset: 48,
                len: 16
            }
        );
        let e = parse(&header(48, 17, 64)).unwrap_err().to_string();
        assert!(e.contains("(offsets 8..24): constant data"), "{e}");
        let e = parse(&header(30, 0, 64)).unwrap_err().to_string();
        assert!(e.contains("constant data offset 30"), "{e}");
        let e = parse(&[0u8; 23]).unwrap_err().to_string();
        assert!(e.contains("payload is 23 bytes"), "{e}");
        let mut p = header(48, 0, 64);
        p[5] = b'X';
        let e = parse(&p).unwrap_err().to_string();
        assert!(e.contains("magic \"MX00\""), "{e}");
    }
}
