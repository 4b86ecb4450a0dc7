//! `inspect` for an ETDump (`.etdp`): its runs, its events grouped as
//! ExecuTorch's Inspector groups them, and the instructions that took
//! longest.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::Inspection;
use crate::escape::escape;
use crate::format::ProfileFile;
use crate::format::etdump::{Event, ProfileEvent};
use crate::report::composition::Composition;

/// How many instructions the report lists.
const TOP: usize = 10;

/// What an ETDump holds.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileSummary {
    /// The u32 before the flatbuffer.
    pub size_prefix: u32,
    /// What a tick is taken to be.
    pub tick: &'static str,
    /// Each run data block.
    pub runs: Vec<RunSummary>,
    /// Profile event durations, per run block name, event name,
    /// instruction and delegate debug id, in first-seen order.
    pub events: Vec<EventStats>,
    /// The instructions with the most time, summed over the runs.
    pub top_instructions: Vec<InstructionTime>,
    /// The join with the program that ran, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramJoin>,
}

/// What joining the profile with its program found.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramJoin {
    /// The program, as named.
    pub file: String,
    /// The method the events are taken to be of.
    pub method: String,
    /// Why that method.
    pub method_chosen_because: String,
    /// Its instructions, and how many the profile times.
    pub instructions: usize,
    /// How many of them the profile times.
    pub instructions_recorded: usize,
    /// Events naming no instruction of the method (or without a
    /// duration), with the first reasons.
    pub unmatched_events: usize,
    /// The first few reasons.
    pub unmatched_first: Vec<String>,
    /// Per operator (each delegate backend as one), time summed over the
    /// runs, longest first.
    pub top_operators: Vec<OperatorTime>,
}

/// Time spent in one operator.
#[derive(Debug, Clone, Serialize)]
pub struct OperatorTime {
    /// The operator (`aten::addmm.out`) or `delegate <backend>`.
    pub operator: String,
    /// How many instructions call it.
    pub instructions: usize,
    /// Calls recorded.
    pub calls: usize,
    /// Summed, in ms.
    pub total_ms: f64,
    /// Share of the method's time.
    pub share: f64,
}

/// One run data block.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Its index.
    pub index: usize,
    /// Its name (`Default`, `Execute`).
    pub name: String,
    /// Events of each kind.
    pub profile_events: usize,
    /// Allocation events.
    pub allocation_events: usize,
    /// Debug events.
    pub debug_events: usize,
    /// From the first start to the last end of its profile events, in ms.
    pub span_ms: f64,
}

/// The durations of one kind of event over the runs.
#[derive(Debug, Clone, Serialize)]
pub struct EventStats {
    /// The run block name.
    pub block: String,
    /// The event's name (a delegate's debug id where it has no name).
    pub name: String,
    /// Its instruction.
    pub instruction_id: i32,
    /// Whether a delegate recorded it.
    pub delegated: bool,
    /// How many times it was recorded.
    pub count: usize,
    /// Shortest, in ms.
    pub min_ms: f64,
    /// Mean, in ms.
    pub mean_ms: f64,
    /// Longest, in ms.
    pub max_ms: f64,
}

/// Time spent in one instruction.
#[derive(Debug, Clone, Serialize)]
pub struct InstructionTime {
    /// Its chain.
    pub chain_index: i32,
    /// Its id.
    pub instruction_id: i32,
    /// What ran (the kernel's event name, or the outer event's).
    pub name: String,
    /// The program's operator (or delegate) at that instruction, when the
    /// program is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// In how many runs it was recorded.
    pub runs: usize,
    /// Summed over runs, in ms.
    pub total_ms: f64,
    /// Mean per run, in ms.
    pub mean_ms: f64,
}

fn ms(ticks: u64) -> f64 {
    ticks as f64 / 1e6
}

fn label(e: &ProfileEvent<'_>) -> String {
    match (e.name, e.delegate_debug_id_str) {
        (Some(n), _) => n.show().into_owned(),
        (None, Some(id)) => id.show().into_owned(),
        (None, None) => e.delegate_debug_id_int.to_string(),
    }
}

/// The summary of `p`.
pub fn summary(p: &ProfileFile<'_>) -> ProfileSummary {
    let mut runs = Vec::new();
    let mut groups: Vec<(String, String, i32, bool, Vec<u64>)> = Vec::new();
    let mut at: BTreeMap<(String, String, i32, bool), usize> = BTreeMap::new();
    // (chain, instruction) -> (name, runs, total ticks)
    let mut instr: BTreeMap<(i32, i32), (String, usize, u64)> = BTreeMap::new();
    for (r, run) in p.runs.iter().enumerate() {
        let block = run.name.map_or_else(String::new, |n| n.show().into_owned());
        let (mut np, mut na, mut nd) = (0, 0, 0);
        let (mut first, mut last) = (u64::MAX, 0u64);
        // Per instruction in this run: the longest outer span and the
        // kernel's name.
        let mut here: BTreeMap<(i32, i32), (Option<String>, String, u64)> = BTreeMap::new();
        for e in &run.events {
            let ev = match e {
                Event::Profile(ev) => ev,
                Event::Allocation(_) => {
                    na += 1;
                    continue;
                }
                Event::Debug(_) => {
                    nd += 1;
                    continue;
                }
                Event::Empty => continue,
            };
            np += 1;
            let Some(d) = ev.duration() else { continue };
            first = first.min(ev.start);
            last = last.max(ev.end);
            let name = label(ev);
            let key = (
                block.clone(),
                name.clone(),
                ev.instruction_id,
                ev.is_delegated(),
            );
            let g = *at.entry(key).or_insert_with(|| {
                groups.push((
                    block.clone(),
                    name.clone(),
                    ev.instruction_id,
                    ev.is_delegated(),
                    Vec::new(),
                ));
                groups.len() - 1
            });
            groups[g].4.push(d);
            if ev.chain_index >= 0 && ev.instruction_id >= 0 && !ev.is_delegated() {
                let slot = here.entry((ev.chain_index, ev.instruction_id)).or_insert((
                    None,
                    String::new(),
                    0,
                ));
                if name.ends_with("_CALL") {
                    if d >= slot.2 {
                        slot.1 = name;
                        slot.2 = d;
                    }
                } else {
                    slot.0.get_or_insert(name);
                    if slot.2 == 0 {
                        slot.2 = d;
                    }
                }
            }
        }
        for (k, (kernel, outer, d)) in here {
            let e = instr.entry(k).or_insert((String::new(), 0, 0));
            e.0 = kernel.unwrap_or(outer);
            e.1 += 1;
            e.2 = e.2.saturating_add(d);
        }
        runs.push(RunSummary {
            index: r,
            name: block,
            profile_events: np,
            allocation_events: na,
            debug_events: nd,
            span_ms: if first <= last { ms(last - first) } else { 0.0 },
        });
    }
    let events = groups
        .into_iter()
        .map(|(block, name, instruction_id, delegated, ds)| {
            let sum: u128 = ds.iter().map(|&d| u128::from(d)).sum();
            EventStats {
                block,
                name,
                instruction_id,
                delegated,
                count: ds.len(),
                min_ms: ms(ds.iter().copied().min().unwrap_or(0)),
                mean_ms: sum as f64 / ds.len().max(1) as f64 / 1e6,
                max_ms: ms(ds.iter().copied().max().unwrap_or(0)),
            }
        })
        .collect();
    let mut top: Vec<InstructionTime> = instr
        .into_iter()
        .map(|((c, i), (name, n, total))| InstructionTime {
            chain_index: c,
            instruction_id: i,
            name,
            operator: None,
            runs: n,
            total_ms: ms(total),
            mean_ms: ms(total) / n.max(1) as f64,
        })
        .collect();
    top.sort_by(|a, b| {
        b.total_ms
            .total_cmp(&a.total_ms)
            .then((a.chain_index, a.instruction_id).cmp(&(b.chain_index, b.instruction_id)))
    });
    top.truncate(TOP);
    ProfileSummary {
        size_prefix: p.size_prefix,
        tick: crate::format::etdump::TICK,
        runs,
        events,
        top_instructions: top,
        program: None,
    }
}

/// `s` (the summary of `profile`) with the top instructions named by the
/// operators of `program` (shown as `name`), and what the join found.
pub fn join_program(
    s: &mut ProfileSummary,
    name: &str,
    program: &crate::format::ProgramFile<'_>,
    profile: &ProfileFile<'_>,
) {
    let Some(j) = crate::join::profile::join(program, profile) else {
        return;
    };
    for t in &mut s.top_instructions {
        let (Ok(c), Ok(i)) = (
            usize::try_from(t.chain_index),
            usize::try_from(t.instruction_id),
        ) else {
            continue;
        };
        t.operator = j
            .instructions
            .iter()
            .find(|x| x.chain == c && x.index == i)
            .map(|x| x.does.label());
    }
    let mut ops: Vec<OperatorTime> = j
        .by_operator()
        .into_iter()
        .map(|(operator, instructions, d)| {
            let total = d.iter().fold(0u64, |a, &x| a.saturating_add(x));
            OperatorTime {
                operator,
                instructions,
                calls: d.len(),
                total_ms: ms(total),
                share: j.share(total),
            }
        })
        .collect();
    ops.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
    ops.truncate(TOP);
    s.program = Some(ProgramJoin {
        file: name.to_owned(),
        method: j.method.clone(),
        method_chosen_because: j.chosen_because.clone(),
        instructions: j.instructions.len(),
        instructions_recorded: j
            .instructions
            .iter()
            .filter(|i| !i.durations.is_empty())
            .count(),
        unmatched_events: j.unmatched.len(),
        unmatched_first: j
            .unmatched
            .iter()
            .take(5)
            .map(|u| format!("run {} event {}: {}", u.run, u.event, u.why))
            .collect(),
        top_operators: ops,
    });
}

/// The inspection of ETDump `p`, shown as `name`.
pub(super) fn inspection(name: &str, p: &ProfileFile<'_>) -> Inspection {
    let mut comp = Composition::default();
    comp.add("size prefix", crate::format::Span { offset: 0, len: 4 });
    comp.add("profile flatbuffer", p.flatbuffer);
    let size = p.bytes.len() as u64;
    Inspection {
        file: name.to_owned(),
        kind: "profile",
        identifier: String::from_utf8_lossy(p.bytes.get(8..12).unwrap_or_default()).into_owned(),
        version: p.version,
        file_size: size,
        bundle: None,
        program: None,
        data: None,
        composition: comp.finish(size),
        package: None,
        checkpoint: None,
        profile: Some(summary(p)),
        largest: None,
        stats: None,
        etrecord: None,
    }
}

/// The summary as text.
pub(super) fn text(o: &mut String, s: &ProfileSummary) {
    let _ = writeln!(o, "size prefix: {}", s.size_prefix);
    let _ = writeln!(o, "\nrun data blocks: {}", s.runs.len());
    for r in &s.runs {
        let _ = writeln!(
            o,
            "  {:>3} {:<12} {:>5} profile, {:>3} allocation, {:>3} debug events, {:.3} ms",
            r.index,
            escape(&r.name),
            r.profile_events,
            r.allocation_events,
            r.debug_events,
            r.span_ms
        );
    }
    let _ = writeln!(
        o,
        "\nevents (ms; a tick taken as 1 ns):\n  {:<10} {:<40} {:>5} {:>5} {:>10} {:>10} {:>10}",
        "block", "name", "instr", "count", "min", "mean", "max"
    );
    for e in &s.events {
        let _ = writeln!(
            o,
            "  {:<10} {:<40} {:>5} {:>5} {:>10.6} {:>10.6} {:>10.6}",
            escape(&e.block),
            escape(&e.name),
            e.instruction_id,
            e.count,
            e.min_ms,
            e.mean_ms,
            e.max_ms
        );
    }
    if let Some(j) = &s.program {
        let _ = writeln!(
            o,
            "\njoined with {}: method {} ({}); {} of its {} instructions timed, {} events unmatched",
            escape(&j.file),
            escape(&j.method),
            j.method_chosen_because,
            j.instructions_recorded,
            j.instructions,
            j.unmatched_events
        );
        for u in &j.unmatched_first {
            let _ = writeln!(o, "  unmatched: {}", escape(u));
        }
    }
    let _ = writeln!(o, "\ntop instructions by time:");
    for t in &s.top_instructions {
        let name = match &t.operator {
            Some(op) => format!("{op} ({})", t.name),
            None => t.name.clone(),
        };
        let _ = writeln!(
            o,
            "  chain {} instruction {:>4} {:<36} {:>10.6} ms over {} runs ({:.6} ms each)",
            t.chain_index,
            t.instruction_id,
            escape(&name),
            t.total_ms,
            t.runs,
            t.mean_ms
        );
    }
    if let Some(j) = &s.program {
        let _ = writeln!(o, "\ntop operators by time:");
        for op in &j.top_operators {
            let _ = writeln!(
                o,
                "  {:<40} {:>3} instructions {:>5} calls {:>10.6} ms {:>6.2}%",
                escape(&op.operator),
                op.instructions,
                op.calls,
                op.total_ms,
                op.share * 100.0
            );
        }
    }
}
