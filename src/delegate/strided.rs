//! A tensor that is a strided view into a larger storage (PyTorch's
//! `storage_offset`, `sizes` and `strides`, in elements): where in the
//! storage its elements are, and its own bytes gathered in row-major
//! order, as `tensor.contiguous()` would hold them.

use std::io::{self, Write};

/// A strided view, checked to lie within its storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strided {
    /// Bytes per element.
    pub item: u64,
    /// The first element's index in the storage.
    pub offset: u64,
    /// Elements per dimension.
    pub sizes: Vec<u64>,
    /// Elements between neighbours, per dimension.
    pub strides: Vec<u64>,
}

impl Strided {
    /// The view of `item`-byte elements at `offset` with `sizes` and
    /// `strides` into a storage of `storage` bytes, or what is wrong with
    /// it.
    pub fn new(
        item: u64,
        offset: i64,
        sizes: &[i64],
        strides: &[i64],
        storage: u64,
    ) -> Result<Strided, String> {
        if sizes.len() != strides.len() {
            return Err(format!(
                "{} sizes but {} strides",
                sizes.len(),
                strides.len()
            ));
        }
        let unsigned = |v: &[i64], what: &str| -> Result<Vec<u64>, String> {
            v.iter()
                .map(|&x| u64::try_from(x).map_err(|_| format!("negative {what} {x}")))
                .collect()
        };
        let view = Strided {
            item,
            offset: u64::try_from(offset)
                .map_err(|_| format!("negative storage offset {offset}"))?,
            sizes: unsigned(sizes, "size")?,
            strides: unsigned(strides, "stride")?,
        };
        let (Some(nbytes), Some(end)) = (view.nbytes(), view.end()) else {
            return Err("sizes and strides overflow 64 bits".to_owned());
        };
        if end > storage {
            return Err(format!(
                "the view reads up to byte {end} of a storage of {storage} bytes (storage offset {offset}, sizes {sizes:?}, strides {strides:?})"
            ));
        }
        debug_assert!(nbytes <= end || view.sizes.contains(&0) || view.item == 0);
        Ok(view)
    }

    /// Number of elements.
    pub fn numel(&self) -> Option<u64> {
        self.sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s))
    }

    /// Bytes of the view's own elements.
    pub fn nbytes(&self) -> Option<u64> {
        self.numel()?.checked_mul(self.item)
    }

    /// One past the last storage byte the view reads (its offset when it
    /// has no elements).
    pub fn end(&self) -> Option<u64> {
        let first = self.offset.checked_mul(self.item)?;
        if self.numel()? == 0 {
            return Some(first);
        }
        let last = (self.sizes.iter().zip(&self.strides))
            .try_fold(self.offset, |at, (&s, &st)| {
                at.checked_add((s - 1).checked_mul(st)?)
            })?;
        last.checked_add(1)?.checked_mul(self.item)
    }

    /// True when the elements lie in row-major order with no gaps, so
    /// that the view is one byte range of its storage (dimensions of size
    /// one may have any stride).
    pub fn is_contiguous(&self) -> bool {
        let mut want = 1u64;
        for (&s, &st) in self.sizes.iter().zip(&self.strides).rev() {
            if s != 1 && st != want {
                return false;
            }
            want = want.saturating_mul(s);
        }
        true
    }

    /// Where a contiguous view is in its storage: byte offset and length.
    pub fn range(&self) -> Option<(u64, u64)> {
        Some((self.offset.checked_mul(self.item)?, self.nbytes()?))
    }

    /// Writes the view's elements, row-major, from `storage`.
    pub fn gather(&self, storage: &[u8], out: &mut dyn Write) -> io::Result<()> {
        let short = || {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "a strided view reads past its storage's {} bytes",
                    storage.len()
                ),
            )
        };
        if self.numel() != Some(0) && self.end().is_none_or(|e| e > storage.len() as u64) {
            return Err(short());
        }
        if self.numel() == Some(0) {
            return Ok(());
        }
        let item = self.item as usize;
        let dims = self.sizes.len();
        let mut index = vec![0u64; dims];
        let mut buf = Vec::with_capacity(64 << 10);
        loop {
            let at = (index.iter().zip(&self.strides)).fold(self.offset, |a, (&i, &st)| a + i * st);
            let start = at as usize * item;
            buf.extend_from_slice(storage.get(start..start + item).ok_or_else(short)?);
            if buf.len() >= 64 << 10 {
                out.write_all(&buf)?;
                buf.clear();
            }
            // The next index, last dimension fastest.
            let mut d = dims;
            loop {
                if d == 0 {
                    return out.write_all(&buf);
                }
                d -= 1;
                index[d] += 1;
                if index[d] < self.sizes[d] {
                    break;
                }
                index[d] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Strided;

    #[test]
    fn a_transposed_view_gathers_its_columns() {
        // A 2x3 storage of u16, viewed as its 3x2 transpose from element 0.
        let storage: Vec<u8> = (0u16..6).flat_map(u16::to_le_bytes).collect();
        let t = Strided::new(2, 0, &[3, 2], &[1, 3], 12).unwrap();
        assert!(!t.is_contiguous());
        let mut out = Vec::new();
        t.gather(&storage, &mut out).unwrap();
        let got: Vec<u16> = out
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(got, [0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn views_past_their_storage_or_negative_are_refused() {
        assert!(Strided::new(4, 4, &[2, 2], &[2, 1], 32).is_ok());
        let e = Strided::new(4, 5, &[2, 2], &[2, 1], 32).unwrap_err();
        assert!(e.contains("up to byte 36 of a storage of 32 bytes"), "{e}");
        assert!(Strided::new(4, -1, &[1], &[1], 32).is_err());
        assert!(Strided::new(4, 0, &[1, 2], &[1], 32).is_err());
        assert!(Strided::new(4, 0, &[i64::MAX, 2], &[i64::MAX, 1], 32).is_err());
        // No elements: nothing is read, wherever the offset.
        assert_eq!(
            Strided::new(4, 8, &[0, 3], &[3, 1], 32).unwrap().nbytes(),
            Some(0)
        );
    }

    #[test]
    fn contiguity_ignores_strides_of_unit_dimensions() {
        assert!(
            Strided::new(1, 2, &[2, 1, 3], &[3, 99, 1], 8)
                .unwrap()
                .is_contiguous()
        );
        assert_eq!(
            Strided::new(4, 3, &[2, 2], &[2, 1], 32).unwrap().range(),
            Some((12, 16))
        );
    }
}
