//! `code.txt` of a package method: one line per node of the graph.
//!
//! ```text
//! input %p_fc1_weight: FLOAT[16, 8] = PARAMETER fc1.weight
//! %aten_index_put__default (alias_of %b_v_cache): FLOAT[16, 8] = torch.ops.aten.index_put_.default(self=%b_v_cache mutated, ...)
//! output %aten_index_put__default (BUFFER_MUTATION v_cache), %aten_add_tensor_1
//! ```
//!
//! A subgraph passed to a higher-order op follows its call, indented, with
//! its own names. Literals are bounded as in the program's `code.txt`
//! (lists to their first items, strings and names to a fixed length), so
//! the text grows with the number of arguments, not with their sizes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::code_txt::{LIST_ITEMS, list};
use crate::format::package::graph;
use crate::format::{NAME_LIMIT, clip};
use crate::schema::native_graph as ng;

/// Items of a list literal shown before `…`.
/// Bytes of a string literal shown before `…`.
const STRING_BYTES: usize = 64;

/// What the method says about its values beyond the graph itself.
struct Bindings<'a> {
    /// Placeholder → (data key, kind) for constants.
    constants: BTreeMap<&'a str, (&'a str, &'static str)>,
    /// Placeholder → metadata for constants, which the graph's value table
    /// does not repeat.
    metas: BTreeMap<&'a str, ng::TensorMeta<'a>>,
    /// Placeholder → cross-method name of a byte-less mutable buffer.
    buffers: BTreeMap<&'a str, &'a str>,
    /// Graph output → how it is used.
    outputs: BTreeMap<&'a str, (ng::OutputKind, Option<&'a str>)>,
    /// Values written somewhere.
    mutated: BTreeSet<&'a str>,
}

/// Renders method `m`.
pub fn render(m: ng::Method<'_>) -> String {
    let c = graph::counts(&m);
    let b = Bindings {
        constants: (m.constants().iter().flatten())
            .map(|k| {
                let kind = k.kind().variant_name().unwrap_or("UNKNOWN_KIND");
                (k.name(), (k.data_key(), kind))
            })
            .collect(),
        metas: (m.constants().iter().flatten())
            .map(|k| (k.name(), k.meta()))
            .collect(),
        buffers: (m.mutable_buffers().iter().flatten())
            .map(|k| (k.name(), k.fqn()))
            .collect(),
        outputs: (m.output_specs().iter().flatten())
            .map(|s| (s.name(), (s.kind(), s.target())))
            .collect(),
        mutated: graph::mutated_values(&m),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {}: {} nodes ({} placeholders, {} calls, {} outputs), {} constants, {} mutable buffers",
        clip(m.name(), NAME_LIMIT),
        c.nodes,
        c.placeholders,
        c.calls,
        c.outputs,
        c.constants,
        c.mutable_buffers.len()
    );
    body(&mut out, m.graph(), Some(&b), "");
    out
}

/// The lines of graph `g`, each after `indent`. `b` is the method's
/// bindings for its own graph and `None` for a subgraph.
fn body(out: &mut String, g: ng::Graph<'_>, b: Option<&Bindings<'_>>, indent: &str) {
    let mut metas = graph::value_metas(&g);
    if let Some(b) = b {
        metas.extend(b.metas.iter().map(|(k, v)| (*k, *v)));
    }
    let typed = |name: &str| -> String {
        let n = format!("%{}", clip(name, NAME_LIMIT));
        match metas.get(name) {
            Some(m) => format!("{n}: {}", meta(m)),
            None => n,
        }
    };
    for n in g.nodes() {
        let _ = write!(out, "{indent}");
        match n.op_kind() {
            ng::OpKind::PLACEHOLDER => {
                let _ = write!(out, "input {}", typed(n.name()));
                if let Some(b) = b {
                    if let Some((key, kind)) = b.constants.get(n.name()) {
                        let _ = write!(out, " = {kind} {}", clip(key, NAME_LIMIT));
                    } else if let Some(fqn) = b.buffers.get(n.name()) {
                        let _ = write!(out, " = mutable buffer {}", clip(fqn, NAME_LIMIT));
                    }
                    if b.mutated.contains(n.name()) {
                        out.push_str(" (mutated)");
                    }
                }
                out.push('\n');
            }
            ng::OpKind::OUTPUT => {
                let mut items = Vec::new();
                for a in n.inputs().iter().flatten() {
                    for name in graph::argument_names(&a) {
                        let mut s = format!("%{}", clip(name, NAME_LIMIT));
                        if let Some((kind, target)) = b.and_then(|b| b.outputs.get(name))
                            && *kind != ng::OutputKind::USER_OUTPUT
                        {
                            let kind = kind.variant_name().unwrap_or("UNKNOWN_KIND");
                            let target = clip(target.unwrap_or(""), NAME_LIMIT);
                            let _ = write!(s, " ({kind} {target})");
                        }
                        items.push(s);
                    }
                }
                let _ = writeln!(out, "output {}", items.join(", "));
            }
            _ => call(out, n, &typed, indent),
        }
    }
}

fn call(out: &mut String, n: ng::Node<'_>, typed: &dyn Fn(&str) -> String, indent: &str) {
    let mut results = Vec::new();
    for o in n.outputs().iter().flatten() {
        if o.kind() == ng::OutputValueKind::TENSOR_LIST {
            let names: Vec<String> = o.names().iter().flatten().map(typed).collect();
            results.push(format!("[{}]", names.join(", ")));
        } else {
            let mut s = typed(o.name());
            if let Some(a) = o.alias_of().filter(|a| !a.is_empty()) {
                let _ = write!(s, " (alias_of %{})", clip(a, NAME_LIMIT));
            }
            results.push(s);
        }
    }
    let produced = graph::output_names(&n);
    if produced.is_empty() {
        results.push(format!("%{}", clip(n.name(), NAME_LIMIT)));
    }
    let mut args = Vec::new();
    let mut subgraphs = Vec::new();
    for a in n.inputs().iter().flatten() {
        let mut s = String::new();
        if let Some(name) = a.name().filter(|s| !s.is_empty()) {
            let _ = write!(s, "{}=", clip(name, NAME_LIMIT));
        }
        s.push_str(&argument(&a.arg()));
        if a.mutated() {
            s.push_str(" mutated");
        }
        if let Some(g) = a.arg().value_as_graph_arg() {
            subgraphs.push(g);
        }
        args.push(s);
    }
    let target = clip(n.target().unwrap_or(""), NAME_LIMIT);
    let _ = write!(
        out,
        "{} = {target}({})",
        results.join(", "),
        args.join(", ")
    );
    // A node whose results have names of their own (multiple outputs)
    // still shows its name, which other tools print.
    if !produced.is_empty() && !produced.contains(&n.name()) {
        let _ = write!(out, "  # node {}", clip(n.name(), NAME_LIMIT));
    }
    out.push('\n');
    for g in subgraphs {
        let inner = format!("{indent}    ");
        let ins: Vec<String> = (g.graph().inputs().iter().flatten())
            .map(|i| format!("%{}", clip(i, NAME_LIMIT)))
            .collect();
        let _ = writeln!(
            out,
            "{inner}# subgraph {} of %{}, inputs {}",
            clip(g.name(), NAME_LIMIT),
            clip(n.name(), NAME_LIMIT),
            if ins.is_empty() {
                "none".to_owned()
            } else {
                ins.join(" ")
            }
        );
        body(out, g.graph(), None, &inner);
    }
}

/// `FLOAT[2, 8]`; a dynamic dimension as `min..max` (`min..` unbounded).
pub fn meta(m: &ng::TensorMeta<'_>) -> String {
    let dims: Vec<String> = (m.sizes().iter().flatten())
        .take(LIST_ITEMS)
        .map(|d| match (d.min(), d.max()) {
            (a, b) if a == b => a.to_string(),
            (a, b) if b < 0 => format!("{a}.."),
            (a, b) => format!("{a}..{b}"),
        })
        .collect();
    let more = if m.sizes().map_or(0, |v| v.len()) > LIST_ITEMS {
        ", …"
    } else {
        ""
    };
    let quant = match m.quant().map(|q| q.scheme_type()) {
        Some(ng::QuantScheme::AffineGroup) => " affine-quantized",
        Some(ng::QuantScheme::PackedQuant) => " packed",
        _ => "",
    };
    format!(
        "{}[{}{more}]{quant}",
        graph::dtype_name(m.dtype()),
        dims.join(", ")
    )
}

fn argument(a: &ng::Argument<'_>) -> String {
    let name = |s: &str| format!("%{}", clip(s, NAME_LIMIT));
    let scalar = |r: Option<&str>, lit: String| match r.filter(|r| !r.is_empty()) {
        Some(r) => name(r),
        None => lit,
    };
    if let Some(x) = a.value_as_tensor_arg() {
        name(x.name())
    } else if a.value_as_none_arg().is_some() {
        "None".to_owned()
    } else if let Some(x) = a.value_as_int_arg() {
        scalar(x.ref_(), x.value().to_string())
    } else if let Some(x) = a.value_as_float_arg() {
        scalar(x.ref_(), format!("{:?}", x.value()))
    } else if let Some(x) = a.value_as_bool_arg() {
        scalar(x.ref_(), x.value().to_string())
    } else if let Some(x) = a.value_as_string_arg() {
        serde_json::to_string(&clip(x.value(), STRING_BYTES)).unwrap_or_default()
    } else if let Some(x) = a.value_as_scalar_type_arg() {
        graph::dtype_name(x.value())
    } else if let Some(x) = a.value_as_int_list_arg() {
        let refs = x.refs();
        let item = |(i, v): (usize, i64)| {
            let r = refs.filter(|r| i < r.len()).map(|r| r.get(i));
            scalar(r, v.to_string())
        };
        list(x.values().len(), x.values().iter().enumerate().map(item))
    } else if let Some(x) = a.value_as_float_list_arg() {
        list(
            x.values().len(),
            x.values().iter().map(|d| format!("{d:?}")),
        )
    } else if let Some(x) = a.value_as_bool_list_arg() {
        list(x.values().len(), x.values().iter().map(|b| b.to_string()))
    } else if let Some(x) = a.value_as_tensor_list_arg() {
        list(x.names().len(), x.names().iter().map(name))
    } else if let Some(x) = a.value_as_optional_tensor_list_arg() {
        let has = x.has_value();
        let item = |(i, n): (usize, &str)| {
            if i < has.len() && has.get(i) {
                name(n)
            } else {
                "None".to_owned()
            }
        };
        list(x.names().len(), x.names().iter().enumerate().map(item))
    } else if let Some(x) = a.value_as_graph_arg() {
        format!("graph {}", clip(x.name(), NAME_LIMIT))
    } else {
        format!("<argument type {}>", a.value_type().0)
    }
}
