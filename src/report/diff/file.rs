//! The `file` section: facts about each file as a whole.

use serde::Serialize;
use serde_json::{Value, json};

use crate::format::Parsed;

/// A field whose value differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    /// What it is (`size`, `identifier`, `extended_header.segment_base_offset`, ...).
    pub field: String,
    /// Its value in A (null when A has no such field).
    pub a: Value,
    /// Its value in B.
    pub b: Value,
}

/// The facts compared, by name.
fn facts(p: &Parsed<'_>) -> Vec<(&'static str, Value)> {
    let mut f = Vec::new();
    match p {
        Parsed::Program(x) => {
            f.push(("kind", json!("program")));
            program_facts(x, "size", &mut f);
        }
        Parsed::Bundled(b) => {
            f.push(("kind", json!("bundled_program")));
            f.push(("size", json!(b.bytes.len())));
            f.push((
                "bundle.identifier",
                json!(String::from_utf8_lossy(
                    b.bytes.get(4..8).unwrap_or_default()
                )),
            ));
            f.push(("bundle.version", json!(b.bundled.version())));
            f.push(("bundle.test_suites", json!(b.suites.len())));
            program_facts(&b.program, "program.size", &mut f);
        }
        Parsed::Package(p) => {
            let s = p.summary();
            f.push(("kind", json!("package")));
            f.push(("size", json!(s.file_size)));
            f.push(("identifier", json!(s.identifier)));
            f.push(("version", json!(s.version)));
            f.push(("package.members", json!(s.members.len())));
            f.push(("package.stored_tensors", json!(s.stored_tensors)));
            f.push(("package.aliases", json!(s.aliases)));
        }
        Parsed::EtRecord(r) => {
            f.push(("kind", json!("etrecord")));
            f.push(("size", json!(r.bytes.len())));
            f.push(("etrecord.members", json!(r.members.len())));
            f.push(("etrecord.graphs", json!(r.graphs.len())));
        }
        Parsed::Profile(p) => {
            f.push(("kind", json!("profile")));
            f.push(("size", json!(p.bytes.len())));
            f.push(("version", json!(p.version)));
            f.push(("profile.size_prefix", json!(p.size_prefix)));
            f.push(("profile.runs", json!(p.runs.len())));
            let events: usize = p.runs.iter().map(|r| r.events.len()).sum();
            f.push(("profile.events", json!(events)));
        }
        Parsed::Data(d) => {
            f.push(("kind", json!("data")));
            f.push(("size", json!(d.bytes.len())));
            f.push((
                "identifier",
                json!(String::from_utf8_lossy(&d.header.magic)),
            ));
            f.push(("version", json!(d.flat.version())));
            f.push(("header.length", json!(d.header.length)));
            f.push((
                "header.padded_header_size",
                json!(d.header.padded_header_size),
            ));
            f.push(("header.flatbuffer_size", json!(d.header.flatbuffer_size)));
            f.push((
                "header.segment_base_offset",
                json!(d.header.segment_base_offset),
            ));
            f.push((
                "header.segment_data_size",
                json!(d.header.segment_data_size),
            ));
            f.push(("segments", json!(d.segments.len())));
            f.push(("named_data", json!(d.entries.len())));
        }
    }
    f
}

/// A program's facts; its byte count goes under `size_key` (a bundle's
/// embedded program is not the whole file).
fn program_facts(
    p: &crate::format::ProgramFile<'_>,
    size_key: &'static str,
    f: &mut Vec<(&'static str, Value)>,
) {
    f.push((size_key, json!(p.bytes.len())));
    f.push((
        "identifier",
        json!(String::from_utf8_lossy(&p.header.magic)),
    ));
    f.push(("version", json!(p.program.version())));
    f.push(("flatbuffer_size", json!(p.flatbuffer.len)));
    if let Some(e) = &p.header.extended {
        f.push(("extended_header.length", json!(e.length)));
        f.push(("extended_header.program_size", json!(e.program_size)));
        f.push((
            "extended_header.segment_base_offset",
            json!(e.segment_base_offset),
        ));
        f.push((
            "extended_header.segment_data_size",
            json!(e.segment_data_size),
        ));
    }
    f.push(("segments", json!(p.segments.len())));
    f.push(("constant_buffers", json!(p.constants.len())));
    f.push(("named_data", json!(p.named.len())));
    f.push(("methods", json!(p.methods.len())));
}

/// The facts whose values differ, in a fixed order; a fact one side lacks
/// is null there.
pub(super) fn compare(a: &Parsed<'_>, b: &Parsed<'_>) -> Vec<FieldChange> {
    let (fa, fb) = (facts(a), facts(b));
    let mut names: Vec<&str> = fa.iter().map(|(k, _)| *k).collect();
    for (k, _) in &fb {
        if !names.contains(k) {
            names.push(k);
        }
    }
    let get = |f: &[(&str, Value)], k: &str| {
        f.iter()
            .find(|(x, _)| *x == k)
            .map_or(Value::Null, |(_, v)| v.clone())
    };
    names
        .into_iter()
        .filter_map(|k| {
            let (x, y) = (get(&fa, k), get(&fb, k));
            (x != y).then(|| FieldChange {
                field: k.to_owned(),
                a: x,
                b: y,
            })
        })
        .collect()
}
