//! `code.txt`: a method's instructions, one per line.
//!
//! An argument names a value by index, so one value may be printed once per
//! use. Literals are therefore bounded: lists show their first
//! `LIST_ITEMS` items and a count, strings their first `STRING_BYTES`
//! bytes, names [`NAME_LIMIT`] bytes. The text then grows with the number of
//! arguments in the file, not with arguments × value sizes.
//!
//! A tensor's type follows its first appearance on each line
//! (`%5:f32[64,3,3,3]`); arguments an operator writes show their schema
//! name (`out=%9`), return values follow `->`, and a plan's stack traces
//! precede their instructions as `#` lines.

use std::collections::HashSet;
use std::fmt::Write;

use crate::format::{NAME_LIMIT, clip, operator_name, strings};
use crate::meta::schemas;
use crate::schema::{ScalarType, program as fb};

/// Items of a list literal shown before `…`.
pub(super) const LIST_ITEMS: usize = 32;
/// Bytes of a string literal shown before `…`.
const STRING_BYTES: usize = 64;
/// Stack frames shown per instruction, innermost last.
const FRAMES: usize = 8;
/// Bytes of stack trace comments per method; one file may point every
/// instruction at the same long trace, so the comments stop here.
const TRACE_BYTES: usize = 1 << 20;

/// Renders every chain of `plan`.
pub fn render(plan: fb::ExecutionPlan<'_>) -> String {
    render_with_dirs(plan, &[])
}

/// [`render`], with `delegate_dirs` naming the directory of each delegate.
pub fn render_with_dirs(plan: fb::ExecutionPlan<'_>, delegate_dirs: &[String]) -> String {
    let mut out = String::new();
    let shown = strings::plan_name(plan).unwrap_or_default().show();
    let name = clip(&shown, NAME_LIMIT);
    let nvalues = plan.values().map_or(0, |v| v.len());
    let noperators = plan.operators().map_or(0, |v| v.len());
    let ids = |v: Option<flatbuffers::Vector<'_, i32>>| -> String {
        let list: Vec<String> = v.iter().flatten().map(|i| format!("%{i}")).collect();
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(" ")
        }
    };
    let inputs = ids(plan.inputs());
    let outputs = ids(plan.outputs());
    let mut traced = 0;
    for (c, chain) in plan.chains().iter().flatten().enumerate() {
        let _ = writeln!(
            out,
            "# {name}: {nvalues} values, inputs {inputs}, outputs {outputs}, {noperators} operators, chain {c}"
        );
        let traces = chain.stacktrace();
        for (i, ins) in chain.instructions().iter().flatten().enumerate() {
            let frames = traces
                .filter(|t| i < t.len())
                .and_then(|t| t.get(i).items());
            if let Some(frames) = frames.filter(|_| traced <= TRACE_BYTES) {
                let start = out.len();
                let skip = frames.len().saturating_sub(FRAMES);
                for f in frames.iter().skip(skip) {
                    let _ = writeln!(
                        out,
                        "  # {}:{} in {}: {}",
                        one_line(&strings::frame_filename(f).map_or("?".into(), |n| n.show())),
                        f.lineno(),
                        one_line(&strings::frame_name(f).map_or("?".into(), |n| n.show())),
                        one_line(strings::frame_context(f).unwrap_or_default().show().trim())
                    );
                }
                traced += out.len() - start;
                if traced > TRACE_BYTES {
                    out.push_str("  # (stack traces of later instructions are left out)\n");
                }
            }
            let _ = writeln!(out, "{i}: {}", instruction(plan, ins, delegate_dirs));
        }
    }
    out
}

/// A recorded string clipped to [`NAME_LIMIT`], on one line.
fn one_line(s: &str) -> String {
    clip(s, NAME_LIMIT).replace(['\n', '\r'], " ")
}

fn instruction(plan: fb::ExecutionPlan<'_>, ins: fb::Instruction<'_>, dirs: &[String]) -> String {
    let mut seen = HashSet::new();
    if let Some(k) = ins.instr_args_as_kernel_call() {
        let op = operator_name(plan, k.op_index());
        let schema = op.as_deref().and_then(schemas::lookup);
        let mut s = op.unwrap_or_else(|| format!("<operator {} out of range>", k.op_index()));
        let mut returns = Vec::new();
        for (pos, a) in k.args().iter().flatten().enumerate() {
            let text = argument(plan, a, &mut seen);
            match schema.and_then(|sc| sc.arg(pos)) {
                Some(info) if info.name.starts_with("return") && info.writes => returns.push(text),
                Some(info) if info.writes => {
                    let _ = write!(s, " {}={text}", info.name);
                }
                _ => {
                    s.push(' ');
                    s.push_str(&text);
                }
            }
        }
        if !returns.is_empty() {
            let _ = write!(s, " -> {}", returns.join(" "));
        }
        s
    } else if let Some(d) = ins.instr_args_as_delegate_call() {
        let id = usize::try_from(d.delegate_index())
            .ok()
            .and_then(|i| {
                plan.delegates()
                    .filter(|ds| i < ds.len())
                    .map(|ds| ds.get(i))
            })
            .map_or("<out of range>".into(), |del| {
                clip(
                    &strings::backend_id(del).unwrap_or_default().show(),
                    NAME_LIMIT,
                )
                .into_owned()
            });
        let dir = usize::try_from(d.delegate_index())
            .ok()
            .and_then(|i| dirs.get(i))
            .map_or(String::new(), |dir| format!(" (delegates/{dir})"));
        let mut s = format!("delegate {} {id}{dir}", d.delegate_index());
        for a in d.args().iter().flatten() {
            s.push(' ');
            s.push_str(&argument(plan, a, &mut seen));
        }
        s
    } else if let Some(m) = ins.instr_args_as_move_call() {
        format!("move %{} -> %{}", m.move_from(), m.move_to())
    } else if let Some(j) = ins.instr_args_as_jump_false_call() {
        format!(
            "jump_false %{} -> {}",
            j.cond_value_index(),
            j.destination_instruction()
        )
    } else if let Some(f) = ins.instr_args_as_free_call() {
        format!("free %{}", f.value_index())
    } else {
        format!("<instruction type {}>", ins.instr_args_type().0)
    }
}

/// `[a, b, c]` for a list of `n` items, or the first items and `… N items]`
/// for a long one.
pub(super) fn list(n: usize, items: impl Iterator<Item = String>) -> String {
    let shown: Vec<String> = items.take(LIST_ITEMS).collect();
    if n > LIST_ITEMS {
        format!("[{}, … {n} items]", shown.join(", "))
    } else {
        format!("[{}]", shown.join(", "))
    }
}

/// A kernel argument: `%id` for tensors (with the type the first time on
/// a line), `%id=[%a, %b]` for tensor lists, the literal for everything
/// else.
fn argument(plan: fb::ExecutionPlan<'_>, id: i32, seen: &mut HashSet<i64>) -> String {
    let value = usize::try_from(id)
        .ok()
        .and_then(|i| plan.values().filter(|vs| i < vs.len()).map(|vs| vs.get(i)));
    let Some(v) = value else {
        return format!("%{id}<out of range>");
    };
    if let Some(x) = v.val_as_int() {
        x.int_val().to_string()
    } else if let Some(x) = v.val_as_double() {
        format!("{:?}", x.double_val())
    } else if let Some(x) = v.val_as_bool() {
        x.bool_val().to_string()
    } else if let Some(x) = v.val_as_string() {
        let shown = strings::string_val(x).unwrap_or_default().show();
        let text = clip(&shown, STRING_BYTES);
        serde_json::Value::String(text.into_owned()).to_string()
    } else if v.val_as_null().is_some() {
        "None".to_owned()
    } else if let Some(x) = v.val_as_int_list() {
        // IntList items are value indices (so that they may be symbolic);
        // show each Int's literal.
        let items = x.items();
        let literals = items
            .iter()
            .flatten()
            .map(|i| int_literal(plan, i).unwrap_or_else(|| format!("%{i}")));
        list(items.map_or(0, |v| v.len()), literals)
    } else if let Some(x) = v.val_as_double_list() {
        list(
            x.items().map_or(0, |v| v.len()),
            x.items().iter().flatten().map(|d| format!("{d:?}")),
        )
    } else if let Some(x) = v.val_as_bool_list() {
        list(
            x.items().map_or(0, |v| v.len()),
            x.items().iter().flatten().map(|b| b.to_string()),
        )
    } else if let Some(t) = v.val_as_tensor() {
        tensor(i64::from(id), t, seen)
    } else if let Some(x) = v.val_as_tensor_list() {
        let items = x.items();
        let shown = items
            .iter()
            .flatten()
            .map(|i| item(plan, i64::from(i), seen));
        format!("%{id}={}", list(items.map_or(0, |v| v.len()), shown))
    } else if let Some(x) = v.val_as_optional_tensor_list() {
        let items = x.items();
        let shown = items.iter().flatten().map(|i| match i {
            -1 => "None".to_owned(),
            i => item(plan, i64::from(i), seen),
        });
        format!("%{id}={}", list(items.map_or(0, |v| v.len()), shown))
    } else {
        format!("%{id}")
    }
}

/// A tensor list item.
fn item(plan: fb::ExecutionPlan<'_>, index: i64, seen: &mut HashSet<i64>) -> String {
    let t = usize::try_from(index)
        .ok()
        .and_then(|i| plan.values().filter(|vs| i < vs.len()).map(|vs| vs.get(i)))
        .and_then(|v| v.val_as_tensor());
    match t {
        Some(t) => tensor(index, t, seen),
        None => format!("%{index}"),
    }
}

/// `%id:f32[2,3]` the first time `id` is seen, `%id` after.
pub(super) fn tensor(id: i64, t: fb::Tensor<'_>, seen: &mut HashSet<i64>) -> String {
    if !seen.insert(id) {
        return format!("%{id}");
    }
    let sizes = t.sizes();
    let dims = list(
        sizes.map_or(0, |v| v.len()),
        sizes.iter().flatten().map(|d| d.to_string()),
    );
    format!(
        "%{id}:{}{}",
        dtype(t.scalar_type()),
        dims.replace(", ", ",")
    )
}

/// Short element type names, as PyTorch users write them.
fn dtype(t: ScalarType) -> String {
    let short = match t {
        ScalarType::BYTE => "u8",
        ScalarType::CHAR => "i8",
        ScalarType::SHORT => "i16",
        ScalarType::INT => "i32",
        ScalarType::LONG => "i64",
        ScalarType::HALF => "f16",
        ScalarType::FLOAT => "f32",
        ScalarType::DOUBLE => "f64",
        ScalarType::BOOL => "bool",
        ScalarType::BFLOAT16 => "bf16",
        ScalarType::UINT16 => "u16",
        ScalarType::UINT32 => "u32",
        ScalarType::UINT64 => "u64",
        other => return crate::format::scalar::name(other).to_lowercase(),
    };
    short.to_owned()
}

/// The literal of value `index` when it is an Int.
fn int_literal(plan: fb::ExecutionPlan<'_>, index: i64) -> Option<String> {
    let i = usize::try_from(index).ok()?;
    let values = plan.values().filter(|vs| i < vs.len())?;
    values.get(i).val_as_int().map(|x| x.int_val().to_string())
}
