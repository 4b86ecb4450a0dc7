//! Every member's location, read from the end of central directory through
//! each entry's local header, and checked not to share bytes.

use super::super::super::{Error, Result, Span};
use super::central::central_entry;
use super::end::directory;
use super::member::Member;
use super::records::{CENTRAL_LEN, Reader};

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
