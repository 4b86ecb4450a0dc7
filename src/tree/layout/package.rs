//! The tree of a native program package (`.ptn`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::index_entry::{IndexEntry, Source, TensorShape};
use super::{Builder, Dir, Origin};
use crate::format::package::graph;
use crate::format::{Name, PackageFile};
use crate::schema::native_graph as ng;
use crate::tree::file_names::encode;
use crate::tree::render::{dot, package_code, package_graph_json, readme};

/// What the methods say about one data key.
#[derive(Default)]
struct Uses<'a> {
    kind: Option<&'static str>,
    mutated: bool,
    used_by: Vec<(&'a str, &'a str)>,
    meta: Option<ng::TensorMeta<'a>>,
}

impl Builder {
    pub(super) fn package(&mut self, root: &mut Dir, origin: Origin, p: &PackageFile<'_>) {
        if !p.errors.is_empty() {
            let text = format!("{}\n", p.errors.join("\n"));
            self.generated(root, "ERROR.txt", text.into_bytes().into());
        }
        self.generated(root, "README.txt", readme::PACKAGE.as_bytes().into());
        self.json(root, "package.json", &package_json(p));
        if let Some(program) = p.program {
            self.json(root, "program.json", &package_graph_json::Program(program));
        }
        let mut mdir = self.subdir(root, "members");
        for m in &p.members {
            if let Ok(span) = m.stored() {
                let name = mdir.names.unique(&encode(&m.name), "");
                self.file(mdir.ino, name, origin.content(span), None);
            }
        }
        let paths = self.package_tensors(root, origin, p);
        let mut methods = self.subdir(root, "methods");
        for m in p.methods() {
            let name = methods.names.unique(&encode(m.name()), "");
            let mut dir = self.dir(methods.ino, name);
            self.json(&mut dir, "graph.json", &package_graph_json::Method(m));
            self.json(&mut dir, "io.json", &io_json(&m, &paths));
            self.generated(
                &mut dir,
                "code.txt",
                package_code::render(m).into_bytes().into(),
            );
            self.generated(
                &mut dir,
                "graph.dot",
                dot::package::render(m).into_bytes().into(),
            );
        }
    }

    /// `tensors/`: every stored tensor and every alias by data key, and an
    /// `index.json` that adds the mutable buffers without bytes. Returns
    /// each data key's `.bin` path.
    fn package_tensors<'p>(
        &mut self,
        root: &mut Dir,
        origin: Origin,
        p: &'p PackageFile<'_>,
    ) -> BTreeMap<&'p str, String> {
        let uses = uses(p);
        let mut tdir = self.subdir(root, "tensors");
        let keys = p.keys();
        let mut index = Vec::with_capacity(keys.len());
        let mut paths = BTreeMap::new();
        for (key, t, alias_of) in keys {
            let stem = encode(key);
            let sizes: Vec<i64> = t.shape.iter().map(|&d| d as i64).collect();
            let u = uses.get(key);
            let mut entry = IndexEntry {
                key: Some(Name::new(key.as_bytes())),
                dtype: Some(t.dtype),
                nbytes: Some(t.span.len),
                source: Some(Source {
                    file: None,
                    offset: origin.shifted(t.span).offset,
                }),
                location: Some(if alias_of.is_some() {
                    "alias"
                } else {
                    "safetensors"
                }),
                alias_of,
                ..IndexEntry::default()
            };
            describe_use(&mut entry, u, &sizes);
            let (bin, npy) = match t.scalar_type {
                Some(scalar_type) => {
                    let shape = TensorShape {
                        scalar_type,
                        sizes: sizes.as_slice().into(),
                        dim_order: Arc::new([]),
                    };
                    entry.shape = Some(shape.describe());
                    self.tensor_files(&mut tdir, &stem, origin, Some(t.span), &shape)
                }
                None => (self.raw(&mut tdir, &stem, origin, t.span), None),
            };
            paths.insert(key, format!("tensors/{bin}"));
            entry.name = Some(bin);
            entry.npy = Some(npy);
            index.push(entry);
        }
        // Keys the graph uses without stored bytes: mutable buffers, which
        // start as zeros, and constants the package lacks (missing).
        for (key, u) in uses.iter().filter(|(k, _)| !paths.contains_key(*k)) {
            let buffer = u.kind == Some("MUTABLE_BUFFER");
            let sizes = u.meta.as_ref().map(graph::sizes).unwrap_or_default();
            let mut entry = IndexEntry {
                key: Some(Name::new(key.as_bytes())),
                location: Some("none"),
                missing: (!buffer).then_some(true),
                shape: u.meta.as_ref().map(|m| {
                    TensorShape {
                        scalar_type: graph::scalar_type(m.dtype()),
                        sizes: sizes.as_slice().into(),
                        dim_order: Arc::new([]),
                    }
                    .describe()
                }),
                ..IndexEntry::default()
            };
            describe_use(&mut entry, Some(u), &sizes);
            index.push(entry);
        }
        self.json(&mut tdir, "index.json", &index);
        paths
    }
}

/// Fills what the graph says about a data key into its index entry.
fn describe_use<'a>(entry: &mut IndexEntry<'a>, u: Option<&Uses<'a>>, stored: &[i64]) {
    entry.input_kind = Some(u.and_then(|u| u.kind).unwrap_or("UNUSED"));
    entry.mutated = Some(u.is_some_and(|u| u.mutated));
    entry.used_by = Some(u.map(|u| u.used_by.clone()).unwrap_or_default());
    let Some(meta) = u.and_then(|u| u.meta.as_ref()) else {
        return;
    };
    let logical = graph::sizes(meta);
    if logical != stored {
        entry.logical_sizes = Some(logical);
    }
    entry.quant = match meta.quant().map(|q| q.scheme_type()) {
        Some(ng::QuantScheme::AffineGroup) => Some("AffineGroup"),
        Some(ng::QuantScheme::PackedQuant) => Some("PackedQuant"),
        _ => None,
    };
}

/// Every data key the methods use (constants and mutable buffers without
/// bytes), with its kind, whether some method writes it, and its uses.
fn uses<'a>(p: &PackageFile<'a>) -> BTreeMap<&'a str, Uses<'a>> {
    let mut out: BTreeMap<&str, Uses<'_>> = BTreeMap::new();
    for m in p.methods() {
        let mutated = graph::mutated_values(&m);
        for c in m.constants().iter().flatten() {
            let u = out.entry(c.data_key()).or_default();
            u.kind = u.kind.or(c.kind().variant_name());
            u.mutated |= c.mutated() || mutated.contains(c.name());
            u.used_by.push((m.name(), c.name()));
            u.meta.get_or_insert(c.meta());
        }
        let metas = graph::value_metas(&m.graph());
        for b in m.mutable_buffers().iter().flatten() {
            let u = out.entry(b.fqn()).or_default();
            u.kind = Some("MUTABLE_BUFFER");
            u.mutated |= mutated.contains(b.name());
            u.used_by.push((m.name(), b.name()));
            if u.meta.is_none() {
                u.meta = metas.get(b.name()).copied();
            }
        }
    }
    out
}

fn package_json(p: &PackageFile<'_>) -> Value {
    let s = p.summary();
    let members: Vec<Value> = (p.members.iter().zip(&s.members))
        .map(|(m, ms)| {
            json!({
                "name": m.name,
                "header_offset": m.header_offset,
                "data_offset": m.data.offset,
                "size": m.data.len,
                "uncompressed_size": m.uncompressed_size,
                "compression": ms.compression,
                "crc32": format!("{:08x}", m.crc32),
            })
        })
        .collect();
    let st = p.member(crate::format::package::TENSORS_MEMBER);
    json!({
        "kind": "package",
        "file_size": s.file_size,
        "members": members,
        "graph": {
            "member": crate::format::package::PROGRAM_MEMBER,
            "file_identifier": s.identifier,
            "root_type": "Program",
            "version": s.version,
            "methods": s.methods.iter().map(|m| &m.name).collect::<Vec<_>>(),
        },
        "safetensors": st.map(|m| json!({
            "member": m.name,
            "header_length": p.tensors.header_len,
            "data_offset": m.data.offset + 8 + p.tensors.header_len,
            "tensors": s.stored_tensors,
            "bytes": s.stored_bytes,
            "metadata": p.tensors.metadata,
        })),
        "aliases": p.aliases,
        "errors": p.errors,
    })
}

/// `io.json`: what goes into and out of a method.
#[derive(Serialize)]
struct Io<'a> {
    method: &'a str,
    inputs: Vec<IoValue<'a>>,
    outputs: Vec<IoOutput<'a>>,
    constants: Vec<IoConstant<'a>>,
    mutable_buffers: Vec<IoBuffer<'a>>,
}

/// A graph value with its type and shape, when the graph records them.
#[derive(Serialize)]
struct IoValue<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dtype: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sizes: Option<Vec<i64>>,
}

#[derive(Serialize)]
struct IoOutput<'a> {
    #[serde(flatten)]
    value: IoValue<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'a str>,
}

#[derive(Serialize)]
struct IoConstant<'a> {
    placeholder: &'a str,
    data_key: &'a str,
    kind: Option<&'static str>,
    mutated: bool,
    dtype: String,
    sizes: Vec<i64>,
    path: Option<&'a str>,
}

#[derive(Serialize)]
struct IoBuffer<'a> {
    #[serde(flatten)]
    value: IoValue<'a>,
    fqn: &'a str,
}

fn io_json<'a>(m: &ng::Method<'a>, paths: &'a BTreeMap<&str, String>) -> Io<'a> {
    let metas = graph::value_metas(&m.graph());
    let value = |name: &'a str| IoValue {
        name,
        dtype: metas.get(name).map(|t| graph::dtype_name(t.dtype())),
        sizes: metas.get(name).map(graph::sizes),
    };
    let specs: BTreeMap<&str, ng::OutputSpec<'_>> = (m.output_specs().iter().flatten())
        .map(|s| (s.name(), s))
        .collect();
    Io {
        method: m.name(),
        inputs: m.graph().inputs().iter().flatten().map(value).collect(),
        outputs: (m.graph().outputs().iter().flatten())
            .map(|o| IoOutput {
                value: value(o),
                kind: specs.get(o).and_then(|s| s.kind().variant_name()),
                target: specs.get(o).and_then(|s| s.target()),
            })
            .collect(),
        constants: (m.constants().iter().flatten())
            .map(|c| IoConstant {
                placeholder: c.name(),
                data_key: c.data_key(),
                kind: c.kind().variant_name(),
                mutated: c.mutated(),
                dtype: graph::dtype_name(c.meta().dtype()),
                sizes: graph::sizes(&c.meta()),
                path: paths.get(c.data_key()).map(String::as_str),
            })
            .collect(),
        mutable_buffers: (m.mutable_buffers().iter().flatten())
            .map(|b| IoBuffer {
                value: value(b.name()),
                fqn: b.fqn(),
            })
            .collect(),
    }
}
