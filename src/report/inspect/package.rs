//! `inspect` for a native program package (`.ptn`).

use std::fmt::Write;

use super::Inspection;
use crate::escape::escape;
use crate::format::package::{ALIASES_MEMBER, PROGRAM_MEMBER, PackageSummary, TENSORS_MEMBER};
use crate::format::{PackageFile, Span};
use crate::report::composition::Composition;

/// The inspection of package `p`, shown as `name`.
pub(super) fn package(name: &str, p: &PackageFile<'_>) -> Inspection {
    let summary = p.summary();
    let mut comp = Composition::default();
    for t in &p.tensors.tensors {
        comp.add("tensors", t.span);
    }
    for m in &p.members {
        let category = match m.name.as_str() {
            PROGRAM_MEMBER => "graph",
            TENSORS_MEMBER => "safetensors header",
            ALIASES_MEMBER => "aliases",
            _ => "other members",
        };
        comp.add(category, m.data);
    }
    let file_size = p.bytes.len() as u64;
    let headers = Span {
        offset: 0,
        len: file_size,
    };
    comp.add("zip headers", headers);
    Inspection {
        file: name.to_owned(),
        kind: "package",
        identifier: summary.identifier.clone().unwrap_or_default(),
        version: (summary.version.as_deref())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        file_size,
        bundle: None,
        program: None,
        data: None,
        composition: comp.finish(file_size),
        package: Some(summary),
        checkpoint: None,
        profile: None,
        largest: None,
        stats: None,
        etrecord: None,
    }
}

/// The package's lines of the text report.
pub(super) fn text(o: &mut String, p: &PackageSummary) {
    let _ = writeln!(o, "\nmembers: {}", p.members.len());
    for m in &p.members {
        let _ = writeln!(
            o,
            "  {:<20} {:>14} bytes at {:>12}  {}",
            escape(&m.name),
            m.size,
            m.data_offset,
            m.compression
        );
    }
    let _ = writeln!(o, "\nmethods: {}", p.methods.len());
    for m in &p.methods {
        let c = &m.counts;
        let _ = writeln!(
            o,
            "  {}: {} nodes ({} placeholders, {} calls, {} outputs), {} constants, {} mutable buffers, {} user inputs",
            escape(&m.name),
            c.nodes,
            c.placeholders,
            c.calls,
            c.outputs,
            c.constants,
            c.mutable_buffers.len(),
            c.user_inputs.len()
        );
        for t in &m.tensors_by_dtype {
            let _ = writeln!(
                o,
                "    {:<16} {:>8} values {:>14} constant bytes",
                t.dtype, t.count, t.bytes
            );
        }
    }
    let _ = writeln!(
        o,
        "\nstored tensors: {} ({} bytes), aliases: {}",
        p.stored_tensors, p.stored_bytes, p.aliases
    );
    for t in &p.tensors_by_dtype {
        let _ = writeln!(
            o,
            "  {:<16} {:>8} tensors {:>14} bytes",
            t.dtype, t.count, t.bytes
        );
    }
    for e in &p.errors {
        let _ = writeln!(o, "\nerror: {}", escape(e));
    }
}
