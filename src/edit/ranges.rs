//! A set of edits of one source, keyed by the byte ranges they replace.

use super::{EditError, Result};
use crate::format::Span;

/// New bytes for a byte range of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Where the bytes go in the source.
    pub offset: u64,
    /// The new bytes (as many as they replace).
    pub bytes: Vec<u8>,
    /// The tree path the edit was made through, for messages.
    pub path: String,
}

impl Edit {
    /// The source range replaced.
    pub fn span(&self) -> Span {
        Span {
            offset: self.offset,
            len: self.bytes.len() as u64,
        }
    }
}

/// Edits of one source, sorted by offset and not overlapping: two paths
/// that name the same stored bytes may both be given only the same bytes.
#[derive(Debug, Default, Clone)]
pub struct Edits {
    edits: Vec<Edit>,
}

impl Edits {
    /// No edits.
    pub fn new() -> Edits {
        Edits::default()
    }

    /// Adds `edit` of the source named `source_name`; an edit overlapping
    /// one already held must agree with it on every shared byte.
    pub fn add(&mut self, edit: Edit, source_name: &str) -> Result<()> {
        let span = edit.span();
        if span.len == 0 {
            return Ok(());
        }
        let at = self
            .edits
            .partition_point(|e| e.span().end() <= span.offset);
        let mut merged = edit;
        // Every held edit that overlaps the new one is folded into it.
        while let Some(e) = self.edits.get(at)
            && e.offset < merged.span().end()
        {
            let e = self.edits.remove(at);
            merged = fold(e, merged, source_name)?;
        }
        self.edits.insert(at, merged);
        Ok(())
    }

    /// The edits in source order.
    pub fn iter(&self) -> impl Iterator<Item = &Edit> {
        self.edits.iter()
    }

    /// True when nothing is edited.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// The number of separate ranges edited.
    pub fn len(&self) -> usize {
        self.edits.len()
    }
}

/// Edits given one piece at a time, in source order, and as often as
/// asked: a writer goes through them twice (to write, then to read them
/// back), so a source of edits held on disk never needs them all in
/// memory.
pub trait Changes {
    /// Calls `f` with each piece in source order, and whether it carries
    /// on the range the piece before it began (so that pieces count as
    /// the ranges they make up); stops at the first error.
    fn each(&self, f: &mut dyn FnMut(&Edit, bool) -> Result<()>) -> Result<()>;
}

impl Changes for Edits {
    fn each(&self, f: &mut dyn FnMut(&Edit, bool) -> Result<()>) -> Result<()> {
        self.edits.iter().try_for_each(|e| f(e, false))
    }
}

/// One edit covering `held` and `new`, which overlap and must agree where
/// they do.
fn fold(held: Edit, new: Edit, source_name: &str) -> Result<Edit> {
    let (a, b) = (held.span(), new.span());
    let (from, to) = (a.offset.max(b.offset), a.end().min(b.end()));
    fn part(e: &Edit, from: u64, to: u64) -> &[u8] {
        &e.bytes[(from - e.offset) as usize..(to - e.offset) as usize]
    }
    if part(&held, from, to) != part(&new, from, to) {
        return Err(EditError::Conflict {
            first: held.path,
            second: new.path,
            source_name: source_name.to_owned(),
            offset: from,
            end: to,
        });
    }
    let offset = a.offset.min(b.offset);
    let end = a.end().max(b.end());
    let mut bytes = vec![0; (end - offset) as usize];
    for e in [&held, &new] {
        let at = (e.offset - offset) as usize;
        bytes[at..at + e.bytes.len()].copy_from_slice(&e.bytes);
    }
    Ok(Edit {
        offset,
        bytes,
        path: held.path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(offset: u64, bytes: &[u8], path: &str) -> Edit {
        Edit {
            offset,
            bytes: bytes.to_vec(),
            path: path.to_owned(),
        }
    }

    #[test]
    fn overlapping_edits_that_agree_merge_and_others_conflict() {
        let mut e = Edits::new();
        e.add(edit(10, b"abcd", "a"), "s").unwrap();
        e.add(edit(0, b"xy", "b"), "s").unwrap();
        e.add(edit(12, b"cdef", "c"), "s").unwrap();
        let got: Vec<(u64, &[u8])> = e.iter().map(|e| (e.offset, &e.bytes[..])).collect();
        assert_eq!(got, vec![(0, &b"xy"[..]), (10, &b"abcdef"[..])]);
        let err = e.add(edit(8, b"zzzz", "d"), "s").unwrap_err();
        assert!(
            matches!(
                err,
                EditError::Conflict {
                    offset: 10,
                    end: 12,
                    ..
                }
            ),
            "{err}"
        );
    }
}
