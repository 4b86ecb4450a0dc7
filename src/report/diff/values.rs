//! How the elements of two tensors of one type and shape differ.

use serde::{Serialize, Serializer};

use crate::format::scalar::{self, f16_to_f32};
use crate::schema::ScalarType;

/// When two elements count as equal: exactly, or within numpy.allclose's
/// tolerance with B as the reference (`|a - b| <= atol + rtol * |b|`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tolerance {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Tolerance {
    /// True when no tolerance is given: elements must be equal.
    pub fn is_exact(&self) -> bool {
        self.atol == 0.0 && self.rtol == 0.0
    }
}

/// A float that may be infinite, written in JSON as a number (full
/// precision) or as the string `"inf"` (JSON has no infinity), and in
/// text as people and NumPy write it: the shortest form that reads back
/// as the same number, at the precision of the tensors it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure(pub f64, pub Precision);

/// The precision a figure is shown at: that of the elements it was
/// computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// 32 bits or fewer (`float32`, `float16`, `bfloat16`, integers of up
    /// to 16 bits).
    Single,
    /// 64 bits.
    #[default]
    Double,
}

impl Figure {
    /// `v` at double precision.
    pub fn double(v: f64) -> Self {
        Figure(v, Precision::Double)
    }
}

/// The shortest text that reads back as `v` (`0.5`, `0.2008071`,
/// `1e-07`, `2.5e+20`): positional or scientific, whichever is shorter,
/// the exponent written as NumPy writes it.
fn shortest(positional: String, scientific: String) -> String {
    let scientific = match scientific.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
            format!("{m}e{sign}{digits:0>2}")
        }
        None => scientific,
    };
    if scientific.len() < positional.len() {
        scientific
    } else {
        positional
    }
}

impl Serialize for Figure {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(self.0)
        } else if self.0.is_nan() {
            s.serialize_str("nan")
        } else if self.0 > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if !v.is_finite() {
            return write!(f, "{v}");
        }
        let text = match self.1 {
            Precision::Single => shortest(format!("{}", v as f32), format!("{:e}", v as f32)),
            Precision::Double => shortest(format!("{v}"), format!("{v:e}")),
        };
        f.write_str(&text)
    }
}

/// The element differences of two same-typed, same-shaped tensors.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Elements {
    /// Elements in each.
    pub elements: u64,
    /// Elements that differ (beyond the tolerance, if one is given).
    pub differing: u64,
    /// The largest |a - b| over differing pairs of finite numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_abs: Option<Figure>,
    /// The largest |a - b| / |b| over the same pairs (`inf` where b = 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rel: Option<Figure>,
    /// Where the largest |a - b| is, as a full index into the logical
    /// shape, with the two values there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<At>,
    /// The mean |a - b| over differing pairs of finite numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_abs: Option<Figure>,
    /// NaN elements in A.
    pub nan_a: u64,
    /// NaN elements in B.
    pub nan_b: u64,
    /// Differing pairs where either side is NaN or infinite (left out of
    /// the maxima and the mean).
    pub nonfinite: u64,
}

/// An element and its two values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct At {
    /// The element's index, one entry per dimension.
    pub index: Vec<u64>,
    /// Its value in A.
    pub a: Figure,
    /// Its value in B.
    pub b: Figure,
}

type Decode = fn(&[u8]) -> f64;

/// How to read one element of `t` as a number, if it is one.
fn decoder(t: ScalarType) -> Option<Decode> {
    fn le<const N: usize>(b: &[u8]) -> [u8; N] {
        let mut a = [0; N];
        a.copy_from_slice(&b[..N]);
        a
    }
    Some(match t {
        ScalarType::FLOAT => |b| f64::from(f32::from_le_bytes(le(b))),
        ScalarType::DOUBLE => |b| f64::from_le_bytes(le(b)),
        ScalarType::HALF => |b| f64::from(f16_to_f32(u16::from_le_bytes(le(b)))),
        ScalarType::BFLOAT16 => {
            |b| f64::from(f32::from_bits(u32::from(u16::from_le_bytes(le(b))) << 16))
        }
        ScalarType::CHAR | ScalarType::QINT8 => |b| f64::from(b[0] as i8),
        ScalarType::BYTE | ScalarType::QUINT8 | ScalarType::BOOL => |b| f64::from(b[0]),
        ScalarType::SHORT => |b| f64::from(i16::from_le_bytes(le(b))),
        ScalarType::UINT16 => |b| f64::from(u16::from_le_bytes(le(b))),
        ScalarType::INT | ScalarType::QINT32 => |b| f64::from(i32::from_le_bytes(le(b))),
        ScalarType::UINT32 => |b| f64::from(u32::from_le_bytes(le(b))),
        ScalarType::LONG => |b| i64::from_le_bytes(le(b)) as f64,
        ScalarType::UINT64 => |b| u64::from_le_bytes(le(b)) as f64,
        _ => return None,
    })
}

/// The logical index of the element stored at position `flat`, for a
/// tensor of `sizes` laid out in `dim_order` (outermost first; empty means
/// contiguous).
pub fn logical_index(flat: u64, sizes: &[i64], dim_order: &[u8]) -> Vec<u64> {
    let rank = sizes.len();
    let order: Vec<usize> = if dim_order.len() == rank {
        dim_order.iter().map(|&d| usize::from(d)).collect()
    } else {
        (0..rank).collect()
    };
    let mut index = vec![0u64; rank];
    let mut rest = flat;
    for &d in order.iter().rev() {
        let n = u64::try_from(sizes.get(d).copied().unwrap_or(1))
            .unwrap_or(1)
            .max(1);
        if let Some(slot) = index.get_mut(d) {
            *slot = rest % n;
        }
        rest /= n;
    }
    index
}

/// Compares the elements of `a` and `b`, both of type `t`, logical `sizes`
/// and `dim_order`. NaN equals NaN and an infinity equals itself; a
/// differing pair with a NaN or an infinity is counted in `nonfinite` and
/// kept out of the maxima and the mean. Types that are not numbers compare
/// bytewise per element.
pub fn compare(
    t: ScalarType,
    sizes: &[i64],
    dim_order: &[u8],
    a: &[u8],
    b: &[u8],
    tol: Tolerance,
) -> Elements {
    let size = scalar::element_size(t).unwrap_or(1).max(1) as usize;
    let pairs = a.chunks_exact(size).zip(b.chunks_exact(size));
    let mut e = Elements {
        elements: pairs.len() as u64,
        differing: 0,
        max_abs: None,
        max_rel: None,
        at: None,
        mean_abs: None,
        nan_a: 0,
        nan_b: 0,
        nonfinite: 0,
    };
    let Some(decode) = decoder(t) else {
        e.differing = pairs.filter(|(x, y)| x != y).count() as u64;
        return e;
    };
    let (mut sum, mut finite_differing) = (0f64, 0u64);
    let mut best: Option<(u64, f64, f64, f64)> = None;
    let mut rel: Option<f64> = None;
    for (i, (xb, yb)) in pairs.enumerate() {
        if xb == yb && tol.is_exact() {
            // Equal bytes are equal values (NaN included); only count NaNs.
            let x = decode(xb);
            if x.is_nan() {
                e.nan_a += 1;
                e.nan_b += 1;
            }
            continue;
        }
        let (x, y) = (decode(xb), decode(yb));
        e.nan_a += u64::from(x.is_nan());
        e.nan_b += u64::from(y.is_nan());
        if x.is_nan() && y.is_nan() {
            continue;
        }
        if !x.is_finite() || !y.is_finite() {
            if x != y {
                e.differing += 1;
                e.nonfinite += 1;
            }
            continue;
        }
        let d = (x - y).abs();
        let differs = if tol.is_exact() {
            xb != yb
        } else {
            d > tol.atol + tol.rtol * y.abs()
        };
        if !differs {
            continue;
        }
        e.differing += 1;
        finite_differing += 1;
        sum += d;
        if best.is_none_or(|(_, m, _, _)| d > m) {
            best = Some((i as u64, d, x, y));
        }
        let r = if y == 0.0 { f64::INFINITY } else { d / y.abs() };
        rel = Some(rel.map_or(r, |m| m.max(r)));
    }
    let single = matches!(
        t,
        ScalarType::FLOAT | ScalarType::HALF | ScalarType::BFLOAT16
    );
    let p = if single || size <= 2 {
        Precision::Single
    } else {
        Precision::Double
    };
    if let Some((i, d, x, y)) = best {
        e.max_abs = Some(Figure(d, p));
        e.at = Some(At {
            index: logical_index(i, sizes, dim_order),
            a: Figure(x, p),
            b: Figure(y, p),
        });
        e.mean_abs = Some(Figure(sum / finite_differing as f64, p));
    }
    e.max_rel = rel.map(|r| Figure(r, p));
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn the_largest_difference_is_located_and_valued() {
        let a = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = f32s(&[1.0, 2.5, 3.0, 4.0, 0.0, 6.0]);
        let e = compare(
            ScalarType::FLOAT,
            &[2, 3],
            &[0, 1],
            &a,
            &b,
            Tolerance::default(),
        );
        assert_eq!(e.differing, 2);
        assert_eq!(e.max_abs.map(|f| f.0), Some(5.0));
        let at = e.at.unwrap();
        assert_eq!(at.index, [1, 1]);
        assert_eq!((at.a.0, at.b.0), (5.0, 0.0));
        assert_eq!(e.max_rel.map(|f| f.0), Some(f64::INFINITY), "b = 0");
        assert_eq!(e.mean_abs.map(|f| f.0), Some(2.75));
    }

    #[test]
    fn indices_follow_the_dim_order() {
        // sizes [2, 3] stored transposed (dim order [1, 0]): storage
        // position 1 is logical [1, 0].
        assert_eq!(logical_index(1, &[2, 3], &[1, 0]), [1, 0]);
        assert_eq!(logical_index(1, &[2, 3], &[0, 1]), [0, 1]);
        assert_eq!(logical_index(5, &[2, 3], &[]), [1, 2]);
        assert_eq!(logical_index(0, &[], &[]), Vec::<u64>::new());
    }

    #[test]
    fn tolerances_as_allclose() {
        let a = f32s(&[1.0, 100.0, 0.0]);
        let b = f32s(&[1.05, 101.0, 0.001]);
        let tol = Tolerance {
            atol: 0.01,
            rtol: 0.01,
        };
        let e = compare(ScalarType::FLOAT, &[3], &[], &a, &b, tol);
        // |1 - 1.05| = 0.05 > 0.01 + 0.0105; |100 - 101| = 1 <= 0.01 + 1.01;
        // |0 - 0.001| <= 0.01.
        assert_eq!(e.differing, 1);
        assert_eq!(e.at.unwrap().index, [0]);
    }

    #[test]
    fn integers_have_deltas_too() {
        let a: Vec<u8> = [3i64, -7].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b: Vec<u8> = [3i64, 2].iter().flat_map(|x| x.to_le_bytes()).collect();
        let e = compare(ScalarType::LONG, &[2], &[], &a, &b, Tolerance::default());
        assert_eq!((e.differing, e.max_abs.map(|f| f.0)), (1, Some(9.0)));
    }

    #[test]
    fn infinities_are_strings_in_json() {
        let v = serde_json::to_value(Figure::double(f64::INFINITY)).unwrap();
        assert_eq!(v, "inf");
        assert_eq!(serde_json::to_value(Figure::double(0.5)).unwrap(), 0.5);
        assert_eq!(Figure::double(f64::INFINITY).to_string(), "inf");
    }

    #[test]
    fn figures_read_as_people_write_them() {
        let single = |v: f32| Figure(f64::from(v), Precision::Single).to_string();
        assert_eq!(single(0.5), "0.5");
        assert_eq!(single(0.2008071), "0.2008071");
        assert_eq!(single(-0.2447532), "-0.2447532");
        assert_eq!(single(1e-7), "1e-07");
        assert_eq!(single(2.5e20), "2.5e+20");
        assert_eq!(single(3.0), "3");
        // A difference of two float32 values, computed in double.
        let d = (f64::from(0.2008071f32) - f64::from(0.7008071f32)).abs();
        assert_eq!(single(d as f32), "0.5");
        assert_eq!(Figure(d, Precision::Single).to_string(), "0.5");
        assert_eq!(Figure::double(0.1).to_string(), "0.1");
        assert_eq!(Figure::double(1.0 / 3.0).to_string(), "0.3333333333333333");
        assert_eq!(Figure::double(1e-300).to_string(), "1e-300");
    }
}
