//! The operators a runtime must provide for a program, as ExecuTorch's
//! `gen_oplist` finds them: every entry of every plan's operator table,
//! and for each operator called, the kernel keys (element type and dim
//! order of each tensor argument) its calls need.

use std::collections::{BTreeMap, BTreeSet};

use crate::format::operator_name;
use crate::schema::program as fb;

/// Operators and kernel keys of a program.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OpList {
    /// `name.overload` of every operator table entry of every plan.
    pub operators: BTreeSet<String>,
    /// Kernel keys (`v1/6;0,1|6;0,1`) of the calls of each operator.
    pub kernel_keys: BTreeMap<String, BTreeSet<String>>,
}

/// One line of `ops.txt`: an operator or a delegate, where it runs and
/// how often a method calls it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calls {
    /// `aten::addmm.out`, or the backend id of a delegate.
    pub name: String,
    /// The delegate's index, for delegate calls.
    pub delegate: Option<usize>,
    /// Instructions that call it.
    pub calls: u64,
}

/// The operators of `plans`.
pub fn oplist<'a>(plans: impl IntoIterator<Item = fb::ExecutionPlan<'a>>) -> OpList {
    let mut list = OpList::default();
    for plan in plans {
        let nops = plan.operators().map_or(0, |o| o.len());
        for i in 0..nops {
            list.operators
                .extend(operator_name(plan, i as i32).filter(|n| !n.is_empty()));
        }
        for ins in plan
            .chains()
            .iter()
            .flatten()
            .flat_map(|c| c.instructions().into_iter().flatten())
        {
            let Some(k) = ins.instr_args_as_kernel_call() else {
                continue;
            };
            let Some(op) = operator_name(plan, k.op_index()) else {
                continue;
            };
            let key = kernel_key(plan, k);
            list.kernel_keys.entry(op).or_default().insert(key);
        }
    }
    list
}

/// The kernel key of a call: `v1/` and `dtype;dim,order` of each tensor
/// argument joined by `|` (a tensor list by its first tensor); `v1` when
/// there is none.
pub fn kernel_key(plan: fb::ExecutionPlan<'_>, k: fb::KernelCall<'_>) -> String {
    let tensor = |i: i64| super::io::value(plan, i).and_then(|v| v.val_as_tensor());
    let mut parts = Vec::new();
    for a in k.args().iter().flatten() {
        let Some(v) = super::io::value(plan, i64::from(a)) else {
            continue;
        };
        let t = if let Some(t) = v.val_as_tensor() {
            Some(t)
        } else if let Some(l) = v.val_as_tensor_list() {
            l.items()
                .and_then(|items| items.iter().next())
                .and_then(|i| tensor(i64::from(i)))
        } else if let Some(l) = v.val_as_optional_tensor_list() {
            l.items()
                .iter()
                .flatten()
                .filter(|&i| i != -1)
                .find_map(|i| tensor(i64::from(i)))
        } else {
            continue;
        };
        if let Some(t) = t {
            let order: Vec<String> = t
                .dim_order()
                .iter()
                .flatten()
                .map(|d| d.to_string())
                .collect();
            parts.push(format!("{};{}", t.scalar_type().0, order.join(",")));
        }
    }
    if parts.is_empty() {
        "v1".to_owned()
    } else {
        format!("v1/{}", parts.join("|"))
    }
}

/// What `plan` calls, operators first (in table order, uncalled ones with
/// 0) and then delegates (in index order).
pub fn calls(plan: fb::ExecutionPlan<'_>) -> Vec<Calls> {
    let nops = plan.operators().map_or(0, |o| o.len());
    let ndel = plan.delegates().map_or(0, |d| d.len());
    let mut op_calls = vec![0u64; nops];
    let mut del_calls = vec![0u64; ndel];
    for ins in plan
        .chains()
        .iter()
        .flatten()
        .flat_map(|c| c.instructions().into_iter().flatten())
    {
        if let Some(k) = ins.instr_args_as_kernel_call() {
            if let Some(c) = usize::try_from(k.op_index())
                .ok()
                .and_then(|i| op_calls.get_mut(i))
            {
                *c += 1;
            }
        } else if let Some(d) = ins.instr_args_as_delegate_call()
            && let Some(c) = usize::try_from(d.delegate_index())
                .ok()
                .and_then(|i| del_calls.get_mut(i))
        {
            *c += 1;
        }
    }
    let ops = op_calls.into_iter().enumerate().map(|(i, calls)| Calls {
        name: operator_name(plan, i as i32).unwrap_or_default(),
        delegate: None,
        calls,
    });
    let delegates = plan.delegates().into_iter().flatten().zip(del_calls);
    let delegates = delegates.enumerate().map(|(i, (d, calls))| Calls {
        name: crate::format::clip(
            &crate::format::strings::backend_id(d)
                .unwrap_or_default()
                .show(),
            crate::format::NAME_LIMIT,
        )
        .into_owned(),
        delegate: Some(i),
        calls,
    });
    ops.chain(delegates).collect()
}
