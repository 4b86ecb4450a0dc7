//! `weights.safetensors` in the layouts of programs and data files: a
//! placeholder while the tree is built, made into an
//! [`Assembly`](crate::tree::weights::Assembly) of the tensor files under
//! the same directory once every file and name is in place.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Builder, Dir};
use crate::format::Span;
use crate::tree::weights::{Assembly, FILE_NAME, Missing, Parts, Stored};
use crate::tree::{Content, File, Ino, Node, NodeKind, ROOT, SourceId, TensorMeta};

/// A tensor whose bytes are not there, noted while the tree is built.
pub(crate) struct Absent {
    /// The directory its file would be in.
    pub(super) dir: Ino,
    /// What the file list says of it, but its directory's path.
    pub(super) what: Missing,
}

/// A `weights.safetensors` to assemble.
pub(crate) struct Pending {
    /// The file.
    file: Ino,
    /// The directory it is at the root of.
    root: Ino,
    /// The name of the file the weights are of.
    source_name: String,
}

impl Builder {
    /// Adds `weights.safetensors` to `root`, the tree of `source_name`.
    pub(super) fn weights_file(&mut self, root: &mut Dir, source_name: &str) {
        let name = root.names.unique(FILE_NAME, "");
        let file = self.push(
            root.ino,
            name,
            NodeKind::File(File {
                content: Content::Generated(Box::default()),
                tensor: None,
            }),
        );
        self.weights.push(Pending {
            file,
            root: root.ino,
            source_name: source_name.to_owned(),
        });
    }

    /// Notes `key` as the name of the tensor whose bytes are `span` of
    /// `source`.
    pub(super) fn weight_key(&mut self, source: SourceId, span: Span, key: &str) {
        self.weight_keys
            .entry((source, span.offset, span.len))
            .or_insert_with(|| key.into());
    }

    /// Notes that a tensor whose file would be in directory `dir` has no
    /// bytes to show (`what.dir` is filled in later): its
    /// `weights.safetensors` lists it.
    pub(super) fn missing_weight(&mut self, dir: Ino, what: Missing) {
        self.missing_weights.push(Absent { dir, what });
    }

    /// Makes each pending `weights.safetensors` an assembly of the tensor
    /// files under its directory, typed by `metas`. Runs once directories
    /// are sorted and computed inodes placed.
    pub(super) fn assemble_weights(&mut self, metas: &Arc<[TensorMeta]>) {
        if self.weights.is_empty() {
            return;
        }
        let mut assemblies = Vec::with_capacity(self.weights.len());
        for w in &self.weights {
            let mut parts = Parts {
                source_name: w.source_name.clone(),
                tables: Vec::new(),
                stored: Vec::new(),
                untyped: Vec::new(),
                missing: Vec::new(),
                checkpoint: self.checkpoint_keys(w.root),
            };
            for a in &self.missing_weights {
                if let Some(dir) = self.path_under(a.dir, w.root) {
                    parts.missing.push(Missing {
                        dir,
                        ..a.what.clone()
                    });
                }
            }
            for t in &self.tables {
                if let Some(dir) = self.path_under(t.dir, w.root) {
                    parts.tables.push((dir, t.rows.clone()));
                }
            }
            let mut paths = self.file_paths(w.root);
            for (i, node) in self.nodes.iter().enumerate() {
                let NodeKind::File(File {
                    content: Content::Source { source, span },
                    tensor,
                }) = &node.kind
                else {
                    continue;
                };
                let ino = i as Ino + 1;
                let Some(mut links) = paths.remove(&ino) else {
                    continue;
                };
                let path = links.remove(0);
                let bytes = (*source, span.offset, span.len);
                let key = self.weight_keys.get(&bytes);
                match tensor {
                    Some(meta) => parts.stored.push(Stored {
                        source: *source,
                        span: *span,
                        meta: *meta,
                        key: key.map(|k| k.to_string()),
                        checkpoint: (parts.checkpoint.get(&bytes))
                            .and_then(|keys| keys.first().cloned()),
                        path,
                        links,
                    }),
                    // Named data: blobs with keys that no decoder types.
                    None if key.is_some() => parts.untyped.push((path, *source, *span)),
                    None => {}
                }
            }
            assemblies.push((w.file, Assembly::new(parts, metas.clone())));
        }
        for (file, assembly) in assemblies {
            if let Some(NodeKind::File(f)) =
                self.nodes.get_mut(file as usize - 1).map(|n| &mut n.kind)
            {
                f.content = Content::Assembled(Arc::new(assembly));
            }
        }
    }

    /// The checkpoint keys (`--names`) of each stored byte range under
    /// `root`, as its `by-name/` directory links them, in its order.
    fn checkpoint_keys(&self, root: Ino) -> HashMap<(SourceId, u64, u64), Vec<String>> {
        let mut keys: HashMap<(SourceId, u64, u64), Vec<String>> = HashMap::new();
        let Some(NodeKind::Dir(entries)) = self.nodes.get(root as usize - 1).map(|n| &n.kind)
        else {
            return keys;
        };
        let Some(by_name) = entries.iter().find(|c| &*c.name == "by-name") else {
            return keys;
        };
        let Some(NodeKind::Dir(links)) = self.nodes.get(by_name.ino as usize - 1).map(|n| &n.kind)
        else {
            return keys;
        };
        for link in links {
            // Links to a method's tensors (computed inodes) are not nodes:
            // their rows carry their checkpoint keys.
            if let Some(Node {
                kind:
                    NodeKind::File(File {
                        content: Content::Source { source, span },
                        ..
                    }),
                ..
            }) = self.nodes.get((link.ino as usize).wrapping_sub(1))
            {
                keys.entry((*source, span.offset, span.len))
                    .or_default()
                    .push(crate::tree::file_names::decode(&link.name));
            }
        }
        keys
    }

    /// The paths from directory `root` of each stored file under it, its
    /// first name's path first, then those of its other names (a
    /// delegate's weights that share one blob of named data are one file
    /// under several names). `by-name/` is left out: its names are
    /// checkpoint keys, which the file gives as aliases.
    fn file_paths(&self, root: Ino) -> HashMap<Ino, Vec<String>> {
        let mut out: HashMap<Ino, Vec<String>> = HashMap::new();
        let mut stack: Vec<(Ino, String)> = vec![(root, String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            let Some(NodeKind::Dir(entries)) = self.nodes.get(dir as usize - 1).map(|n| &n.kind)
            else {
                continue;
            };
            for (slot, child) in entries.iter().enumerate() {
                if dir == root && &*child.name == "by-name" {
                    continue;
                }
                // Computed inodes (a method's tensor rows) are not nodes.
                let Some(node) = self.nodes.get((child.ino as usize).wrapping_sub(1)) else {
                    continue;
                };
                let first = node.parent == dir && node.slot as usize == slot;
                let path = format!("{prefix}{}", child.name);
                match &node.kind {
                    // A directory is walked from its own name only.
                    NodeKind::Dir(_) if first => stack.push((child.ino, format!("{path}/"))),
                    NodeKind::File(File {
                        content: Content::Source { .. },
                        ..
                    }) => {
                        let paths = out.entry(child.ino).or_default();
                        if first {
                            paths.insert(0, path);
                        } else {
                            paths.push(path);
                        }
                    }
                    _ => {}
                }
            }
        }
        for paths in out.values_mut() {
            if let [_, others @ ..] = &mut paths[..] {
                others.sort_unstable();
            }
        }
        out
    }

    /// The path of stored node `ino` from directory `root`, if it is under
    /// it; directories are sorted, so each node's first name is at its
    /// slot.
    fn path_under(&self, ino: Ino, root: Ino) -> Option<String> {
        let mut parts = Vec::new();
        let mut cur = ino;
        while cur != root {
            if cur == ROOT {
                return None;
            }
            let node = self.nodes.get(cur as usize - 1)?;
            let NodeKind::Dir(entries) = &self.nodes.get(node.parent as usize - 1)?.kind else {
                return None;
            };
            parts.push(&*entries.get(node.slot as usize)?.name);
            cur = node.parent;
        }
        parts.reverse();
        Some(parts.join("/"))
    }
}
