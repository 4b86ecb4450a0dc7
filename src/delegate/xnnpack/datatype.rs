//! XNNPACK element types: names, sizes and how NumPy sees them.

use crate::schema::xnnpack::XNNDatatype;

/// Storage of one XNNPACK datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Storage {
    /// Short name (`fp32`, `qcint8`), used in `code.txt`.
    pub short: &'static str,
    /// Bits per element: 4 for packed types.
    pub bits: u64,
    /// The NumPy descr of the `.npy` (`<f4`); for bf16 and packed 4-bit
    /// data, the unsigned integer that holds the raw bits.
    pub numpy: &'static str,
    /// True when `numpy` holds raw bits rather than the values.
    pub raw_bits: bool,
}

const fn st(short: &'static str, bits: u64, numpy: &'static str, raw_bits: bool) -> Storage {
    Storage {
        short,
        bits,
        numpy,
        raw_bits,
    }
}

/// The storage of `t`, or `None` for `invalid` and unknown numbers.
pub fn storage(t: XNNDatatype) -> Option<Storage> {
    Some(match t {
        XNNDatatype::xnn_datatype_fp32 => st("fp32", 32, "<f4", false),
        XNNDatatype::xnn_datatype_fp16 => st("fp16", 16, "<f2", false),
        XNNDatatype::xnn_datatype_qint8 => st("qint8", 8, "|i1", false),
        XNNDatatype::xnn_datatype_quint8 => st("quint8", 8, "|u1", false),
        XNNDatatype::xnn_datatype_qint32 => st("qint32", 32, "<i4", false),
        XNNDatatype::xnn_datatype_qcint8 => st("qcint8", 8, "|i1", false),
        XNNDatatype::xnn_datatype_qcint32 => st("qcint32", 32, "<i4", false),
        XNNDatatype::xnn_datatype_qcint4 => st("qcint4", 4, "|u1", true),
        XNNDatatype::xnn_datatype_qdint8 => st("qdint8", 8, "|i1", false),
        XNNDatatype::xnn_datatype_qbint4 => st("qbint4", 4, "|u1", true),
        XNNDatatype::xnn_datatype_qpint8 => st("qpint8", 8, "|i1", false),
        XNNDatatype::xnn_datatype_int32 => st("int32", 32, "<i4", false),
        XNNDatatype::xnn_datatype_pfp32 => st("pfp32", 32, "<f4", false),
        XNNDatatype::xnn_datatype_bf16 => st("bf16", 16, "<u2", true),
        _ => return None,
    })
}

/// The schema's name (`xnn_datatype_fp32`), or the number.
pub fn name(t: XNNDatatype) -> String {
    t.variant_name()
        .map_or_else(|| t.0.to_string(), str::to_owned)
}

/// The short name (`fp32`), or `dt<number>`.
pub fn short(t: XNNDatatype) -> String {
    storage(t).map_or_else(|| format!("dt{}", t.0), |s| s.short.to_owned())
}

/// Bytes of a tensor of `dims` and the shape its `.npy` has: for packed
/// 4-bit types two values share a byte along the last dimension, so that
/// dimension is halved (rounded up). `None` on overflow.
pub fn layout(s: Storage, dims: &[u32]) -> Option<(u64, Vec<u64>)> {
    let mut shape: Vec<u64> = dims.iter().map(|&d| u64::from(d)).collect();
    if s.bits == 4 {
        match shape.last_mut() {
            Some(last) => *last = last.div_ceil(2),
            None => shape.push(1),
        }
    }
    let elem = s.bits.max(8) / 8;
    let n = shape.iter().try_fold(elem, |acc, &d| acc.checked_mul(d))?;
    Some((n, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_packed_shapes() {
        let fp32 = storage(XNNDatatype::xnn_datatype_fp32).unwrap();
        assert_eq!(
            layout(fp32, &[32, 3, 3, 3]),
            Some((3456, vec![32, 3, 3, 3]))
        );
        assert_eq!(layout(fp32, &[]), Some((4, vec![])));
        let q4 = storage(XNNDatatype::xnn_datatype_qcint4).unwrap();
        assert_eq!(layout(q4, &[8, 5]), Some((24, vec![8, 3])));
        assert_eq!(layout(fp32, &[u32::MAX, u32::MAX, u32::MAX]), None);
        assert!(storage(XNNDatatype(99)).is_none());
        assert_eq!(name(XNNDatatype(99)), "99");
        assert_eq!(short(XNNDatatype::xnn_datatype_bf16), "bf16");
    }
}
