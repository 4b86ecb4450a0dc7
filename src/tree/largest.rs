//! The largest tensors and blobs of a tree, each byte range counted once:
//! what `inspect --top N` reports.

use std::collections::HashSet;

use serde::Serialize;

use super::{Content, Ino, NodeKind, ROOT, SourceId, Tree};

/// One of the largest files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Largest {
    /// The file's path as `ptefs ls -R` prints it (its first name).
    pub path: String,
    /// The inode, whose other names `Tree::walk` finds.
    pub ino: Ino,
    /// The element type, for a tensor (`FLOAT`).
    pub dtype: Option<String>,
    /// The logical sizes, for a tensor.
    pub shape: Option<Vec<i64>>,
    /// Bytes of the source the file serves (a `.npy` header not counted).
    pub bytes: u64,
}

impl Tree {
    /// The `n` largest source byte ranges among tensor and blob files,
    /// largest first (then by path): a range seen under several names (hard
    /// links, a `.bin` and its `.npy`) counts once, under its `.bin`.
    /// Whole segments are left out, since the tensors and blobs in them are
    /// counted themselves; a segment that is exactly one blob is that blob.
    pub fn largest(&self, n: usize) -> Vec<Largest> {
        let mut seen: HashSet<(SourceId, u64, u64)> = HashSet::new();
        let mut files: Vec<(Ino, (SourceId, u64, u64), bool)> = Vec::new();
        let mut done: HashSet<Ino> = HashSet::new();
        for (_, ino) in self.walk(ROOT) {
            let Some(NodeKind::File(f)) = self.node(ino).map(|n| &n.kind) else {
                continue;
            };
            if !done.insert(ino) {
                continue;
            }
            let (range, prefixed) = match &f.content {
                Content::Source { source, span } => ((*source, span.offset, span.len), false),
                Content::Prefixed { source, span, .. } => ((*source, span.offset, span.len), true),
                Content::Generated(_) => continue,
            };
            files.push((ino, range, prefixed));
        }
        // Raw files first, so a range is reported under its `.bin`.
        files.sort_by_key(|&(ino, _, prefixed)| (prefixed, ino));
        let mut out = Vec::new();
        for (ino, range, _) in files {
            let path = self.path(ino);
            let parent = self.node(ino).map_or(ROOT, |n| n.parent);
            let in_segments = self.name(parent) == "segments";
            if range.2 == 0 || in_segments || !seen.insert(range) {
                continue;
            }
            let meta = match &self.node(ino).map(|n| &n.kind) {
                Some(NodeKind::File(f)) => f.tensor.and_then(|t| self.tensors.get(t as usize)),
                _ => None,
            };
            out.push(Largest {
                path,
                ino,
                dtype: meta.map(|m| crate::format::scalar::name(m.scalar_type)),
                shape: meta.map(|m| m.sizes.to_vec()),
                bytes: range.2,
            });
        }
        out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
        out.truncate(n);
        out
    }
}
