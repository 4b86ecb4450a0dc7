//! Checksums a file keeps over bytes an edit changes, brought up to date
//! by more edits: a package's (`.ptn`, a zip) CRC-32 of each stored member,
//! in its local header and its central directory entry.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::Edit;
use super::overlay::pieces;
use crate::format::{self, Parsed, Span};

/// The edits that keep the checksums of `original` (the source's bytes)
/// true of `new`, the edited file written from it, where the edits
/// touched the ranges `touched` (in order). Each touched member is read
/// back from `new` a piece at a time, so the edited bytes are never held.
pub fn complete(original: &[u8], touched: &[Span], new: &File) -> io::Result<Vec<Edit>> {
    let Ok(Parsed::Package(p)) = format::parse(original) else {
        return Ok(Vec::new());
    };
    let mut fixes = Vec::new();
    let mut buf = Vec::new();
    for m in &p.members {
        let (start, end) = (m.data.offset, m.data.end());
        let first = touched.partition_point(|s| s.end() <= start);
        let hit = touched.get(first).is_some_and(|s| s.offset < end);
        if !hit || m.method != 0 {
            continue;
        }
        let mut crc = crc32fast::Hasher::new();
        for piece in pieces(m.data, 1 << 20) {
            buf.resize(piece.len as usize, 0);
            new.read_exact_at(&mut buf, piece.offset)?;
            crc.update(&buf);
        }
        let new = crc.finalize().to_le_bytes();
        let old = m.crc32.to_le_bytes();
        let central = m.central_offset + 16;
        let local = m.header_offset + 14;
        for place in [central, local] {
            // A local header may leave its CRC to a data descriptor (zero
            // here): only a recorded CRC is rewritten.
            if original.get(place as usize..place as usize + 4) == Some(&old[..]) {
                fixes.push(Edit {
                    offset: place,
                    bytes: new.to_vec(),
                    path: format!("the CRC-32 of package member {}", m.name),
                });
            }
        }
    }
    Ok(fixes)
}
