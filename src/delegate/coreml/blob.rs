//! Core ML's blob storage (`weights/weight.bin`, "blob v2"): a 64-byte
//! header (u32 blob count, u32 version 2, reserved), then for each blob a
//! 64-byte metadata record (u32 sentinel `0xDEADBEEF`, u32 blob data type,
//! u64 size in bytes, u64 offset of the data in the file, reserved) and its
//! data, each 64-byte aligned. A MIL `blobFileValue` gives the offset of a
//! blob's metadata record.

use crate::format::le;
use crate::format::{Error, Result, Span};

/// Size of the file header and of each metadata record.
pub const RECORD: u64 = 64;

/// The metadata record's sentinel.
pub const SENTINEL: u32 = 0xDEAD_BEEF;

/// One blob, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Offset of the metadata record in the weight file.
    pub metadata_offset: u64,
    /// The blob data type code (`Float32` = 2).
    pub dtype: u32,
    /// The data, relative to the weight file's first byte.
    pub data: Span,
}

/// The blob data type's name.
pub fn dtype_name(code: u32) -> String {
    let name = match code {
        1 => "Float16",
        2 => "Float32",
        3 => "UInt8",
        4 => "Int8",
        5 => "BFloat16",
        6 => "Int16",
        7 => "UInt16",
        8 => "Int4",
        9 => "UInt1",
        10 => "UInt2",
        11 => "UInt4",
        12 => "UInt3",
        13 => "UInt6",
        14 => "Int32",
        15 => "UInt32",
        16 => "Float8E4M3FN",
        17 => "Float8E5M2",
        n => return format!("BlobDataType({n})"),
    };
    name.to_owned()
}

/// The blob whose metadata record is at `offset` of weight file `file`
/// (`name` in errors).
pub fn at(file: &[u8], offset: u64, name: &str) -> Result<Blob> {
    let len = file.len() as u64;
    let head = Span::checked(0, RECORD, len, || format!("{name}: blob storage header"))?;
    // Inside the file: the spans were checked against it.
    let cut = |at| Error::new(format!("{name}: cut off at offset {at}"));
    let u32_at = |at| le::u32_at(file, at).ok_or_else(|| cut(at));
    let u64_at = |at| le::u64_at(file, at).ok_or_else(|| cut(at));
    let version = u32_at(head.offset + 4)?;
    if version != 2 {
        return Err(Error::new(format!(
            "{name} offset 4: blob storage version is {version}, expected 2"
        )));
    }
    if offset < RECORD {
        return Err(Error::new(format!(
            "{name}: blob metadata offset {offset} is inside the 64-byte storage header"
        )));
    }
    let meta = Span::checked(offset, RECORD, len, || {
        format!("{name}: blob metadata record at offset {offset}")
    })?;
    let at = meta.offset;
    let sentinel = u32_at(at)?;
    if sentinel != SENTINEL {
        return Err(Error::new(format!(
            "{name} offset {offset}: blob metadata sentinel is {sentinel:#010x}, expected 0xdeadbeef"
        )));
    }
    let dtype = u32_at(at + 4)?;
    let size = u64_at(at + 8)?;
    let data_offset = u64_at(at + 16)?;
    let data = Span::checked(data_offset, size, len, || {
        format!(
            "{name}: blob data of the record at offset {offset} (fields at {})",
            offset + 8
        )
    })?;
    Ok(Blob {
        metadata_offset: offset,
        dtype,
        data,
    })
}

/// The storage header's blob count and version, when the file has one.
pub fn header(file: &[u8]) -> Option<(u32, u32)> {
    if (file.len() as u64) < RECORD {
        return None;
    }
    Some((le::u32_at(file, 0)?, le::u32_at(file, 4)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> Vec<u8> {
        let mut f = vec![0u8; 192];
        f[0] = 1;
        f[4] = 2;
        f[64..68].copy_from_slice(&SENTINEL.to_le_bytes());
        f[68] = 2;
        f[72] = 8;
        f[80] = 128;
        f
    }

    #[test]
    fn finds_the_data() {
        let b = at(&file(), 64, "w").unwrap();
        assert_eq!(b.dtype, 2);
        assert_eq!(
            b.data,
            Span {
                offset: 128,
                len: 8
            }
        );
        assert_eq!(header(&file()), Some((1, 2)));
    }

    #[test]
    fn bad_records_say_where() {
        let mut f = file();
        assert!(
            at(&f, 0, "w")
                .unwrap_err()
                .to_string()
                .contains("inside the 64-byte")
        );
        assert!(
            at(&f, 160, "w")
                .unwrap_err()
                .to_string()
                .contains("record at offset 160")
        );
        f[72] = 200;
        assert!(
            at(&f, 64, "w")
                .unwrap_err()
                .to_string()
                .contains("blob data")
        );
        f[64] = 0;
        assert!(
            at(&f, 64, "w")
                .unwrap_err()
                .to_string()
                .contains("sentinel")
        );
        f[4] = 1;
        assert!(
            at(&f, 64, "w")
                .unwrap_err()
                .to_string()
                .contains("version is 1")
        );
        assert!(
            at(&f[..10], 64, "w")
                .unwrap_err()
                .to_string()
                .contains("header")
        );
    }
}
