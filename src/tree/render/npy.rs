//! NumPy `.npy` (format 1.0) headers for raw tensor bytes.

/// The header for an array of `descr` elements with `shape`, padded so the
/// data that follows starts at a multiple of 64 bytes. `None` when the
/// header would not fit format 1.0's 16-bit length.
pub fn header(descr: &str, shape: &[u64]) -> Option<Vec<u8>> {
    use std::fmt::Write;
    let mut dict = String::with_capacity(64 + 8 * shape.len());
    dict.push_str("{'descr': '");
    dict.push_str(descr);
    dict.push_str("', 'fortran_order': False, 'shape': (");
    for (i, d) in shape.iter().enumerate() {
        if i > 0 {
            dict.push_str(", ");
        }
        let _ = write!(dict, "{d}");
    }
    if shape.len() == 1 {
        dict.push(',');
    }
    dict.push_str("), }");
    // magic (6) + version (2) + length (2) + dict + padding + '\n'
    let unpadded = 10 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let len = u16::try_from(total - 10).ok()?;
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    Some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_aligned_and_well_formed() {
        for shape in [&[][..], &[5], &[3, 5], &[1, 2, 3, 4, 5, 6, 7, 8]] {
            let h = header("<f4", shape).unwrap();
            assert_eq!(h.len() % 64, 0);
            assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
            assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, h.len() - 10);
            assert_eq!(*h.last().unwrap(), b'\n');
        }
        let text = String::from_utf8(header("|b1", &[7]).unwrap()[10..].to_vec()).unwrap();
        assert!(text.starts_with("{'descr': '|b1', 'fortran_order': False, 'shape': (7,), }"));
        assert!(header("<f4", &vec![1; 30000]).is_none());
    }
}
