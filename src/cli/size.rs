//! Sizes given on the command line: bytes, with an optional binary K, M
//! or G (`512K`, `2G`, `65536`).

/// `s` as bytes, or `None` when it is not a size or is zero.
pub(super) fn parse(s: &str) -> Option<u64> {
    let (digits, shift) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 10),
        b'm' | b'M' => (&s[..s.len() - 1], 20),
        b'g' | b'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1 << shift).filter(|&n| n > 0)
}

/// [`parse`] with an error saying what a size is, for clap and for
/// options given apart from `-o`.
pub(super) fn value(s: &str) -> Result<u64, String> {
    parse(s).ok_or_else(|| format!("{s:?}: give a size in bytes, optionally with K, M or G"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_a_binary_suffix_and_refuse_zero_and_overflow() {
        assert_eq!(parse("512K"), Some(512 << 10));
        assert_eq!(parse("2g"), Some(2 << 30));
        assert_eq!(parse("65536"), Some(65536));
        for bad in ["", "0", "K", "1T", "-1", "99999999999G"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert!(value("1T").unwrap_err().contains("K, M or G"));
    }
}
