//! A directory's entries as a listing: computed ones first, then stored
//! ones, resumable from any position.

use std::borrow::Cow;

use super::table::Listing;
use super::{Child, Ino, Tree};

/// An entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed<'t> {
    /// Its name.
    pub name: Cow<'t, str>,
    /// What it names.
    pub ino: Ino,
    /// Where the listing goes on after it (for `readdir` offsets).
    pub next: u64,
}

/// A directory's entries in name order: computed ones (which sort before
/// the stored ones wherever a directory has both), then stored ones.
#[derive(Debug, Clone)]
pub struct Entries<'t> {
    tree: &'t Tree,
    computed: Option<Listing>,
    /// Slots of computed entries; stored entries follow.
    slots: u64,
    stored: &'t [Child],
    /// The next position.
    at: u64,
}

impl<'t> Entries<'t> {
    /// The entries of a directory that stores `stored` and computes
    /// `computed`, from position `at`.
    pub(super) fn new(
        tree: &'t Tree,
        stored: &'t [Child],
        computed: Option<Listing>,
        at: u64,
    ) -> Self {
        Entries {
            tree,
            computed,
            slots: computed.map_or(0, |l| tree.computed_slots(l)),
            stored,
            at,
        }
    }
}

impl<'t> Iterator for Entries<'t> {
    type Item = Listed<'t>;

    fn next(&mut self) -> Option<Listed<'t>> {
        if self.at < self.slots
            && let Some(listing) = self.computed
            && let Some((next, name, ino)) = self.tree.computed_at(listing, self.at)
        {
            self.at = next;
            return Some(Listed {
                name: Cow::Owned(name),
                ino,
                next,
            });
        }
        self.at = self.at.max(self.slots);
        let i = usize::try_from(self.at - self.slots).ok()?;
        let e = self.stored.get(i)?;
        self.at += 1;
        Some(Listed {
            name: Cow::Borrowed(&e.name),
            ino: e.ino,
            next: self.at,
        })
    }
}
