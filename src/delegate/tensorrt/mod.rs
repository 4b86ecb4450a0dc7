//! TensorRT engines (`TensorRTBackend`, from Torch-TensorRT's ExecuTorch
//! runtime): a 32-byte header `<4sIIIQ8s` (magic `TR01`, or `TR02` when the
//! metadata carries aliased I/O; metadata offset and size; engine offset,
//! 16-byte aligned, and size; 8 reserved bytes), the metadata JSON, and
//! the serialized engine.

mod backend;

pub use backend::TensorRt;

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "TensorRTBackend";

/// Bytes of the header.
pub const HEADER_LEN: u64 = 32;

/// The engine's alignment the runtime requires.
pub const ENGINE_ALIGNMENT: u64 = 16;

/// The header's fields as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The magic (`TR01`, `TR02`).
    pub magic: [u8; 4],
    /// Metadata offset in the payload.
    pub metadata_offset: u32,
    /// Metadata size.
    pub metadata_size: u32,
    /// Engine offset in the payload.
    pub engine_offset: u32,
    /// Engine size.
    pub engine_size: u64,
    /// The reserved bytes.
    pub reserved: [u8; 8],
}

/// Reads the header fields, `None` when the payload is shorter.
pub fn header(payload: &[u8]) -> Option<Header> {
    use crate::format::le::{array, u32_at, u64_at};
    Some(Header {
        magic: array(payload, 0)?,
        metadata_offset: u32_at(payload, 4)?,
        metadata_size: u32_at(payload, 8)?,
        engine_offset: u32_at(payload, 12)?,
        engine_size: u64_at(payload, 16)?,
        reserved: array(payload, 24)?,
    })
}

impl Header {
    /// What the runtime's own checks (`TensorRTBlobHeader::parse`) would
    /// refuse, in the order it checks; empty when it accepts the header.
    /// Where its arithmetic would wrap, ptefs refuses too.
    pub fn refusals(&self, total: u64) -> Vec<String> {
        let mut out = Vec::new();
        if &self.magic != b"TR01" && &self.magic != b"TR02" {
            out.push(format!(
                "magic {:?} is neither TR01 nor TR02",
                String::from_utf8_lossy(&self.magic)
            ));
        }
        let (mo, ms, eo) = (
            u64::from(self.metadata_offset),
            u64::from(self.metadata_size),
            u64::from(self.engine_offset),
        );
        if mo < HEADER_LEN {
            out.push(format!(
                "metadata offset {mo} is inside the {HEADER_LEN}-byte header"
            ));
        }
        if eo % ENGINE_ALIGNMENT != 0 {
            out.push(format!(
                "engine offset {eo} is not {ENGINE_ALIGNMENT}-byte aligned"
            ));
        }
        if let Err(e) = crate::delegate::artifact::fits("metadata", mo, ms, total) {
            out.push(e);
        }
        // The runtime adds the engine's offset and size in `size_t`: a size
        // that wraps past 2^64 passes its check, so only a plain overrun is
        // its refusal (ptefs names the wrap as its own, see `wraps`).
        if let Some(end) = eo.checked_add(self.engine_size).filter(|&end| end > total) {
            out.push(format!(
                "engine: {} bytes at payload offset {eo} end at {end}, past the payload's {total} bytes",
                self.engine_size
            ));
        }
        if mo + ms > eo {
            out.push(format!(
                "metadata ({ms} bytes at {mo}) overlaps the engine at {eo}"
            ));
        }
        out
    }

    /// Where the engine's offset plus size wraps past 2^64: the runtime's
    /// check wraps with it and lets the blob through, to read far past it.
    pub fn wraps(&self) -> Option<String> {
        u64::from(self.engine_offset)
            .checked_add(self.engine_size)
            .is_none()
            .then(|| {
                format!(
                    "engine: {} bytes at payload offset {} wrap past 2^64; the runtime's own check wraps too and would let the blob through",
                    self.engine_size, self.engine_offset
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(engine_offset: u32, engine_size: u64) -> Vec<u8> {
        let mut b = b"TR01".to_vec();
        for v in [32u32, 2, engine_offset] {
            b.extend(v.to_le_bytes());
        }
        b.extend(engine_size.to_le_bytes());
        b.extend([1, 0, 0, 0, 0, 0, 0, 0]);
        b.extend(b"{}");
        b.resize(48, 0);
        b
    }

    #[test]
    fn the_runtime_checks_and_the_wrap_they_miss() {
        let ok = blob(48, 0);
        let h = header(&ok).unwrap();
        assert!(h.refusals(ok.len() as u64).is_empty());
        let odd = blob(40, 0);
        assert!(header(&odd).unwrap().refusals(48)[0].contains("aligned"));
        let wrap = blob(48, u64::MAX - 8);
        let h = header(&wrap).unwrap();
        assert!(h.refusals(48).is_empty());
        assert!(h.wraps().unwrap().contains("2^64"));
        assert!(header(&ok[..31]).is_none());
    }
}
