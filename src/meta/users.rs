//! Who uses each value of a plan: every kernel argument and delegate call
//! argument, by chain and instruction.

use serde::Serialize;

use super::schemas;
use crate::format::operator_name;
use crate::schema::program as fb;

/// One use of a value: an argument of a kernel call or a delegate call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Use {
    /// Chain index.
    pub chain: usize,
    /// Instruction index in the chain.
    pub instruction: usize,
    /// Kernel calls: the operator (`aten::convolution.out`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// Delegate calls: the index into `ExecutionPlan.delegates`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegate: Option<usize>,
    /// Argument position in the call.
    pub arg: usize,
    /// Position inside a tensor list argument.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
    /// The schema's name for the argument, when the operator is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arg_name: Option<String>,
    /// The operator writes the argument (an out argument or a return).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub writes: bool,
}

impl Use {
    /// A short readable name of the use: `convolution.weight`,
    /// `update_cache.arg1`, `delegate-0.arg2`.
    pub fn label(&self) -> String {
        let base = match (&self.op, self.delegate) {
            (Some(op), _) => {
                let base = op.rsplit("::").next().unwrap_or(op);
                base.split('.').next().unwrap_or(base).to_owned()
            }
            (None, Some(d)) => format!("delegate-{d}"),
            (None, None) => "call".to_owned(),
        };
        match &self.arg_name {
            Some(n) => format!("{base}.{n}"),
            None => format!("{base}.arg{}", self.arg),
        }
    }
}

/// What is called: operator name with its schema, or a delegate index.
enum Callee {
    Kernel(String, Option<schemas::OpSchema>),
    Delegate(usize),
}

impl Callee {
    fn at(&self, chain: usize, instruction: usize, arg: usize, item: Option<usize>) -> Use {
        let mut u = Use {
            chain,
            instruction,
            op: None,
            delegate: None,
            arg,
            item,
            arg_name: None,
            writes: false,
        };
        match self {
            Callee::Kernel(op, schema) => {
                let info = schema.and_then(|s| s.arg(arg));
                u.op = Some(op.clone());
                u.writes = info.as_ref().is_some_and(|i| i.writes);
                u.arg_name = info.map(|i| i.name);
            }
            Callee::Delegate(d) => u.delegate = Some(*d),
        }
        u
    }
}

/// The uses of every value of `plan`, by value index, in instruction order.
pub fn users(plan: fb::ExecutionPlan<'_>) -> Vec<Vec<Use>> {
    let values = plan.values();
    let nvalues = values.map_or(0, |v| v.len());
    let mut out: Vec<Vec<Use>> = vec![Vec::new(); nvalues];
    let value = |i: i64| {
        let i = usize::try_from(i).ok().filter(|&i| i < nvalues)?;
        values.map(|v| (i, v.get(i)))
    };
    for (c, chain) in plan.chains().iter().flatten().enumerate() {
        for (n, ins) in chain.instructions().iter().flatten().enumerate() {
            let (args, callee): (Vec<i32>, Callee) =
                if let Some(k) = ins.instr_args_as_kernel_call() {
                    let op = operator_name(plan, k.op_index())
                        .unwrap_or_else(|| format!("<operator {}>", k.op_index()));
                    let schema = schemas::lookup(&op);
                    (
                        k.args().iter().flatten().collect(),
                        Callee::Kernel(op, schema),
                    )
                } else if let Some(d) = ins.instr_args_as_delegate_call() {
                    let delegate = usize::try_from(d.delegate_index()).unwrap_or(usize::MAX);
                    (
                        d.args().iter().flatten().collect(),
                        Callee::Delegate(delegate),
                    )
                } else {
                    continue;
                };
            for (pos, &a) in args.iter().enumerate() {
                let Some((i, v)) = value(i64::from(a)) else {
                    continue;
                };
                let mut add = |index: usize, item: Option<usize>| {
                    out[index].push(callee.at(c, n, pos, item));
                };
                add(i, None);
                let items: Vec<i64> = if let Some(l) = v.val_as_tensor_list() {
                    l.items().iter().flatten().map(i64::from).collect()
                } else if let Some(l) = v.val_as_optional_tensor_list() {
                    l.items().iter().flatten().map(i64::from).collect()
                } else {
                    Vec::new()
                };
                for (k, item) in items.into_iter().enumerate() {
                    if let Some((j, _)) = value(item) {
                        add(j, Some(k));
                    }
                }
            }
        }
    }
    out
}
