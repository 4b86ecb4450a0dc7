//! The fixed headers at the start of `.pte` and `.ptd` files.

use super::le;
use super::{Error, Result};

/// The header of `what` cut off at `at`, `n` bytes short of a field: what
/// a read past the file says (the length checks come first, so it is
/// never seen).
fn cut_off(what: &'static str, bytes: &[u8], at: u64, n: u64) -> Error {
    Error::CutOff {
        what,
        at,
        len: bytes.len() as u64,
        needed: at + n,
    }
}

/// Four magic bytes as text if printable, else as hex.
pub(crate) fn show_magic(magic: &[u8]) -> String {
    if magic.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("\"{}\"", String::from_utf8_lossy(magic))
    } else {
        let hex: Vec<String> = magic.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{}", hex.join(""))
    }
}

/// The header of a `.pte`: the flatbuffer root offset, the file identifier
/// and the optional extended header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PteHeader {
    /// Bytes 0..4: offset of the flatbuffer root table.
    pub root_offset: u32,
    /// Bytes 4..8, `ET` and two digits.
    pub magic: [u8; 4],
    /// The `eh??` header at byte 8, absent when there are no segment bytes.
    pub extended: Option<PteExtendedHeader>,
}

/// The extended header of a `.pte`, at byte 8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PteExtendedHeader {
    /// Bytes 8..12, `eh` and two digits.
    pub magic: [u8; 4],
    /// Bytes 12..16: header length counted from byte 8 (24 in old files, 32 now).
    pub length: u32,
    /// Bytes 16..24: length of the flatbuffer, counted from byte 0.
    pub program_size: u64,
    /// Bytes 24..32: file offset that segment offsets are relative to.
    pub segment_base_offset: u64,
    /// Bytes 32..40 when the header is long enough: total segment bytes.
    pub segment_data_size: Option<u64>,
}

const PROGRAM_SIZE: &str = "extended header: program size (bytes 16..24)";
const SEGMENT_BASE: &str = "extended header: segment base offset (bytes 24..32)";

/// A header field `what` whose `value` is wrong because of `problem`.
fn field(what: &'static str, value: impl ToString, problem: String) -> Error {
    Error::HeaderField {
        field: what,
        value: value.to_string(),
        problem,
    }
}

/// `a + b`, checked to be at most the file length `len`.
fn sum_within(what: &'static str, a: u64, b: u64, len: u64) -> Result<u64> {
    match a.checked_add(b) {
        Some(end) if end <= len => Ok(end),
        end => Err(Error::HeaderSum {
            what,
            a,
            b,
            end,
            len,
        }),
    }
}

/// Shortest extended header: magic, length, program size, segment base.
const PTE_EXT_MIN: u32 = 0x18;

impl PteHeader {
    /// Parses the header of a file whose magic says it is a program.
    pub fn parse(bytes: &[u8]) -> Result<PteHeader> {
        let cut = |at, n| cut_off("program header", bytes, at, n);
        let size = bytes.len() as u64;
        if bytes.len() < 8 {
            return Err(Error::TooShort {
                what: "program",
                len: size,
                needed: "its header (8 bytes)",
            });
        }
        let root_offset = le::u32_at(bytes, 0).ok_or_else(|| cut(0, 4))?;
        let magic = le::array(bytes, 4).ok_or_else(|| cut(4, 4))?;
        let extended = if bytes.len() >= 12 && &bytes[8..10] == b"eh" {
            if bytes.len() < 8 + PTE_EXT_MIN as usize {
                return Err(Error::CutOff {
                    what: "extended header",
                    at: 8,
                    len: size,
                    needed: 8 + u64::from(PTE_EXT_MIN),
                });
            }
            let length = le::u32_at(bytes, 12).ok_or_else(|| cut(12, 4))?;
            if length < PTE_EXT_MIN {
                return Err(field(
                    "extended header length (bytes 12..16)",
                    length,
                    format!("below the minimum {PTE_EXT_MIN}"),
                ));
            }
            if 8 + u64::from(length) > size {
                return Err(field(
                    "extended header length (bytes 12..16)",
                    length,
                    format!(
                        "so it would end at byte {} past the end of the file at {size}",
                        8 + u64::from(length)
                    ),
                ));
            }
            let program_size = le::u64_at(bytes, 16).ok_or_else(|| cut(16, 8))?;
            let segment_base_offset = le::u64_at(bytes, 24).ok_or_else(|| cut(24, 8))?;
            let segment_data_size = if length >= 0x20 {
                Some(le::u64_at(bytes, 32).ok_or_else(|| cut(32, 8))?)
            } else {
                None
            };
            if program_size > size {
                return Err(field(
                    PROGRAM_SIZE,
                    program_size,
                    format!("past the end of the file at {size}"),
                ));
            }
            if program_size < 8 + u64::from(length) {
                return Err(field(
                    PROGRAM_SIZE,
                    program_size,
                    format!(
                        "smaller than the headers it must contain ({} bytes)",
                        8 + length
                    ),
                ));
            }
            if segment_base_offset > size {
                return Err(field(
                    SEGMENT_BASE,
                    segment_base_offset,
                    format!("past the end of the file at {size}"),
                ));
            }
            if segment_base_offset != 0 && segment_base_offset < program_size {
                return Err(field(
                    SEGMENT_BASE,
                    segment_base_offset,
                    format!("inside the program data which ends at {program_size}"),
                ));
            }
            if let Some(data) = segment_data_size {
                sum_within(
                    "extended header: segment base offset (bytes 24..32) + segment data size (bytes 32..40)",
                    segment_base_offset,
                    data,
                    size,
                )?;
            }
            Some(PteExtendedHeader {
                magic: le::array(bytes, 8).ok_or_else(|| cut(8, 4))?,
                length,
                program_size,
                segment_base_offset,
                segment_data_size,
            })
        } else {
            None
        };
        Ok(PteHeader {
            root_offset,
            magic,
            extended,
        })
    }

    /// Bytes `0..flatbuffer_len()` hold the flatbuffer.
    pub fn flatbuffer_len(&self, file_len: u64) -> u64 {
        self.extended.as_ref().map_or(file_len, |e| e.program_size)
    }

    /// Segment offsets are relative to this file offset.
    pub fn segment_base(&self) -> u64 {
        self.extended.as_ref().map_or(0, |e| e.segment_base_offset)
    }
}

/// The header of a `.ptd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtdHeader {
    /// Bytes 0..4: offset of the flatbuffer root table.
    pub root_offset: u32,
    /// Bytes 4..8, `FT` and two digits.
    pub magic: [u8; 4],
    /// Bytes 8..12, `FH01`.
    pub header_magic: [u8; 4],
    /// Bytes 12..16: header length counted from byte 8 (40).
    pub length: u32,
    /// Bytes 16..24: the header's length padded for alignment.
    pub padded_header_size: u64,
    /// Bytes 24..32: flatbuffer bytes after the padded header.
    pub flatbuffer_size: u64,
    /// Bytes 32..40: file offset that segment offsets are relative to.
    pub segment_base_offset: u64,
    /// Bytes 40..48: total segment bytes.
    pub segment_data_size: u64,
}

const PTD_EXT_MIN: u32 = 40;

impl PtdHeader {
    /// Parses the header of a file whose magic says it is a data file.
    pub fn parse(bytes: &[u8]) -> Result<PtdHeader> {
        let cut = |at, n| cut_off("data file header", bytes, at, n);
        let size = bytes.len() as u64;
        if bytes.len() < 8 + PTD_EXT_MIN as usize {
            return Err(Error::TooShort {
                what: "file",
                len: size,
                needed: "the data file header (48 bytes)",
            });
        }
        let header_magic = le::array(bytes, 8).ok_or_else(|| cut(8, 4))?;
        if &header_magic[..2] != b"FH" {
            return Err(Error::HeaderField {
                field: "data file header magic (bytes 8..12)",
                value: show_magic(&header_magic),
                problem: "expected \"FH01\"".to_owned(),
            });
        }
        let length = le::u32_at(bytes, 12).ok_or_else(|| cut(12, 4))?;
        if length < PTD_EXT_MIN {
            return Err(field(
                "data file header length (bytes 12..16)",
                length,
                format!("below the minimum {PTD_EXT_MIN}"),
            ));
        }
        let h = PtdHeader {
            root_offset: le::u32_at(bytes, 0).ok_or_else(|| cut(0, 4))?,
            magic: le::array(bytes, 4).ok_or_else(|| cut(4, 4))?,
            header_magic,
            length,
            padded_header_size: le::u64_at(bytes, 16).ok_or_else(|| cut(16, 8))?,
            flatbuffer_size: le::u64_at(bytes, 24).ok_or_else(|| cut(24, 8))?,
            segment_base_offset: le::u64_at(bytes, 32).ok_or_else(|| cut(32, 8))?,
            segment_data_size: le::u64_at(bytes, 40).ok_or_else(|| cut(40, 8))?,
        };
        let fb_end = sum_within(
            "data file header: flatbuffer end (bytes 16..24 + bytes 24..32)",
            h.padded_header_size,
            h.flatbuffer_size,
            size,
        )?;
        sum_within(
            "data file header: segment end (bytes 32..40 + bytes 40..48)",
            h.segment_base_offset,
            h.segment_data_size,
            size,
        )?;
        if h.segment_base_offset < fb_end && h.segment_data_size > 0 {
            return Err(field(
                "data file header: segment base offset (bytes 32..40)",
                h.segment_base_offset,
                format!("inside the flatbuffer which ends at {fb_end}"),
            ));
        }
        Ok(h)
    }

    /// Bytes `0..flatbuffer_len()` hold the flatbuffer.
    pub fn flatbuffer_len(&self) -> u64 {
        self.padded_header_size + self.flatbuffer_size
    }
}
