//! Little-endian reads at offsets taken from files: each is bounds
//! checked and says `None` when the bytes end first, or when the offset
//! and length wrap, so no offset a file states can read past it or panic.
//! Callers turn `None` into the error that names their field.

/// The byte at `at`.
pub fn u8_at(b: &[u8], at: u64) -> Option<u8> {
    b.get(usize::try_from(at).ok()?).copied()
}

/// The `u16` at `at`.
pub fn u16_at(b: &[u8], at: u64) -> Option<u16> {
    Some(u16::from_le_bytes(array(b, at)?))
}

/// The `u32` at `at`.
pub fn u32_at(b: &[u8], at: u64) -> Option<u32> {
    Some(u32::from_le_bytes(array(b, at)?))
}

/// The `i32` at `at`.
pub fn i32_at(b: &[u8], at: u64) -> Option<i32> {
    Some(i32::from_le_bytes(array(b, at)?))
}

/// The `u64` at `at`.
pub fn u64_at(b: &[u8], at: u64) -> Option<u64> {
    Some(u64::from_le_bytes(array(b, at)?))
}

/// The `i64` at `at`.
pub fn i64_at(b: &[u8], at: u64) -> Option<i64> {
    Some(i64::from_le_bytes(array(b, at)?))
}

/// The `N` bytes at `at`.
pub fn array<const N: usize>(b: &[u8], at: u64) -> Option<[u8; N]> {
    let start = usize::try_from(at).ok()?;
    b.get(start..start.checked_add(N)?)?.try_into().ok()
}

/// The `len` bytes at `at`.
pub fn slice(b: &[u8], at: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(at).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    b.get(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_end_and_offsets_do_not_wrap() {
        let b = [1u8, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(u8_at(&b, 4), Some(2));
        assert_eq!(u8_at(&b, 9), None);
        assert_eq!(u16_at(&b, 0), Some(1));
        assert_eq!(u32_at(&b, 0), Some(1));
        assert_eq!(u32_at(&b, 2), Some(0xff02_0000));
        assert_eq!(u32_at(&b, 6), None);
        assert_eq!(i32_at(&b, 5), Some(-1));
        assert_eq!(u64_at(&b, 1), Some(0xffff_ffff_0200_0000));
        assert_eq!(i64_at(&b, 1), Some(-0xfe00_0000));
        assert_eq!(u64_at(&b, 2), None);
        assert_eq!(u64_at(&b, u64::MAX), None);
        assert_eq!(array::<2>(&b, 3), Some([0, 2]));
        assert_eq!(slice(&b, 4, 1), Some(&[2u8][..]));
        assert_eq!(slice(&b, 4, u64::MAX), None);
        assert_eq!(slice(&b, u64::MAX, 1), None);
    }
}
