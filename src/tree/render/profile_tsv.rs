//! A profile joined with its program as tables: `ops.tsv` (per
//! instruction), `by-operator.tsv`, a delegate's `nodes.tsv`,
//! `unmatched.tsv`, and the notes that annotate `code.txt`.
//!
//! Times are in the ETDump's ticks (`_ticks` columns) and in milliseconds
//! taking a tick to be 1 ns (`_ms` columns), as `header.json` of the
//! ETDump says; shares are percentages of the method's time
//! ([`Join::method_total`]). Text fields are escaped (`\t`, `\n`), so each
//! row is one line.

use std::collections::HashMap;
use std::fmt::Write;

use crate::delegate::ProfileNodes;
use crate::escape::escape;
use crate::join::profile::{DelegateEvents, Join, Stats};

/// Ticks as milliseconds, a tick taken as 1 ns, to the nanosecond.
fn ms(ticks: f64) -> String {
    format!("{:.6}", ticks / 1e6)
}

fn pct(x: f64) -> String {
    format!("{:.2}", x * 100.0)
}

/// The stats columns: calls, total (ticks and ms), mean, min, p50, p90,
/// max (ms). Empty fields where nothing was recorded.
const STATS: &str = "calls\ttotal_ticks\ttotal_ms\tmean_ms\tmin_ms\tp50_ms\tp90_ms\tmax_ms";

fn stats(s: Option<Stats>) -> String {
    match s {
        Some(s) => format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            s.calls,
            s.total,
            ms(s.total as f64),
            ms(s.mean),
            ms(s.min as f64),
            ms(s.p50),
            ms(s.p90),
            ms(s.max as f64)
        ),
        None => "0\t0\t\t\t\t\t\t".to_owned(),
    }
}

/// `ops.tsv`: one row per instruction of the method, recorded or not,
/// ending with its module paths and source lines from `sources` (by
/// instruction index; empty without an ETRecord).
pub fn ops(j: &Join, sources: &HashMap<usize, (String, String)>) -> String {
    let mut o = format!(
        "chain\tindex\toperator\tevent\tkernel_event\t{STATS}\tshare_pct\tmodule_hierarchy\tstack_frame\n"
    );
    for i in &j.instructions {
        let s = Stats::of(&i.durations);
        let (modules, frames) = sources
            .get(&i.index)
            .map_or(("", ""), |(m, f)| (m.as_str(), f.as_str()));
        let _ = writeln!(
            o,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            i.chain,
            i.index,
            escape(&i.does.label()),
            escape(i.timed_by.as_deref().unwrap_or("")),
            escape(i.kernel.as_deref().unwrap_or("")),
            stats(s),
            s.map_or_else(String::new, |s| pct(j.share(s.total))),
            escape(modules),
            escape(frames)
        );
    }
    o
}

/// `by-operator.tsv`: per operator (each delegate backend as one), its
/// instructions and their calls summed, longest total first.
pub fn by_operator(j: &Join) -> String {
    let mut rows = j.by_operator();
    rows.sort_by(|a, b| {
        let t = |d: &[u64]| d.iter().fold(0u64, |a, &x| a.saturating_add(x));
        t(&b.2).cmp(&t(&a.2))
    });
    let mut o = format!("operator\tinstructions\t{STATS}\tshare_pct\n");
    for (label, n, d) in rows {
        let s = Stats::of(&d);
        let _ = writeln!(
            o,
            "{}\t{n}\t{}\t{}",
            escape(&label),
            stats(s),
            s.map_or_else(String::new, |s| pct(j.share(s.total)))
        );
    }
    o
}

/// The events of delegate `delegate`, in first-seen order.
pub fn delegate_events(j: &Join, delegate: usize) -> Vec<&DelegateEvents> {
    j.delegate_events
        .iter()
        .filter(|e| e.delegate == Some(delegate))
        .collect()
}

/// `delegates/<dir>/nodes.tsv`: the delegate's own events by debug id,
/// with the node of its payload each timed where `matched` (over the
/// events' string ids, in order) says.
pub fn nodes(j: &Join, delegate: usize, matched: Option<&ProfileNodes>) -> String {
    let events = delegate_events(j, delegate);
    let mut o = format!(
        "chain\tinstruction\tdebug_id\tnode\tnode_op\tmatched_by\t{STATS}\tshare_of_call_pct\tshare_pct\n"
    );
    let string_ids: Vec<&str> = string_ids(&events);
    for e in events {
        let s = Stats::of(&e.durations);
        let call: u64 = j
            .instructions
            .iter()
            .find(|i| i.chain == e.chain && i.index == e.instruction)
            .map_or(0, |i| {
                i.durations.iter().fold(0u64, |a, &x| a.saturating_add(x))
            });
        let node = match &e.id {
            crate::join::profile::DelegateId::Str(id) => string_ids
                .iter()
                .position(|x| x == id)
                .and_then(|k| matched?.nodes.get(k)?.as_ref()),
            crate::join::profile::DelegateId::Int(_) => None,
        };
        let (index, op, how) = match node {
            Some(n) => (n.index.to_string(), n.op.clone(), n.how),
            None => (String::new(), String::new(), "no (listed by id)"),
        };
        let total = s.map_or(0, |s| s.total);
        let of_call = match call {
            0 => String::new(),
            c => pct(total as f64 / c as f64),
        };
        let _ = writeln!(
            o,
            "{}\t{}\t{}\t{index}\t{}\t{how}\t{}\t{of_call}\t{}",
            e.chain,
            e.instruction,
            escape(&e.id.to_string()),
            escape(&op),
            stats(s),
            pct(j.share(total))
        );
    }
    o
}

/// The distinct string ids among `events`, in order: what
/// [`crate::delegate::profile_nodes`] matches.
pub fn string_ids<'e>(events: &[&'e DelegateEvents]) -> Vec<&'e str> {
    let mut out: Vec<&str> = Vec::new();
    for e in events {
        if let crate::join::profile::DelegateId::Str(s) = &e.id
            && !out.contains(&s.as_str())
        {
            out.push(s);
        }
    }
    out
}

/// `unmatched.tsv`: every event naming no instruction of the method (or
/// with no duration), and why.
pub fn unmatched(j: &Join) -> String {
    let mut o = String::from(
        "run\tevent\tkind\tname\tchain\tinstruction\tdelegate_debug_id\tduration_ticks\twhy\n",
    );
    for u in &j.unmatched {
        let _ = writeln!(
            o,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            u.run,
            u.event,
            u.kind,
            escape(&u.name),
            u.chain,
            u.instruction,
            u.delegate_id
                .as_ref()
                .map_or_else(String::new, |d| escape(&d.to_string()).into_owned()),
            u.duration.map_or_else(String::new, |d| d.to_string()),
            escape(&u.why)
        );
    }
    o
}

/// Per (chain, instruction), the note its `code.txt` line ends with:
/// its mean time and share, or that it was not recorded, and how many
/// tensors it logged.
pub fn notes(j: &Join) -> HashMap<(usize, usize), String> {
    let mut logged: HashMap<(usize, usize), usize> = HashMap::new();
    for at in j.logged.iter().filter_map(|l| l.at) {
        *logged.entry(at).or_default() += 1;
    }
    j.instructions
        .iter()
        .map(|i| {
            let mut note = match Stats::of(&i.durations) {
                Some(s) => format!(
                    "  # {} ms mean over {} calls, {}% of the method",
                    ms(s.mean),
                    s.calls,
                    pct(j.share(s.total))
                ),
                None => "  # not recorded".to_owned(),
            };
            if let Some(n) = logged.get(&(i.chain, i.index)) {
                let _ = write!(note, "; {n} tensors logged (outputs/)");
            }
            ((i.chain, i.index), note)
        })
        .collect()
}

/// `code` (a method's `code.txt`) with each instruction line ending with
/// its note. Chains follow their `# ...` header lines in order;
/// instruction lines start with their index and `: `.
pub fn annotate(code: &str, notes: &HashMap<(usize, usize), String>) -> String {
    let mut out = String::with_capacity(code.len() + notes.len() * 48);
    let mut chain: Option<usize> = None;
    for line in code.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if body.starts_with("# ") {
            chain = Some(chain.map_or(0, |c| c + 1));
        }
        let index = body
            .split_once(": ")
            .and_then(|(n, _)| n.parse::<usize>().ok());
        match (chain, index) {
            (Some(c), Some(i)) if notes.contains_key(&(c, i)) => {
                out.push_str(body);
                out.push_str(&notes[&(c, i)]);
                out.push('\n');
            }
            _ => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_instruction_lines_are_annotated() {
        let code = "# m: chain 0\n  # a.py:1 in f: x\n0: op %1\n1: op %2\n# m: chain 1\n0: move\n";
        let notes: HashMap<(usize, usize), String> = [
            ((0, 0), " A".to_owned()),
            ((0, 1), " B".to_owned()),
            ((1, 0), " C".to_owned()),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            annotate(code, &notes),
            "# m: chain 0\n  # a.py:1 in f: x\n0: op %1 A\n1: op %2 B\n# m: chain 1\n0: move C\n"
        );
    }
}
