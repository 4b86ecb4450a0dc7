//! The 24-byte header of an MLX payload: 4 bytes left for a flatbuffer
//! root offset, the magic `MLX0` at 4..8, then the data segment's u64
//! offset (8..16) and u64 size (16..24), little-endian. The graph's
//! flatbuffer fills the bytes from 24 up to the data segment.

use serde_json::{Value, json};

use crate::format::{Error, Result, Span};

/// Bytes of the header.
pub const LEN: u64 = 24;
/// The magic at bytes 4..8.
pub const MAGIC: &[u8; 4] = b"MLX0";

/// Where the flatbuffer and the data segment are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The graph's flatbuffer.
    pub flatbuffer: Span,
    /// The data segment (empty in what ExecuTorch 1.5.1 writes).
    pub data_segment: Span,
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
            "MLX header: payload is {total} bytes, the header needs {LEN}"
        )));
    }
    if &payload[4..8] != MAGIC {
        return Err(Error::new(format!(
            "MLX header at offset 4: magic {:?}, not \"MLX0\"",
            String::from_utf8_lossy(&payload[4..8])
        )));
    }
    let (offset, size) = (u64_at(payload, 8), u64_at(payload, 16));
    let data_segment = Span::checked(offset, size, total, || {
        "MLX header (offsets 8..24): data segment".to_owned()
    })?;
    if offset < LEN + 8 {
        return Err(Error::new(format!(
            "MLX header (offset 8): data segment offset {offset} leaves no room for the graph after the {LEN}-byte header"
        )));
    }
    Ok(Header {
        flatbuffer: Span {
            offset: LEN,
            len: offset - LEN,
        },
        data_segment,
    })
}

/// `header.json` for a payload at file offset `at`.
pub fn json(payload: &[u8], at: u64) -> Option<Value> {
    let h = parse(payload).ok()?;
    Some(json!({
        "magic": "MLX0",
        "header_length": LEN,
        "payload_size": payload.len(),
        "payload_file_offset": at,
        "flatbuffer_offset": h.flatbuffer.offset,
        "flatbuffer_size": h.flatbuffer.len,
        "flatbuffer_file_offset": at + h.flatbuffer.offset,
        "data_segment_offset": h.data_segment.offset,
        "data_segment_size": h.data_segment.len,
        "data_segment_file_offset": at + h.data_segment.offset,
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
        let h = parse(&header(64, 0, 64)).unwrap();
        assert_eq!(
            h.flatbuffer,
            Span {
                offset: 24,
                len: 40
            }
        );
        let e = parse(&header(64, 1, 64)).unwrap_err().to_string();
        assert!(e.contains("(offsets 8..24): data segment"), "{e}");
        let e = parse(&header(20, 0, 64)).unwrap_err().to_string();
        assert!(e.contains("data segment offset 20"), "{e}");
        let mut p = header(64, 0, 64);
        p[4] = b'X';
        assert!(
            parse(&p)
                .unwrap_err()
                .to_string()
                .contains("magic \"XLX0\"")
        );
    }
}
