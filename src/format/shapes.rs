//! Shapes read once per tensor table.
//!
//! A flatbuffer may point any number of values at one table; what is read
//! from that table is shared between them rather than copied per value, so
//! memory grows with the number of values, not values × shape length.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;

use flatbuffers::Vector;

/// Logical sizes and dim order.
type Shape = (Arc<[i64]>, Arc<[u8]>);

/// Sizes and dim order by the position of the table that holds them, and
/// each distinct one once (many tables hold the same small shapes).
#[derive(Default)]
pub(super) struct Shapes {
    by_table: HashMap<usize, Shape>,
    sizes: HashSet<Arc<[i64]>>,
    dim_orders: HashSet<Arc<[u8]>>,
}

impl Shapes {
    /// The sizes and dim order of the table at `loc`, read on first use.
    pub(super) fn of(
        &mut self,
        loc: usize,
        sizes: Option<Vector<'_, i32>>,
        dim_order: Option<Vector<'_, u8>>,
    ) -> Shape {
        if let Some(shape) = self.by_table.get(&loc) {
            return shape.clone();
        }
        let sizes: Vec<i64> = sizes.iter().flatten().map(i64::from).collect();
        let sizes = intern(&mut self.sizes, &sizes);
        let dim_order = intern(
            &mut self.dim_orders,
            dim_order.map_or(&[][..], |d| d.bytes()),
        );
        self.by_table
            .insert(loc, (sizes.clone(), dim_order.clone()));
        (sizes, dim_order)
    }
}

/// The shared copy of `items`, made on first use.
fn intern<T: Clone + Eq + Hash>(set: &mut HashSet<Arc<[T]>>, items: &[T]) -> Arc<[T]> {
    if let Some(shared) = set.get(items) {
        return shared.clone();
    }
    let shared: Arc<[T]> = items.into();
    set.insert(shared.clone());
    shared
}
