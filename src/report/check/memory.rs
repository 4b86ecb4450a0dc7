//! Planned memory arenas over `--memory-limit`.

use super::findings::{Finding, Kind, finding};
use crate::report::summary::text::human;
use crate::schema::program as fb;

/// Planned memory arenas over `limit` bytes. Arena `i` is
/// `non_const_buffer_sizes[i]`, what the runtime's
/// `MethodMeta::memory_planned_buffer_size(i - 1)`
/// (runtime/executor/method_meta.cpp) reports and the runner must
/// allocate; entry 0 is reserved.
pub(super) fn arenas(
    plan: fb::ExecutionPlan<'_>,
    method: &str,
    limit: u64,
    problems: &mut Vec<Finding>,
) {
    let sizes = plan.non_const_buffer_sizes();
    for (i, size) in sizes.iter().flatten().enumerate().skip(1) {
        let size = u64::try_from(size).unwrap_or(u64::MAX);
        if size > limit {
            let mut f = finding(
                Some(method),
                Kind::ArenaOverLimit,
                format!("arena {i}"),
                format!(
                    "planned memory arena {i} is {size} bytes ({}), over the limit of {limit} ({})",
                    human(size),
                    human(limit)
                ),
            );
            f.bytes = Some(size);
            f.limit = Some(limit);
            problems.push(f);
        }
    }
}
