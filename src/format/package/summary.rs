//! A package's facts as one typed, serialisable value, for `inspect`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::PackageFile;
use super::graph::{self, MethodCounts};

/// What `inspect` shows for a package.
#[derive(Debug, Clone, Serialize)]
pub struct PackageSummary {
    /// Always `package`, to tell this summary from a program's.
    pub kind: &'static str,
    /// Bytes in the file.
    pub file_size: u64,
    /// The graph's file identifier (`NPTG`), when the graph is readable.
    pub identifier: Option<String>,
    /// The graph's schema version string.
    pub version: Option<String>,
    /// Zip members in central directory order.
    pub members: Vec<MemberSummary>,
    /// Entries of `program.safetensors`.
    pub stored_tensors: u64,
    /// Their bytes.
    pub stored_bytes: u64,
    /// Data keys that name another key's bytes (`aliases.json`).
    pub aliases: u64,
    /// Stored tensors by safetensors dtype.
    pub tensors_by_dtype: Vec<DtypeCount>,
    /// Each method, in program order.
    pub methods: Vec<MethodSummary>,
    /// Members that could not be read.
    pub errors: Vec<String>,
}

/// One zip member.
#[derive(Debug, Clone, Serialize)]
pub struct MemberSummary {
    /// Its name.
    pub name: String,
    /// Where its stored bytes start in the file.
    pub data_offset: u64,
    /// Stored bytes.
    pub size: u64,
    /// `stored`, or the compression method by name or number.
    pub compression: String,
}

/// How many tensors of one dtype, and their bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DtypeCount {
    /// The dtype's name.
    pub dtype: String,
    /// Number of tensors.
    pub count: u64,
    /// Bytes of those that are stored.
    pub bytes: u64,
}

/// One method.
#[derive(Debug, Clone, Serialize)]
pub struct MethodSummary {
    /// Its name.
    pub name: String,
    /// Node and call counts.
    #[serde(flatten)]
    pub counts: MethodCounts,
    /// The method's tensors by dtype: the graph's values and its constants
    /// (which the graph's value table does not repeat); bytes are those of
    /// the constants' stored tensors.
    pub tensors_by_dtype: Vec<DtypeCount>,
}

pub(super) fn summarize(p: &PackageFile<'_>) -> PackageSummary {
    let mut by_dtype: BTreeMap<&str, DtypeCount> = BTreeMap::new();
    for t in &p.tensors.tensors {
        let e = by_dtype.entry(t.dtype).or_default();
        e.count += 1;
        e.bytes += t.span.len;
    }
    PackageSummary {
        kind: "package",
        file_size: p.bytes.len() as u64,
        identifier: p
            .program
            .map(|_| String::from_utf8_lossy(graph::IDENTIFIER).into_owned()),
        version: p.program.and_then(|g| g.version()).map(str::to_owned),
        members: p
            .members
            .iter()
            .map(|m| MemberSummary {
                name: m.name.clone(),
                data_offset: m.data.offset,
                size: m.data.len,
                compression: compression(m.method),
            })
            .collect(),
        stored_tensors: p.tensors.tensors.len() as u64,
        stored_bytes: p.tensors.tensors.iter().map(|t| t.span.len).sum(),
        aliases: p.aliases.len() as u64,
        tensors_by_dtype: finish(by_dtype),
        methods: p.methods().map(|m| method(p, &m)).collect(),
        errors: p.errors.clone(),
    }
}

fn method(p: &PackageFile<'_>, m: &crate::schema::native_graph::Method<'_>) -> MethodSummary {
    let mut by_dtype: BTreeMap<String, DtypeCount> = BTreeMap::new();
    for v in m.graph().tensor_values().iter().flatten() {
        let name = graph::dtype_name(v.meta().dtype());
        by_dtype.entry(name).or_default().count += 1;
    }
    for c in m.constants().iter().flatten() {
        let e = by_dtype
            .entry(graph::dtype_name(c.meta().dtype()))
            .or_default();
        e.count += 1;
        e.bytes += p.tensor(c.data_key()).map_or(0, |t| t.span.len);
    }
    MethodSummary {
        name: m.name().to_owned(),
        counts: graph::counts(m),
        tensors_by_dtype: finish(by_dtype),
    }
}

fn finish<K: ToString>(map: BTreeMap<K, DtypeCount>) -> Vec<DtypeCount> {
    map.into_iter()
        .map(|(k, mut v)| {
            v.dtype = k.to_string();
            v
        })
        .collect()
}

/// A compression method as the oracles name it.
pub(super) fn compression(method: u16) -> String {
    match method {
        0 => "stored".to_owned(),
        8 => "deflate".to_owned(),
        n => format!("method {n}"),
    }
}
