//! `code.txt`: a method's instructions, one per line.

use std::fmt::Write;

use crate::schema::program as fb;

/// Renders every chain of `plan`.
pub fn render(plan: fb::ExecutionPlan<'_>) -> String {
    let mut out = String::new();
    let name = plan.name().unwrap_or("");
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
        let op = usize::try_from(k.op_index()).ok().and_then(|i| {
            plan.operators()
                .filter(|ops| i < ops.len())
                .map(|ops| ops.get(i))
        });
        let mut s = match op {
            Some(op) => match op.overload().unwrap_or("") {
                "" => op.name().unwrap_or("").to_owned(),
                overload => format!("{}.{overload}", op.name().unwrap_or("")),
            },
            None => format!("<operator {} out of range>", k.op_index()),
        };
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
            .map_or("<out of range>", |del| del.id().unwrap_or(""));
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

/// A kernel argument: `%id` for tensors and tensor lists, the literal for
/// everything else.
fn argument(plan: fb::ExecutionPlan<'_>, id: i32) -> String {
    let value = usize::try_from(id)
        .ok()
        .and_then(|i| plan.values().filter(|vs| i < vs.len()).map(|vs| vs.get(i)));
    let Some(v) = value else {
        return format!("%{id}<out of range>");
    };
    fn list<T: std::fmt::Debug>(items: impl Iterator<Item = T>) -> String {
        let parts: Vec<String> = items.map(|x| format!("{x:?}")).collect();
        format!("[{}]", parts.join(", "))
    }
    if let Some(x) = v.val_as_int() {
        x.int_val().to_string()
    } else if let Some(x) = v.val_as_double() {
        format!("{:?}", x.double_val())
    } else if let Some(x) = v.val_as_bool() {
        x.bool_val().to_string()
    } else if let Some(x) = v.val_as_string() {
        serde_json::to_string(x.string_val().unwrap_or("")).unwrap_or_default()
    } else if v.val_as_null().is_some() {
        "None".to_owned()
    } else if let Some(x) = v.val_as_int_list() {
        // IntList items are value indices (so that they may be symbolic);
        // show each Int's literal.
        let items: Vec<String> = x
            .items()
            .iter()
            .flatten()
            .map(|i| int_literal(plan, i).unwrap_or_else(|| format!("%{i}")))
            .collect();
        format!("[{}]", items.join(", "))
    } else if let Some(x) = v.val_as_double_list() {
        list(x.items().iter().flatten())
    } else if let Some(x) = v.val_as_bool_list() {
        list(x.items().iter().flatten())
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
