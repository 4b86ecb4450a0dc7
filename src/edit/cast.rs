//! Converting floating-point tensors between float64, float32, float16
//! and bfloat16, rounding to nearest, ties to even.

use crate::format::scalar::f16_to_f32;
use crate::schema::ScalarType;

/// Whether a tensor of `from` can be converted to `to`.
pub fn can(from: ScalarType, to: ScalarType) -> bool {
    is_float(from) && is_float(to)
}

fn is_float(t: ScalarType) -> bool {
    matches!(
        t,
        ScalarType::DOUBLE | ScalarType::FLOAT | ScalarType::HALF | ScalarType::BFLOAT16
    )
}

/// `bytes` (little-endian values of `from`) as values of `to`, and how
/// many values the conversion changed (not exactly representable in
/// `to`). `None` when [`can`] says no.
pub fn convert(bytes: &[u8], from: ScalarType, to: ScalarType) -> Option<(Vec<u8>, u64)> {
    if !can(from, to) {
        return None;
    }
    let width = |t| match t {
        ScalarType::DOUBLE => 8,
        ScalarType::FLOAT => 4,
        _ => 2,
    };
    let (wi, wo) = (width(from), width(to));
    let mut out = Vec::with_capacity(bytes.len() / wi * wo);
    let mut changed = 0;
    for v in bytes.chunks_exact(wi) {
        let x = read(v, from);
        let y = write(x, to, &mut out);
        // NaN stays NaN; anything else is changed when it does not come back.
        if y != x && !(x.is_nan() && y.is_nan()) {
            changed += 1;
        }
    }
    Some((out, changed))
}

fn read(v: &[u8], t: ScalarType) -> f64 {
    match t {
        ScalarType::DOUBLE => f64::from_le_bytes(v.try_into().expect("8 bytes")),
        ScalarType::FLOAT => f32::from_le_bytes(v.try_into().expect("4 bytes")) as f64,
        ScalarType::HALF => f16_to_f32(u16::from_le_bytes([v[0], v[1]])) as f64,
        _ => f32::from_bits(u32::from(u16::from_le_bytes([v[0], v[1]])) << 16) as f64,
    }
}

/// Appends `x` as a `t` and returns the value stored.
fn write(x: f64, t: ScalarType, out: &mut Vec<u8>) -> f64 {
    match t {
        ScalarType::DOUBLE => {
            out.extend_from_slice(&x.to_le_bytes());
            x
        }
        ScalarType::FLOAT => {
            // `as` rounds to nearest, ties to even.
            let y = x as f32;
            out.extend_from_slice(&y.to_le_bytes());
            y as f64
        }
        ScalarType::HALF => {
            let h = f32_to_f16(narrow(x));
            out.extend_from_slice(&h.to_le_bytes());
            f16_to_f32(h) as f64
        }
        _ => {
            let b = f32_to_bf16(narrow(x));
            out.extend_from_slice(&b.to_le_bytes());
            f32::from_bits(u32::from(b) << 16) as f64
        }
    }
}

/// `x` as a float32 rounded to odd (toward zero, then the last bit set
/// when anything was dropped): a float64 then rounds to float16 or
/// bfloat16 through it exactly as it would directly, as float32 keeps more
/// than two bits beyond theirs. Exact for values from float32 or narrower.
fn narrow(x: f64) -> f32 {
    let y = x as f32;
    if y as f64 == x || x.is_nan() {
        return y;
    }
    let toward_zero = if (y as f64).abs() > x.abs() {
        f32::from_bits(y.to_bits() - 1)
    } else {
        y
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

/// float32 to bfloat16, ties to even; NaN stays a (quiet) NaN.
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// float32 to float16, ties to even; overflow gives infinity.
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign
            | 0x7c00
            | if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // Subnormal or zero: shift the full mantissa into place.
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut h = (m >> shift) as u16;
        if rest > half || (rest == half && h & 1 == 1) {
            h += 1;
        }
        return sign | h;
    }
    let mut h = ((e as u32) << 10 | (man >> 13)) as u16;
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        // A carry into the exponent is the right rounding (up to infinity).
        h += 1;
    }
    sign | h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_to_nearest_even_and_counts_what_changed() {
        // 1 + 2^-11 lies halfway between two float16s: ties go to the even 1.0.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        // 1 + 3·2^-11 is halfway too, and rounds up to the even one.
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(2f32.powi(-24)), 1);
        assert_eq!(f32_to_f16(-0.0), 0x8000);
        for h in [0u16, 1, 0x3ff, 0x400, 0x3c00, 0x7bff, 0xfbff, 0x8001] {
            assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#x}");
        }
        assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8)), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        let vals: Vec<u8> = [1.0f32, 0.1, 2.5, f32::NAN]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let (out, changed) = convert(&vals, ScalarType::FLOAT, ScalarType::HALF).unwrap();
        assert_eq!(out.len(), 8);
        assert_eq!(changed, 1, "only 0.1 is not a float16");
        assert!(convert(&vals, ScalarType::FLOAT, ScalarType::INT).is_none());
        // Just above a float16 tie, in float64: a float32 step would round
        // to the tie and then to even (down); the value rounds up.
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        let (h, _) = convert(&x.to_le_bytes(), ScalarType::DOUBLE, ScalarType::HALF).unwrap();
        assert_eq!(u16::from_le_bytes([h[0], h[1]]), 0x3c01);
    }
}
