//! File names from keys, names and indices, by the rules in docs/tree.md.

use sha2::{Digest, Sha256};

/// Longest name a directory entry may have.
const NAME_MAX: usize = 255;
/// Where an over-long name is cut before its hash mark, when the suffix
/// leaves room.
const CUT_AT: usize = 230;
/// Bytes of the hash mark: `~` and 16 hex digits.
const HASH_MARK: usize = 17;

/// Percent-encodes what cannot or should not appear in a file name: `/`,
/// NUL, `%`, `~`, a leading `.` and every byte that is not part of a UTF-8
/// character (`%FF`); the empty string becomes `%`.
pub fn encode(raw: impl AsRef<[u8]>) -> String {
    let raw = raw.as_ref();
    if raw.is_empty() {
        return "%".to_owned();
    }
    let mut out = String::with_capacity(raw.len());
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '/' => out.push_str("%2F"),
                '\0' => out.push_str("%00"),
                '%' => out.push_str("%25"),
                '~' => out.push_str("%7E"),
                '.' if out.is_empty() => out.push_str("%2E"),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The raw name an [`encode`]d name stands for; bytes that are not UTF-8
/// become U+FFFD.
pub fn decode(encoded: &str) -> String {
    if !encoded.contains('%') {
        return encoded.to_owned();
    }
    if encoded == "%" {
        return String::new();
    }
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex
            .filter(|_| bytes[i] == b'%')
            .map(|h| u8::from_str_radix(h, 16))
        {
            Some(Ok(b)) => {
                out.push(b);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `index` zero-padded to the width of `max`.
pub fn padded(index: u64, max: u64) -> String {
    let width = max.to_string().len();
    format!("{index:0width$}")
}

/// Hands out unique names within one directory.
#[derive(Debug, Default)]
pub struct DirNames {
    /// A fast hash: a directory of a large program hands out millions of
    /// names.
    used: foldhash::HashSet<String>,
}

impl DirNames {
    /// Room for `n` more names, for a directory whose size is known: the
    /// set would otherwise grow and rehash as they come.
    pub fn reserve(&mut self, n: usize) {
        self.used.reserve(n);
    }

    /// A unique name for `stem` + `ext` (`ext` is empty or a short
    /// extension such as `.bin`): a repeat gets `~2`, `~3`, … before the
    /// extension, and a stem that would make the name longer than 255 bytes
    /// is cut and marked with `~` and 16 hex digits of its SHA-256. The
    /// stem must already be encoded.
    pub fn unique(&mut self, stem: &str, ext: &str) -> String {
        self.unique_family(stem, &[ext]).pop().unwrap_or_default()
    }

    /// Like [`unique`](Self::unique) for a family of names that share one
    /// stem (a tensor's `.bin` and `.npy`): the same suffix for all of them.
    /// Every name handed out is at most 255 bytes, suffix included, and
    /// differs from every other name of the directory.
    pub fn unique_family(&mut self, stem: &str, exts: &[&str]) -> Vec<String> {
        let ext_len = exts.iter().map(|e| e.len()).max().unwrap_or(0);
        let base = shorten(stem, ext_len, 8);
        let mut suffix = String::new();
        for n in 1u64.. {
            if n > 1 {
                suffix.clear();
                suffix.push('~');
                suffix.push_str(&n.to_string());
            }
            let cut;
            let stem = if base.len() + suffix.len() + ext_len <= NAME_MAX {
                base.as_str()
            } else {
                cut = shorten(stem, ext_len, suffix.len());
                cut.as_str()
            };
            let names: Vec<String> = exts.iter().map(|e| [stem, &suffix, e].concat()).collect();
            if names.iter().all(|name| !self.used.contains(name)) {
                self.used.extend(names.iter().cloned());
                return names;
            }
        }
        unreachable!("a directory holds fewer than 2^64 names")
    }
}

/// The names [`DirNames::unique_family`] hands out for `stem` in a
/// directory where none of them is taken yet: what a directory whose
/// names cannot repeat computes instead of remembering them.
pub fn fitted(stem: &str, exts: &[&str]) -> Vec<String> {
    let ext_len = exts.iter().map(|e| e.len()).max().unwrap_or(0);
    debug_assert!(ext_len <= 16, "extensions are short");
    let stem = shorten(stem, ext_len, 8);
    exts.iter().map(|e| format!("{stem}{e}")).collect()
}

/// `stem`, or when `stem` + a suffix of `suffix_len` bytes + an extension of
/// `ext_len` bytes would exceed [`NAME_MAX`], its first bytes (cut at a
/// character boundary) with `~` and 16 hex digits of its hash, so that cut
/// stems stay distinct and the whole name fits.
fn shorten(stem: &str, ext_len: usize, suffix_len: usize) -> String {
    if stem.len() + ext_len + suffix_len <= NAME_MAX {
        return stem.to_owned();
    }
    let mut cut = CUT_AT.min(NAME_MAX - ext_len - suffix_len - HASH_MARK);
    while !stem.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash = Sha256::digest(stem.as_bytes());
    let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}~{hex}", &stem[..cut])
}

/// The name under `by-name/` of the file a checkpoint key names, when it
/// names one.
pub fn by_name(key: &str) -> String {
    DirNames::default().unique(&encode(key), "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_what_a_path_cannot_hold() {
        assert_eq!(encode("a/b"), "a%2Fb");
        assert_eq!(encode("..").as_str(), "%2E.");
        assert_eq!(encode("."), "%2E");
        assert_eq!(encode(""), "%");
        assert_eq!(encode("x\0y%z~"), "x%00y%25z%7E");
        assert_eq!(encode("fc1.weight"), "fc1.weight");
        assert_eq!(encode(b"w\xFF.\xC3"), "w%FF.%C3");
        assert_eq!(encode(b"\xFF."), "%FF.");
    }

    #[test]
    fn pads_to_the_largest_index() {
        assert_eq!(padded(7, 150), "007");
        assert_eq!(padded(0, 0), "0");
        assert_eq!(padded(12, 12), "12");
    }

    #[test]
    fn repeats_get_a_counter_before_the_extension() {
        let mut d = DirNames::default();
        assert_eq!(d.unique("k", ".bin"), "k.bin");
        assert_eq!(d.unique("k", ".bin"), "k~2.bin");
        assert_eq!(d.unique("k", ".bin"), "k~3.bin");
        assert_eq!(
            d.unique_family("k", &[".bin", ".npy"]),
            ["k~4.bin", "k~4.npy"]
        );
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let mut d = DirNames::default();
        let long = "é".repeat(200);
        let a = d.unique(&long, ".bin");
        assert!(a.len() <= NAME_MAX, "{}", a.len());
        assert!(a.ends_with(".bin"));
        let other = format!("{long}x");
        let b = d.unique(&other, ".bin");
        assert_ne!(a, b);
        assert_eq!(a.as_bytes()[..200], b.as_bytes()[..200]);
    }

    #[test]
    fn many_repeats_of_a_long_name_stay_within_255_bytes_and_unique() {
        // 1,000 repeats make a 5-byte suffix, which overflowed names cut
        // for 255 bytes minus 4.
        for stem in ["k".repeat(300), "é".repeat(125)] {
            let mut d = DirNames::default();
            let mut seen = std::collections::HashSet::new();
            for _ in 0..1_010 {
                let [bin, npy] =
                    <[String; 2]>::try_from(d.unique_family(&stem, &[".bin", ".npy"])).unwrap();
                assert!(
                    bin.len() <= NAME_MAX && npy.len() <= NAME_MAX,
                    "{}",
                    bin.len()
                );
                assert_eq!(bin.strip_suffix(".bin"), npy.strip_suffix(".npy"));
                assert!(seen.insert(bin) && seen.insert(npy));
                let one = d.unique(&stem, ".bin");
                assert!(one.len() <= NAME_MAX, "{}", one.len());
                assert!(seen.insert(one));
            }
        }
    }

    #[test]
    fn a_name_that_fits_is_kept_until_its_suffix_would_not() {
        let mut d = DirNames::default();
        let stem = "k".repeat(243);
        assert_eq!(d.unique(&stem, ".bin"), format!("{stem}.bin"));
        assert_eq!(d.unique(&stem, ".bin"), format!("{stem}~2.bin"));
    }
}
