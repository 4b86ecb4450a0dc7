//! TOSA element types: their names, the bytes a value of each takes, and
//! how NumPy views them.

use crate::schema::tosa as fb;

/// How values of one element type are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Storage {
    /// Short name for `code.txt` (`f32`).
    pub short: &'static str,
    /// Bits per element as stored (4 for two values per byte, 48 for
    /// `INT48`'s six bytes).
    pub bits: u64,
    /// NumPy descr, when NumPy has the type (`<f4`).
    pub numpy: Option<&'static str>,
    /// True for bfloat16, which the `.npy` widens to float32.
    pub widen: bool,
}

const fn storage(short: &'static str, bits: u64, numpy: Option<&'static str>) -> Storage {
    Storage {
        short,
        bits,
        numpy,
        widen: false,
    }
}

/// The storage of element type `t`; `None` for `UNKNOWN`, the block-scaled
/// `MXINT8` and types this schema does not name.
pub fn storage_of(t: fb::DType) -> Option<Storage> {
    Some(match t {
        fb::DType::BOOL => storage("bool", 8, Some("|b1")),
        fb::DType::INT4 => storage("i4", 4, None),
        fb::DType::INT8 => storage("i8", 8, Some("|i1")),
        fb::DType::INT16 => storage("i16", 16, Some("<i2")),
        fb::DType::INT32 => storage("i32", 32, Some("<i4")),
        fb::DType::INT48 => storage("i48", 48, None),
        fb::DType::INT64 => storage("i64", 64, Some("<i8")),
        fb::DType::FP32 => storage("f32", 32, Some("<f4")),
        fb::DType::FP16 => storage("f16", 16, Some("<f2")),
        fb::DType::BF16 => Storage {
            widen: true,
            ..storage("bf16", 16, Some("<f4"))
        },
        // Shape values are 64-bit integers.
        fb::DType::SHAPE => storage("shape", 64, Some("<i8")),
        // NumPy has no 8-bit floats: their bytes stay raw.
        fb::DType::FP8E4M3 => storage("f8e4m3", 8, None),
        fb::DType::FP8E5M2 => storage("f8e5m2", 8, None),
        fb::DType::FP8UE8M0 => storage("f8ue8m0", 8, None),
        fb::DType::FP6E2M3 => storage("f6e2m3", 6, None),
        fb::DType::FP6E3M2 => storage("f6e3m2", 6, None),
        fb::DType::FP4E2M1 => storage("f4e2m1", 4, None),
        _ => return None,
    })
}

/// The name of element type `t` (`FP32`), or its number.
pub fn name(t: fb::DType) -> String {
    t.variant_name()
        .map_or_else(|| format!("dtype{}", t.0), str::to_owned)
}

/// The short name for `code.txt` (`f32`), or the number.
pub fn short(t: fb::DType) -> String {
    storage_of(t).map_or_else(|| format!("dtype{}", t.0), |s| s.short.to_owned())
}

/// Bytes `count` elements of `s` take, rounded up to whole bytes, or
/// `None` on overflow.
pub fn bytes_for(s: Storage, count: u64) -> Option<u64> {
    count.checked_mul(s.bits).map(|b| b.div_ceil(8))
}

/// Elements of a tensor of `shape`: 1 for rank 0, `None` for a negative
/// (dynamic) dimension or on overflow.
pub fn elements(shape: &[i32]) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_and_dynamic_dims_have_none() {
        let i4 = storage_of(fb::DType::INT4).unwrap();
        assert_eq!(bytes_for(i4, 3), Some(2));
        let i48 = storage_of(fb::DType::INT48).unwrap();
        assert_eq!(bytes_for(i48, 2), Some(12));
        assert_eq!(elements(&[]), Some(1));
        assert_eq!(elements(&[2, -1]), None);
        assert_eq!(elements(&[i32::MAX, i32::MAX, i32::MAX]), None);
        assert_eq!(name(fb::DType(999)), "dtype999");
        assert!(storage_of(fb::DType::BF16).unwrap().widen);
    }
}
