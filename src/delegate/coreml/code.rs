//! `code.txt` of a Core ML model: a heading, then per function its
//! signature and one line per MIL op, in block order:
//!
//! ```text
//! function main(%x: fp32[1,16]) opset CoreML7 -> %aten_linear_default_1
//!   000 %linear_0_weight_0: fp32[32,16] = const(val=blob("@model_path/weights/weight.bin", offset=64))  # weights/main.004-linear.weight
//!   004 %linear_0: fp32[1,32] = linear(bias=%linear_0_bias_0, weight=%linear_0_weight_0, x=%x)
//! ```
//! Arguments are in name order; an op's `name` attribute is left out when
//! it repeats its output's name; nested blocks (control flow) follow their
//! op, indented.

use std::collections::HashMap;
use std::fmt::Write;

use super::{Payload, mil};
use crate::schema::coreml as pb;

/// The text of `code.txt`.
pub fn render(p: &Payload<'_>) -> String {
    let mut out = String::new();
    let Some(m) = &p.model else {
        return out;
    };
    let program = mil::program(&m.spec);
    let _ = writeln!(
        out,
        "# Core ML {}: specification version {}, {}",
        m.path,
        m.spec.specification_version,
        match program {
            Some(pr) => format!(
                "ML Program version {}, {} functions",
                pr.version,
                pr.functions.len()
            ),
            None => "not an ML Program (ops not decoded)".into(),
        }
    );
    if let Some(f) = p.reference.as_ref().and_then(|r| r.function_name.as_ref()) {
        let _ = writeln!(out, "# this method runs function {f:?}");
    }
    // Each weight's file, by (function, op index, argument).
    let files: HashMap<(&str, usize, &str), &str> = p
        .weights
        .iter()
        .map(|w| {
            (
                (w.function.as_str(), w.op_index, w.argument.as_str()),
                w.stem.as_str(),
            )
        })
        .collect();
    for (fname, f, opset, block) in p.functions() {
        let inputs: Vec<String> = f.inputs.iter().map(named_type).collect();
        let outputs: Vec<String> = block.outputs.iter().map(|o| format!("%{o}")).collect();
        let _ = writeln!(
            out,
            "function {fname}({}) opset {opset} -> {}",
            inputs.join(", "),
            outputs.join(", ")
        );
        for (i, op) in block.operations.iter().enumerate() {
            let _ = write!(out, "  {i:03} ");
            op_line(&mut out, op);
            let mine: Vec<&str> = op
                .attributes
                .keys()
                .chain(op.inputs.keys())
                .filter_map(|a| files.get(&(fname, i, a.as_str())).copied())
                .collect();
            for stem in mine {
                let _ = write!(out, "  # weights/{stem}");
            }
            out.push('\n');
            for (k, b) in op.blocks.iter().enumerate() {
                nested(&mut out, b, k, 2);
            }
        }
    }
    out
}

/// `%name: type`.
fn named_type(n: &pb::NamedValueType) -> String {
    format!("%{}: {}", n.name, mil::type_text(n.r#type.as_ref()))
}

/// `%out: type = op(arg=…, …) [attr=…]`, without a newline.
fn op_line(out: &mut String, op: &pb::Operation) {
    let outputs: Vec<String> = op.outputs.iter().map(named_type).collect();
    let args: Vec<String> = op
        .inputs
        .iter()
        .map(|(k, a)| format!("{k}={}", mil::argument_text(a)))
        .chain(
            op.attributes
                .iter()
                .filter(|(k, _)| k.as_str() == "val")
                .map(|(k, v)| format!("{k}={}", mil::value_text(v))),
        )
        .collect();
    let first = op.outputs.first().map(|o| o.name.as_str());
    let attrs: Vec<String> = op
        .attributes
        .iter()
        .filter(|(k, v)| k.as_str() != "val" && !(k.as_str() == "name" && is_text(v, first)))
        .map(|(k, v)| format!("{k}={}", mil::value_text(v)))
        .collect();
    let lhs = if outputs.is_empty() {
        String::new()
    } else {
        format!("{} = ", outputs.join(", "))
    };
    let _ = write!(out, "{lhs}{}({})", op.r#type, args.join(", "));
    if !attrs.is_empty() {
        let _ = write!(out, " [{}]", attrs.join(", "));
    }
}

/// True when `v` is the single string `s`.
fn is_text(v: &pb::Value, s: Option<&str>) -> bool {
    let Some(s) = s else { return false };
    match &v.value {
        Some(pb::value::Value::ImmediateValue(i)) => match &i.value {
            Some(pb::value::immediate_value::Value::Tensor(t)) => {
                mil::tensor_values(t) == [mil::Value2::Str(s.to_owned())]
            }
            _ => false,
        },
        _ => false,
    }
}

/// A nested block, its ops indented under the op that holds it. Depth is
/// bounded by protobuf decoding's own recursion limit.
fn nested(out: &mut String, b: &pb::Block, k: usize, depth: usize) {
    let pad = "  ".repeat(depth);
    let inputs: Vec<String> = b.inputs.iter().map(named_type).collect();
    let outputs: Vec<String> = b.outputs.iter().map(|o| format!("%{o}")).collect();
    let _ = writeln!(
        out,
        "{pad}block {k}({}) -> {}",
        inputs.join(", "),
        outputs.join(", ")
    );
    for (i, op) in b.operations.iter().enumerate() {
        let _ = write!(out, "{pad}  {i:03} ");
        op_line(out, op);
        out.push('\n');
        for (k2, b2) in op.blocks.iter().enumerate() {
            nested(out, b2, k2, depth + 1);
        }
    }
}
