//! `inspect` of an ETRecord: its programs, their tensors, the maps and
//! what could not be read.

use std::fmt::Write;

use serde::Serialize;

use super::Inspection;
use crate::escape::escape;
use crate::format::etrecord::{Archive, EtRecordFile};
use crate::report::composition::Composition;

/// What an ETRecord holds.
#[derive(Debug, Clone, Serialize)]
pub struct EtRecordSummary {
    /// Zip members.
    pub members: usize,
    /// Each recorded program.
    pub graphs: Vec<GraphSummary>,
    /// The maps present, by member name.
    pub maps: Vec<&'static str>,
    /// Tensors of the reference outputs.
    pub reference_outputs: Option<usize>,
    /// Tensors of the representative inputs.
    pub representative_inputs: Option<usize>,
    /// Why a member could not be read, one sentence each.
    pub errors: Vec<String>,
}

/// One recorded program.
#[derive(Debug, Clone, Serialize)]
pub struct GraphSummary {
    /// The member's name.
    pub name: String,
    /// Bytes of the program's JSON.
    pub program_bytes: u64,
    /// Tensors of its state dict.
    pub state_dict_tensors: Option<usize>,
    /// Tensors of its constants.
    pub constant_tensors: Option<usize>,
}

fn tensors(a: &Option<Result<Archive, String>>) -> Option<usize> {
    a.as_ref()?.as_ref().ok().map(|a| a.value.tensors().len())
}

pub(super) fn inspection(name: &str, r: &EtRecordFile<'_>) -> Inspection {
    let mut comp = Composition::default();
    for m in &r.members {
        let what = if m.name.ends_with("_state_dict") {
            "state dicts"
        } else if m.name.ends_with("_constants") {
            "constants"
        } else if m.name.ends_with("_example_inputs") || m.name == "representative_inputs" {
            "inputs"
        } else if m.name == "reference_outputs" {
            "reference outputs"
        } else if r.graphs.iter().any(|g| g.name == m.name) {
            "program JSON"
        } else {
            "maps"
        };
        comp.add(what, m.data);
    }
    let size = r.bytes.len() as u64;
    let maps = [
        crate::format::etrecord::DEBUG_HANDLE_MAP,
        crate::format::etrecord::DELEGATE_MAP,
        crate::format::etrecord::INSTRUCTION_OUTS,
    ]
    .into_iter()
    .zip(&r.maps)
    .filter(|(_, s)| s.is_some())
    .map(|(n, _)| n)
    .collect();
    Inspection {
        file: name.to_owned(),
        kind: "etrecord",
        identifier: crate::format::etrecord::IDENTIFIER.to_owned(),
        version: 0,
        file_size: size,
        bundle: None,
        program: None,
        data: None,
        composition: comp.finish(size),
        package: None,
        checkpoint: None,
        profile: None,
        largest: None,
        stats: None,
        etrecord: Some(EtRecordSummary {
            members: r.members.len(),
            graphs: r
                .graphs
                .iter()
                .map(|g| GraphSummary {
                    name: g.name.clone(),
                    program_bytes: g.program.len,
                    state_dict_tensors: tensors(&g.archives[0]),
                    constant_tensors: tensors(&g.archives[1]),
                })
                .collect(),
            maps,
            reference_outputs: tensors(&r.reference_outputs),
            representative_inputs: tensors(&r.representative_inputs),
            errors: r.errors.clone(),
        }),
    }
}

/// The summary as text.
pub(super) fn text(o: &mut String, s: &EtRecordSummary) {
    let _ = writeln!(o, "members: {}", s.members);
    let _ = writeln!(o, "\ngraphs: {}", s.graphs.len());
    let n = |v: Option<usize>| v.map_or("-".to_owned(), |v| v.to_string());
    for g in &s.graphs {
        let _ = writeln!(
            o,
            "  {:<40} {:>8} bytes of JSON, {:>4} state dict tensors, {:>4} constants",
            escape(&g.name),
            g.program_bytes,
            n(g.state_dict_tensors),
            n(g.constant_tensors)
        );
    }
    let _ = writeln!(o, "maps: {}", s.maps.join(", "));
    let _ = writeln!(
        o,
        "reference outputs: {} tensors; representative inputs: {} tensors",
        n(s.reference_outputs),
        n(s.representative_inputs)
    );
    for e in &s.errors {
        let _ = writeln!(o, "error: {}", escape(e));
    }
}
