//! Operators the runtime has no kernel for, and the kernel keys each
//! instruction calls them with; operators only a kernel library besides
//! the portable one has.

use std::collections::BTreeMap;

use super::findings::{Finding, Kind, OPERATOR_MISSING, finding};
use super::spec::RuntimeSpec;
use crate::format::operator_name;
use crate::meta::oplist;
use crate::schema::program as fb;

/// The kernel calls of `plan`, each as (instruction index in its chain,
/// the call).
fn kernel_calls<'a>(plan: fb::ExecutionPlan<'a>) -> Vec<(usize, fb::KernelCall<'a>)> {
    plan.chains()
        .iter()
        .flatten()
        .flat_map(|c| c.instructions().into_iter().flatten().enumerate())
        .filter_map(|(i, ins)| Some((i, ins.instr_args_as_kernel_call()?)))
        .collect()
}

/// Operators without a kernel for a call: one finding per operator, and
/// the runtime's log lines, one per instruction as it logs them.
pub(super) fn operators(
    plan: fb::ExecutionPlan<'_>,
    method: &str,
    runtime: &RuntimeSpec,
    spec_name: &str,
    problems: &mut Vec<Finding>,
    log: &mut Vec<String>,
) {
    let mut by_op: BTreeMap<usize, (Finding, bool)> = BTreeMap::new();
    let mut missing_instructions = 0;
    for (i, k) in kernel_calls(plan) {
        let Ok(index) = usize::try_from(k.op_index()) else {
            continue;
        };
        let Some(op) = operator_name(plan, k.op_index()) else {
            continue;
        };
        let key = oplist::kernel_key(plan, k);
        if runtime.has_kernel(&op, &key) {
            continue;
        }
        let known = runtime.kernels(&op).is_some();
        missing_instructions += 1;
        let line = format!("Missing operator: [{index}] {op}");
        if known {
            log.push(format!("kernel '{op}' not found."));
        }
        log.push(line.clone());
        let (f, _) = by_op.entry(index).or_insert_with(|| {
            let why = if known {
                format!("{spec_name} has kernels for {op}, none for the kernel key {key}")
            } else {
                format!("{spec_name} has no kernel for it")
            };
            let mut f = finding(
                Some(method),
                if known {
                    Kind::MissingKernel
                } else {
                    Kind::MissingOperator
                },
                op.clone(),
                why,
            );
            f.operator = Some(index);
            f.log.push(line);
            f.error = Some(OPERATOR_MISSING);
            (f, known)
        });
        f.instructions.push(i);
    }
    if missing_instructions > 0 {
        log.push(format!(
            "There are {missing_instructions} instructions don't have corresponding \
             operator registered. See logs for details"
        ));
    }
    problems.extend(by_op.into_values().map(|(f, _)| f));
}

/// Operators the runtime has that the portable kernel library lacks.
pub(super) fn non_portable(
    plan: fb::ExecutionPlan<'_>,
    method: &str,
    runtime: &RuntimeSpec,
) -> Vec<Finding> {
    let n = plan.operators().map_or(0, |o| o.len());
    (0..n)
        .filter_map(|i| {
            let op = operator_name(plan, i as i32)?;
            (runtime.kernels(&op).is_some() && !crate::report::summary::coverage::in_portable(&op))
                .then(|| {
                    let mut f = finding(
                        Some(method),
                        Kind::NonPortableOperator,
                        op,
                        "not in the portable kernel library: the runtime must link the \
                     kernel library that has it (optimized, quantized or custom)"
                            .to_owned(),
                    );
                    f.operator = Some(i);
                    f
                })
        })
        .collect()
}
