//! The instructions of a plan, by what they call.

use std::collections::BTreeMap;

use crate::format::operator_name;
use crate::schema::program as fb;

/// What one instruction does, as reports count it.
pub fn describe(plan: fb::ExecutionPlan<'_>, ins: fb::Instruction<'_>) -> String {
    match ins.instr_args_type() {
        fb::InstructionArguments::KernelCall => ins
            .instr_args_as_kernel_call()
            .and_then(|k| operator_name(plan, k.op_index()))
            .unwrap_or_else(|| "<invalid operator>".to_owned()),
        fb::InstructionArguments::DelegateCall => "<delegate call>".to_owned(),
        other => format!(
            "<{}>",
            other.variant_name().unwrap_or("unknown").to_lowercase()
        ),
    }
}

/// How often each operator (`name.overload`), delegate call (`<delegate
/// call>`) or other instruction (`<move>`, `<jumpfalsecall>`, `<freecall>`)
/// occurs in `plan`, over all chains.
pub fn instruction_counts(plan: fb::ExecutionPlan<'_>) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for ins in plan
        .chains()
        .iter()
        .flatten()
        .flat_map(|c| c.instructions().into_iter().flatten())
    {
        *counts.entry(describe(plan, ins)).or_default() += 1;
    }
    counts
}
