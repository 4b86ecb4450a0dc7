//! A profile (ETDump) joined with the program that ran: each profile
//! event's chain and instruction looked up in one of the program's
//! methods, giving per instruction the durations of its calls, per
//! delegate call the events the delegate recorded by their debug ids, and
//! every event that names no instruction of the method, with the reason.
//! Nothing is dropped: an event either lands on an instruction, is a
//! method-level event (chain -1), or is listed as unmatched.

use std::collections::BTreeMap;

use crate::format::etdump::{DebugTensor, Event, ProfileFile, Value};
use crate::format::{MethodInfo, ProgramFile, operator_name};
use crate::schema::program as fb;

/// The outer event the runtime records around each kernel call.
pub const OPERATOR_CALL: &str = "OPERATOR_CALL";
/// The outer event the runtime records around each delegate call.
pub const DELEGATE_CALL: &str = "DELEGATE_CALL";
/// The method-level event spanning one execution.
pub const METHOD_EXECUTE: &str = "Method::execute";

/// What an instruction does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Does {
    /// Calls operator `0` (`aten::addmm.out`).
    Kernel(String),
    /// Calls delegate `index` of backend `backend`.
    Delegate {
        /// Index in the plan's delegates.
        index: usize,
        /// The backend id.
        backend: String,
    },
    /// A move, jump or free.
    Other(&'static str),
    /// Not looked up (no program): what its events call it, the kernel's
    /// event name where there is one.
    Recorded(String),
}

impl Does {
    /// What `ops.tsv` and `by-operator.tsv` call it.
    pub fn label(&self) -> String {
        match self {
            Does::Kernel(op) => op.clone(),
            Does::Delegate { index, backend } => format!("delegate {index} {backend}"),
            Does::Other(what) => format!("({what})"),
            Does::Recorded(name) => name.clone(),
        }
    }
}

/// Durations summarised, in ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// How many durations.
    pub calls: usize,
    /// Their sum.
    pub total: u64,
    /// Their mean.
    pub mean: f64,
    /// The shortest.
    pub min: u64,
    /// The median, interpolated linearly between ranks as NumPy's
    /// `percentile` (which Inspector uses) does.
    pub p50: f64,
    /// The 90th percentile, interpolated likewise.
    pub p90: f64,
    /// The longest.
    pub max: u64,
}

impl Stats {
    /// The summary of `durations`, `None` when there are none.
    pub fn of(durations: &[u64]) -> Option<Stats> {
        let mut d = durations.to_vec();
        d.sort_unstable();
        let (&min, &max) = (d.first()?, d.last()?);
        let total: u128 = d.iter().map(|&x| u128::from(x)).sum();
        Some(Stats {
            calls: d.len(),
            total: u64::try_from(total).unwrap_or(u64::MAX),
            mean: total as f64 / d.len() as f64,
            min,
            p50: percentile(&d, 0.5),
            p90: percentile(&d, 0.9),
            max,
        })
    }
}

/// The `q` quantile of sorted, non-empty `d`, linearly interpolated.
fn percentile(d: &[u64], q: f64) -> f64 {
    let rank = q * (d.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    let (a, b) = (d[lo] as f64, d[hi.min(d.len() - 1)] as f64);
    a + (b - a) * (rank - lo as f64)
}

/// One instruction of the method and the time spent in it.
#[derive(Debug, Clone)]
pub struct Instruction {
    /// Its chain.
    pub chain: usize,
    /// Its index in the chain.
    pub index: usize,
    /// What it does.
    pub does: Does,
    /// The event whose durations time it (`OPERATOR_CALL`,
    /// `DELEGATE_CALL`, or the only event recorded for it).
    pub timed_by: Option<String>,
    /// The kernel's own event (`native_call_addmm.out`), when recorded.
    pub kernel: Option<String>,
    /// The durations of `timed_by`, in ticks, in file order.
    pub durations: Vec<u64>,
    /// The run data block of each of `durations`.
    pub runs: Vec<usize>,
}

/// A delegate's debug id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DelegateId {
    /// An integer id.
    Int(i32),
    /// A string id (XNNPACK's `Convolution (NHWC, F32) IGEMM #1`).
    Str(String),
}

impl std::fmt::Display for DelegateId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DelegateId::Int(i) => write!(f, "{i}"),
            DelegateId::Str(s) => f.write_str(s),
        }
    }
}

/// The events a delegate recorded under one debug id within one
/// instruction.
#[derive(Debug, Clone)]
pub struct DelegateEvents {
    /// The instruction's chain.
    pub chain: usize,
    /// The instruction.
    pub instruction: usize,
    /// The delegate it calls (index in the plan's delegates); `None`
    /// without a program to say.
    pub delegate: Option<usize>,
    /// The debug id.
    pub id: DelegateId,
    /// The durations, in ticks, in file order.
    pub durations: Vec<u64>,
}

/// An event that names no instruction of the method, or has no duration.
#[derive(Debug, Clone)]
pub struct Unmatched {
    /// The run data block.
    pub run: usize,
    /// The event's index in the block.
    pub event: usize,
    /// `profile` or `debug`.
    pub kind: &'static str,
    /// Its name, or its delegate debug id.
    pub name: String,
    /// The chain it names.
    pub chain: i128,
    /// The instruction it names.
    pub instruction: i64,
    /// Its delegate debug id, if any.
    pub delegate_id: Option<DelegateId>,
    /// Its duration in ticks (profile events that have one).
    pub duration: Option<u64>,
    /// Why it matches nothing.
    pub why: String,
}

/// A tensor the runtime logged in a run with a debug buffer. After each
/// instruction the runtime logs one value per debug event: a kernel
/// call's out arguments, or every argument of a delegate call, in order;
/// a delegate may log values of its own while it runs (with its debug
/// id); and at the end the method's outputs.
#[derive(Debug, Clone)]
pub struct Logged {
    /// The run data block.
    pub run: usize,
    /// The debug event's index in the block.
    pub event: usize,
    /// The instruction (chain, index) that logged it; `None` for an
    /// output of the method.
    pub at: Option<(usize, usize)>,
    /// The delegate's debug id, for a value the delegate logged itself.
    pub delegate_id: Option<DelegateId>,
    /// Its value's position among the values logged at `at` in this run
    /// (those of `delegate_id`, when it has one), tensors or not.
    pub position: usize,
    /// How many values were logged there in this run.
    pub of: usize,
    /// Its index within its value, when that is a list of tensors.
    pub item: Option<usize>,
    /// Its type, shape and place in the debug buffer.
    pub tensor: DebugTensor,
}

/// A profile joined with one method.
#[derive(Debug, Clone)]
pub struct Join {
    /// The method's index in the program.
    pub method_index: usize,
    /// Its name.
    pub method: String,
    /// Why the profile's events are taken to be this method's.
    pub chosen_because: String,
    /// Every instruction of the method, chain by chain, recorded or not.
    pub instructions: Vec<Instruction>,
    /// Method-level events (chain -1) by name, in first-seen order, with
    /// their durations.
    pub method_events: Vec<(String, Vec<u64>)>,
    /// Delegates' own events, in first-seen order.
    pub delegate_events: Vec<DelegateEvents>,
    /// Events matching nothing.
    pub unmatched: Vec<Unmatched>,
    /// The tensors the debug events logged, in file order.
    pub logged: Vec<Logged>,
    /// How many run data blocks the profile has.
    pub runs: usize,
}

impl Join {
    /// The method's time in ticks that shares are taken of: its
    /// `Method::execute` spans summed, or, without any, the instructions'
    /// time summed.
    pub fn method_total(&self) -> u64 {
        let execute: Option<u64> = self
            .method_events
            .iter()
            .find(|(n, _)| n == METHOD_EXECUTE)
            .map(|(_, d)| d.iter().fold(0u64, |a, &x| a.saturating_add(x)));
        execute.unwrap_or_else(|| self.instructions_total())
    }

    /// What [`Join::method_total`] is made of, in words.
    pub fn method_total_source(&self) -> &'static str {
        if self.method_events.iter().any(|(n, _)| n == METHOD_EXECUTE) {
            "the method's Method::execute events summed"
        } else {
            "the instructions' times summed (no Method::execute event)"
        }
    }

    /// The instructions' time summed, in ticks.
    pub fn instructions_total(&self) -> u64 {
        self.instructions
            .iter()
            .flat_map(|i| &i.durations)
            .fold(0u64, |a, &x| a.saturating_add(x))
    }

    /// `part` as a fraction of the method's time (0 when that is 0).
    pub fn share(&self, part: u64) -> f64 {
        match self.method_total() {
            0 => 0.0,
            t => part as f64 / t as f64,
        }
    }

    /// Per operator (or delegate): instructions, calls and durations
    /// summed, in order of first instruction.
    pub fn by_operator(&self) -> Vec<(String, usize, Vec<u64>)> {
        let mut out: Vec<(String, usize, Vec<u64>)> = Vec::new();
        let mut at: BTreeMap<String, usize> = BTreeMap::new();
        for i in &self.instructions {
            let label = match &i.does {
                // All calls of one backend together.
                Does::Delegate { backend, .. } => format!("delegate {backend}"),
                d => d.label(),
            };
            let k = *at.entry(label.clone()).or_insert_with(|| {
                out.push((label, 0, Vec::new()));
                out.len() - 1
            });
            out[k].1 += 1;
            out[k].2.extend(&i.durations);
        }
        out
    }
}

impl Join {
    /// Why these events are not of the method they were joined with,
    /// when some instruction's events say it does something else: a
    /// kernel's event (`native_call_addmm.out`) naming another operator
    /// than the instruction calls, `OPERATOR_CALL` or a kernel's event on
    /// an instruction that calls no operator, `DELEGATE_CALL` on one that
    /// calls no delegate. An ETDump does not name the program that ran, and a
    /// profile of another program can land every event on some
    /// instruction: what the events are named is what tells them apart.
    /// `None` when every instruction's events agree with it.
    pub fn disagreement(&self) -> Option<String> {
        let disagrees = |i: &&Instruction| match &i.does {
            Does::Kernel(op) => {
                i.timed_by.as_deref() == Some(DELEGATE_CALL)
                    || (i.timed_by.iter().chain(&i.kernel)).any(|e| !kernel_event_of(op, e))
            }
            Does::Delegate { .. } => i.timed_by.as_deref() == Some(OPERATOR_CALL),
            // The runtime times moves, jumps and frees with no event.
            Does::Other(_) => (i.timed_by.iter().chain(&i.kernel))
                .any(|e| e == OPERATOR_CALL || e == DELEGATE_CALL || e.starts_with("native_call_")),
            Does::Recorded(_) => false,
        };
        let wrong: Vec<&Instruction> = self.instructions.iter().filter(disagrees).collect();
        let first = wrong.first()?;
        let timed = (self.instructions.iter())
            .filter(|i| i.timed_by.is_some())
            .count();
        let events: Vec<&str> = (first.timed_by.iter().chain(&first.kernel))
            .map(String::as_str)
            .collect();
        Some(format!(
            "the events of {} of the {timed} instructions it times disagree with what method {:?} \
             does; the first: instruction {} of chain {} {}, and its events are {}",
            wrong.len(),
            self.method,
            first.index,
            first.chain,
            match &first.does {
                Does::Kernel(op) => format!("calls {op}"),
                Does::Delegate { index, backend } => {
                    format!("calls delegate {index} ({backend})")
                }
                Does::Other(what) => format!("is a {what}"),
                Does::Recorded(name) => format!("is {name}"),
            },
            events.join(", ")
        ))
    }
}

/// Whether `event` is the event the kernel of operator `op` records:
/// `native_call_` and the operator's name, its namespace left out
/// (`native_call_addmm.out` for `aten::addmm.out`) or not (as kernels
/// registered by hand name theirs). Events named otherwise say nothing
/// of the operator, and agree.
fn kernel_event_of(op: &str, event: &str) -> bool {
    let Some(called) = event.strip_prefix("native_call_") else {
        return true;
    };
    let short = op.split_once("::").map_or(op, |(_, name)| name);
    called == op || called == short
}

/// What each instruction of `plan` does, chain by chain.
pub fn instructions(
    plan: fb::ExecutionPlan<'_>,
    delegates: &[crate::format::Delegate<'_>],
) -> Vec<Vec<Does>> {
    plan.chains()
        .iter()
        .flatten()
        .map(|chain| {
            chain
                .instructions()
                .iter()
                .flatten()
                .map(|ins| {
                    if let Some(k) = ins.instr_args_as_kernel_call() {
                        Does::Kernel(
                            operator_name(plan, k.op_index()).unwrap_or_else(|| {
                                format!("<operator {} out of range>", k.op_index())
                            }),
                        )
                    } else if let Some(d) = ins.instr_args_as_delegate_call() {
                        let index = usize::try_from(d.delegate_index()).unwrap_or(usize::MAX);
                        let backend = delegates
                            .iter()
                            .find(|x| x.index == index)
                            .map_or_else(|| "<out of range>".to_owned(), |x| x.id.show().into());
                        Does::Delegate { index, backend }
                    } else if ins.instr_args_as_move_call().is_some() {
                        Does::Other("move")
                    } else if ins.instr_args_as_jump_false_call().is_some() {
                        Does::Other("jump_false")
                    } else if ins.instr_args_as_free_call().is_some() {
                        Does::Other("free")
                    } else {
                        Does::Other("unknown")
                    }
                })
                .collect()
        })
        .collect()
}

/// The method the profile's events are taken to belong to, and why: an
/// ETDump names its run blocks (`Default`, `Execute`), not the method, so
/// a block named after a method picks it, else the only method, else
/// `forward`, else the first.
pub fn choose_method(program: &ProgramFile<'_>, profile: &ProfileFile<'_>) -> (usize, String) {
    let names: Vec<String> = program
        .methods
        .iter()
        .map(|m| m.name.show().into_owned())
        .collect();
    for run in &profile.runs {
        if let Some(n) = run.name
            && let Some(i) = names.iter().position(|m| *m == n.show())
        {
            return (i, format!("a run data block is named {:?}", names[i]));
        }
    }
    if names.len() == 1 {
        return (0, "it is the program's only method".to_owned());
    }
    if let Some(i) = names.iter().position(|m| m == "forward") {
        return (
            i,
            "no run data block names a method; forward is taken".to_owned(),
        );
    }
    (
        0,
        "no run data block names a method, and there is no forward; the first method is taken"
            .to_owned(),
    )
}

/// `profile` joined with the method [`choose_method`] picks, or `None`
/// for a program without methods.
pub fn join(program: &ProgramFile<'_>, profile: &ProfileFile<'_>) -> Option<Join> {
    if program.methods.is_empty() {
        return None;
    }
    let (mi, why) = choose_method(program, profile);
    let m = program.methods.get(mi)?;
    Some(join_method(mi, m, profile, why))
}

fn delegate_id(int: i32, s: Option<crate::format::Name<'_>>) -> Option<DelegateId> {
    match s {
        Some(s) => Some(DelegateId::Str(s.show().into_owned())),
        None if int != -1 => Some(DelegateId::Int(int)),
        None => None,
    }
}

/// `profile` joined with method `m` (index `mi`); `why` says why this
/// method.
pub fn join_method(mi: usize, m: &MethodInfo<'_>, profile: &ProfileFile<'_>, why: String) -> Join {
    let does = instructions(m.plan, &m.delegates);
    let name = m.name.show().into_owned();
    let (instructions, method_events, delegate_events, unmatched, logged) =
        collect(profile, Some((&does, &name)));
    Join {
        method_index: mi,
        method: name,
        chosen_because: why,
        instructions,
        method_events,
        delegate_events,
        unmatched,
        logged,
        runs: profile.runs.len(),
    }
}

/// `profile`'s events grouped per instruction without a program: every
/// chain and instruction recorded, named by its events (see
/// [`Does::Recorded`]). Only events without a duration are unmatched.
pub fn without_program(profile: &ProfileFile<'_>) -> Join {
    let (instructions, method_events, delegate_events, unmatched, logged) = collect(profile, None);
    Join {
        method_index: 0,
        method: String::new(),
        chosen_because: "no program given".to_owned(),
        instructions,
        method_events,
        delegate_events,
        unmatched,
        logged,
        runs: profile.runs.len(),
    }
}

/// Where values are logged: run, instruction (none: the method's
/// outputs) and the debug id of a delegate logging its own.
type LoggedAt = (usize, Option<(usize, usize)>, Option<DelegateId>);

/// Durations per event name, names in first-seen order, with the run of
/// each.
type ByName = Vec<(String, Vec<u64>, Vec<usize>)>;

type Collected = (
    Vec<Instruction>,
    Vec<(String, Vec<u64>)>,
    Vec<DelegateEvents>,
    Vec<Unmatched>,
    Vec<Logged>,
);

/// What each instruction of each chain does, and the method's name.
type Method<'m> = Option<(&'m [Vec<Does>], &'m str)>;

/// The events of a profile gathered, one event at a time, per
/// instruction of a method (or, without one, per instruction recorded):
/// a method per event kind, then [`Collector::finish`].
struct Collector<'m> {
    method: Method<'m>,
    /// Per instruction: durations per event name.
    per: BTreeMap<(usize, usize), ByName>,
    method_events: Vec<(String, Vec<u64>)>,
    delegate_events: Vec<DelegateEvents>,
    unmatched: Vec<Unmatched>,
    logged: Vec<Logged>,
    /// Values logged so far per run, instruction and delegate debug id.
    positions: BTreeMap<LoggedAt, usize>,
}

impl<'m> Collector<'m> {
    fn new(method: Method<'m>) -> Self {
        Collector {
            method,
            per: BTreeMap::new(),
            method_events: Vec::new(),
            delegate_events: Vec::new(),
            unmatched: Vec::new(),
            logged: Vec::new(),
            positions: BTreeMap::new(),
        }
    }

    /// The instruction (chain, index) an event names, or why it names
    /// none of the method's.
    fn locate(&self, chain: i128, instruction: i64) -> Result<(usize, usize), String> {
        let Some((does, name)) = self.method else {
            return match (usize::try_from(chain), usize::try_from(instruction)) {
                (Ok(c), Ok(i)) => Ok((c, i)),
                _ => Err(format!(
                    "chain {chain} instruction {instruction} is negative"
                )),
            };
        };
        let c = usize::try_from(chain)
            .ok()
            .filter(|&c| c < does.len())
            .ok_or_else(|| {
                format!(
                    "chain {chain} is not in method {name:?} ({} chains)",
                    does.len()
                )
            })?;
        let i = usize::try_from(instruction)
            .ok()
            .filter(|&i| i < does[c].len())
            .ok_or_else(|| {
                format!(
                    "instruction {instruction} is not in chain {c} of method {name:?} ({} instructions)",
                    does[c].len()
                )
            })?;
        Ok((c, i))
    }

    /// A profile event: a method-level span, an instruction's, or a
    /// delegate's own.
    fn profile(&mut self, r: usize, ei: usize, p: &crate::format::etdump::ProfileEvent<'_>) {
        let id = delegate_id(p.delegate_debug_id_int, p.delegate_debug_id_str);
        let name = p
            .name
            .map(|n| n.show().into_owned())
            .or_else(|| id.as_ref().map(|i| i.to_string()))
            .unwrap_or_default();
        let miss = |why: String| Unmatched {
            run: r,
            event: ei,
            kind: "profile",
            name: name.clone(),
            chain: i128::from(p.chain_index),
            instruction: i64::from(p.instruction_id),
            delegate_id: id.clone(),
            duration: p.duration(),
            why,
        };
        let Some(d) = p.duration() else {
            self.unmatched.push(miss(format!(
                "it ends (tick {}) before it starts (tick {})",
                p.end, p.start
            )));
            return;
        };
        if p.chain_index == -1 && id.is_none() {
            match self.method_events.iter_mut().find(|(n, _)| *n == name) {
                Some((_, ds)) => ds.push(d),
                None => self.method_events.push((name, vec![d])),
            }
            return;
        }
        let (c, i) = match self.locate(p.chain_index.into(), p.instruction_id.into()) {
            Ok(at) => at,
            Err(why) => {
                self.unmatched.push(miss(why));
                return;
            }
        };
        let Some(id) = id.clone() else {
            let names = self.per.entry((c, i)).or_default();
            match names.iter_mut().find(|(n, _, _)| *n == name) {
                Some((_, ds, rs)) => {
                    ds.push(d);
                    rs.push(r);
                }
                None => names.push((name, vec![d], vec![r])),
            }
            return;
        };
        let delegate = match self.method {
            None => None,
            Some((does, _)) => match does[c][i] {
                Does::Delegate { index, .. } => Some(index),
                _ => {
                    self.unmatched.push(miss(format!(
                        "a delegate's event, but instruction {i} of chain {c} calls no delegate"
                    )));
                    return;
                }
            },
        };
        match (self.delegate_events.iter_mut())
            .find(|x| x.chain == c && x.instruction == i && x.id == id)
        {
            Some(x) => x.durations.push(d),
            None => self.delegate_events.push(DelegateEvents {
                chain: c,
                instruction: i,
                delegate,
                id,
                durations: vec![d],
            }),
        }
    }

    /// A debug event: the values an instruction (or the method, at its
    /// end) logged.
    fn debug(&mut self, r: usize, ei: usize, dbg: &crate::format::etdump::DebugEvent<'_>) {
        let chain = i128::from(dbg.chain_index);
        let id = delegate_id(dbg.delegate_debug_id_int, dbg.delegate_debug_id_str);
        // All ones: a method output, which no instruction owns.
        let at = match dbg.chain_index {
            u64::MAX => None,
            _ => match self.locate(chain, dbg.instruction_id.into()) {
                Ok(at) => Some(at),
                Err(why) => {
                    self.unmatched.push(Unmatched {
                        run: r,
                        event: ei,
                        kind: "debug",
                        name: (dbg.name.map(|n| n.show().into_owned())).unwrap_or_default(),
                        chain,
                        instruction: dbg.instruction_id.into(),
                        delegate_id: id,
                        duration: None,
                        why,
                    });
                    return;
                }
            },
        };
        // Every value takes a position, a tensor or not.
        let count = self.positions.entry((r, at, id.clone())).or_insert(0);
        let position = *count;
        *count += 1;
        let (tensors, list) = match &dbg.value {
            Value::Tensor(t) => (std::slice::from_ref(t), false),
            Value::TensorList(ts) => (ts.as_slice(), true),
            _ => (&[][..], false),
        };
        for (k, t) in tensors.iter().enumerate() {
            self.logged.push(Logged {
                run: r,
                event: ei,
                at,
                delegate_id: id.clone(),
                position,
                of: 0,
                item: list.then_some(k),
                tensor: t.clone(),
            });
        }
    }

    /// Every instruction of the method (or every one recorded) with the
    /// event that times it, and the rest as gathered.
    fn finish(mut self) -> Collected {
        for l in &mut self.logged {
            l.of = (self.positions.get(&(l.run, l.at, l.delegate_id.clone())))
                .copied()
                .unwrap_or(0);
        }
        let shape: Vec<((usize, usize), Option<Does>)> = match self.method {
            Some((does, _)) => does
                .iter()
                .enumerate()
                .flat_map(|(c, chain)| {
                    chain
                        .iter()
                        .enumerate()
                        .map(move |(i, d)| ((c, i), Some(d.clone())))
                })
                .collect(),
            None => self.per.keys().map(|&k| (k, None)).collect(),
        };
        let mut instructions = Vec::new();
        for ((c, i), does) in shape {
            let names = self.per.remove(&(c, i)).unwrap_or_default();
            instructions.push(instruction(c, i, does, names));
        }
        (
            instructions,
            self.method_events,
            self.delegate_events,
            self.unmatched,
            self.logged,
        )
    }
}

/// Instruction `i` of chain `c`, timed by its outer event
/// (`OPERATOR_CALL`, `DELEGATE_CALL`, or the only one recorded), with
/// its kernel's own event; named by its events without a program.
fn instruction(c: usize, i: usize, does: Option<Does>, names: ByName) -> Instruction {
    let outer = names
        .iter()
        .position(|(n, _, _)| n == OPERATOR_CALL || n == DELEGATE_CALL)
        .or(if names.is_empty() { None } else { Some(0) });
    let kernel = names
        .iter()
        .enumerate()
        .find(|(k, _)| Some(*k) != outer)
        .map(|(_, (n, _, _))| n.clone());
    let (timed_by, durations, runs) = match outer {
        Some(k) => (
            Some(names[k].0.clone()),
            names[k].1.clone(),
            names[k].2.clone(),
        ),
        None => (None, Vec::new(), Vec::new()),
    };
    let does = does.unwrap_or_else(|| {
        Does::Recorded(
            kernel
                .clone()
                .or_else(|| timed_by.clone())
                .unwrap_or_default(),
        )
    });
    Instruction {
        chain: c,
        index: i,
        does,
        timed_by,
        kernel,
        durations,
        runs,
    }
}

/// The events of `profile` per instruction of `method` (what each
/// instruction of each chain does, and the method's name), or, without
/// one, per instruction recorded.
fn collect(profile: &ProfileFile<'_>, method: Method<'_>) -> Collected {
    let mut c = Collector::new(method);
    for (r, run) in profile.runs.iter().enumerate() {
        for (ei, e) in run.events.iter().enumerate() {
            match e {
                Event::Profile(p) => c.profile(r, ei, p),
                Event::Debug(d) => c.debug(r, ei, d),
                Event::Allocation(_) | Event::Empty => {}
            }
        }
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_as_numpy_does() {
        // numpy.percentile([1, 2, 3, 4], [50, 90]) == [2.5, 3.7]
        let s = Stats::of(&[4, 1, 3, 2]).unwrap();
        assert_eq!((s.min, s.max, s.calls, s.total), (1, 4, 4, 10));
        assert!((s.p50 - 2.5).abs() < 1e-12 && (s.p90 - 3.7).abs() < 1e-12);
        assert!((s.mean - 2.5).abs() < 1e-12);
        assert!(Stats::of(&[]).is_none());
        let one = Stats::of(&[7]).unwrap();
        assert_eq!((one.p50, one.p90), (7.0, 7.0));
    }
}
