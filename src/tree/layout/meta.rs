//! What a program means, laid out as files: per method `io.json`,
//! `memory.json`, `value.json`, `graph.dot`, `values/`, the users of each
//! tensor in `index.json` and readable aliases of anonymous constants; per
//! program `ops.txt` and `ops.yaml`.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use super::index_entry::{IndexEntry, Meaning, TensorShape};
use super::{Builder, Dir, Origin};
use crate::format::{MethodInfo, ProgramFile, strings};
use crate::meta::memory_plan::{self, PlacedValue};
use crate::meta::training::{self, TrainingName};
use crate::meta::{dataflow, io, oplist, users};
use crate::schema::program as fb;
use crate::tree::Ino;
use crate::tree::file_names::encode;
use crate::tree::render::ops_yaml::{self, MethodCalls};
use crate::tree::render::{self, dot};

/// What the builders of one method share: the users of every value and
/// the names of the delegate directories.
pub(super) struct MethodMeta {
    pub users: users::Users,
    pub delegate_dirs: Vec<String>,
    /// Training programs: the parameters and gradients among the outputs.
    pub training: HashMap<usize, TrainingName>,
}

impl MethodMeta {
    pub fn new(
        m: &MethodInfo<'_>,
        delegate_dirs: Vec<String>,
        plans: &[fb::ExecutionPlan<'_>],
    ) -> MethodMeta {
        let training = training::names(plans, m.name.bytes())
            .into_iter()
            .map(|t| (t.value, t))
            .collect();
        MethodMeta {
            users: users::users(m.plan),
            delegate_dirs,
            training,
        }
    }

    /// The `delegates/` directory name of delegate `index`.
    pub fn delegate_dir(&self, index: usize) -> String {
        self.delegate_dirs
            .get(index)
            .cloned()
            .unwrap_or_else(|| format!("<delegate {index} out of range>"))
    }

    /// The uses of `value` as `index.json` shows them: a delegate by its
    /// directory name.
    pub fn users_json(&self, value: usize) -> Vec<Value> {
        self.users
            .of(value)
            .iter()
            .map(|u| {
                let view = self.users.view(u);
                let delegate = view.delegate;
                let mut j = serde_json::to_value(view).unwrap_or_default();
                if let (Some(d), Some(o)) = (delegate, j.as_object_mut()) {
                    o.insert("delegate".into(), self.delegate_dir(d as usize).into());
                }
                j
            })
            .collect()
    }

    /// The readable stem an anonymous value takes: its training name, or
    /// else from its first use.
    pub fn alias_label(&self, value: usize) -> Option<String> {
        if let Some(t) = self.training.get(&value) {
            return Some(encode(&t.fqn));
        }
        let first = self.users.of(value).first()?;
        Some(encode(self.users.label(first)))
    }
}

/// `memory.json`: the plan with each placed value's users.
#[derive(Serialize)]
struct MemoryJson {
    non_const_buffer_sizes: Vec<i64>,
    buffers: Vec<BufferJson>,
}

#[derive(Serialize)]
struct BufferJson {
    mem_id: usize,
    size: i64,
    values: Vec<PlacedJson>,
}

#[derive(Serialize)]
struct PlacedJson {
    #[serde(flatten)]
    placed: PlacedValue,
    users: Vec<Value>,
}

/// `memory.json` of method `m`.
fn memory_json(meta: &MethodMeta, m: &MethodInfo<'_>) -> MemoryJson {
    let plan = memory_plan::plan(m.plan);
    MemoryJson {
        non_const_buffer_sizes: plan.non_const_buffer_sizes,
        buffers: plan
            .buffers
            .into_iter()
            .map(|b| BufferJson {
                mem_id: b.mem_id,
                size: b.size,
                values: b
                    .values
                    .into_iter()
                    .map(|p| PlacedJson {
                        users: meta.users_json(p.value),
                        placed: p,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// `index.json` entries of tensor values that have no bytes but a
/// recorded name or location (`extra_tensor_info`), such as mutable
/// buffers exported with their names. `listed` (sorted) are the values
/// already listed.
pub(super) fn byteless_entries<'a>(
    m: &MethodInfo<'a>,
    meta: &MethodMeta,
    listed: &[usize],
) -> Vec<IndexEntry<'a>> {
    let mut out = Vec::new();
    for (i, v) in m.plan.values().iter().flatten().enumerate() {
        let Some(t) = v.val_as_tensor() else { continue };
        let named = t.extra_tensor_info().is_some() || meta.training.contains_key(&i);
        if !named || listed.binary_search(&i).is_ok() {
            continue;
        }
        let spec = io::TensorSpec::of(t);
        let sizes: Vec<i64> = spec.sizes.clone();
        let shape = TensorShape {
            scalar_type: t.scalar_type(),
            sizes: sizes.into(),
            dim_order: spec.dim_order.clone().into(),
        };
        out.push(IndexEntry {
            value_index: Some(i),
            fqn: Some(
                t.extra_tensor_info()
                    .and_then(strings::fully_qualified_name),
            ),
            shape: Some(shape.describe()),
            nbytes: spec.nbytes,
            meaning: Meaning {
                bytes: Some("none"),
                mem_id: spec.mem_id,
                mem_offset: spec.mem_offset,
                users: Some(meta.users_json(i)).filter(|u| !u.is_empty()),
                training: meta.training.get(&i).cloned(),
                ..Meaning::default()
            }
            .boxed(),
            ..IndexEntry::default()
        });
    }
    out
}

impl Builder {
    /// `io.json`, `memory.json`, `value.json` (constant methods) and
    /// `values/` of a method, listing the `.bin` files of tensor table
    /// `table`.
    /// `at` is the method's index and the length of the program, which
    /// `origin` locates, for the files rendered when first read.
    pub(super) fn method_meta(
        &mut self,
        mdir: &mut Dir,
        (m, origin, at): (&MethodInfo<'_>, Origin, (usize, usize)),
        meta: &MethodMeta,
        table: usize,
    ) {
        self.json(mdir, "io.json", &io::io(m.plan));
        let (mi, len) = at;
        let dirs = meta.delegate_dirs.clone();
        self.lazy_program(mdir, "memory.json", origin, len, move |p, out| {
            let Some(m) = p.methods.get(mi) else {
                return Ok(());
            };
            let plans: Vec<_> = p.methods.iter().map(|m| m.plan).collect();
            let meta = MethodMeta::new(m, dirs.clone(), &plans);
            render::json_to(out, &memory_json(&meta, m))
        });
        let dirs = meta.delegate_dirs.clone();
        self.lazy_program(mdir, "graph.dot", origin, len, move |p, out| {
            let Some(m) = p.methods.get(mi) else {
                return Ok(());
            };
            let graph = dataflow::graph(m.plan);
            let dot = dot::program::render(&m.name.show(), m.plan, &graph, &dirs);
            out.write_all(dot.as_bytes())
        });
        if let Some(v) = io::constant_value(m.plan) {
            self.json(mdir, "value.json", &v);
        }
        let vdir = self.subdir(mdir, "values");
        self.values_listing(vdir.ino, table);
    }

    /// `ops.txt` and `ops.yaml` of a program; `methods` holds each
    /// method's directory name and its delegates' directory names.
    pub(super) fn program_ops(
        &mut self,
        root: &mut Dir,
        p: &ProgramFile<'_>,
        methods: &[(String, Vec<String>)],
    ) {
        let calls: Vec<MethodCalls<'_>> = p
            .methods
            .iter()
            .zip(methods)
            .map(|(m, (dir, delegate_dirs))| MethodCalls {
                method: dir,
                calls: oplist::calls(m.plan),
                delegate_dirs,
            })
            .collect();
        let text = ops_yaml::text(&calls);
        self.generated(root, "ops.txt", text.into_bytes().into());
        let list = oplist::oplist(p.methods.iter().map(|m| m.plan));
        let yaml = ops_yaml::yaml(&list);
        self.generated(root, "ops.yaml", yaml.into_bytes().into());
    }

    /// The checkpoint keys (`--names`) whose bytes `span` of `bytes` holds.
    pub(super) fn checkpoint_names(
        &self,
        span: crate::format::Span,
        bytes: &[u8],
    ) -> Option<Vec<String>> {
        let names = self.names.as_ref()?;
        let start = usize::try_from(span.offset).ok()?;
        let end = start.checked_add(usize::try_from(span.len).ok()?)?;
        let d = crate::meta::checkpoint::digest(bytes.get(start..end)?);
        Some(names.get(&d).cloned().unwrap_or_default())
    }

    /// The checkpoint keys whose 4-d fp32/fp16 bytes `span` of `bytes`
    /// holds in XNNPACK's OHWI layout.
    pub(super) fn permuted_names(&self, span: crate::format::Span, bytes: &[u8]) -> Vec<String> {
        let Some(c) = &self.checkpoint else {
            return Vec::new();
        };
        let blob = span.bytes(bytes);
        if blob.len() as u64 != span.len {
            return Vec::new();
        }
        c.permuted_matches(blob)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// `by-name/<key>`: a further name of the file holding each checkpoint
    /// key's bytes, for the keys found in the program just built.
    pub(super) fn by_name_dir(&mut self, root: &mut Dir) {
        if self.names.is_none() {
            return;
        }
        let found = std::mem::take(&mut self.by_name);
        let mut dir = self.subdir(root, "by-name");
        let mut done = std::collections::HashSet::new();
        for (key, ino) in found {
            if done.insert(key.clone()) {
                let name = dir.names.unique(&encode(&key), "");
                self.add_link(dir.ino, name.into_boxed_str(), ino);
            }
        }
    }

    /// The inode of entry `name`, one of the last two added to `dir` (a
    /// `.bin` and its `.npy`).
    pub(super) fn recent_entry(&self, dir: Ino, name: &str) -> Option<Ino> {
        match self.nodes.get(dir as usize - 1).map(|n| &n.kind) {
            Some(super::NodeKind::Dir(entries)) => entries
                .iter()
                .rev()
                .take(2)
                .find(|e| &*e.name == name)
                .map(|e| e.ino),
            _ => None,
        }
    }
}
