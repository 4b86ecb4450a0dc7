//! The tree of an ETRecord: `header.json`; the maps as stored
//! (`debug_handle_map.json`, `delegate_map.json`, `instruction_outs.json`);
//! per recorded program `graphs/<name>/` with `program.json` as stored,
//! `graph.txt`, `nodes.tsv` and `stacks.txt` (rendered when first read), and its
//! `state_dict/`, `constants/` and `example_inputs/` as `.npy` files; and
//! `reference_outputs/` and `representative_inputs/`. A part that cannot be
//! read is a `.ERROR.txt` saying why, beside what can.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::json;

use super::index_entry::TensorShape;
use super::{Builder, Dir, Origin};
use crate::format::MethodInfo;
use crate::format::etrecord::{Archive, EtRecordFile, SavedTensor};
use crate::join::etrecord::SourceRow;
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
    /// `method`'s `code.txt`, by instruction; none without one, or when
    /// it cannot be joined.
    pub(super) fn source_notes(&mut self, method: &str) -> Option<Arc<HashMap<u64, String>>> {
        let rows = self.source_rows(method)?.ok()?;
        Some(Arc::new(crate::join::etrecord::code_notes(&rows)))
    }

    /// The ETRecord joined with the programs, for `method`: none without
    /// one; why not when it cannot be joined (the ETRecord no longer
    /// parses, it records no program for the method, or that program's
    /// JSON cannot be read). Joined once per method.
    pub(super) fn source_rows(
        &mut self,
        method: &str,
    ) -> Option<Result<Arc<Vec<SourceRow>>, String>> {
        let source = self.etrecord?;
        if let Some(j) = self.joined.get(method) {
            return Some(j.clone());
        }
        let bytes = self.source_bytes.get(&source)?.clone();
        let joined = EtRecordFile::parse((*bytes).as_ref())
            .map_err(|e| e.to_string())
            .and_then(|r| crate::join::etrecord::rows(&r, method))
            .map(Arc::new);
        self.joined.insert(method.to_owned(), joined.clone());
        Some(joined)
    }

    /// The join of `method` for the tree of `file_name`, or `None`, once
    /// the tree's warnings and README.txt say why: `files` (paths in the
    /// tree) are then not made. Given the program's method (`program`),
    /// an ETRecord of another program is not joined.
    pub(super) fn joined_or_say_why(
        &mut self,
        file_name: &str,
        (method, program): (&str, Option<&MethodInfo<'_>>),
        files: &[String],
    ) -> Option<Arc<Vec<SourceRow>>> {
        let joined = self.source_rows(method)?.and_then(|rows| {
            match program.and_then(|m| crate::join::etrecord::disagreement(&rows, m)) {
                Some(why) => Err(format!(
                    "not joined: it is not the ETRecord of {file_name}: {why}"
                )),
                None => Ok(rows),
            }
        });
        match joined {
            Ok(rows) => Some(rows),
            Err(why) => {
                let etrecord = (self.etrecord)
                    .and_then(|e| self.source_names.get(&e))
                    .cloned()
                    .unwrap_or_default();
                let why = format!("ETRecord {etrecord}: method {method:?}: {why}");
                self.warnings.push(format!(
                    "{file_name}: {why}; not made: {}",
                    files.join(", ")
                ));
                self.not_made.push(format!("{}: {why}", files.join(", ")));
                None
            }
        }
    }

    /// The method `profile` ran, as the ETRecord shown with it names it:
    /// the method a run data block names, else the only one the
    /// debug-handle map lists, else `forward`. None without an ETRecord.
    pub(super) fn profiled_method(
        &self,
        profile: &crate::format::etdump::ProfileFile<'_>,
    ) -> Option<String> {
        let bytes = self.source_bytes.get(&self.etrecord?)?;
        let r = EtRecordFile::parse((**bytes).as_ref()).ok();
        let methods: Vec<String> = (r.as_ref().and_then(|r| r.map_bytes(0)))
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
            .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect()))
            .unwrap_or_default();
        let named = (profile.runs.iter())
            .filter_map(|run| run.name.map(|n| n.show().into_owned()))
            .find(|n| methods.contains(n));
        Some(
            named
                .or_else(|| (methods.len() == 1).then(|| methods[0].clone()))
                .unwrap_or_else(|| "forward".to_owned()),
        )
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
                ("stacks.txt", etrecord_graph::stacks_text),
            ] {
                self.lazy(
                    &mut dir,
                    file,
                    origin.source,
                    Box::new(
                        move |bytes, out| match etrecord_graph::nodes(program.bytes(bytes)) {
                            Ok(nodes) => out.write_all(render(&nodes).as_bytes()),
                            Err(e) => Err(crate::tree::lazy::failed(e)),
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
