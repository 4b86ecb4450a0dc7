//! The user documentation as the tests read it: README.md, the pages under
//! docs/ and python/README.md. docs/incoming/ holds notes waiting to be
//! folded into pages, so it is not documentation yet.

use std::path::{Path, PathBuf};

/// The checkout's root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every documentation page, relative to the root, sorted.
pub fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "incoming") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![root().join("README.md"), root().join("python/README.md")];
    walk(&root().join("docs"), &mut out);
    let mut rel: Vec<PathBuf> = out
        .into_iter()
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect();
    rel.sort();
    rel
}

/// A page's text.
pub fn read(page: &Path) -> String {
    std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
}

/// The lines of a page outside fenced code blocks, with their 1-based
/// numbers; the fences themselves are left out.
pub fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut in_block = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if !in_block {
            out.push((i + 1, line));
        }
    }
    out
}
