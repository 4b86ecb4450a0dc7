//! Where the bytes go: the size tree the treemap draws, and the tables by
//! element type and by backend.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{FileSize, Subject};
use crate::report::inspect::Inspection;
use crate::report::stored::Name;
use crate::report::stored::Stored;

/// A node of the size tree: its bytes are the sum of its children's.
#[derive(Debug, Clone, Serialize)]
pub struct SizeNode {
    /// What it is: a file, store, layer or tensor name.
    pub name: Name,
    /// `all`, `file`, `store`, `blob`, `layer`, `tensor` or `other`.
    pub kind: &'static str,
    /// Bytes.
    pub bytes: u64,
    /// For tensors and blobs, the path in the tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<Name>,
    /// Parts, largest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<SizeNode>,
}

impl SizeNode {
    fn group(name: Name, kind: &'static str, mut children: Vec<SizeNode>) -> SizeNode {
        children.retain(|c| c.bytes > 0);
        // Most groups are a layer of one or two tensors, of which a
        // program may have a million: no spare capacity.
        children.shrink_to_fit();
        children.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
        SizeNode {
            name,
            kind,
            bytes: children.iter().map(|c| c.bytes).sum(),
            path: None,
            children,
        }
    }

    fn leaf(name: Name, kind: &'static str, bytes: u64, path: Option<Name>) -> SizeNode {
        SizeNode {
            name,
            kind,
            bytes,
            path,
            children: Vec::new(),
        }
    }

    /// Every leaf, depth first.
    pub fn leaves(&self) -> Vec<&SizeNode> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(n) = stack.pop() {
            if n.children.is_empty() {
                out.push(n);
            } else {
                stack.extend(n.children.iter().rev());
            }
        }
        out
    }
}

/// The size tree: files → stores → layers → tensors, with each file's
/// bytes no stored range covers as `other`. A blob holding other ranges
/// (a delegate payload holding its weights) is a group of them and its
/// rest.
pub(super) fn tree(subject: Subject<'_>, items: &[Stored], files: &[FileSize]) -> SizeNode {
    let mut file_nodes = Vec::new();
    for f in files {
        let Some(source) =
            (0..subject.sources.len()).find(|&s| subject.tree.source_name(s) == f.name)
        else {
            continue;
        };
        let mut mine: Vec<&Stored> = items.iter().filter(|i| i.source == source).collect();
        mine.sort_by(|a, b| {
            a.span
                .offset
                .cmp(&b.span.offset)
                .then(b.span.len.cmp(&a.span.len))
        });
        // Top-level ranges and the ranges each holds.
        let mut tops: Vec<(&Stored, Vec<&Stored>)> = Vec::new();
        for it in mine {
            match tops.last_mut() {
                Some((outer, inner)) if it.span.end() <= outer.span.end() => inner.push(it),
                _ => tops.push((it, Vec::new())),
            }
        }
        let mut stores: BTreeMap<Name, Vec<SizeNode>> = BTreeMap::new();
        let mut covered = 0;
        let mut reached = 0;
        for (outer, inner) in tops {
            let start = outer.span.offset.max(reached);
            let end = outer.span.end().max(start);
            covered += end - start;
            reached = reached.max(end);
            let node = if inner.is_empty() {
                tensor_leaf(outer, end - start)
            } else {
                let mut held = 0;
                let mut at = outer.span.offset;
                let mut kids: Vec<&Stored> = Vec::new();
                for i in inner {
                    if i.span.offset >= at {
                        held += i.span.len;
                        at = i.span.end();
                        kids.push(i);
                    }
                }
                let mut children = layered(&kids);
                children.push(SizeNode::leaf(
                    format!("rest of {}", outer.path).into(),
                    "other",
                    (end - start).saturating_sub(held),
                    Some(outer.path.clone()),
                ));
                let mut g = SizeNode::group(outer.path.clone(), "blob", children);
                g.path = Some(outer.path.clone());
                g
            };
            stores.entry(outer.store.clone()).or_default().push(node);
        }
        let mut children: Vec<SizeNode> = stores
            .into_iter()
            .map(|(store, nodes)| {
                let nodes = regroup_by_layer(nodes, items);
                SizeNode::group(store, "store", nodes)
            })
            .collect();
        children.push(SizeNode::leaf(
            format!("{}: header, program structure, padding", f.name).into(),
            "other",
            f.bytes.saturating_sub(covered),
            None,
        ));
        file_nodes.push(SizeNode::group(f.name.as_str().into(), "file", children));
    }
    let name = files
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(" + ");
    SizeNode::group(name.into(), "all", file_nodes)
}

fn tensor_leaf(s: &Stored, bytes: u64) -> SizeNode {
    let name = s.name.clone().unwrap_or_else(|| s.path.clone());
    let kind = if s.is_tensor() { "tensor" } else { "blob" };
    SizeNode::leaf(name, kind, bytes, Some(s.path.clone()))
}

/// `items` as tensor leaves grouped by layer.
fn layered(items: &[&Stored]) -> Vec<SizeNode> {
    let mut by: BTreeMap<&Name, Vec<SizeNode>> = BTreeMap::new();
    for s in items {
        by.entry(&s.layer)
            .or_insert_with(|| Vec::with_capacity(1))
            .push(tensor_leaf(s, s.span.len));
    }
    by.into_iter()
        .map(|(l, nodes)| SizeNode::group(l.clone(), "layer", nodes))
        .collect()
}

/// A store's top-level leaves grouped by their layer (blobs holding
/// others stay as they are).
fn regroup_by_layer(nodes: Vec<SizeNode>, items: &[Stored]) -> Vec<SizeNode> {
    let layer_of: BTreeMap<&str, &Name> = items.iter().map(|s| (&*s.path, &s.layer)).collect();
    let mut by: BTreeMap<Name, Vec<SizeNode>> = BTreeMap::new();
    let mut out = Vec::new();
    for n in nodes {
        match (n.kind, n.path.as_deref().and_then(|p| layer_of.get(p))) {
            ("tensor" | "blob", Some(l)) if n.children.is_empty() => {
                // Most layers hold one tensor: no spare room for more.
                by.entry((*l).clone())
                    .or_insert_with(|| Vec::with_capacity(1))
                    .push(n)
            }
            _ => out.push(n),
        }
    }
    out.extend(
        by.into_iter()
            .map(|(l, nodes)| SizeNode::group(l, "layer", nodes)),
    );
    out
}

/// Stored tensors of one element type.
#[derive(Debug, Clone, Serialize)]
pub struct DtypeRow {
    /// The type's name as the tree shows it (`FLOAT`, `xnn_datatype_qcint8`).
    pub dtype: Name,
    /// Tensors.
    pub tensors: u64,
    /// Elements.
    pub params: u64,
    /// Bytes.
    pub bytes: u64,
}

pub(super) fn by_dtype(items: &[Stored]) -> Vec<DtypeRow> {
    let mut m: BTreeMap<Name, DtypeRow> = BTreeMap::new();
    for s in items.iter().filter(|s| s.is_tensor()) {
        let dtype = s.dtype.clone().unwrap_or_else(|| Name::from(""));
        let r = m.entry(dtype.clone()).or_insert(DtypeRow {
            dtype,
            tensors: 0,
            params: 0,
            bytes: 0,
        });
        r.tensors += 1;
        r.params += s.elements().unwrap_or(0);
        r.bytes += s.span.len;
    }
    let mut rows: Vec<DtypeRow> = m.into_values().collect();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.dtype.cmp(&b.dtype)));
    rows
}

/// What runs on one backend, and the bytes it holds.
#[derive(Debug, Clone, Serialize)]
pub struct BackendRow {
    /// The backend id (`XnnpackBackend`), or `kernels` for what the
    /// program's own operators use.
    pub backend: String,
    /// Delegates of it.
    pub delegates: u64,
    /// Bytes of their processed blobs (payloads).
    pub blob_bytes: u64,
    /// Bytes of the weights it uses, wherever stored (payload, named data,
    /// a `.ptd`).
    pub weight_bytes: u64,
    /// Nodes of its decoded payloads.
    pub nodes: u64,
}

pub(super) fn by_backend(inspections: &[Inspection], items: &[Stored]) -> Vec<BackendRow> {
    let mut m: BTreeMap<String, BackendRow> = BTreeMap::new();
    let row = |m: &mut BTreeMap<String, BackendRow>, id: &str| -> BackendRow {
        m.remove(id).unwrap_or(BackendRow {
            backend: id.to_owned(),
            delegates: 0,
            blob_bytes: 0,
            weight_bytes: 0,
            nodes: 0,
        })
    };
    for p in inspections.iter().filter_map(|i| i.program.as_ref()) {
        for d in &p.delegates {
            let mut r = row(&mut m, &d.id);
            r.delegates += 1;
            r.blob_bytes += d.bytes;
            r.nodes += d.decoded.as_ref().map_or(0, |s| s.nodes as u64);
            m.insert(d.id.clone(), r);
        }
    }
    for s in items.iter().filter(|s| s.is_tensor()) {
        let id = s
            .delegate
            .as_ref()
            .map_or("kernels", |d| d.backend.as_str());
        let mut r = row(&mut m, id);
        r.weight_bytes += s.span.len;
        m.insert(id.to_owned(), r);
    }
    let mut rows: Vec<BackendRow> = m.into_values().collect();
    rows.sort_by(|a, b| {
        (b.blob_bytes + b.weight_bytes)
            .cmp(&(a.blob_bytes + a.weight_bytes))
            .then_with(|| a.backend.cmp(&b.backend))
    });
    rows
}
