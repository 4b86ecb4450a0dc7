//! Training programs: the names of the parameters and gradients a method
//! returns.
//!
//! ExecuTorch's training module reads three constant methods for a method
//! `<m>`: `__et_training_fqn_<m>` returns the parameters' fully qualified
//! names as strings; `__et_training_parameters_index_<m>` and
//! `__et_training_gradients_index_<m>` return the positions in `<m>`'s
//! outputs where the parameters and their gradients start, in that order.

use serde::Serialize;

use super::io::value;
use crate::format::strings;
use crate::schema::program as fb;

/// What an output of a training method is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A parameter.
    Parameter,
    /// The gradient of a parameter.
    Gradient,
}

/// One named output of a training method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrainingName {
    /// Parameter or gradient.
    pub role: Role,
    /// The parameter's fully qualified name.
    pub fqn: String,
    /// Position among the method's outputs.
    pub output: usize,
    /// Index in the method's `ExecutionPlan.values`.
    pub value: usize,
}

fn plan_named<'a>(plans: &[fb::ExecutionPlan<'a>], name: &[u8]) -> Option<fb::ExecutionPlan<'a>> {
    plans
        .iter()
        .copied()
        .find(|&p| strings::plan_name(p).is_some_and(|n| n.bytes() == name))
}

/// `prefix` followed by the method name's bytes.
fn with_prefix(prefix: &str, method: &[u8]) -> Vec<u8> {
    [prefix.as_bytes(), method].concat()
}

/// Outputs of a constant method, as values.
fn outputs<'a>(plan: fb::ExecutionPlan<'a>) -> Vec<fb::EValue<'a>> {
    plan.outputs()
        .iter()
        .flatten()
        .filter_map(|o| value(plan, i64::from(o)))
        .collect()
}

fn start(plans: &[fb::ExecutionPlan<'_>], name: &[u8]) -> Option<usize> {
    let out = outputs(plan_named(plans, name)?);
    usize::try_from(out.first()?.val_as_int()?.int_val()).ok()
}

/// The named parameters and gradients among the outputs of `method`, or
/// nothing when the program does not describe them. Positions past the
/// method's outputs are left out.
pub fn names(plans: &[fb::ExecutionPlan<'_>], method: &[u8]) -> Vec<TrainingName> {
    let Some(fqn_plan) = plan_named(plans, &with_prefix("__et_training_fqn_", method)) else {
        return Vec::new();
    };
    let Some(plan) = plan_named(plans, method) else {
        return Vec::new();
    };
    let fqns: Vec<String> = outputs(fqn_plan)
        .into_iter()
        .map(|v| {
            v.val_as_string()
                .and_then(strings::string_val)
                .unwrap_or_default()
                .show()
                .into_owned()
        })
        .collect();
    let outs: Vec<i32> = plan.outputs().iter().flatten().collect();
    let mut found = Vec::new();
    let roles = [
        (Role::Parameter, "parameters"),
        (Role::Gradient, "gradients"),
    ];
    for (role, word) in roles {
        let index_method = with_prefix(&format!("__et_training_{word}_index_"), method);
        let Some(first) = start(plans, &index_method) else {
            continue;
        };
        for (i, fqn) in fqns.iter().enumerate() {
            let Some(output) = first.checked_add(i) else {
                break;
            };
            let Some(v) = outs.get(output).and_then(|&v| usize::try_from(v).ok()) else {
                break;
            };
            found.push(TrainingName {
                role,
                fqn: fqn.clone(),
                output,
                value: v,
            });
        }
    }
    found
}
