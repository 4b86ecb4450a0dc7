//! Every path under a directory, depth first in name order.

use super::{Entries, Ino, Tree};

/// Every path under an inode, depth first in name order: see
/// [`Tree::walk`]. It holds one path and one listing per directory level,
/// so walking a large tree costs no more memory than its deepest path.
#[derive(Debug)]
pub struct Walk<'t> {
    tree: &'t Tree,
    first: Option<(String, Ino)>,
    /// Per directory being walked: its inode, its path and the rest of its
    /// entries.
    stack: Vec<(Ino, String, Entries<'t>)>,
}

impl<'t> Walk<'t> {
    pub(super) fn new(tree: &'t Tree, from: Ino) -> Walk<'t> {
        Walk {
            tree,
            first: Some((tree.path(from), from)),
            stack: Vec::new(),
        }
    }
}

impl Walk<'_> {
    /// The directories the path last returned lies in, innermost first; a
    /// directory returned is the first of its own.
    pub fn enclosing(&self) -> impl Iterator<Item = Ino> + '_ {
        self.stack.iter().rev().map(|(ino, _, _)| *ino)
    }
}

impl Iterator for Walk<'_> {
    type Item = (String, Ino);

    fn next(&mut self) -> Option<(String, Ino)> {
        if let Some((path, ino)) = self.first.take() {
            if let Some(entries) = self.tree.entries(ino) {
                self.stack.push((ino, path.clone(), entries));
            }
            return Some((path, ino));
        }
        loop {
            let (_, dir, entries) = self.stack.last_mut()?;
            let Some(e) = entries.next() else {
                self.stack.pop();
                continue;
            };
            let path = if dir.is_empty() {
                e.name.into_owned()
            } else {
                format!("{dir}/{}", e.name)
            };
            if let Some(sub) = self.tree.entries(e.ino) {
                self.stack.push((e.ino, path.clone(), sub));
            }
            return Some((path, e.ino));
        }
    }
}
