//! The instruction graph of a plan: which call writes each tensor and
//! which calls read it.
//!
//! A kernel writes the arguments its schema marks as written (out
//! arguments and returns); for an operator the schema table does not know,
//! the last argument (ExecuTorch passes the return value last, and it is
//! the out argument). A delegate call's arguments are inputs and outputs
//! alike: one that no earlier instruction wrote, that is no method input
//! and has no stored bytes, is taken as written by the call.

use std::collections::{BTreeSet, HashMap};

use super::io::value;
use super::schemas;
use crate::format::operator_name;
use crate::schema::program as fb;

/// A node of the graph.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Node {
    /// A kernel or delegate call: chain and instruction index.
    Call(u32, u32),
    /// A tensor no instruction of the plan wrote before it was read: a
    /// method input, a constant, or a buffer (a KV cache).
    Value(u32),
    /// The method's outputs.
    Outputs,
}

/// What a call node shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// A kernel: its operator name.
    Kernel(String),
    /// A delegate call: index into `ExecutionPlan.delegates`.
    Delegate(u32),
}

/// Where a source value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `ExecutionPlan.inputs`.
    Input,
    /// Stored bytes: a constant, an initial state or an external tensor.
    Stored,
    /// Neither: a planned buffer read before any write.
    Buffer,
}

/// The graph: call nodes in order, source values, and edges labelled by
/// the tensor they carry.
#[derive(Debug, Default)]
pub struct Graph {
    /// Each call, in chain and instruction order.
    pub calls: Vec<(Node, Call)>,
    /// Values read before any write, with their origin.
    pub sources: Vec<(u32, Origin)>,
    /// `(from, to, tensor value)`, each once.
    pub edges: BTreeSet<(Node, Node, u32)>,
}

/// The instruction graph of `plan`.
pub fn graph(plan: fb::ExecutionPlan<'_>) -> Graph {
    let mut g = Graph::default();
    let inputs: BTreeSet<i64> = plan.inputs().iter().flatten().map(i64::from).collect();
    let mut writer: HashMap<i64, Node> = HashMap::new();
    let mut sources: HashMap<i64, Origin> = HashMap::new();
    let is_tensor = |i: i64| value(plan, i).and_then(|v| v.val_as_tensor());
    for (c, chain) in plan.chains().iter().flatten().enumerate() {
        for (n, ins) in chain.instructions().iter().flatten().enumerate() {
            let node = Node::Call(c as u32, n as u32);
            let (args, call, schema) = if let Some(k) = ins.instr_args_as_kernel_call() {
                let op = operator_name(plan, k.op_index()).unwrap_or_default();
                let schema = schemas::lookup(&op);
                (k.args(), Call::Kernel(op), schema)
            } else if let Some(d) = ins.instr_args_as_delegate_call() {
                (d.args(), Call::Delegate(d.delegate_index() as u32), None)
            } else {
                continue;
            };
            let last = args.and_then(|a| a.iter().next_back()).map(i64::from);
            let kernel = matches!(call, Call::Kernel(_));
            g.calls.push((node.clone(), call));
            let mut written = Vec::new();
            for (pos, a) in args.iter().flatten().enumerate() {
                let a = i64::from(a);
                let Some(v) = value(plan, a) else { continue };
                let items: Vec<i64> = if v.val_as_tensor().is_some() {
                    vec![a]
                } else if let Some(l) = v.val_as_tensor_list() {
                    l.items().iter().flatten().map(i64::from).collect()
                } else if let Some(l) = v.val_as_optional_tensor_list() {
                    l.items().iter().flatten().map(i64::from).collect()
                } else {
                    continue;
                };
                let marked = match schema {
                    Some(s) => s.arg(pos).map(|i| i.writes),
                    None if kernel => Some(Some(a) == last),
                    None => None,
                };
                for t in items.into_iter().filter(|&t| is_tensor(t).is_some()) {
                    let stored = is_tensor(t).is_some_and(|t| {
                        t.data_buffer_idx() > 0
                            || t.extra_tensor_info()
                                .is_some_and(|e| e.location() == fb::TensorDataLocation::EXTERNAL)
                    });
                    let defined = writer.contains_key(&t) || inputs.contains(&t) || stored;
                    if marked.unwrap_or(!defined) {
                        written.push(t);
                        continue;
                    }
                    let from = match writer.get(&t) {
                        Some(w) => w.clone(),
                        None => {
                            let origin = if inputs.contains(&t) {
                                Origin::Input
                            } else if stored {
                                Origin::Stored
                            } else {
                                Origin::Buffer
                            };
                            sources.entry(t).or_insert(origin);
                            Node::Value(t as u32)
                        }
                    };
                    g.edges.insert((from, node.clone(), t as u32));
                }
            }
            for t in written {
                writer.insert(t, node.clone());
            }
        }
    }
    for o in plan.outputs().iter().flatten().map(i64::from) {
        if let Some(w) = writer.get(&o) {
            g.edges.insert((w.clone(), Node::Outputs, o as u32));
        }
    }
    let mut sources: Vec<(u32, Origin)> = sources.into_iter().map(|(v, o)| (v as u32, o)).collect();
    sources.sort_by_key(|s| s.0);
    g.sources = sources;
    g
}
