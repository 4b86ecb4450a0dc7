//! `code.txt`: a method's instructions, one per line.
//!
//! An argument names a value by index, so one value may be printed once per
//! use. Literals are therefore bounded: lists show their first
//! `LIST_ITEMS` items and a count, strings their first `STRING_BYTES`
//! bytes, names [`NAME_LIMIT`] bytes. The text then grows with the number of
//! arguments in the file, not with arguments × value sizes.

use std::fmt::Write;

use crate::format::{NAME_LIMIT, clip, operator_name, text};
use crate::schema::program as fb;

/// Items of a list literal shown before `…`.
const LIST_ITEMS: usize = 32;
/// Bytes of a string literal shown before `…`.
const STRING_BYTES: usize = 64;

/// Renders every chain of `plan`.
pub fn render(plan: fb::ExecutionPlan<'_>) -> String {
    let mut out = String::new();
    let shown = text::plan_name(plan).unwrap_or_default().show();
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
    for (c, chain) in plan.chains().iter().flatten().enumerate() {
        let _ = writeln!(
            out,
            "# {name}: {nvalues} values, inputs {inputs}, outputs {outputs}, {noperators} operators, chain {c}"
        );
        for (i, ins) in chain.instructions().iter().flatten().enumerate() {
            let _ = writeln!(out, "{i}: {}", instruction(plan, ins));
        }
    }
    out
}

fn instruction(plan: fb::ExecutionPlan<'_>, ins: fb::Instruction<'_>) -> String {
    if let Some(k) = ins.instr_args_as_kernel_call() {
        let mut s = operator_name(plan, k.op_index())
            .unwrap_or_else(|| format!("<operator {} out of range>", k.op_index()));
        for a in k.args().iter().flatten() {
            s.push(' ');
            s.push_str(&argument(plan, a));
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
                    &text::backend_id(del).unwrap_or_default().show(),
                    NAME_LIMIT,
                )
                .into_owned()
            });
        let mut s = format!("delegate {} {id}", d.delegate_index());
        for a in d.args().iter().flatten() {
            let _ = write!(s, " %{a}");
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
fn list(n: usize, items: impl Iterator<Item = String>) -> String {
    let shown: Vec<String> = items.take(LIST_ITEMS).collect();
    if n > LIST_ITEMS {
        format!("[{}, … {n} items]", shown.join(", "))
    } else {
        format!("[{}]", shown.join(", "))
    }
}

/// A kernel argument: `%id` for tensors and tensor lists, the literal for
/// everything else.
fn argument(plan: fb::ExecutionPlan<'_>, id: i32) -> String {
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
        let shown = text::string_val(x).unwrap_or_default().show();
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
    } else {
        format!("%{id}")
    }
}

/// The literal of value `index` when it is an Int.
fn int_literal(plan: fb::ExecutionPlan<'_>, index: i64) -> Option<String> {
    let i = usize::try_from(index).ok()?;
    let values = plan.values().filter(|vs| i < vs.len())?;
    values.get(i).val_as_int().map(|x| x.int_val().to_string())
}
