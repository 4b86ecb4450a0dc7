//! `ops.yaml`: the operators of a program in the format of ExecuTorch's
//! `gen_oplist` (its `selected_operators.yaml`, which torchgen's
//! `SelectiveBuilder` loads), and `ops.txt`, the same facts for people.
//!
//! Keys are in the order `yaml.safe_dump` sorts them; strings are written
//! double-quoted (JSON strings are YAML double-quoted scalars), so no
//! operator name can break the document. Operators carry no `debug_info`
//! (gen_oplist's record of the model path, optional to torchgen), so two
//! exports with the same operators have the same `ops.yaml`.

use std::fmt::Write;

use crate::meta::oplist::{Calls, OpList};

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// `ops.yaml` of a program.
pub fn yaml(list: &OpList) -> String {
    let mut out = String::new();
    out.push_str("build_features: []\ncustom_classes: []\n");
    if list.kernel_keys.is_empty() {
        out.push_str("et_kernel_metadata: {}\n");
    } else {
        out.push_str("et_kernel_metadata:\n");
        for (op, keys) in &list.kernel_keys {
            let _ = writeln!(out, "  {}:", quoted(op));
            for k in keys {
                let _ = writeln!(out, "  - {}", quoted(k));
            }
        }
    }
    out.push_str("include_all_non_op_selectives: false\ninclude_all_operators: false\n");
    out.push_str("kernel_metadata: {}\n");
    if list.operators.is_empty() {
        out.push_str("operators: {}\n");
        return out;
    }
    out.push_str("operators:\n");
    for op in &list.operators {
        let _ = writeln!(out, "  {}:", quoted(op));
        out.push_str("    include_all_overloads: false\n");
        out.push_str("    is_root_operator: true\n    is_used_for_training: true\n");
    }
    out
}

/// One method's calls, with the directory of each of its delegates.
pub struct MethodCalls<'a> {
    /// The method's directory name.
    pub method: &'a str,
    /// What it calls.
    pub calls: Vec<Calls>,
    /// `delegates/` entry of each delegate, by index.
    pub delegate_dirs: &'a [String],
}

/// `ops.txt`: per method, each operator with its call count, run by the
/// portable kernels, and each delegate with its call count and directory.
pub fn text(methods: &[MethodCalls<'_>]) -> String {
    let mut out = String::from("# method\tcalls\toperator or delegate\truns in\n");
    for m in methods {
        for c in &m.calls {
            let place = match c.delegate {
                None => "kernel library".to_owned(),
                Some(d) => match m.delegate_dirs.get(d) {
                    Some(dir) => format!("methods/{}/delegates/{dir}", m.method),
                    None => format!("delegate {d}"),
                },
            };
            let _ = writeln!(out, "{}\t{}\t{}\t{place}", m.method, c.calls, c.name);
        }
    }
    out
}
