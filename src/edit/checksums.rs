//! Checksums a file keeps over bytes an edit changes, brought up to date
//! by more edits: a package's (`.ptn`, a zip) CRC-32 of each stored member,
//! in its local header and its central directory entry.

use super::{Edit, Edits, Result};
use crate::format::{self, Parsed};

/// Adds to `edits` (of `original`, the source's bytes) the edits that keep
/// the file's checksums true of the edited bytes.
pub fn complete(original: &[u8], edits: &mut Edits, source_name: &str) -> Result<()> {
    let Ok(Parsed::Package(p)) = format::parse(original) else {
        return Ok(());
    };
    let mut fixes = Vec::new();
    for m in &p.members {
        let (start, end) = (m.data.offset, m.data.end());
        let touched: Vec<&Edit> = edits
            .iter()
            .filter(|e| e.offset < end && start < e.span().end())
            .collect();
        if touched.is_empty() || m.method != 0 {
            continue;
        }
        // The member's bytes as edited, hashed in order without a copy.
        let mut crc = crc32fast::Hasher::new();
        let mut at = start;
        for e in touched {
            let from = e.offset.max(start);
            let to = e.span().end().min(end);
            crc.update(&original[at as usize..from as usize]);
            crc.update(&e.bytes[(from - e.offset) as usize..(to - e.offset) as usize]);
            at = to;
        }
        crc.update(&original[at as usize..end as usize]);
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
    for f in fixes {
        edits.add(f, source_name)?;
    }
    Ok(())
}
