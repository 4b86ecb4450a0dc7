//! File names from keys, names and indices, by the rules in README's "The
//! tree" section.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

/// Longest name a directory entry may have.
const NAME_MAX: usize = 255;
/// Where an over-long name is cut before its hash suffix.
const CUT_AT: usize = 230;

/// Percent-encodes what cannot or should not appear in a file name: `/`,
/// NUL, `%`, `~` and a leading `.`; the empty string becomes `%`.
pub fn encode(raw: &str) -> String {
    if raw.is_empty() {
        return "%".to_owned();
    }
    let mut out = String::with_capacity(raw.len());
    for (i, c) in raw.char_indices() {
        match c {
            '/' => out.push_str("%2F"),
            '\0' => out.push_str("%00"),
            '%' => out.push_str("%25"),
            '~' => out.push_str("%7E"),
            '.' if i == 0 => out.push_str("%2E"),
            c => out.push(c),
        }
    }
    out
}

/// `index` zero-padded to the width of `max`.
pub fn padded(index: u64, max: u64) -> String {
    let width = max.to_string().len();
    format!("{index:0width$}")
}

/// Hands out unique names within one directory.
#[derive(Debug, Default)]
pub struct DirNames {
    used: HashSet<String>,
}

impl DirNames {
    /// A unique name for `stem` + `ext` (`ext` is empty or starts with `.`):
    /// a repeat gets `~2`, `~3`, … before the extension, and a stem that
    /// would make the name longer than 255 bytes is cut to 230 bytes plus
    /// `~` and 16 hex digits of its SHA-256. The stem must already be
    /// encoded.
    pub fn unique(&mut self, stem: &str, ext: &str) -> String {
        let stem = shorten(stem, ext);
        let mut name = format!("{stem}{ext}");
        let mut n = 2;
        while self.used.contains(&name) {
            name = format!("{stem}~{n}{ext}");
            n += 1;
        }
        self.used.insert(name.clone());
        name
    }

    /// Like [`unique`](Self::unique) for a family of names that share one
    /// stem (a tensor's `.bin` and `.npy`): the same suffix for all of them.
    pub fn unique_family(&mut self, stem: &str, exts: &[&str]) -> Vec<String> {
        let stem = shorten(stem, exts.iter().max_by_key(|e| e.len()).unwrap_or(&""));
        let mut n = 1;
        loop {
            let suffix = if n == 1 {
                String::new()
            } else {
                format!("~{n}")
            };
            let names: Vec<String> = exts.iter().map(|e| format!("{stem}{suffix}{e}")).collect();
            if names.iter().all(|name| !self.used.contains(name)) {
                self.used.extend(names.iter().cloned());
                return names;
            }
            n += 1;
        }
    }
}

/// Leaves room for the extension and a `~N` suffix.
fn shorten(stem: &str, ext: &str) -> String {
    if stem.len() + ext.len() + 8 <= NAME_MAX {
        return stem.to_owned();
    }
    let mut cut = CUT_AT;
    while !stem.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash = Sha256::digest(stem.as_bytes());
    let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}~{hex}", &stem[..cut])
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
        assert_eq!(a.as_bytes()[..CUT_AT - 2], b.as_bytes()[..CUT_AT - 2]);
    }
}
