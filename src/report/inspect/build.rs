//! The parts of an [`Inspection`], from each kind of file.

use std::collections::{BTreeMap, HashSet};

use super::{
    Bundle, Count, Data, Delegate, DtypeCount, Inspection, Location, Method, Program, Suite,
};
use crate::format::{BundledFile, DataFile, ProgramFile, Span, TensorData, scalar};
use crate::meta::ops::instruction_counts;
use crate::report::Share;
use crate::report::composition::{Composition, move_bytes};

fn identifier(magic: &[u8]) -> String {
    String::from_utf8_lossy(magic).into_owned()
}

fn by_dtype(items: impl Iterator<Item = (String, u64)>) -> Vec<DtypeCount> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (t, bytes) in items {
        let e = m.entry(t).or_default();
        e.0 += 1;
        e.1 += bytes;
    }
    m.into_iter()
        .map(|(scalar_type, (count, bytes))| DtypeCount {
            scalar_type,
            count,
            bytes,
        })
        .collect()
}

fn count<'s>(spans: impl Iterator<Item = &'s Span>) -> Count {
    let (mut count, mut bytes) = (0, 0);
    for s in spans {
        count += 1;
        bytes += s.len;
    }
    Count { count, bytes }
}

/// A program that starts at byte `shift` of its file, and what its bytes
/// are (as ranges of that file, for the caller to finish).
pub(super) fn program(
    p: &ProgramFile<'_>,
    shift: u64,
    keys: &HashSet<crate::format::Name<'_>>,
) -> (Program, Vec<Share>) {
    let methods = p
        .methods
        .iter()
        .map(|m| {
            let calls = instruction_counts(m.plan);
            let external =
                |t: &&crate::format::TensorInfo<'_>| matches!(t.data, TensorData::External { .. });
            Method {
                name: m.name.to_string(),
                values: m.plan.values().map_or(0, |v| v.len()),
                instructions: calls.values().sum(),
                operators: m.plan.operators().map_or(0, |v| v.len()),
                calls,
                tensors: m.tensors.len(),
                tensor_bytes: m.tensors.iter().map(|t| t.nbytes).sum(),
                external_tensors: m.tensors.iter().filter(external).count(),
                external_missing: m
                    .tensors
                    .iter()
                    .filter(
                        |t| matches!(t.data, TensorData::External { key } if !keys.contains(&key)),
                    )
                    .count(),
                delegates: m.delegates.len(),
            }
        })
        .collect();
    let delegates = p
        .methods
        .iter()
        .flat_map(|m| {
            m.delegates.iter().map(|d| Delegate {
                method: m.name.to_string(),
                index: d.index,
                id: d.id.to_string(),
                bytes: d.processed.map_or(0, |s| s.len),
                decoded: None,
                error: None,
                facts: Vec::new(),
            })
        })
        .collect();
    let tensors = by_dtype(
        p.methods
            .iter()
            .flat_map(|m| &m.tensors)
            .map(|t| (scalar::name(t.scalar_type), t.nbytes)),
    );
    let summary = Program {
        identifier: identifier(&p.header.magic),
        version: p.program.version(),
        methods,
        tensors,
        segments: count(p.segments.iter()),
        named_data: count(p.named.iter().map(|n| &n.span)),
        delegates,
    };
    (summary, program_composition(p, shift))
}

/// The categories of a program's bytes, as ranges of its file.
fn program_spans(p: &ProgramFile<'_>, shift: u64, comp: &mut Composition) {
    let at = |s: Span| Span {
        offset: s.offset + shift,
        len: s.len,
    };
    comp.add(
        "header and program",
        at(Span {
            offset: 0,
            len: p.flatbuffer.len,
        }),
    );
    let constant_segment = p
        .program
        .constant_segment()
        .map(|c| c.segment_index() as usize);
    let mutable: HashSet<usize> = p
        .program
        .mutable_data_segments()
        .iter()
        .flatten()
        .map(|m| m.segment_index() as usize)
        .collect();
    for (i, s) in p.segments.iter().enumerate() {
        let is_delegate = p
            .methods
            .iter()
            .flat_map(|m| &m.delegates)
            .any(|d| d.processed == Some(*s));
        let category = if constant_segment == Some(i) {
            "constants"
        } else if mutable.contains(&i) {
            "mutable initial state"
        } else if is_delegate {
            "delegate blobs"
        } else if p.named.iter().any(|n| n.span == *s) {
            "named data"
        } else {
            "other segments"
        };
        comp.add(category, at(*s));
    }
}

fn program_composition(p: &ProgramFile<'_>, shift: u64) -> Vec<Share> {
    let mut comp = Composition::default();
    program_spans(p, shift, &mut comp);
    let size = p.bytes.len() as u64;
    let mut rows = comp.finish(size);
    inline_content(p, &mut rows, size);
    rows
}

/// Inline constants and delegate data live inside the flatbuffer: count
/// them as what they are, not as metadata.
fn inline_content(p: &ProgramFile<'_>, rows: &mut Vec<Share>, size: u64) {
    let inline_constants = if p.program.constant_buffer().is_some_and(|b| !b.is_empty()) {
        p.constants.iter().flatten().map(|s| s.len).sum()
    } else {
        0
    };
    let inline_delegates: u64 = p
        .program
        .backend_delegate_data()
        .iter()
        .flatten()
        .map(|d| d.data().map_or(0, |v| v.len() as u64))
        .sum();
    move_bytes(
        rows,
        "header and program",
        "constants",
        inline_constants,
        size,
    );
    move_bytes(
        rows,
        "header and program",
        "delegate blobs",
        inline_delegates,
        size,
    );
}

pub(super) fn bundled(
    name: &str,
    b: &BundledFile<'_>,
    keys: &HashSet<crate::format::Name<'_>>,
) -> Inspection {
    let shift = b.program_span.offset;
    let (program, _) = program(&b.program, shift, keys);
    let size = b.bytes.len() as u64;
    let mut comp = Composition::default();
    program_spans(&b.program, shift, &mut comp);
    for (_, cases) in &b.suites {
        for case in cases {
            for v in case.inputs.iter().chain(&case.expected_outputs) {
                if let crate::format::TestValue::Tensor(t) = v
                    && let Some(span) = t.span
                {
                    comp.add("test inputs and outputs", span);
                }
            }
        }
    }
    comp.add(
        "bundle metadata",
        Span {
            offset: 0,
            len: size,
        },
    );
    let mut composition = comp.finish(size);
    inline_content(&b.program, &mut composition, size);
    Inspection {
        file: name.to_owned(),
        kind: "bundled_program",
        identifier: identifier(b.bytes.get(4..8).unwrap_or_default()),
        version: b.bundled.version(),
        file_size: size,
        bundle: Some(Bundle {
            embedded_program: Location {
                offset: b.program_span.offset,
                size: b.program_span.len,
            },
            test_suites: b
                .suites
                .iter()
                .map(|(m, cases)| Suite {
                    method: m.to_string(),
                    cases: cases.len(),
                })
                .collect(),
        }),
        program: Some(program),
        data: None,
        composition,
        package: None,
        checkpoint: None,
        profile: None,
        largest: None,
        stats: None,
        etrecord: None,
    }
}

pub(super) fn data(name: &str, d: &DataFile<'_>) -> Inspection {
    let mut comp = Composition::default();
    comp.add("header and metadata", d.flatbuffer);
    for e in &d.entries {
        let category = if e.layout.is_some() {
            "tensors"
        } else {
            "opaque blobs"
        };
        comp.add(category, e.span);
    }
    let size = d.bytes.len() as u64;
    Inspection {
        file: name.to_owned(),
        kind: "data",
        identifier: identifier(&d.header.magic),
        version: d.flat.version(),
        file_size: size,
        bundle: None,
        program: None,
        data: Some(Data {
            named_data: d.entries.len(),
            tensors: by_dtype(
                d.entries.iter().filter_map(|e| {
                    Some((scalar::name(e.layout.as_ref()?.scalar_type), e.span.len))
                }),
            ),
            opaque_blobs: count(
                d.entries
                    .iter()
                    .filter(|e| e.layout.is_none())
                    .map(|e| &e.span),
            ),
            segments: count(d.segments.iter()),
        }),
        composition: comp.finish(size),
        package: None,
        checkpoint: None,
        profile: None,
        largest: None,
        stats: None,
        etrecord: None,
    }
}
