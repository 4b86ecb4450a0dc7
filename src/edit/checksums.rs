//! Checksums a file keeps over bytes an edit changes, brought up to date
//! by more edits: a package's (`.ptn`, a zip) CRC-32 of each stored member,
//! in its local header and its central directory entry.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::Edit;
use super::overlay::pieces;
use crate::format::{self, Parsed, Span};

/// A stored member of a package: its bytes, and where its CRC-32 is kept.
struct Member {
    data: Span,
    crc32: u32,
    central: u64,
    local: u64,
    name: String,
    touched: bool,
}

/// The checksummed members of a source, and which of them edits touched:
/// as much memory as there are members, however many edits there are.
pub struct Members {
    /// Sorted by where their bytes start.
    members: Vec<Member>,
}

impl Members {
    /// The stored members of `original` (the source's bytes), when it is a
    /// package; none otherwise.
    pub fn of(original: &[u8]) -> Members {
        let mut members = match format::parse(original) {
            Ok(Parsed::Package(p)) => p
                .members
                .iter()
                .filter(|m| m.method == 0)
                .map(|m| Member {
                    data: m.data,
                    crc32: m.crc32,
                    central: m.central_offset + 16,
                    local: m.header_offset + 14,
                    name: m.name.clone(),
                    touched: false,
                })
                .collect(),
            _ => Vec::new(),
        };
        members.sort_by_key(|m| m.data.offset);
        Members { members }
    }

    /// Notes that the bytes of `span` were edited.
    pub fn touch(&mut self, span: Span) {
        let first = self
            .members
            .partition_point(|m| m.data.end() <= span.offset);
        for m in &mut self.members[first..] {
            if m.data.offset >= span.end() {
                break;
            }
            m.touched = true;
        }
    }

    /// The edits that keep the checksums of `original` true of `new`, the
    /// edited file written from it. Each touched member is read back from
    /// `new` a piece at a time, so the edited bytes are never held.
    pub fn fixes(&self, original: &[u8], new: &File) -> io::Result<Vec<Edit>> {
        let mut fixes = Vec::new();
        let mut buf = Vec::new();
        for m in self.members.iter().filter(|m| m.touched) {
            let mut crc = crc32fast::Hasher::new();
            for piece in pieces(m.data, 1 << 20) {
                buf.resize(piece.len as usize, 0);
                new.read_exact_at(&mut buf, piece.offset)?;
                crc.update(&buf);
            }
            let now = crc.finalize().to_le_bytes();
            let old = m.crc32.to_le_bytes();
            for place in [m.central, m.local] {
                // A local header may leave its CRC to a data descriptor
                // (zero here): only a recorded CRC is rewritten.
                if original.get(place as usize..place as usize + 4) == Some(&old[..]) {
                    fixes.push(Edit {
                        offset: place,
                        bytes: now.to_vec(),
                        path: format!("the CRC-32 of package member {}", m.name),
                    });
                }
            }
        }
        Ok(fixes)
    }
}
