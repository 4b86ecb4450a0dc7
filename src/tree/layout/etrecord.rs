//! The tree of an ETRecord: `header.json`; the maps as stored
//! (`debug_handle_map.json`, `delegate_map.json`, `instruction_outs.json`);
//! per recorded program `graphs/<name>/` with `program.json` as stored,
//! `graph.txt` and `nodes.tsv` (rendered when first read), and its
//! `state_dict/`, `constants/` and `example_inputs/` as `.npy` files; and
//! `reference_outputs/` and `representative_inputs/`. A part that cannot be
//! read is a `.ERROR.txt` saying why, beside what can.

use serde_json::json;

use super::index_entry::TensorShape;
use super::{Builder, Dir, Origin};
use crate::format::etrecord::{Archive, EtRecordFile, SavedTensor};
use crate::meta::etrecord_graph;
use crate::tree::Content;

/// The map members and the names they are shown under.
const MAPS: [&str; 3] = [
    "debug_handle_map.json",
    "delegate_map.json",
    "instruction_outs.json",
];
/// A program's archives and their directories.
const ARCHIVE_DIRS: [&str; 3] = ["state_dict", "constants", "example_inputs"];

impl Builder {
    /// What the ETRecord joined with the programs adds to the lines of
    /// `method`'s `code.txt`, by instruction; none without one.
    pub(super) fn source_notes(
        &self,
        method: &str,
    ) -> Option<std::sync::Arc<std::collections::HashMap<u64, String>>> {
        let rows = self.source_rows(method)?;
        Some(std::sync::Arc::new(crate::join::etrecord::code_notes(
            &rows,
        )))
    }

    /// The ETRecord joined with the programs, for `method`; none without
    /// one, or when it records no program for the method.
    pub(super) fn source_rows(
        &self,
        method: &str,
    ) -> Option<Vec<crate::join::etrecord::SourceRow>> {
        let bytes = self.source_bytes.get(&self.etrecord?)?;
        let r = EtRecordFile::parse((**bytes).as_ref()).ok()?;
        crate::join::etrecord::rows(&r, method).ok()
    }

    /// The module paths and source lines of the instructions of the
    /// method `profile` ran, from the ETRecord shown with it, by
    /// instruction: the method a run data block names, else the only one
    /// the debug-handle map lists, else `forward`. Empty without an
    /// ETRecord.
    pub(super) fn trace_sources(
        &self,
        profile: &crate::format::etdump::ProfileFile<'_>,
    ) -> std::collections::HashMap<usize, (String, String)> {
        let Some(r) = (self.etrecord)
            .and_then(|e| self.source_bytes.get(&e))
            .and_then(|b| EtRecordFile::parse((**b).as_ref()).ok())
        else {
            return Default::default();
        };
        let methods: Vec<String> = (r.map_bytes(0))
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
            .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect()))
            .unwrap_or_default();
        let named = (profile.runs.iter())
            .filter_map(|run| run.name.map(|n| n.show().into_owned()))
            .find(|n| methods.contains(n));
        let method = named
            .or_else(|| (methods.len() == 1).then(|| methods[0].clone()))
            .unwrap_or_else(|| "forward".to_owned());
        let rows = crate::join::etrecord::rows(&r, &method).unwrap_or_default();
        (rows.iter())
            .filter(|r| r.kind == "instruction")
            .filter_map(|r| {
                let id = r.id.parse().ok()?;
                Some((id, crate::join::etrecord::source_columns(r)))
            })
            .collect()
    }

    pub(super) fn etrecord(&mut self, root: &mut Dir, origin: Origin, r: &EtRecordFile<'_>) {
        self.json(
            root,
            "header.json",
            &json!({
                "kind": "etrecord",
                "file_size": r.bytes.len(),
                "members": r.members.iter().map(|m| json!({
                    "name": m.name,
                    "offset": m.data.offset,
                    "size": m.data.len,
                    "method": m.method,
                })).collect::<Vec<_>>(),
                "graphs": r.graphs.iter().map(|g| &g.name).collect::<Vec<_>>(),
                "errors": r.errors,
                "warnings": r.warnings,
            }),
        );
        for (name, span) in MAPS.iter().zip(r.maps) {
            if let Some(span) = span {
                let name = root.names.unique(name, "");
                self.file(root.ino, name, origin.content(span), None);
            }
        }
        let mut graphs = self.subdir(root, "graphs");
        for g in &r.graphs {
            let mut dir = self.path_dir(&mut graphs, &g.name);
            let name = dir.names.unique("program.json", "");
            self.file(dir.ino, name, origin.content(g.program), None);
            let program = g.program;
            for (file, render) in [
                (
                    "graph.txt",
                    etrecord_graph::graph_text as fn(&[_]) -> String,
                ),
                ("nodes.tsv", etrecord_graph::nodes_tsv),
            ] {
                self.lazy(
                    &mut dir,
                    file,
                    origin.source,
                    Box::new(
                        move |bytes, out| match etrecord_graph::nodes(program.bytes(bytes)) {
                            Ok(nodes) => out.write_all(render(&nodes).as_bytes()),
                            Err(e) => writeln!(out, "cannot render: {e}"),
                        },
                    ),
                );
            }
            for (sub, archive) in ARCHIVE_DIRS.iter().zip(&g.archives) {
                self.archive(&mut dir, sub, origin, archive.as_ref());
            }
        }
        self.archive(
            root,
            "reference_outputs",
            origin,
            r.reference_outputs.as_ref(),
        );
        self.archive(
            root,
            "representative_inputs",
            origin,
            r.representative_inputs.as_ref(),
        );
    }

    /// `dir/a/b/...` for a name `a/b/...`, each part a directory.
    fn path_dir(&mut self, dir: &mut Dir, path: &str) -> Dir {
        let mut parts = path.split('/').filter(|p| !p.is_empty());
        let mut d = self.subdir(dir, parts.next().unwrap_or("_"));
        for p in parts {
            d = self.subdir(&mut d, p);
        }
        d
    }

    /// `<name>/` holding the archive's tensors as `.npy` (nested as the
    /// value is: `forward/0/0.npy`), or `<name>.ERROR.txt` when it cannot
    /// be read.
    fn archive(
        &mut self,
        parent: &mut Dir,
        name: &str,
        origin: Origin,
        archive: Option<&Result<Archive, String>>,
    ) {
        let a = match archive {
            None => return,
            Some(Err(why)) => {
                let text = format!("{why}\n").into_bytes().into();
                self.generated(parent, &format!("{name}.ERROR.txt"), text);
                return;
            }
            Some(Ok(a)) => a,
        };
        let mut dir = self.subdir(parent, name);
        for (path, t) in a.value.tensors() {
            let (parents, stem) = path.rsplit_once('/').unwrap_or(("", &path));
            let mut at = if parents.is_empty() {
                Dir {
                    ino: dir.ino,
                    names: std::mem::take(&mut dir.names),
                }
            } else {
                self.path_dir(&mut dir, parents)
            };
            self.saved_tensor(&mut at, stem, origin, t);
            if parents.is_empty() {
                dir.names = at.names;
            }
        }
        for (path, why) in a.value.problems() {
            // Named by the value's first few keys: a deep path would not
            // fit a file name; the message holds it whole.
            let stem: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).take(4).collect();
            let stem = if stem.is_empty() {
                "value".to_owned()
            } else {
                stem.join("_")
            };
            let text = format!("{name}/{path}: {why}\n").into_bytes().into();
            self.generated(&mut dir, &format!("{stem}.ERROR.txt"), text);
        }
    }

    /// `<stem>.npy`: the NumPy header, then the tensor's bytes, a span of
    /// the file when stored contiguously, gathered when first read if not.
    fn saved_tensor(&mut self, dir: &mut Dir, stem: &str, origin: Origin, t: &SavedTensor) {
        let shape = TensorShape {
            scalar_type: t.scalar_type,
            sizes: t.shape.iter().map(|&s| s as i64).collect(),
            dim_order: (0..t.shape.len().min(256)).map(|d| d as u8).collect(),
        };
        let Some(prefix) = self.npy_header(&shape) else {
            let why = format!(
                "NumPy has no type for {}\n",
                crate::format::scalar::name(t.scalar_type)
            );
            self.generated(dir, &format!("{stem}.ERROR.txt"), why.into_bytes().into());
            return;
        };
        let meta = Some(self.meta_of(super::Dtype::Scalar(t.scalar_type), shape.sizes.clone()));
        match t.contiguous() {
            Some(span) => {
                let name = dir.names.unique(stem, ".npy");
                let content = Content::Prefixed {
                    prefix,
                    source: origin.source,
                    span: origin.shifted(span),
                };
                self.file(dir.ino, name, content, meta);
            }
            None => {
                let t = t.clone();
                self.lazy(
                    dir,
                    &format!("{stem}.npy"),
                    origin.source,
                    Box::new(move |bytes, out| {
                        out.write_all(&prefix)?;
                        out.write_all(&t.gather(bytes))
                    }),
                );
            }
        }
    }
}
