//! Who uses each tensor of a plan: every kernel argument and delegate call
//! argument that names it, directly or as an item of a tensor list.
//!
//! Uses are stored compactly (a file can hold millions of calls); names
//! are looked up when a use is shown.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

use super::schemas::{self, OpSchema};
use crate::format::operator_name;
use crate::schema::program as fb;

/// What an instruction calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callee {
    /// A kernel call: index into [`Users::ops`].
    Op(u32),
    /// A delegate call: index into `ExecutionPlan.delegates`.
    Delegate(u32),
}

/// One use of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Use {
    /// Chain index.
    pub chain: u32,
    /// Instruction index in the chain.
    pub instruction: u32,
    /// What is called.
    pub callee: Callee,
    /// Argument position in the call.
    pub arg: u32,
    /// Position inside a tensor list argument.
    pub item: Option<u32>,
}

/// A use as `index.json` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UseView<'a> {
    /// Chain index.
    pub chain: u32,
    /// Instruction index in the chain.
    pub instruction: u32,
    /// Kernel calls: `aten::convolution.out`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<&'a str>,
    /// Delegate calls: the delegate's index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegate: Option<u32>,
    /// Argument position in the call.
    pub arg: u32,
    /// Position inside a tensor list argument.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<u32>,
    /// The schema's name of the argument, when the operator is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arg_name: Option<Cow<'static, str>>,
    /// The operator writes the argument (an out argument or a return).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub writes: bool,
}

/// The uses of every tensor of a plan.
#[derive(Debug, Default)]
pub struct Users {
    /// `ExecutionPlan.operators` by name, with their schemas.
    ops: Vec<(String, Option<OpSchema>)>,
    /// Only values with uses: most of a large plan's values have none.
    by_value: HashMap<usize, Vec<Use>>,
}

impl Users {
    /// The uses of value `value`, in instruction order.
    pub fn of(&self, value: usize) -> &[Use] {
        self.by_value.get(&value).map_or(&[], Vec::as_slice)
    }

    /// How a use is shown.
    pub fn view(&self, u: &Use) -> UseView<'_> {
        let mut v = UseView {
            chain: u.chain,
            instruction: u.instruction,
            op: None,
            delegate: None,
            arg: u.arg,
            item: u.item,
            arg_name: None,
            writes: false,
        };
        match u.callee {
            Callee::Op(i) => {
                let (name, schema) = self
                    .ops
                    .get(i as usize)
                    .map_or(("<operator out of range>", None), |(n, s)| (n.as_str(), *s));
                let info = schema.and_then(|s| s.arg(u.arg as usize));
                v.op = Some(name);
                v.writes = info.as_ref().is_some_and(|i| i.writes);
                v.arg_name = info.map(|i| i.name);
            }
            Callee::Delegate(d) => v.delegate = Some(d),
        }
        v
    }

    /// A short readable name of a use: `convolution.weight`,
    /// `update_cache.arg1`, `delegate-0.arg2`.
    pub fn label(&self, u: &Use) -> String {
        let v = self.view(u);
        let base = match (v.op, v.delegate) {
            (Some(op), _) => {
                let base = op.rsplit("::").next().unwrap_or(op);
                base.split('.').next().unwrap_or(base).to_owned()
            }
            (None, d) => format!("delegate-{}", d.unwrap_or(0)),
        };
        match v.arg_name {
            Some(n) => format!("{base}.{n}"),
            None => format!("{base}.arg{}", u.arg),
        }
    }
}

/// The uses of every tensor of `plan`.
pub fn users(plan: fb::ExecutionPlan<'_>) -> Users {
    let values = plan.values();
    let nvalues = values.map_or(0, |v| v.len());
    let nops = plan.operators().map_or(0, |o| o.len());
    let ops = (0..nops)
        .map(|i| {
            let name = operator_name(plan, i as i32).unwrap_or_default();
            let schema = schemas::lookup(&name);
            (name, schema)
        })
        .collect();
    let mut by_value: HashMap<usize, Vec<Use>> = HashMap::new();
    let value = |i: i64| {
        let i = usize::try_from(i).ok().filter(|&i| i < nvalues)?;
        values.map(|v| (i, v.get(i)))
    };
    for (c, chain) in plan.chains().iter().flatten().enumerate() {
        for (n, ins) in chain.instructions().iter().flatten().enumerate() {
            let (args, callee) = if let Some(k) = ins.instr_args_as_kernel_call() {
                (k.args(), Callee::Op(k.op_index() as u32))
            } else if let Some(d) = ins.instr_args_as_delegate_call() {
                (d.args(), Callee::Delegate(d.delegate_index() as u32))
            } else {
                continue;
            };
            for (pos, a) in args.iter().flatten().enumerate() {
                let Some((i, v)) = value(i64::from(a)) else {
                    continue;
                };
                let mut add = |index: usize, item: Option<usize>| {
                    by_value.entry(index).or_default().push(Use {
                        chain: c as u32,
                        instruction: n as u32,
                        callee,
                        arg: pos as u32,
                        item: item.map(|k| k as u32),
                    });
                };
                let items: Vec<i64> = if v.val_as_tensor().is_some() {
                    add(i, None);
                    continue;
                } else if let Some(l) = v.val_as_tensor_list() {
                    l.items().iter().flatten().map(i64::from).collect()
                } else if let Some(l) = v.val_as_optional_tensor_list() {
                    l.items().iter().flatten().map(i64::from).collect()
                } else {
                    continue;
                };
                for (k, item) in items.into_iter().enumerate() {
                    if let Some((j, w)) = value(item)
                        && w.val_as_tensor().is_some()
                    {
                        add(j, Some(k));
                    }
                }
            }
        }
    }
    Users { ops, by_value }
}
