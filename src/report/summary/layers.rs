//! Stored tensors by module path.
//!
//! A tensor's layer is the module path of its best name, all but the last
//! dotted component: a `--names` checkpoint key first, then the fully
//! qualified name the program records, then a data key (of a `.ptd` or
//! `.ptn`) that is a name rather than a SHA-256. A delegate weight no name
//! reaches is grouped by the delegate node using it
//! (`forward/0-XnnpackBackend/001-fully_connected`); anything else is
//! `(unnamed)`.

use serde::Serialize;

use crate::report::stored::Name;
use crate::report::stored::Stored;

/// One module path's tensors.
#[derive(Debug, Clone, Serialize)]
pub struct Layer {
    /// The module path.
    pub layer: Name,
    /// Tensors.
    pub tensors: u64,
    /// Elements.
    pub params: u64,
    /// Bytes.
    pub bytes: u64,
    /// Bytes per element type.
    pub dtypes: Tally,
}

pub(super) fn by_layer(items: &[Stored]) -> Vec<Layer> {
    // Sorted by layer rather than gathered in a map: a program may have a
    // million layers, and the rows are all that is kept.
    let mut tensors: Vec<&Stored> = items.iter().filter(|s| s.is_tensor()).collect();
    tensors.sort_by(|a, b| a.layer.cmp(&b.layer));
    let mut rows: Vec<Layer> = Vec::new();
    for s in tensors {
        if rows.last().is_none_or(|r| r.layer != s.layer) {
            rows.push(Layer {
                layer: s.layer.clone(),
                tensors: 0,
                params: 0,
                bytes: 0,
                dtypes: Tally::default(),
            });
        }
        let Some(r) = rows.last_mut() else { continue };
        r.tensors += 1;
        r.params += s.elements().unwrap_or(0);
        r.bytes += s.span.len;
        r.dtypes.add(s.dtype.as_ref(), s.span.len);
    }
    rows.shrink_to_fit();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.layer.cmp(&b.layer)));
    rows
}

/// Bytes per element type, a JSON object in name order. A layer has one
/// or two types, and there may be a million layers: a sorted list costs a
/// fraction of a map's nodes.
#[derive(Debug, Clone, Default)]
pub struct Tally(Vec<(Name, u64)>);

impl Tally {
    fn add(&mut self, dtype: Option<&Name>, bytes: u64) {
        let key = dtype.map_or("", |d| d);
        match self.0.binary_search_by(|(d, _)| (**d).cmp(key)) {
            Ok(i) => self.0[i].1 += bytes,
            Err(i) => self
                .0
                .insert(i, (dtype.cloned().unwrap_or_else(|| Name::from("")), bytes)),
        }
    }

    /// Each element type and its bytes, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(d, b)| (&**d, *b))
    }
}

impl Serialize for Tally {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}
