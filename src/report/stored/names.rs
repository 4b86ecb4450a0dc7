//! Strings the report repeats: a tensor's path, name and layer appear in
//! the size tree, the layer table, the quantization table and the
//! statistics, and a store, element type or operator name in thousands
//! of rows. Each is held once and shared, so a program of a million tiny
//! tensors costs a pointer per mention rather than a copy.

use std::collections::HashSet;
use std::sync::Arc;

/// A shared string of the report.
pub type Name = Arc<str>;

/// Strings seen so far, each held once.
#[derive(Default)]
pub(crate) struct Names(HashSet<Name>);

impl Names {
    /// The shared copy of `s`.
    pub fn get(&mut self, s: &str) -> Name {
        if let Some(n) = self.0.get(s) {
            return n.clone();
        }
        let n: Name = Arc::from(s);
        self.0.insert(n.clone());
        n
    }
}
