//! Stored tensors by module path.
//!
//! A tensor's layer is the module path of its best name, all but the last
//! dotted component: a `--names` checkpoint key first, then the fully
//! qualified name the program records, then a data key (of a `.ptd` or
//! `.ptn`) that is a name rather than a SHA-256. A delegate weight no name
//! reaches is grouped by the delegate node using it
//! (`forward/0-XnnpackBackend/001-fully_connected`); anything else is
//! `(unnamed)`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::tensors::Stored;

/// One module path's tensors.
#[derive(Debug, Clone, Serialize)]
pub struct Layer {
    /// The module path.
    pub layer: String,
    /// Tensors.
    pub tensors: u64,
    /// Elements.
    pub params: u64,
    /// Bytes.
    pub bytes: u64,
    /// Bytes per element type.
    pub dtypes: BTreeMap<String, u64>,
}

pub(super) fn by_layer(items: &[Stored]) -> Vec<Layer> {
    let mut m: BTreeMap<&str, Layer> = BTreeMap::new();
    for s in items.iter().filter(|s| s.is_tensor()) {
        let r = m.entry(&s.layer).or_insert_with(|| Layer {
            layer: s.layer.clone(),
            tensors: 0,
            params: 0,
            bytes: 0,
            dtypes: BTreeMap::new(),
        });
        r.tensors += 1;
        r.params += s.elements().unwrap_or(0);
        r.bytes += s.span.len;
        *r.dtypes
            .entry(s.dtype.clone().unwrap_or_default())
            .or_default() += s.span.len;
    }
    let mut rows: Vec<Layer> = m.into_values().collect();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.layer.cmp(&b.layer)));
    rows
}
