//! ExecuTorch's flattened directory (`inmemoryfs`): the files' contents one
//! after another, then a JSON node table written reversed at the very end,
//! with no length field. Reading the payload backwards from its last byte
//! gives the table as ordinary JSON, and where that JSON ends is where the
//! table starts. Each node has a name, a kind (0: file, 1: directory), a
//! `dataRegion` (offset and size of a file's bytes, from the payload's
//! first byte) and `children` (name → node index); the last node is the
//! root directory.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::Read;

use serde::Deserialize;

use crate::format::{Error, Result, Span};

/// Deepest nesting shown: paths are rebuilt per file, so a hostile chain of
/// directories must not make them grow without bound.
pub const MAX_DEPTH: usize = 64;

/// A flattened directory read from its node table.
#[derive(Debug, Clone)]
pub struct Directory {
    /// The root directory's name (`lowered_module`).
    pub root: String,
    /// Every file, by path from the folder (`lowered_module/metadata.json`),
    /// in path order.
    pub files: Vec<FileEntry>,
    /// Every directory's path, the root's included, in path order.
    pub dirs: Vec<String>,
    /// Where the node table is, relative to the start of the flattened bytes.
    pub table: Span,
    /// Number of nodes in the table.
    pub nodes: usize,
    /// Nodes that could not be placed (bad names, indices, regions), each
    /// saying which node and why; the rest of the directory is still shown.
    pub errors: Vec<String>,
}

/// One file of the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Path from the folder, `/`-separated.
    pub path: String,
    /// Its bytes, relative to the start of the flattened bytes.
    pub span: Span,
    /// The node's index in the table.
    pub node: usize,
}

impl Directory {
    /// The file at `path`.
    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files.iter().find(|f| f.path == path)
    }
}

#[derive(Deserialize)]
struct Table {
    #[serde(default)]
    nodes: Vec<Node>,
}

// Every field may be missing: ExecuTorch's reader takes what is there.
#[derive(Deserialize)]
struct Node {
    #[serde(default)]
    name: String,
    #[serde(default)]
    kind: i64,
    #[serde(default, rename = "dataRegion")]
    region: Region,
    #[serde(default)]
    children: BTreeMap<String, u64>,
}

#[derive(Deserialize, Default)]
struct Region {
    #[serde(default)]
    offset: u64,
    #[serde(default)]
    size: u64,
}

/// The payload read from its last byte to its first, counting what was
/// read so a failure can say where.
struct Backwards<'a, 'c> {
    bytes: &'a [u8],
    read: &'c Cell<usize>,
}

impl Read for Backwards<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let done = self.read.get();
        let left = self.bytes.len().saturating_sub(done);
        let n = left.min(buf.len());
        for (i, b) in buf.iter_mut().take(n).enumerate() {
            // done + i < len, so the index is in bounds.
            *b = self.bytes[self.bytes.len() - 1 - (done + i)];
        }
        self.read.set(done + n);
        Ok(n)
    }
}

/// True when `bytes` ends like a flattened directory (its reversed node
/// table opens with `{`).
pub fn looks_flattened(bytes: &[u8]) -> bool {
    bytes.last() == Some(&b'{')
}

/// Reads the node table at the end of `bytes` and places every node.
pub fn parse(bytes: &[u8]) -> Result<Directory> {
    let total = bytes.len() as u64;
    if !looks_flattened(bytes) {
        return Err(Error::new(format!(
            "flattened directory: last byte (offset {}) is not the '{{' that opens the reversed node table",
            total.saturating_sub(1)
        )));
    }
    let read = Cell::new(0usize);
    let reader = Backwards { bytes, read: &read };
    let mut stream = serde_json::Deserializer::from_reader(reader).into_iter::<Table>();
    let table = match stream.next() {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            let at = total.saturating_sub(read.get() as u64);
            return Err(Error::new(format!(
                "flattened directory: node table (read backwards from offset {}) fails near offset {at}: {e}",
                total.saturating_sub(1)
            )));
        }
        None => return Err(Error::new("flattened directory: no node table")),
    };
    let len = stream.byte_offset() as u64;
    let table_span = Span {
        offset: total - len.min(total),
        len: len.min(total),
    };
    place(table, table_span)
}

/// Walks the tree from the root (the last node), giving each file its
/// path and checked region.
fn place(table: Table, span: Span) -> Result<Directory> {
    let nodes = table.nodes;
    let Some(root_index) = nodes.len().checked_sub(1) else {
        return Err(Error::new(format!(
            "flattened directory: node table at offset {} has no nodes",
            span.offset
        )));
    };
    let root = &nodes[root_index];
    if root.kind != 1 {
        return Err(Error::new(format!(
            "flattened directory: root node {root_index} ({:?}) has kind {}, expected 1 (directory)",
            root.name, root.kind
        )));
    }
    if let Some(why) = bad_name(&root.name) {
        return Err(Error::new(format!(
            "flattened directory: root node {root_index}: name {:?} {why}",
            root.name
        )));
    }
    let mut dir = Directory {
        root: root.name.clone(),
        files: Vec::new(),
        dirs: Vec::new(),
        table: span,
        nodes: nodes.len(),
        errors: Vec::new(),
    };
    let mut seen = vec![false; nodes.len()];
    seen[root_index] = true;
    // (index, path, depth), walked without recursion.
    let mut stack = vec![(root_index, root.name.clone(), 1usize)];
    while let Some((index, path, depth)) = stack.pop() {
        let node = &nodes[index];
        match node.kind {
            0 => {
                let r = &node.region;
                match Span::checked(r.offset, r.size, span.offset, || {
                    format!("flattened directory: node {index} ({path}) data region")
                }) {
                    Ok(s) => dir.files.push(FileEntry {
                        path,
                        span: s,
                        node: index,
                    }),
                    Err(e) => dir.errors.push(format!(
                        "{e} (the files' bytes end at offset {}, where the node table starts)",
                        span.offset
                    )),
                }
            }
            1 => {
                dir.dirs.push(path.clone());
                for (key, &child) in &node.children {
                    let Some(c) = usize::try_from(child).ok().filter(|&c| c < nodes.len()) else {
                        dir.errors.push(format!(
                            "flattened directory: node {index} ({path}): child {key:?} is node {child}, past the table's {} nodes",
                            nodes.len()
                        ));
                        continue;
                    };
                    if seen[c] {
                        dir.errors.push(format!(
                            "flattened directory: node {index} ({path}): child {key:?} is node {c}, already placed"
                        ));
                        continue;
                    }
                    seen[c] = true;
                    let name = &nodes[c].name;
                    if let Some(why) = bad_name(name) {
                        dir.errors.push(format!(
                            "flattened directory: node {c} (child {key:?} of {path}): name {name:?} {why}"
                        ));
                        continue;
                    }
                    if depth >= MAX_DEPTH {
                        dir.errors.push(format!(
                            "flattened directory: node {c} ({path}/{name}) is nested deeper than {MAX_DEPTH} levels"
                        ));
                        continue;
                    }
                    stack.push((c, format!("{path}/{name}"), depth + 1));
                }
            }
            k => dir.errors.push(format!(
                "flattened directory: node {index} ({path}) has kind {k}, expected 0 (file) or 1 (directory)"
            )),
        }
    }
    dir.files.sort_by(|a, b| a.path.cmp(&b.path));
    dir.dirs.sort();
    Ok(dir)
}

/// Why `name` cannot be a path component, if it cannot.
fn bad_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name == "." || name == ".." {
        Some("is not a file name")
    } else if name.contains(['/', '\0']) {
        Some("holds '/' or NUL")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files then the reversed table, as ExecuTorch writes them.
    pub(crate) fn flatten(files: &[(&str, &[u8])], table: &serde_json::Value) -> Vec<u8> {
        let mut out = Vec::new();
        for (_, b) in files {
            out.extend_from_slice(b);
        }
        let mut t = serde_json::to_vec(table).unwrap();
        t.reverse();
        out.extend_from_slice(&t);
        out
    }

    fn two_files() -> Vec<u8> {
        let table = serde_json::json!({"nodes": [
            {"name": "a.txt", "kind": 0, "dataRegion": {"offset": 0, "size": 3}, "children": {}},
            {"name": "b.bin", "kind": 0, "dataRegion": {"offset": 3, "size": 2}, "children": {}},
            {"name": "sub", "kind": 1, "dataRegion": {"offset": 0, "size": 0}, "children": {"b.bin": 1}},
            {"name": "top", "kind": 1, "dataRegion": {"offset": 0, "size": 0}, "children": {"a.txt": 0, "sub": 2}},
        ]});
        flatten(&[("a.txt", b"abc"), ("b.bin", b"\x01\x02")], &table)
    }

    #[test]
    fn files_get_paths_and_regions() {
        let bytes = two_files();
        let d = parse(&bytes).unwrap();
        assert_eq!(d.root, "top");
        assert_eq!(d.dirs, ["top", "top/sub"]);
        let paths: Vec<_> = d.files.iter().map(|f| (f.path.as_str(), f.span)).collect();
        assert_eq!(
            paths,
            [
                ("top/a.txt", Span { offset: 0, len: 3 }),
                ("top/sub/b.bin", Span { offset: 3, len: 2 })
            ]
        );
        assert_eq!(d.table.offset, 5);
        assert_eq!(d.table.end(), bytes.len() as u64);
        assert!(d.errors.is_empty());
    }

    #[test]
    fn bad_tables_say_where() {
        let bytes = two_files();
        let e = parse(&bytes[..bytes.len() - 1]).unwrap_err().to_string();
        assert!(e.contains("not the '{'"), "{e}");
        let mut cut = bytes.clone();
        cut.drain(..bytes.len() - 10);
        let e = parse(&cut).unwrap_err().to_string();
        assert!(e.contains("node table"), "{e}");
        let table = serde_json::json!({"nodes": [
            {"name": "x", "kind": 0, "dataRegion": {"offset": 0, "size": 99}},
            {"name": "..", "kind": 1, "children": {}},
            {"name": "top", "kind": 1, "children": {"x": 0, "y": 1, "z": 7, "w": 2}},
        ]});
        let d = parse(&flatten(&[("x", b"1")], &table)).unwrap();
        let all = d.errors.join("\n");
        assert!(all.contains("node 0 (top/x) data region"), "{all}");
        assert!(all.contains("name \"..\" is not a file name"), "{all}");
        assert!(all.contains("node 7, past the table's 3 nodes"), "{all}");
        assert!(all.contains("node 2, already placed"), "{all}");
    }
}
