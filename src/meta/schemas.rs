//! Argument names of PyTorch's aten operators, from `op_schemas.tsv`
//! (written by `scripts/gen-op-schemas.py` from PyTorch's
//! `native_functions.yaml`).
//!
//! ExecuTorch passes a kernel its schema arguments in order and then its
//! return values, so a position past the arguments names a return.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("op_schemas.tsv");

/// One operator's schema, as far as uses need it.
#[derive(Debug, Clone, Copy)]
pub struct OpSchema {
    /// `name!` for arguments the operator writes, comma-separated.
    args: &'static str,
    /// How many values the operator returns.
    returns: usize,
}

/// What one argument position of a call is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgInfo {
    /// The schema's name (`weight`), or `return`/`return<i>` for a
    /// position past the arguments.
    pub name: Cow<'static, str>,
    /// The operator writes it: an out argument or a return value.
    pub writes: bool,
}

fn table() -> &'static HashMap<&'static str, OpSchema> {
    static MAP: OnceLock<HashMap<&'static str, OpSchema>> = OnceLock::new();
    MAP.get_or_init(|| {
        TABLE
            .lines()
            .filter_map(|line| {
                let mut f = line.split('\t');
                let (name, args, returns) = (f.next()?, f.next()?, f.next()?);
                let returns = returns.parse().ok()?;
                Some((name, OpSchema { args, returns }))
            })
            .collect()
    })
}

/// The schema of `op` (`aten::convolution.out`), if the table has it.
pub fn lookup(op: &str) -> Option<OpSchema> {
    table().get(op).copied()
}

/// How many operators the table knows.
pub fn known() -> usize {
    table().len()
}

impl OpSchema {
    /// The argument at call position `pos`, or `None` past the returns.
    pub fn arg(&self, pos: usize) -> Option<ArgInfo> {
        let args = self.args.split(',').filter(|a| !a.is_empty());
        let mut count = 0;
        for a in args {
            if count == pos {
                let name = a.strip_suffix('!');
                return Some(ArgInfo {
                    name: Cow::Borrowed(name.unwrap_or(a)),
                    writes: name.is_some(),
                });
            }
            count += 1;
        }
        let r = pos - count;
        (r < self.returns).then(|| ArgInfo {
            name: if self.returns == 1 {
                Cow::Borrowed("return")
            } else {
                Cow::Owned(format!("return{r}"))
            },
            writes: true,
        })
    }
}

/// The argument at position `pos` of a call to `op`, when the table knows
/// the operator.
pub fn arg(op: &str, pos: usize) -> Option<ArgInfo> {
    lookup(op).and_then(|s| s.arg(pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_arguments_outs_and_returns() {
        let at = |op, pos| arg(op, pos).map(|a| (a.name.into_owned(), a.writes));
        assert_eq!(
            at("aten::convolution.out", 1),
            Some(("weight".into(), false))
        );
        assert_eq!(at("aten::addmm.out", 5), Some(("out".into(), true)));
        assert_eq!(at("aten::addmm.out", 6), Some(("return".into(), true)));
        assert_eq!(at("aten::addmm.out", 7), None);
        assert_eq!(
            at("aten::max.dim_max", 4),
            Some(("max_values".into(), true))
        );
        assert_eq!(at("aten::max.dim_max", 6), Some(("return1".into(), true)));
        assert_eq!(at("aten::relu.out", 0), Some(("self".into(), false)));
        assert_eq!(at("llama::update_cache.out", 0), None);
        assert!(known() > 2000, "{}", known());
    }
}
