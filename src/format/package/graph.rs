//! `program.ptg`: the NPTG flatbuffer, verified, and the facts read from it
//! that more than one part of ptefs needs (counts, which values are
//! mutated, which placeholders use which data key).

use std::collections::{BTreeMap, BTreeSet};

use super::super::{Error, Result, Span, verify};
use crate::schema::native_graph as ng;

/// The identifier at bytes 4..8 of the flatbuffer.
pub const IDENTIFIER: &[u8; 4] = b"NPTG";

/// Verifies the flatbuffer in `member` of `file` and returns its root.
pub fn parse(file: &[u8], member: Span) -> Result<ng::Program<'_>> {
    let bytes = member.bytes(file);
    let found = bytes.get(4..8).ok_or_else(|| {
        Error::new(format!(
            "program.ptg (at offset {}) is {} bytes, too short for a flatbuffer",
            member.offset,
            bytes.len()
        ))
    })?;
    if found != IDENTIFIER {
        return Err(Error::new(format!(
            "program.ptg (at offset {}): file identifier is {:?}, expected \"NPTG\"",
            member.offset,
            String::from_utf8_lossy(found)
        )));
    }
    flatbuffers::root_with_opts::<ng::Program>(&verify::options(bytes.len()), bytes).map_err(|e| {
        Error::new(format!(
            "program.ptg (at offset {}): flatbuffer does not verify: {}",
            member.offset,
            verify::one_line(&e)
        ))
    })
}

/// Tensor names an argument refers to, in order (lists included; a
/// subgraph's names belong to the subgraph and are not included).
pub fn argument_names<'a>(a: &ng::NamedArgument<'a>) -> Vec<&'a str> {
    let v = a.arg();
    if let Some(t) = v.value_as_tensor_arg() {
        vec![t.name()]
    } else if let Some(l) = v.value_as_tensor_list_arg() {
        l.names().iter().collect()
    } else if let Some(l) = v.value_as_optional_tensor_list_arg() {
        let has = l.has_value();
        l.names()
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < has.len() && has.get(*i))
            .map(|(_, n)| n)
            .collect()
    } else {
        Vec::new()
    }
}

/// Names of every value a node produces.
pub fn output_names<'a>(n: &ng::Node<'a>) -> Vec<&'a str> {
    let mut out = Vec::new();
    for o in n.outputs().iter().flatten() {
        if o.kind() == ng::OutputValueKind::TENSOR_LIST {
            out.extend(o.names().iter().flatten());
        } else {
            out.push(o.name());
        }
    }
    out
}

/// Counts and names of one method, as `inspect` and the oracles give them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MethodCounts {
    /// Nodes of the method's own graph (subgraphs not included).
    pub nodes: u64,
    /// Placeholder nodes.
    pub placeholders: u64,
    /// Operator calls.
    pub calls: u64,
    /// Output nodes.
    pub outputs: u64,
    /// Calls in subgraphs of higher-order ops, at any depth.
    pub subgraph_calls: u64,
    /// Constants bound to data keys.
    pub constants: u64,
    /// User inputs, in order.
    pub user_inputs: Vec<String>,
    /// Cross-method names of the mutable buffers without bytes.
    pub mutable_buffers: Vec<String>,
    /// Calls per operator, subgraph calls included.
    pub targets: BTreeMap<String, u64>,
}

/// Counts the nodes of method `m`.
pub fn counts(m: &ng::Method<'_>) -> MethodCounts {
    let g = m.graph();
    let mut c = MethodCounts {
        constants: m.constants().map_or(0, |v| v.len() as u64),
        user_inputs: g.inputs().iter().flatten().map(str::to_owned).collect(),
        mutable_buffers: m
            .mutable_buffers()
            .iter()
            .flatten()
            .map(|b| b.fqn().to_owned())
            .collect(),
        ..MethodCounts::default()
    };
    for n in g.nodes() {
        c.nodes += 1;
        match n.op_kind() {
            ng::OpKind::PLACEHOLDER => c.placeholders += 1,
            ng::OpKind::OUTPUT => c.outputs += 1,
            _ => {
                c.calls += 1;
                *c.targets
                    .entry(n.target().unwrap_or("").to_owned())
                    .or_default() += 1;
                subgraph_calls(&n, &mut c);
            }
        }
    }
    c
}

fn subgraph_calls(n: &ng::Node<'_>, c: &mut MethodCounts) {
    for a in n.inputs().iter().flatten() {
        let Some(sub) = a.arg().value_as_graph_arg() else {
            continue;
        };
        for inner in sub.graph().nodes() {
            if inner.op_kind() == ng::OpKind::CALL_FUNCTION {
                c.subgraph_calls += 1;
                let target = inner.target().unwrap_or("").to_owned();
                *c.targets.entry(target).or_default() += 1;
                subgraph_calls(&inner, c);
            }
        }
    }
}

/// Values of the method's graph that are written, from any of the three
/// places the format records it: a constant's `mutated` flag, an argument
/// an operator writes in place, and a BUFFER_MUTATION output spec (whose
/// target is a data key or a mutable buffer's name).
pub fn mutated_values<'a>(m: &ng::Method<'a>) -> BTreeSet<&'a str> {
    let mut out = BTreeSet::new();
    let mut by_key: BTreeMap<&str, &str> = BTreeMap::new();
    for c in m.constants().iter().flatten() {
        by_key.insert(c.data_key(), c.name());
        if c.mutated() {
            out.insert(c.name());
        }
    }
    for b in m.mutable_buffers().iter().flatten() {
        by_key.insert(b.fqn(), b.name());
    }
    for s in m.output_specs().iter().flatten() {
        match s.kind() {
            ng::OutputKind::BUFFER_MUTATION => {
                if let Some(p) = s.target().and_then(|t| by_key.get(t)) {
                    out.insert(p);
                }
            }
            ng::OutputKind::USER_INPUT_MUTATION => out.extend(s.target()),
            _ => {}
        }
    }
    for n in m.graph().nodes() {
        for a in n.inputs().iter().flatten().filter(|a| a.mutated()) {
            out.extend(argument_names(&a));
        }
    }
    out
}

/// The metadata of each value of graph `g`, by name.
pub fn value_metas<'a>(g: &ng::Graph<'a>) -> BTreeMap<&'a str, ng::TensorMeta<'a>> {
    g.tensor_values()
        .iter()
        .flatten()
        .map(|v| (v.name(), v.meta()))
        .collect()
}

/// The logical sizes of `meta` (a dynamic dimension by its upper bound,
/// -1 when unbounded).
pub fn sizes(meta: &ng::TensorMeta<'_>) -> Vec<i64> {
    meta.sizes()
        .iter()
        .flatten()
        .map(|d| if d.min() == d.max() { d.min() } else { d.max() })
        .collect()
}

/// A dtype's schema name, or its number when the schema has none.
pub fn dtype_name(t: ng::ScalarType) -> String {
    t.variant_name()
        .map_or_else(|| t.0.to_string(), str::to_owned)
}

/// The program schema's element type of the same meaning. The graph
/// numbers its types like ExecuTorch's runtime except the unsigned ones
/// past 8 bits, which the program schema numbers 27 to 29.
pub fn scalar_type(t: ng::ScalarType) -> crate::schema::ScalarType {
    use crate::schema::ScalarType as S;
    match t {
        ng::ScalarType::UINT16 => S::UINT16,
        ng::ScalarType::UINT32 => S::UINT32,
        ng::ScalarType::UINT64 => S::UINT64,
        other => S(other.0),
    }
}
