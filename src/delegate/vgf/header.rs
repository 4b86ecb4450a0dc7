//! The 128-byte header of a VGF file: magic, the Vulkan header version the
//! encoder used, the format version, and the offset and size of its four
//! sections, all little-endian.

use serde_json::{Value, json};

use crate::format::{Error, Result, Span, le};

/// Bytes of the header.
pub const LEN: usize = 128;

/// The magic of current files, at bytes 0..4.
pub const MAGIC: &[u8; 4] = b"VGF1";

/// The magic of files before the four-character one, a little-endian u32.
pub const OLD_MAGIC: u32 = 0xF0E1_D2C3;

/// The sections in header order: (name, byte offset of its offset field).
pub const SECTIONS: [(&str, usize); 4] = [
    ("module_table", 16),
    ("model_sequence_table", 32),
    ("model_resource_table", 48),
    ("constants", 64),
];

/// A payload's header, each section checked to lie inside the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The magic as written.
    pub magic: [u8; 4],
    /// `VK_HEADER_VERSION` of the encoder (bytes 4..6).
    pub vk_header_version: u16,
    /// Major, minor and patch (bytes 8, 9, 10).
    pub version: [u8; 3],
    /// Each section's offset and size fields as written.
    pub fields: [(u64, u64); 4],
    /// Each section, or why it is not inside the payload.
    pub sections: [std::result::Result<Span, String>; 4],
}

impl Header {
    /// Section `i` (in [`SECTIONS`] order), when it is inside the payload.
    pub fn section(&self, i: usize) -> Option<Span> {
        self.sections.get(i)?.as_ref().ok().copied()
    }

    /// `header.json`: the fields, and each section's offsets in the payload
    /// and in the file (`at`: the payload's file offset).
    pub fn json(&self, payload_len: usize, at: u64) -> Value {
        let mut sections = serde_json::Map::new();
        for (i, (name, field)) in SECTIONS.iter().enumerate() {
            let (offset, size) = self.fields[i];
            let mut s = json!({
                "offset": offset,
                "size": size,
                "file_offset": at.checked_add(offset),
                "header_field_offset": field,
            });
            if let (Err(why), Some(o)) = (&self.sections[i], s.as_object_mut()) {
                o.insert("error".into(), json!(why));
            }
            sections.insert((*name).to_owned(), s);
        }
        json!({
            "magic": String::from_utf8_lossy(&self.magic),
            "magic_hex": self.magic.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            "vk_header_version": self.vk_header_version,
            "version": {
                "major": self.version[0],
                "minor": self.version[1],
                "patch": self.version[2],
            },
            "header_size": LEN,
            "payload_size": payload_len,
            "payload_file_offset": at,
            "sections": sections,
        })
    }
}

/// Reads the header of `payload`: it must be at least [`LEN`] bytes with
/// `VGF1` (or the old numeric magic) first; a section that does not lie
/// inside the payload is not an error here but a section that says why.
pub fn parse(payload: &[u8]) -> Result<Header> {
    let short = || {
        Error::new(format!(
            "payload is {} bytes, the VGF header needs {LEN}",
            payload.len()
        ))
    };
    if payload.len() < LEN {
        return Err(short());
    }
    let magic: [u8; 4] = le::array(payload, 0).ok_or_else(short)?;
    if &magic != MAGIC && u32::from_le_bytes(magic) != OLD_MAGIC {
        return Err(Error::new(format!(
            "payload offset 0: magic is \"{}\", expected VGF1",
            magic.escape_ascii()
        )));
    }
    let total = payload.len() as u64;
    let u64_at = |at: usize| le::u64_at(payload, at as u64).ok_or_else(short);
    let mut fields = [(0, 0); SECTIONS.len()];
    for (f, (_, at)) in fields.iter_mut().zip(SECTIONS) {
        *f = (u64_at(at)?, u64_at(at + 8)?);
    }
    let sections = std::array::from_fn(|i| {
        let (name, at) = SECTIONS[i];
        let (offset, size) = fields[i];
        if offset < LEN as u64 && size > 0 {
            return Err(format!(
                "header offset {at}: {name} section offset {offset} is inside the {LEN}-byte header"
            ));
        }
        Span::checked(offset, size, total, || {
            format!("header offsets {at}..{}: {name} section", at + 16)
        })
        .map_err(|e| e.to_string())
    });
    Ok(Header {
        magic,
        vk_header_version: le::u16_at(payload, 4).ok_or_else(short)?,
        version: le::array(payload, 8).ok_or_else(short)?,
        fields,
        sections,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(sections: [(u64, u64); 4], total: usize) -> Vec<u8> {
        let mut p = vec![0u8; total.max(LEN)];
        p[..4].copy_from_slice(MAGIC);
        p[8..11].copy_from_slice(&[0, 5, 0]);
        for (i, (o, s)) in sections.iter().enumerate() {
            p[16 + 16 * i..24 + 16 * i].copy_from_slice(&o.to_le_bytes());
            p[24 + 16 * i..32 + 16 * i].copy_from_slice(&s.to_le_bytes());
        }
        p.truncate(total);
        p
    }

    #[test]
    fn sections_are_checked_one_by_one() {
        let h = parse(&header(
            [(128, 8), (136, 8), (144, 8), (152, u64::MAX)],
            200,
        ))
        .unwrap();
        assert_eq!(h.version, [0, 5, 0]);
        assert_eq!(
            h.section(0),
            Some(Span {
                offset: 128,
                len: 8
            })
        );
        let e = h.sections[3].as_ref().unwrap_err();
        assert!(
            e.contains("header offsets 64..80: constants section"),
            "{e}"
        );
        let h = parse(&header([(16, 8), (136, 8), (144, 8), (152, 8)], 200)).unwrap();
        assert!(
            h.sections[0]
                .as_ref()
                .unwrap_err()
                .contains("inside the 128-byte header")
        );
    }

    #[test]
    fn short_payloads_and_other_magics_are_named() {
        let e = parse(&[0; 100]).unwrap_err().to_string();
        assert!(e.contains("payload is 100 bytes"), "{e}");
        let mut p = header([(128, 0); 4], 128);
        p[..4].copy_from_slice(b"VGF2");
        assert!(parse(&p).unwrap_err().to_string().contains("expected VGF1"));
        p[..4].copy_from_slice(&OLD_MAGIC.to_le_bytes());
        assert!(parse(&p).is_ok());
    }
}
