//! Shapes shared between the tensors that have them.
//!
//! A file may point any number of values at one table, or give many tables
//! the same small shape; each distinct shape is decoded and stored once and
//! shared, so memory grows with the number of values, not values × shape
//! length.

use std::collections::HashMap;
use std::sync::Arc;

use flatbuffers::Vector;
use foldhash::fast::RandomState;

/// Logical sizes and dim order.
type Shape = (Arc<[i64]>, Arc<[u8]>);

/// Sizes and dim orders by the bytes they are stored as in the flatbuffer,
/// so finding one already seen needs no decoding or allocation.
#[derive(Default)]
pub(super) struct Shapes<'a> {
    sizes: HashMap<&'a [u8], Arc<[i64]>, RandomState>,
    dim_orders: HashMap<&'a [u8], Arc<[u8]>, RandomState>,
}

impl<'a> Shapes<'a> {
    /// The shared sizes and dim order equal to these vectors; an absent
    /// vector reads as empty.
    pub(super) fn of(
        &mut self,
        sizes: Option<Vector<'a, i32>>,
        dim_order: Option<Vector<'a, u8>>,
    ) -> Shape {
        let sizes_key = sizes.map_or(&[][..], |v| v.bytes());
        let sizes = match self.sizes.get(sizes_key) {
            Some(shared) => shared.clone(),
            None => {
                let decoded: Arc<[i64]> = sizes.iter().flatten().map(i64::from).collect();
                self.sizes.insert(sizes_key, decoded.clone());
                decoded
            }
        };
        let dim_order = dim_order.map_or(&[][..], |v| v.bytes());
        let dim_order = match self.dim_orders.get(dim_order) {
            Some(shared) => shared.clone(),
            None => {
                let copied: Arc<[u8]> = dim_order.into();
                self.dim_orders.insert(dim_order, copied.clone());
                copied
            }
        };
        (sizes, dim_order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flatbuffer whose root is the vector `items`.
    fn buffer<T: flatbuffers::Push + Copy>(items: &[T]) -> Vec<u8> {
        let mut b = flatbuffers::FlatBufferBuilder::new();
        let v = b.create_vector(items);
        b.finish_minimal(v);
        b.finished_data().to_vec()
    }

    #[test]
    fn equal_shapes_from_different_places_are_one_allocation() {
        let (s1, s2, s3) = (buffer(&[2i32, 3]), buffer(&[2i32, 3]), buffer(&[3i32, 2]));
        let (d1, d2) = (buffer(&[0u8, 1]), buffer(&[1u8, 0]));
        let sizes = |b| flatbuffers::root::<Vector<i32>>(b).ok();
        let order = |b| flatbuffers::root::<Vector<u8>>(b).ok();
        let mut shapes = Shapes::default();
        let a = shapes.of(sizes(&s1), order(&d1));
        let b = shapes.of(sizes(&s2), order(&d2));
        let c = shapes.of(sizes(&s3), None);
        assert_eq!((&*a.0, &*a.1), (&[2i64, 3][..], &[0u8, 1][..]));
        assert_eq!((&*b.0, &*b.1), (&[2i64, 3][..], &[1u8, 0][..]));
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!((&*c.0, &*c.1), (&[3i64, 2][..], &[][..]));
        let none = shapes.of(None, None);
        assert!(none.0.is_empty());
        assert!(Arc::ptr_eq(&none.1, &c.1));
    }
}
