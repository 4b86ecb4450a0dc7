//! The zip container of a `.ptn`: where each member's stored bytes lie.
//!
//! A package is served as byte ranges of the file itself, so what is needed
//! from the zip is, per member, the exact span of its data in the file and
//! proof that the span holds the member's bytes as they are (method 0,
//! "stored"). General zip crates are built around reading members through a
//! decompressing `Read`, and the one that exposes a member's data offset
//! (`zip`) brings deflate, bzip2, zstd and AES with it by default while
//! tolerating structures this reader must refuse (members overlapping each
//! other or the central directory). The parts needed here are three fixed
//! records and the zip64 extra field, so this module reads them itself:
//! end of central directory (and its zip64 twin), the central directory, and
//! each member's local header, with every offset checked against the file
//! size before use and every error naming the record and offset at fault.

mod central;
mod end;
mod local;
mod member;
mod plan;

use super::super::{Error, Result, Span};
use central::{central_entry, central_record};
use end::{directory, end_record};
use local::local_data;
pub use member::Member;
pub use plan::plan;

const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const EOCD_SIG: u32 = 0x0605_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const EOCD_LEN: usize = 22;
const CENTRAL_LEN: usize = 46;
const LOCAL_LEN: usize = 30;
const ZIP64_LOCATOR_LEN: usize = 20;
const ZIP64_EOCD_LEN: usize = 56;
/// The zip64 extended information extra field.
const ZIP64_EXTRA: u16 = 0x0001;
/// General purpose flag bit 0: the member is encrypted.
const ENCRYPTED: u16 = 1;

/// Little-endian reads at checked positions of `bytes`.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn u16(&self, at: u64) -> u16 {
        let at = at as usize;
        u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]])
    }
    fn u32(&self, at: u64) -> u32 {
        let at = at as usize;
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap_or_default())
    }
    fn u64(&self, at: u64) -> u64 {
        let at = at as usize;
        u64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap_or_default())
    }
    /// `len` bytes at `at`, checked to lie in the file.
    fn span(&self, at: u64, len: u64, what: impl FnOnce() -> String) -> Result<Span> {
        Span::checked(at, len, self.bytes.len() as u64, what)
    }
}

/// Reads every member's location, checked: records in the file, names
/// unique and UTF-8, local headers agreeing with the central directory,
/// and no two members (or a member and the central directory) sharing
/// bytes.
pub fn members(bytes: &[u8]) -> Result<Vec<Member>> {
    let r = Reader { bytes };
    let dir = directory(&r)?;
    let cd = r.span(dir.offset, dir.size, || "zip central directory".into())?;
    // Each entry takes at least CENTRAL_LEN bytes, which bounds the loop
    // and the allocation by the directory's real size.
    if dir.entries > cd.len / CENTRAL_LEN as u64 {
        return Err(Error::new(format!(
            "zip end of central directory claims {} members, but the central directory at offset {} is only {} bytes",
            dir.entries, cd.offset, cd.len
        )));
    }
    let mut out = Vec::with_capacity(dir.entries as usize);
    let mut at = cd.offset;
    for i in 0..dir.entries {
        let (member, next) = central_entry(&r, at, cd.end(), i)?;
        if out.iter().any(|m: &Member| m.name == member.name) {
            return Err(Error::new(format!(
                "zip member {} appears twice in the central directory (second entry at offset {at})",
                member.name
            )));
        }
        out.push(member);
        at = next;
    }
    check_disjoint(&out, cd)?;
    Ok(out)
}

/// Members may not share bytes with each other or with the central
/// directory: overlapping members are how a zip makes one byte range mean
/// two things, and nothing served here should.
fn check_disjoint(members: &[Member], cd: Span) -> Result<()> {
    let mut ranges: Vec<(u64, u64, &str)> = members
        .iter()
        .map(|m| (m.header_offset, m.data.end(), m.name.as_str()))
        .collect();
    ranges.push((cd.offset, cd.end(), "the central directory"));
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((a_start, a_end, a), (b_start, _, b)) = (pair[0], pair[1]);
        if b_start < a_end {
            return Err(Error::new(format!(
                "zip member {b} (from offset {b_start}) overlaps {a} (bytes {a_start}..{a_end})"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_zip() {
        let e = members(b"short").unwrap_err().to_string();
        assert!(e.contains("too short"), "{e}");
        let e = members(&[0u8; 100]).unwrap_err().to_string();
        assert!(e.contains("no zip end of central directory"), "{e}");
    }
}
