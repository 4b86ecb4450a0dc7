//! The 24-byte header MLX and MPS payloads share: 4 leading bytes (written
//! as zeros, where a bare flatbuffer's root offset would be), the magic at
//! 4..8, then the u64 offset (8..16) and u64 size (16..24), little-endian
//! and from the payload's first byte, of the segment after the graph. The
//! graph's flatbuffer runs from byte 24 up to that segment.

use serde_json::{Value, json};

use crate::format::{Error, Result, Span, le};

/// Bytes of the header.
pub const LEN: u64 = 24;
/// Fewest bytes a flatbuffer with an identifier can have (root offset and
/// identifier).
const MIN_GRAPH: u64 = 8;

/// What one backend's header is called and holds.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// The backend's name in errors (`MLX`).
    pub name: &'static str,
    /// The magic at bytes 4..8.
    pub magic: &'static [u8; 4],
    /// What the segment after the graph holds (`data segment`); its
    /// `header.json` keys are this with `_` for spaces.
    pub segment: &'static str,
    /// What a payload whose leading bytes are not zero may be instead,
    /// added to errors about the offsets; the leading bytes are then
    /// shown in `header.json` too.
    pub bare: Option<&'static str>,
}

/// Where the flatbuffer and the segment are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The first four bytes (0 as written).
    pub leading: u32,
    /// The graph's flatbuffer.
    pub flatbuffer: Span,
    /// The segment after it.
    pub segment: Span,
}

impl Format {
    /// Reads and checks `payload`'s header.
    pub fn parse(&self, payload: &[u8]) -> Result<Header> {
        let name = self.name;
        let total = payload.len() as u64;
        let short = || {
            Error::new(format!(
                "{name} header: payload is {total} bytes, the header needs {LEN}"
            ))
        };
        if total < LEN {
            return Err(short());
        }
        let magic: [u8; 4] = le::array(payload, 4).ok_or_else(short)?;
        if &magic != self.magic {
            return Err(Error::new(format!(
                "{name} header at offset 4: magic {:?}, not \"{}\"",
                String::from_utf8_lossy(&magic),
                String::from_utf8_lossy(self.magic)
            )));
        }
        let leading = le::u32_at(payload, 0).ok_or_else(short)?;
        // A bare graph has its identifier where the magic is: its first
        // bytes (a root offset) then tell it from a header, which writes
        // zeros.
        let hint = |e: Error| match self.bare {
            Some(bare) if leading != 0 => {
                Error::new(format!("{e} (bytes 0..4 are not zero: {bare})"))
            }
            _ => e,
        };
        let offset = le::u64_at(payload, 8).ok_or_else(short)?;
        let size = le::u64_at(payload, 16).ok_or_else(short)?;
        let segment = Span::checked(offset, size, total, || {
            format!("{name} header (offsets 8..24): {}", self.segment)
        })
        .map_err(hint)?;
        if offset < LEN + MIN_GRAPH {
            return Err(hint(Error::new(format!(
                "{name} header (offset 8): {} offset {offset} leaves no room for the graph after the {LEN}-byte header",
                self.segment
            ))));
        }
        Ok(Header {
            leading,
            flatbuffer: Span {
                offset: LEN,
                len: offset - LEN,
            },
            segment,
        })
    }

    /// `header.json` for a payload at file offset `at`.
    pub fn json(&self, payload: &[u8], at: u64) -> Option<Value> {
        let h = self.parse(payload).ok()?;
        let key = self.segment.replace(' ', "_");
        let mut v = json!({
            "magic": String::from_utf8_lossy(self.magic),
            "header_length": LEN,
        });
        let o = v.as_object_mut()?;
        if self.bare.is_some() {
            o.insert("leading_bytes".into(), json!(h.leading));
        }
        for (k, value) in [
            ("payload_size".to_owned(), json!(payload.len())),
            ("payload_file_offset".to_owned(), json!(at)),
            ("flatbuffer_offset".to_owned(), json!(h.flatbuffer.offset)),
            ("flatbuffer_size".to_owned(), json!(h.flatbuffer.len)),
            (
                "flatbuffer_file_offset".to_owned(),
                json!(at + h.flatbuffer.offset),
            ),
            (format!("{key}_offset"), json!(h.segment.offset)),
            (format!("{key}_size"), json!(h.segment.len)),
            (format!("{key}_file_offset"), json!(at + h.segment.offset)),
        ] {
            o.insert(k, value);
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MLX: Format = Format {
        name: "MLX",
        magic: b"MLX0",
        segment: "data segment",
        bare: None,
    };
    const MPS: Format = Format {
        name: "MPS",
        magic: b"MP00",
        segment: "constant data",
        bare: Some("an MPSGraph flatbuffer without the MP00 header?"),
    };

    fn header(f: &Format, offset: u64, size: u64, total: usize) -> Vec<u8> {
        let mut p = vec![0u8; total];
        p[4..8].copy_from_slice(f.magic);
        p[8..16].copy_from_slice(&offset.to_le_bytes());
        p[16..24].copy_from_slice(&size.to_le_bytes());
        p
    }

    #[test]
    fn fields_are_checked() {
        let h = MLX.parse(&header(&MLX, 64, 0, 64)).unwrap();
        assert_eq!(
            h.flatbuffer,
            Span {
                offset: 24,
                len: 40
            }
        );
        let h = MPS.parse(&header(&MPS, 48, 16, 64)).unwrap();
        assert_eq!(
            h.flatbuffer,
            Span {
                offset: 24,
                len: 24
            }
        );
        assert_eq!(
            h.segment,
            Span {
                offset: 48,
                len: 16
            }
        );
        let e = MLX.parse(&header(&MLX, 64, 1, 64)).unwrap_err().to_string();
        assert!(e.contains("(offsets 8..24): data segment"), "{e}");
        let e = MLX.parse(&header(&MLX, 20, 0, 64)).unwrap_err().to_string();
        assert!(e.contains("data segment offset 20"), "{e}");
        let e = MPS
            .parse(&header(&MPS, 48, 17, 64))
            .unwrap_err()
            .to_string();
        assert!(e.contains("(offsets 8..24): constant data"), "{e}");
        let e = MPS.parse(&header(&MPS, 30, 0, 64)).unwrap_err().to_string();
        assert!(e.contains("constant data offset 30"), "{e}");
        let e = MPS.parse(&[0u8; 23]).unwrap_err().to_string();
        assert!(e.contains("MPS header: payload is 23 bytes"), "{e}");
        let mut p = header(&MLX, 64, 0, 64);
        p[4] = b'X';
        let e = MLX.parse(&p).unwrap_err().to_string();
        assert!(e.contains("magic \"XLX0\", not \"MLX0\""), "{e}");
    }

    #[test]
    fn a_bare_graph_is_named_only_where_the_backend_says_what_it_may_be() {
        let mut p = header(&MPS, 30, 0, 64);
        p[0] = 1;
        let e = MPS.parse(&p).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "(bytes 0..4 are not zero: an MPSGraph flatbuffer without the MP00 header?)"
            ),
            "{e}"
        );
        let mut p = header(&MLX, 30, 0, 64);
        p[0] = 1;
        let e = MLX.parse(&p).unwrap_err().to_string();
        assert!(!e.contains("bytes 0..4"), "{e}");
    }

    #[test]
    fn header_json_keys_follow_the_segment() {
        let p = header(&MPS, 48, 16, 64);
        let v = MPS.json(&p, 100).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys[..3], ["magic", "header_length", "leading_bytes"]);
        assert_eq!(v["constant_data_file_offset"], 148);
        let v = MLX.json(&header(&MLX, 64, 0, 64), 0).unwrap();
        assert!(v.get("leading_bytes").is_none());
        assert_eq!(v["data_segment_size"], 0);
    }
}
