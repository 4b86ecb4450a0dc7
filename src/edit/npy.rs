//! Reading the header of a `.npy` given as new bytes for a tensor.

/// What a `.npy` header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The array-protocol type string (`<f4`).
    pub descr: String,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<u64>,
    /// Bytes before the data: magic, version, length and the dict.
    pub len: usize,
}

impl Header {
    /// The shape as NumPy prints it: `(3, 4)`, `(3,)`, `()`.
    pub fn shape_text(&self) -> String {
        shape_text(&self.shape)
    }
}

/// A shape as NumPy prints it.
pub fn shape_text(shape: &[u64]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// True when `bytes` start with the `.npy` magic.
pub fn is_npy(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x93NUMPY")
}

/// Parses the header at the start of `bytes`: versions 1.0 (16-bit
/// length), 2.0 and 3.0 (32-bit length).
pub fn parse(bytes: &[u8]) -> Result<Header, String> {
    if !is_npy(bytes) {
        return Err("does not start with the .npy magic \\x93NUMPY".into());
    }
    let major = *bytes.get(6).ok_or("ends inside the .npy magic")?;
    let (dict_at, dict_len) = match major {
        1 => {
            let l = bytes
                .get(8..10)
                .ok_or("ends inside the .npy header length")?;
            (10, u16::from_le_bytes([l[0], l[1]]) as usize)
        }
        2 | 3 => {
            let l = bytes
                .get(8..12)
                .ok_or("ends inside the .npy header length")?;
            (12, u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
        }
        v => {
            return Err(format!(
                ".npy format version {v} is not one this reads (1, 2, 3)"
            ));
        }
    };
    let dict = bytes
        .get(dict_at..dict_at + dict_len)
        .ok_or_else(|| format!("the .npy header says {dict_len} bytes but the file ends first"))?;
    let dict = std::str::from_utf8(dict).map_err(|_| "the .npy header is not text")?;
    let descr = quoted_after(dict, "descr").ok_or("the .npy header has no 'descr'")?;
    let fortran_order = match word_after(dict, "fortran_order") {
        Some(w) if w.starts_with("True") => true,
        Some(w) if w.starts_with("False") => false,
        _ => return Err("the .npy header has no 'fortran_order'".into()),
    };
    let shape = word_after(dict, "shape").ok_or("the .npy header has no 'shape'")?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or("the .npy header's 'shape' is not a tuple")?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<u64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| format!("the .npy header's shape ({inner}) is not a tuple of sizes"))?;
    Ok(Header {
        descr: descr.to_owned(),
        fortran_order,
        shape,
        len: dict_at + dict_len,
    })
}

/// What follows `'key':` in a dict's text, spaces skipped.
fn word_after<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let at = dict
        .find(&format!("'{key}'"))
        .or_else(|| dict.find(&format!("\"{key}\"")))?;
    let rest = &dict[at + key.len() + 2..];
    Some(rest.trim_start().strip_prefix(':')?.trim_start())
}

/// The quoted string value of `key`.
fn quoted_after<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let w = word_after(dict, key)?;
    let q = w.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    w[1..].split(q).next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_headers_ptefs_and_numpy_write() {
        let h = crate::tree::render::npy::header("<f4", &[3, 4]).unwrap();
        let got = parse(&h).unwrap();
        assert_eq!(got.descr, "<f4");
        assert!(!got.fortran_order);
        assert_eq!(got.shape, vec![3, 4]);
        assert_eq!(got.len, h.len());
        let one = crate::tree::render::npy::header("|i1", &[7]).unwrap();
        assert_eq!(parse(&one).unwrap().shape_text(), "(7,)");
        let scalar = crate::tree::render::npy::header("<f8", &[]).unwrap();
        assert_eq!(parse(&scalar).unwrap().shape, Vec::<u64>::new());
        assert!(parse(b"\x93NUMPY\x01\x00\xff\xff{").is_err());
        assert!(parse(b"not npy").is_err());
    }
}
