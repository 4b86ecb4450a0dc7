//! Element types: schema names, sizes and NumPy equivalents.

use crate::schema::ScalarType;

/// How an element type is shown to NumPy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumpyType {
    /// The array-protocol type string, e.g. `<f4`.
    pub descr: &'static str,
    /// True when NumPy has no such type and the descr is an unsigned integer
    /// of the same width holding the raw bits (bfloat16, float8, bits16,
    /// packed 4- and 2-bit integers).
    pub raw_bits: bool,
}

/// ExecuTorch's number for complex64 (`ComplexFloat`), which the program
/// schema does not name.
pub const COMPLEX_FLOAT: ScalarType = ScalarType(9);
/// ExecuTorch's number for complex128 (`ComplexDouble`).
pub const COMPLEX_DOUBLE: ScalarType = ScalarType(10);

const fn np(descr: &'static str) -> Option<NumpyType> {
    Some(NumpyType {
        descr,
        raw_bits: false,
    })
}

const fn raw(descr: &'static str) -> Option<NumpyType> {
    Some(NumpyType {
        descr,
        raw_bits: true,
    })
}

/// Size and NumPy type of each known scalar type.
fn info(t: ScalarType) -> Option<(u64, NumpyType)> {
    let (size, numpy) = match t {
        ScalarType::BYTE => (1, np("|u1")),
        ScalarType::CHAR => (1, np("|i1")),
        ScalarType::SHORT => (2, np("<i2")),
        ScalarType::INT => (4, np("<i4")),
        ScalarType::LONG => (8, np("<i8")),
        ScalarType::HALF => (2, np("<f2")),
        ScalarType::FLOAT => (4, np("<f4")),
        ScalarType::DOUBLE => (8, np("<f8")),
        ScalarType::BOOL => (1, np("|b1")),
        ScalarType::QINT8 => (1, np("|i1")),
        ScalarType::QUINT8 => (1, np("|u1")),
        ScalarType::QINT32 => (4, np("<i4")),
        ScalarType::BFLOAT16 => (2, raw("<u2")),
        ScalarType::QUINT4X2 | ScalarType::QUINT2X4 => (1, raw("|u1")),
        ScalarType::BITS16 => (2, raw("<u2")),
        ScalarType::FLOAT8E5M2
        | ScalarType::FLOAT8E4M3FN
        | ScalarType::FLOAT8E5M2FNUZ
        | ScalarType::FLOAT8E4M3FNUZ => (1, raw("|u1")),
        ScalarType::UINT16 => (2, np("<u2")),
        ScalarType::UINT32 => (4, np("<u4")),
        ScalarType::UINT64 => (8, np("<u8")),
        COMPLEX_FLOAT => (8, np("<c8")),
        COMPLEX_DOUBLE => (16, np("<c16")),
        _ => return None,
    };
    numpy.map(|n| (size, n))
}

/// Bytes per element, or `None` for a type the schema does not name.
pub fn element_size(t: ScalarType) -> Option<u64> {
    info(t).map(|(size, _)| size)
}

/// The alignment of the C++ type the runtime's kernels read an element
/// as (`alignof`): the element size, but for complex numbers, which are
/// pairs of their component type.
pub fn alignment(t: ScalarType) -> Option<u64> {
    match t {
        COMPLEX_FLOAT => Some(4),
        COMPLEX_DOUBLE => Some(8),
        _ => element_size(t),
    }
}

/// How NumPy should see the type, or `None` for an unknown type.
pub fn numpy(t: ScalarType) -> Option<NumpyType> {
    info(t).map(|(_, n)| n)
}

/// The scalar type whose elements NumPy reads with `descr`, for the
/// plain numeric descrs (`<f4`, `|i1`, ...); `None` for any other.
pub fn from_numpy(descr: &str) -> Option<ScalarType> {
    Some(match descr {
        "|u1" => ScalarType::BYTE,
        "|i1" => ScalarType::CHAR,
        "<i2" => ScalarType::SHORT,
        "<i4" => ScalarType::INT,
        "<i8" => ScalarType::LONG,
        "<f2" => ScalarType::HALF,
        "<f4" => ScalarType::FLOAT,
        "<f8" => ScalarType::DOUBLE,
        "|b1" => ScalarType::BOOL,
        "<u2" => ScalarType::UINT16,
        "<u4" => ScalarType::UINT32,
        "<u8" => ScalarType::UINT64,
        _ => return None,
    })
}

/// The schema's name (`FLOAT`), or the number for a type it does not name.
pub fn name(t: ScalarType) -> String {
    match t {
        COMPLEX_FLOAT => "COMPLEXFLOAT".to_owned(),
        COMPLEX_DOUBLE => "COMPLEXDOUBLE".to_owned(),
        _ => t
            .variant_name()
            .map_or_else(|| t.0.to_string(), str::to_owned),
    }
}

/// An IEEE half (float16) as a float32, exactly: every half is one.
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m × 2^-24.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}
