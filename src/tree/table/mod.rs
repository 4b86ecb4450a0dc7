//! Directories whose entries are computed rather than stored: a method's
//! `tensors/` and `values/` from its [`Rows`], and a program's
//! `constants/` from one inode per buffer. A large program has millions
//! of these entries; what is kept per tensor is a row of a few dozen
//! bytes, and names are made when asked for. Their files have inodes in a
//! range of their own, derived from the row's position.

mod constants;
pub mod rows;

use std::sync::{Arc, OnceLock};

pub use constants::ConstantsTable;
pub use rows::{Kind, RowNames, Rows};

use super::{Content, Ino};

/// Which computed entries a directory has, besides the ones it stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// The files of a tensor table ([`Tree`](super::Tree)'s n-th).
    Tensors(usize),
    /// A tensor table's `.bin` files under their value indices.
    Values(usize),
    /// The files of a constants table.
    Constants(usize),
}

/// A computed entry: where the next one is looked for, its name and its
/// inode.
pub type Computed = (u64, String, Ino);

/// A method's tensor files.
#[derive(Debug)]
pub struct TensorTable {
    /// The `tensors/` directory.
    pub dir: Ino,
    /// Row `k`'s own `.bin` is `base + 2k`, its own `.npy` the next.
    pub base: Ino,
    /// The rows.
    pub rows: Arc<Rows>,
    /// Files elsewhere that a row's `.bin` (`false`) or `.npy` (`true`) is
    /// another name of: the same bytes seen earlier.
    pub links: foldhash::HashMap<(u32, bool), Ino>,
    /// Names each row's own `.bin` has beyond the first.
    pub extra: Vec<u32>,
    /// Rows in the name order of `values/`, made when first listed.
    values_order: OnceLock<Vec<u32>>,
}

impl TensorTable {
    /// A table of `rows` in directory `dir`, its files from inode `base`.
    pub fn new(dir: Ino, base: Ino, rows: Arc<Rows>) -> TensorTable {
        let n = rows.len();
        TensorTable {
            dir,
            base,
            rows,
            links: Default::default(),
            extra: vec![0; n],
            values_order: OnceLock::new(),
        }
    }

    /// One past the last inode of the range.
    pub fn end(&self) -> Ino {
        self.base + 2 * self.rows.len() as Ino
    }

    /// The inode of row `row`'s `.bin` (`npy` false) or `.npy`.
    pub fn ino(&self, row: u32, npy: bool) -> Ino {
        match self.links.get(&(row, npy)) {
            Some(&ino) => ino,
            None => self.base + 2 * Ino::from(row) + Ino::from(npy),
        }
    }

    /// The row and file (`.npy` or not) an inode of the range is.
    fn at(&self, ino: Ino) -> Option<(u32, bool)> {
        let i = ino.checked_sub(self.base)?;
        let row = u32::try_from(i / 2).ok()?;
        ((row as usize) < self.rows.len()).then_some((row, i % 2 == 1))
    }

    /// Row `row`'s entries in name order, with their inodes.
    fn row_entries(&self, row: u32) -> Vec<(String, Ino)> {
        let RowNames { bin, npy } = self.rows.names(row);
        let mut out = vec![(bin, self.ino(row, false))];
        if let Some(npy) = npy {
            out.push((npy, self.ino(row, true)));
        }
        if let Some(alias) = self.rows.alias(row) {
            out.push((alias.to_owned(), self.ino(row, false)));
        }
        out.sort();
        out
    }

    /// The first entry of `tensors/` at or after `slot` (three a row).
    pub fn entry_at(&self, slot: u64) -> Option<Computed> {
        let mut row = u32::try_from(slot / 3).ok()?;
        let mut pos = (slot % 3) as usize;
        while (row as usize) < self.rows.len() {
            let mut entries = self.row_entries(row);
            if pos < entries.len() {
                let (name, ino) = entries.swap_remove(pos);
                return Some((u64::from(row) * 3 + pos as u64 + 1, name, ino));
            }
            row += 1;
            pos = 0;
        }
        None
    }

    /// Slots of `tensors/`'s computed entries.
    pub fn slots(&self) -> u64 {
        3 * self.rows.len() as u64
    }

    /// The entry `name` of `tensors/`.
    pub fn lookup(&self, name: &[u8]) -> Option<Ino> {
        let width = self.rows.width();
        let digits = std::str::from_utf8(name.get(..width)?).ok()?;
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let row = self.rows.find(digits.parse().ok()?)?;
        self.row_entries(row)
            .into_iter()
            .find(|(n, _)| n.as_bytes() == name)
            .map(|(_, ino)| ino)
    }

    /// The first entry of `values/` at or after `slot`.
    pub fn value_at(&self, slot: u64) -> Option<Computed> {
        let order = self.values_order.get_or_init(|| self.name_order());
        let row = *order.get(usize::try_from(slot).ok()?)?;
        let name = self.rows.value(row).to_string();
        Some((slot + 1, name, self.ino(row, false)))
    }

    /// Slots of `values/`.
    pub fn value_slots(&self) -> u64 {
        self.rows.len() as u64
    }

    /// The entry `name` of `values/`.
    pub fn value_lookup(&self, name: &[u8]) -> Option<Ino> {
        let text = std::str::from_utf8(name).ok()?;
        let value: usize = text.parse().ok()?;
        // `007` and `+7` parse too, but are not the name of value 7.
        if value.to_string() != text {
            return None;
        }
        Some(self.ino(self.rows.find(value)?, false))
    }

    /// Rows by the byte order of their value indices written in decimal.
    fn name_order(&self) -> Vec<u32> {
        let mut keyed: Vec<(u64, u32)> = (0..self.rows.len() as u32)
            .map(|r| (decimal_order(self.rows.value(r) as u32), r))
            .collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, r)| r).collect()
    }

    /// Content and tensor kind of inode `ino` of the range.
    pub fn file(&self, ino: Ino) -> Option<(Content, Option<u32>)> {
        let (row, npy) = self.own(ino)?;
        let (source, span) = self.rows.bytes(row);
        let kind = self.rows.kind(row);
        let content = match (npy, kind.and_then(|k| k.npy.clone())) {
            (true, Some(prefix)) => Content::Prefixed {
                prefix,
                source,
                span,
            },
            (true, None) => return None,
            (false, _) => Content::Source { source, span },
        };
        Some((content, kind.map(|k| k.meta)))
    }

    /// The first name of inode `ino` of the range.
    pub fn name(&self, ino: Ino) -> Option<String> {
        let (row, npy) = self.own(ino)?;
        let names = self.rows.names(row);
        if npy { names.npy } else { Some(names.bin) }
    }

    /// The row and file of inode `ino` of the range, if it is a file of
    /// its own rather than the name of another.
    fn own(&self, ino: Ino) -> Option<(u32, bool)> {
        self.at(ino).filter(|file| !self.links.contains_key(file))
    }

    /// What deciding whether other bytes are the same file as inode `ino`
    /// of the range needs to know of it.
    pub fn identity(&self, ino: Ino) -> Option<Identity<'_>> {
        let (row, npy) = self.at(ino)?;
        let kind = self.rows.kind(row);
        Some(Identity {
            prefix: if npy {
                kind.and_then(|k| k.npy.as_ref())
            } else {
                None
            },
            meta: kind.map(|k| k.meta),
        })
    }

    /// Bytes of the files of the range.
    pub fn total_bytes(&self) -> u64 {
        (0..self.rows.len() as u32)
            .map(|row| {
                let len = self.rows.bytes(row).1.len;
                let bin = if self.links.contains_key(&(row, false)) {
                    0
                } else {
                    len
                };
                let npy = match self.rows.kind(row).and_then(|k| k.npy.as_ref()) {
                    Some(h) if !self.links.contains_key(&(row, true)) => h.len() as u64 + len,
                    _ => 0,
                };
                bin + npy
            })
            .sum()
    }

    /// Names beyond the first of inode `ino`, when it is a `.bin` of the
    /// range.
    pub fn extra_names(&self, ino: Ino) -> Option<u32> {
        match self.at(ino)? {
            (row, false) => self.extra.get(row as usize).copied(),
            (_, true) => None,
        }
    }

    /// Counts another name of inode `ino` if it is a `.bin` of the range.
    pub fn add_name(&mut self, ino: Ino) -> bool {
        match self.at(ino) {
            Some((row, false)) => {
                if let Some(n) = self.extra.get_mut(row as usize) {
                    *n = n.saturating_add(1);
                }
                true
            }
            _ => false,
        }
    }
}

/// A computed file's rendered prefix and tensor type.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Identity<'a> {
    /// The `.npy` header of a `.npy`.
    pub prefix: Option<&'a Arc<[u8]>>,
    /// Its type and shape (an index into the tree's).
    pub meta: Option<u32>,
}

/// A key that orders numbers as their decimal digits order as text: each
/// digit as 1–10 in base 11, left-aligned over ten places (a `u32` has at
/// most ten digits), so that a shorter number is a prefix that sorts first.
fn decimal_order(n: u32) -> u64 {
    let digits = n.to_string();
    (0..10).fold(0, |key, i| {
        let d = digits
            .as_bytes()
            .get(i)
            .map_or(0, |b| u64::from(b - b'0') + 1);
        key * 11 + d
    })
}

#[cfg(test)]
mod tests {
    use super::decimal_order;

    #[test]
    fn decimal_order_is_text_order() {
        let mut nums: Vec<u32> = vec![
            0,
            1,
            2,
            9,
            10,
            11,
            19,
            100,
            101,
            1000,
            99,
            4_294_967_295,
            42,
        ];
        let mut text: Vec<String> = nums.iter().map(u32::to_string).collect();
        text.sort();
        nums.sort_by_key(|&n| decimal_order(n));
        let by_key: Vec<String> = nums.iter().map(u32::to_string).collect();
        assert_eq!(by_key, text);
    }
}
