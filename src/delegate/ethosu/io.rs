//! The `inputs` and `outputs` blocks: a little-endian i32 count, then per
//! tensor six i32 shape entries, the element size, the offset in the
//! scratch region and the region number (36 bytes each), and the
//! `scratch_size` block's u32.

use serde::Serialize;

use crate::format::le;

/// Number of shape entries each tensor has.
const DIMS: usize = 6;
/// Bytes of one tensor's description.
const IO_LEN: usize = (DIMS + 3) * 4;

/// One input or output as the NPU sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Io {
    /// Position in its block.
    pub index: usize,
    /// Shape, padded with ones to six entries.
    pub shape: [i32; DIMS],
    /// Bytes per element.
    pub elem_size: i32,
    /// Offset in the scratch region.
    pub offset: i32,
    /// Region number.
    pub region: i32,
    /// Bytes the tensor spans (product of the shape times the element
    /// size), when that is a non-negative number.
    pub nbytes: Option<i64>,
}

/// The tensors of an `inputs`/`outputs` block `data` (at payload offset
/// `at`, named `what`), or what is wrong with it.
pub fn parse(data: &[u8], at: u64, what: &str) -> Result<Vec<Io>, String> {
    let count = le::i32_at(data, 0).ok_or_else(|| {
        format!(
            "{what} block at payload offset {at}: {} bytes, too short for its count",
            data.len()
        )
    })?;
    let fits = usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(IO_LEN))
        .and_then(|n| n.checked_add(4))
        .filter(|&need| need <= data.len());
    let Some(_) = fits else {
        return Err(format!(
            "{what} block at payload offset {at}: count {count} needs {IO_LEN} bytes each, the block has {}",
            data.len()
        ));
    };
    // `fits` bounds count by the block's length, so this allocates little.
    let n = usize::try_from(count).unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for index in 0..n {
        let base = 4 + index * IO_LEN;
        // In the block: `fits` checked all `count` records.
        let field = |k: usize| le::i32_at(data, (base + 4 * k) as u64).unwrap_or(0);
        let mut shape = [0i32; DIMS];
        for (k, s) in shape.iter_mut().enumerate() {
            *s = field(k);
        }
        let elem_size = field(DIMS);
        let nbytes = shape
            .iter()
            .chain(std::iter::once(&elem_size))
            .try_fold(1i64, |acc, &d| {
                (d >= 0).then_some(())?;
                acc.checked_mul(i64::from(d))
            });
        out.push(Io {
            index,
            shape,
            elem_size,
            offset: field(DIMS + 1),
            region: field(DIMS + 2),
            nbytes,
        });
    }
    Ok(out)
}

/// The scratch size a `scratch_size` block `data` (at payload offset `at`)
/// holds.
pub fn scratch_size(data: &[u8], at: u64) -> Result<u32, String> {
    match le::u32_at(data, 0) {
        Some(size) => Ok(size),
        None => Err(format!(
            "scratch_size block at payload offset {at}: {} bytes, a u32 needs 4",
            data.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_are_read_and_bad_counts_named() {
        let mut b = 1i32.to_le_bytes().to_vec();
        for v in [1, 1, 1, 1, 1, 16, 1, 0, 1] {
            b.extend_from_slice(&i32::to_le_bytes(v));
        }
        let io = parse(&b, 100, "inputs").unwrap();
        assert_eq!(io[0].shape, [1, 1, 1, 1, 1, 16]);
        assert_eq!(io[0].nbytes, Some(16));
        assert_eq!(io[0].region, 1);
        b[..4].copy_from_slice(&2i32.to_le_bytes());
        let e = parse(&b, 100, "inputs").unwrap_err();
        assert!(e.contains("offset 100: count 2"), "{e}");
        b[..4].copy_from_slice(&(-1i32).to_le_bytes());
        assert!(parse(&b, 0, "outputs").unwrap_err().contains("count -1"));
        assert!(scratch_size(&[1, 2], 7).unwrap_err().contains("offset 7"));
    }
}
