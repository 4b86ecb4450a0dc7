//! A member as the central directory records it, and whether its bytes can
//! be served as a range of the file.

use super::super::super::{Error, Result, Span};

/// One member of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The name recorded in the central directory.
    pub name: String,
    /// Compression method (0 is stored; 8 is deflate).
    pub method: u16,
    /// CRC-32 the central directory records for the uncompressed bytes.
    pub crc32: u32,
    /// Size once uncompressed.
    pub uncompressed_size: u64,
    /// Where the local header starts.
    pub header_offset: u64,
    /// The member's data as stored in the file (compressed size long).
    pub data: Span,
    /// Where this member's entry starts in the central directory.
    pub central_offset: u64,
}

impl Member {
    /// The data span when the member is stored, or an error saying why its
    /// bytes cannot be served as a range of the file.
    pub fn stored(&self) -> Result<Span> {
        if self.method != 0 {
            return Err(Error::new(format!(
                "zip member {} is compressed (method {}, {}); ptefs serves members as byte ranges \
                 of the package and reads only stored members (method 0), as ExecuTorch writes them",
                self.name,
                self.method,
                method_name(self.method)
            )));
        }
        if self.uncompressed_size != self.data.len {
            return Err(Error::new(format!(
                "zip member {} is stored but its sizes differ: {} bytes stored, {} uncompressed",
                self.name, self.data.len, self.uncompressed_size
            )));
        }
        Ok(self.data)
    }
}

fn method_name(method: u16) -> &'static str {
    match method {
        8 => "deflate",
        9 => "deflate64",
        12 => "bzip2",
        14 => "lzma",
        93 => "zstandard",
        95 => "xz",
        99 => "AES encrypted",
        _ => "unknown method",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_members_are_refused_by_name() {
        let m = Member {
            name: "program.safetensors".into(),
            method: 8,
            crc32: 0,
            uncompressed_size: 10,
            header_offset: 0,
            data: Span { offset: 40, len: 4 },
            central_offset: 0,
        };
        let e = m.stored().unwrap_err().to_string();
        assert!(
            e.contains("program.safetensors") && e.contains("deflate"),
            "{e}"
        );
    }
}
