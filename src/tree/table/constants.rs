//! A program's `constants/`, computed: a name per buffer index, an inode
//! per buffer (most of them those of tensor files with the same bytes).

use super::Computed;
use crate::format::Span;
use crate::tree::file_names::padded;
use crate::tree::{Content, Ino, SourceId};

/// A program's `constants/`: one file per buffer with bytes, most of them
/// further names of tensor files.
#[derive(Debug)]
pub struct ConstantsTable {
    /// The `constants/` directory.
    pub dir: Ino,
    /// Buffer `i`'s own file is `base + i`.
    pub base: Ino,
    /// The largest buffer index, which sets the width of names.
    max: u64,
    /// Each buffer's file; 0 for none.
    pub inos: Vec<Ino>,
    /// Where the bytes of buffers with files of their own are.
    own: foldhash::HashMap<u32, (SourceId, Span)>,
}

impl ConstantsTable {
    /// An empty table of `count` buffers in directory `dir`.
    pub fn new(dir: Ino, base: Ino, count: usize) -> ConstantsTable {
        ConstantsTable {
            dir,
            base,
            max: count.saturating_sub(1) as u64,
            inos: vec![0; count],
            own: Default::default(),
        }
    }

    /// Buffer `i` is a further name of file `ino`.
    pub fn link(&mut self, i: usize, ino: Ino) {
        if let Some(slot) = self.inos.get_mut(i) {
            *slot = ino;
        }
    }

    /// Buffer `i` gets a file of its own holding `span` of `source`;
    /// returns its inode.
    pub fn own(&mut self, i: usize, source: SourceId, span: Span) -> Ino {
        let ino = self.base + i as Ino;
        self.link(i, ino);
        self.own.insert(i as u32, (source, span));
        ino
    }

    /// One past the last inode of the range.
    pub fn end(&self) -> Ino {
        self.base + self.inos.len() as Ino
    }

    fn name(&self, i: u64) -> String {
        format!("{}.bin", padded(i, self.max))
    }

    /// The first entry at or after `slot`.
    pub fn entry_at(&self, slot: u64) -> Option<Computed> {
        let start = usize::try_from(slot).ok()?;
        let (i, &ino) = self
            .inos
            .iter()
            .enumerate()
            .skip(start)
            .find(|(_, ino)| **ino != 0)?;
        Some((i as u64 + 1, self.name(i as u64), ino))
    }

    /// Slots of the directory.
    pub fn slots(&self) -> u64 {
        self.inos.len() as u64
    }

    /// The entry `name`.
    pub fn lookup(&self, name: &[u8]) -> Option<Ino> {
        let stem = name.strip_suffix(b".bin")?;
        let text = std::str::from_utf8(stem).ok()?;
        let i: u64 = text.parse().ok()?;
        if self.name(i).as_bytes() != name {
            return None;
        }
        let ino = *self.inos.get(usize::try_from(i).ok()?)?;
        (ino != 0).then_some(ino)
    }

    /// Bytes of the files of the range.
    pub fn total_bytes(&self) -> u64 {
        self.own.values().map(|(_, span)| span.len).sum()
    }

    /// Content of inode `ino` of the range.
    pub fn file(&self, ino: Ino) -> Option<Content> {
        let i = u32::try_from(ino.checked_sub(self.base)?).ok()?;
        let &(source, span) = self.own.get(&i)?;
        Some(Content::Source { source, span })
    }

    /// The first name of inode `ino` of the range.
    pub fn first_name(&self, ino: Ino) -> Option<String> {
        let i = ino.checked_sub(self.base)?;
        self.own
            .contains_key(&u32::try_from(i).ok()?)
            .then(|| self.name(i))
    }
}
