//! Delegation coverage: per method, which operators run on kernels (and
//! how often), which run inside which delegate (node counts of the decoded
//! payloads), and which kernels ExecuTorch's portable library lacks.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use serde::Serialize;

use crate::report::inspect::Inspection;

/// The operators ExecuTorch 1.5's portable kernel library provides,
/// generated from its `kernels/portable/functions.yaml` by
/// `scripts/gen-portable-ops.py`.
const PORTABLE: &str = include_str!("portable_ops.txt");

/// The operators the portable kernel library provides.
pub fn portable_ops() -> impl Iterator<Item = &'static str> {
    PORTABLE.lines().filter(|l| !l.is_empty())
}

/// True when the portable kernel library provides `op`
/// (`aten::add.out`; an overload-less name matches `.default`).
pub fn in_portable(op: &str) -> bool {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    let set = SET.get_or_init(|| portable_ops().collect());
    set.contains(op) || op.strip_suffix(".default").is_some_and(|o| set.contains(o))
}

/// One method's coverage.
#[derive(Debug, Clone, Serialize)]
pub struct MethodCoverage {
    /// The file holding it.
    pub file: String,
    /// The method.
    pub method: String,
    /// Kernel calls per operator.
    pub kernels: Vec<OpCalls>,
    /// Instructions that are neither kernel nor delegate calls (moves,
    /// jumps, frees).
    pub other_instructions: u64,
    /// Each delegate.
    pub delegates: Vec<DelegateCoverage>,
    /// Kernel calls in all.
    pub kernel_calls: u64,
    /// Nodes inside decoded delegates in all.
    pub delegated_nodes: u64,
}

/// How often an operator is called.
#[derive(Debug, Clone, Serialize)]
pub struct OpCalls {
    /// `aten::add.out`.
    pub op: String,
    /// Calls.
    pub calls: u64,
    /// Whether ExecuTorch 1.5's portable kernel library provides it; a
    /// runtime built with only that library fails to load the method
    /// otherwise.
    pub portable: bool,
}

/// What runs inside one delegate.
#[derive(Debug, Clone, Serialize)]
pub struct DelegateCoverage {
    /// Its index in the method.
    pub index: usize,
    /// The backend id.
    pub backend: String,
    /// Bytes of its processed blob.
    pub bytes: u64,
    /// Node counts per operator, when ptefs decodes the backend.
    pub ops: BTreeMap<String, u64>,
    /// Nodes in all (0 when not decoded).
    pub nodes: u64,
    /// Whether the payload was decoded.
    pub decoded: bool,
}

pub(super) fn coverage(inspections: &[Inspection]) -> Vec<MethodCoverage> {
    let mut out = Vec::new();
    for i in inspections {
        let Some(p) = &i.program else { continue };
        for m in &p.methods {
            let mut kernels = Vec::new();
            let mut other = 0;
            for (op, &calls) in &m.calls {
                if op.starts_with('<') {
                    if op != "<delegate call>" {
                        other += calls;
                    }
                    continue;
                }
                kernels.push(OpCalls {
                    portable: in_portable(op),
                    op: op.clone(),
                    calls,
                });
            }
            kernels.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.op.cmp(&b.op)));
            let delegates: Vec<DelegateCoverage> = p
                .delegates
                .iter()
                .filter(|d| d.method == m.name)
                .map(|d| DelegateCoverage {
                    index: d.index,
                    backend: d.id.clone(),
                    bytes: d.bytes,
                    ops: d.decoded.as_ref().map_or_else(BTreeMap::new, |s| {
                        s.ops.iter().map(|(k, &v)| (k.clone(), v as u64)).collect()
                    }),
                    nodes: d.decoded.as_ref().map_or(0, |s| s.nodes as u64),
                    decoded: d.decoded.is_some(),
                })
                .collect();
            out.push(MethodCoverage {
                file: i.file.clone(),
                method: m.name.clone(),
                kernel_calls: kernels.iter().map(|k| k.calls).sum(),
                delegated_nodes: delegates.iter().map(|d| d.nodes).sum(),
                kernels,
                other_instructions: other,
                delegates,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_portable_list_is_read() {
        assert!(in_portable("aten::add.out"));
        assert!(in_portable("aten::addmm.out"));
        assert!(!in_portable(
            "quantized_decomposed::dequantize_per_channel.out"
        ));
        assert!(!in_portable("llama::sdpa_with_kv_cache.out"));
    }
}
