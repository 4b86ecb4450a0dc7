//! Directories laid out as computed tables (see [`crate::tree::table`]):
//! a method's `tensors/` and `values/`, a program's `constants/`. What
//! the builder does for stored files, it does here per row: the same
//! bytes seen earlier make a further name of that file, and every name is
//! counted.

use std::sync::Arc;

use super::builder::{PROVISIONAL, bytes_key};
use super::{Builder, Origin};
use crate::format::Span;
use crate::tree::NodeKind;
use crate::tree::table::{ConstantsTable, Listing, Rows, TensorTable};
use crate::tree::{Content, Ino};

impl Builder {
    /// Moves the computed files' inodes from [`PROVISIONAL`] to just after
    /// the stored nodes, wherever they are held.
    pub(super) fn relocate(&mut self) {
        let first = self.nodes.len() as Ino + 1;
        let moved = |ino: Ino| match ino.checked_sub(PROVISIONAL) {
            Some(i) => first + i,
            None => ino,
        };
        for node in &mut self.nodes {
            if let NodeKind::Dir(entries) = &mut node.kind {
                for e in entries {
                    e.ino = moved(e.ino);
                }
            }
        }
        self.extra_links = std::mem::take(&mut self.extra_links)
            .into_iter()
            .map(|(ino, n)| (moved(ino), n))
            .collect();
        for t in &mut self.tables {
            t.base = moved(t.base);
            for ino in t.links.values_mut() {
                *ino = moved(*ino);
            }
        }
        for c in &mut self.constants {
            c.base = moved(c.base);
            for ino in &mut c.inos {
                *ino = moved(*ino);
            }
        }
    }

    /// `count` provisional inodes for computed files; returns the first.
    pub(super) fn reserve(&mut self, count: u64) -> Ino {
        let first = PROVISIONAL + self.computed;
        self.computed += count;
        first
    }

    /// Makes `rows` the computed entries of `tensors/` directory `dir`;
    /// returns the table's index.
    pub(super) fn tensor_table(&mut self, dir: Ino, rows: Arc<Rows>) -> usize {
        let base = self.reserve(2 * rows.len() as u64);
        self.by_bytes.reserve(2 * rows.len());
        let idx = self.tables.len();
        self.tables.push(TensorTable::new(dir, base, rows.clone()));
        self.listings.insert(dir, Listing::Tensors(idx));
        for row in 0..rows.len() as u32 {
            let (source, span) = rows.bytes(row);
            let kind = rows.kind(row);
            let meta = kind.map(|k| k.meta);
            let npy = kind.and_then(|k| k.npy.clone());
            let bin = Content::Source { source, span };
            self.share_bytes(idx, (row, false), &bin, meta);
            if let Some(prefix) = npy {
                let file = Content::Prefixed {
                    prefix,
                    source,
                    span,
                };
                self.share_bytes(idx, (row, true), &file, meta);
            }
            let ino = self.tables[idx].ino(row, false);
            if rows.alias(row).is_some() {
                self.count_name(ino);
            }
            for key in rows.checkpoint_names(row).into_iter().flatten() {
                self.by_name.push((key.clone(), ino));
            }
        }
        idx
    }

    /// Makes file `file` of row `row` of table `idx` a further name of the
    /// file that served the same bytes before, if one did, or the file
    /// that serves them from now on.
    fn share_bytes(&mut self, idx: usize, file: (u32, bool), content: &Content, meta: Option<u32>) {
        let Some(key) = bytes_key(content) else {
            return;
        };
        match self.by_bytes.get(&key).copied() {
            Some(ino) if self.same_file(ino, content, meta) => {
                self.tables[idx].links.insert(file, ino);
                self.count_name(ino);
            }
            _ => {
                let own = self.tables[idx].ino(file.0, file.1);
                self.by_bytes.entry(key).or_insert(own);
            }
        }
    }

    /// Makes directory `dir` list table `idx`'s `.bin` files under their
    /// value indices.
    pub(super) fn values_listing(&mut self, dir: Ino, idx: usize) {
        self.listings.insert(dir, Listing::Values(idx));
        for row in 0..self.tables[idx].rows.len() as u32 {
            let ino = self.tables[idx].ino(row, false);
            self.count_name(ino);
        }
    }

    /// Makes `constants` (by buffer index; `None` for no file) the
    /// computed entries of `constants/` directory `dir`.
    pub(super) fn constants_table(&mut self, dir: Ino, origin: Origin, constants: &[Option<Span>]) {
        let base = self.reserve(constants.len() as u64);
        let mut table = ConstantsTable::new(dir, base, constants.len());
        for (i, span) in constants.iter().enumerate() {
            let Some(span) = span else { continue };
            let content = origin.content(*span);
            let key = bytes_key(&content);
            match key.and_then(|k| self.by_bytes.get(&k).copied()) {
                Some(ino) if self.same_file(ino, &content, None) => {
                    table.link(i, ino);
                    self.count_name(ino);
                }
                _ => {
                    let ino = table.own(i, origin.source, origin.shifted(*span));
                    if let Some(key) = key {
                        self.by_bytes.entry(key).or_insert(ino);
                    }
                }
            }
        }
        self.listings
            .insert(dir, Listing::Constants(self.constants.len()));
        self.constants.push(table);
        debug_assert!(self.computed < PROVISIONAL, "inodes do not run out");
    }
}
