//! Two directories of model files compared file by file: which relative
//! paths only one side has, and a [`Report`] for each path both have.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Report;
use crate::escape::escape;

/// Two directories compared file by file.
#[derive(Debug, Serialize)]
pub struct Directories {
    /// The first directory, as shown.
    pub a: String,
    /// The second directory, as shown.
    pub b: String,
    /// Whether anything differs: a file on one side only, or a pair that
    /// differs.
    pub differ: bool,
    /// Relative paths of model files only in A.
    pub only_in_a: Vec<String>,
    /// Relative paths of model files only in B.
    pub only_in_b: Vec<String>,
    /// Each pair of files with the same relative path.
    pub files: Vec<Report>,
}

/// The relative paths of two sides' model files, split into those only in
/// A, only in B, and in both (each in A's order).
#[derive(Debug, Default, PartialEq)]
pub struct Pairing {
    /// Paths only the first side has.
    pub only_in_a: Vec<PathBuf>,
    /// Paths only the second side has.
    pub only_in_b: Vec<PathBuf>,
    /// Paths both sides have, compared as pairs.
    pub both: Vec<PathBuf>,
}

impl Pairing {
    /// Pairs files by their path relative to the directory given, so two
    /// files with one base name in different subdirectories stay apart.
    pub fn of(a: &[PathBuf], b: &[PathBuf]) -> Pairing {
        let in_b: std::collections::HashSet<&Path> = b.iter().map(PathBuf::as_path).collect();
        let in_a: std::collections::HashSet<&Path> = a.iter().map(PathBuf::as_path).collect();
        Pairing {
            only_in_a: a
                .iter()
                .filter(|p| !in_b.contains(p.as_path()))
                .cloned()
                .collect(),
            only_in_b: b
                .iter()
                .filter(|p| !in_a.contains(p.as_path()))
                .cloned()
                .collect(),
            both: a
                .iter()
                .filter(|p| in_b.contains(p.as_path()))
                .cloned()
                .collect(),
        }
    }
}

impl Directories {
    /// The result of comparing `pairing`'s pairs into `files`, with the
    /// one-sided paths shown by `show`.
    pub fn new(
        (a, b): (String, String),
        pairing: &Pairing,
        files: Vec<Report>,
        show: impl Fn(&Path) -> String,
    ) -> Directories {
        let only_in_a: Vec<String> = pairing.only_in_a.iter().map(|p| show(p)).collect();
        let only_in_b: Vec<String> = pairing.only_in_b.iter().map(|p| show(p)).collect();
        let differ =
            !only_in_a.is_empty() || !only_in_b.is_empty() || files.iter().any(|r| r.differ);
        Directories {
            a,
            b,
            differ,
            only_in_a,
            only_in_b,
            files,
        }
    }

    /// The one-sided paths, then each differing pair under a `== A B`
    /// line, its report rendered by `render` (text or `--stat`).
    pub fn text(&self, render: impl Fn(&Report) -> String) -> String {
        let mut o = String::new();
        for p in &self.only_in_a {
            o.push_str(&format!("only in {}: {}\n", self.a, escape(p)));
        }
        for p in &self.only_in_b {
            o.push_str(&format!("only in {}: {}\n", self.b, escape(p)));
        }
        for r in self.files.iter().filter(|r| r.differ) {
            o.push_str(&format!("== {} {}\n", r.a, r.b));
            o.push_str(&render(r));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_base_names_in_different_subdirectories_stay_apart() {
        let p = |s: &str| PathBuf::from(s);
        let a = vec![p("a/m.pte"), p("b/m.pte"), p("c.pte")];
        let b = vec![p("b/m.pte"), p("c.pte"), p("d/m.pte")];
        assert_eq!(
            Pairing::of(&a, &b),
            Pairing {
                only_in_a: vec![p("a/m.pte")],
                only_in_b: vec![p("d/m.pte")],
                both: vec![p("b/m.pte"), p("c.pte")],
            }
        );
    }
}
