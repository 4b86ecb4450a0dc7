//! `diff a.etdp b.etdp [--program P]`: two profiles of a program compared
//! as a speed report. Per instruction and per operator (each delegate
//! backend as one), the mean time per call in A (the baseline) and B, the
//! difference and the ratio B/A; a row *exceeds* the threshold when B is
//! slower than A by more than it. The method's `Method::execute` mean is
//! the first row.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::escape::escape;
use crate::format::{ProfileFile, ProgramFile};
use crate::join::profile::{self as profile_join, Join, METHOD_EXECUTE, Stats};

/// The threshold `diff` uses unless told: 10 %.
pub const DEFAULT_THRESHOLD: f64 = 0.10;

/// Two profiles compared.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileDiff {
    /// The baseline, as named.
    pub a: String,
    /// The other, as named.
    pub b: String,
    /// The program joined with both, when given.
    pub program: Option<String>,
    /// The method joined, when the program is given.
    pub method: Option<String>,
    /// How much slower (a fraction: 0.1 is 10 %) a row may be.
    pub threshold: f64,
    /// Whether any row exceeds the threshold.
    pub exceeded: bool,
    /// `Method::execute`, mean per execution.
    pub method_execute: Option<TimeDelta>,
    /// Per instruction (chain and index).
    pub instructions: Vec<TimeDelta>,
    /// Per operator.
    pub operators: Vec<TimeDelta>,
    /// Events of each side that match no instruction of the program.
    pub unmatched: (usize, usize),
}

/// One row: mean time per call on each side.
#[derive(Debug, Clone, Serialize)]
pub struct TimeDelta {
    /// `chain:index` for an instruction, the operator otherwise.
    pub key: String,
    /// What runs there.
    pub name: String,
    /// Calls in A.
    pub calls_a: usize,
    /// Calls in B.
    pub calls_b: usize,
    /// Mean per call in A, ms (a tick taken as 1 ns).
    pub mean_ms_a: Option<f64>,
    /// Mean per call in B, ms.
    pub mean_ms_b: Option<f64>,
    /// B − A, ms.
    pub delta_ms: Option<f64>,
    /// B / A (absent when A is 0 or either is missing).
    pub ratio: Option<f64>,
    /// Whether B is slower than A by more than the threshold.
    pub exceeds: bool,
}

impl TimeDelta {
    fn new(key: String, name: String, a: &[u64], b: &[u64], threshold: f64) -> TimeDelta {
        let (sa, sb) = (Stats::of(a), Stats::of(b));
        let mean = |s: Option<Stats>| s.map(|s| s.mean / 1e6);
        let (ma, mb) = (mean(sa), mean(sb));
        let delta = ma.zip(mb).map(|(a, b)| b - a);
        let ratio = ma.zip(mb).filter(|(a, _)| *a > 0.0).map(|(a, b)| b / a);
        // From 0 to more than 0 is a slowdown beyond any threshold.
        let exceeds = match (ma, mb) {
            (Some(a), Some(b)) if a > 0.0 => b / a - 1.0 > threshold,
            (Some(_), Some(b)) => b > 0.0,
            _ => false,
        };
        TimeDelta {
            key,
            name,
            calls_a: a.len(),
            calls_b: b.len(),
            mean_ms_a: ma,
            mean_ms_b: mb,
            delta_ms: delta,
            ratio,
            exceeds,
        }
    }
}

fn joined(p: &ProfileFile<'_>, program: Option<&ProgramFile<'_>>) -> Join {
    program
        .and_then(|prog| profile_join::join(prog, p))
        .unwrap_or_else(|| profile_join::without_program(p))
}

/// Compares `a` (the baseline) with `b`, joined with `program` when
/// given; `threshold` is a fraction (0.1 for 10 %).
pub fn compare(
    (a, b): (&ProfileFile<'_>, &ProfileFile<'_>),
    (na, nb): (&str, &str),
    program: Option<(&str, &ProgramFile<'_>)>,
    threshold: f64,
) -> ProfileDiff {
    let ja = joined(a, program.map(|p| p.1));
    let jb = joined(b, program.map(|p| p.1));
    let execute = |j: &Join| {
        j.method_events
            .iter()
            .find(|(n, _)| n == METHOD_EXECUTE)
            .map(|(_, d)| d.clone())
    };
    let method_execute = match (execute(&ja), execute(&jb)) {
        (None, None) => None,
        (x, y) => Some(TimeDelta::new(
            "method".to_owned(),
            METHOD_EXECUTE.to_owned(),
            &x.unwrap_or_default(),
            &y.unwrap_or_default(),
            threshold,
        )),
    };
    // Instructions by (chain, index), named after either side.
    // (name, A's durations, B's durations) per (chain, index).
    type Row = (String, Vec<u64>, Vec<u64>);
    let mut rows: BTreeMap<(usize, usize), Row> = BTreeMap::new();
    for (side, j) in [&ja, &jb].into_iter().enumerate() {
        for i in &j.instructions {
            if program.is_none() && i.durations.is_empty() {
                continue;
            }
            let row = rows
                .entry((i.chain, i.index))
                .or_insert_with(|| (i.does.label(), Vec::new(), Vec::new()));
            if side == 0 {
                row.1.clone_from(&i.durations);
            } else {
                row.2.clone_from(&i.durations);
            }
        }
    }
    let instructions: Vec<TimeDelta> = rows
        .into_iter()
        .map(|((c, i), (name, x, y))| TimeDelta::new(format!("{c}:{i}"), name, &x, &y, threshold))
        .collect();
    let mut ops: BTreeMap<String, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for (side, j) in [&ja, &jb].into_iter().enumerate() {
        for (label, _, d) in j.by_operator() {
            let row = ops.entry(label).or_default();
            if side == 0 {
                row.0 = d;
            } else {
                row.1 = d;
            }
        }
    }
    let operators: Vec<TimeDelta> = ops
        .into_iter()
        .filter(|(_, (x, y))| !x.is_empty() || !y.is_empty())
        .map(|(op, (x, y))| TimeDelta::new(op.clone(), op, &x, &y, threshold))
        .collect();
    let exceeded = method_execute.iter().any(|r| r.exceeds)
        || instructions.iter().any(|r| r.exceeds)
        || operators.iter().any(|r| r.exceeds);
    ProfileDiff {
        a: na.to_owned(),
        b: nb.to_owned(),
        program: program.map(|p| p.0.to_owned()),
        method: program.map(|_| ja.method.clone()),
        threshold,
        exceeded,
        method_execute,
        instructions,
        operators,
        unmatched: (ja.unmatched.len(), jb.unmatched.len()),
    }
}

fn figure(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{x:.6}"))
}

fn row(o: &mut String, r: &TimeDelta) {
    let delta = r
        .delta_ms
        .map_or_else(|| "-".to_owned(), |d| format!("{d:+.6}"));
    let ratio = r
        .ratio
        .map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"));
    // An operator's row is keyed by its name.
    let label = if r.key == r.name {
        format!("{:<49}", escape(&r.name))
    } else {
        format!("{:<8} {:<40}", escape(&r.key), escape(&r.name))
    };
    let _ = writeln!(
        o,
        "  {label} {:>10} {:>10} {:>11} {:>7}{}",
        figure(r.mean_ms_a),
        figure(r.mean_ms_b),
        delta,
        ratio,
        if r.exceeds { "  SLOWER" } else { "" }
    );
}

impl ProfileDiff {
    /// The report as text.
    pub fn text(&self) -> String {
        let mut o = format!("--- {}\n+++ {}\n", escape(&self.a), escape(&self.b));
        if let (Some(p), Some(m)) = (&self.program, &self.method) {
            let _ = writeln!(o, "program: {} (method {})", escape(p), escape(m));
        }
        let _ = writeln!(
            o,
            "mean time per call in ms (a tick taken as 1 ns); SLOWER: B more than {}% slower than A",
            self.threshold * 100.0
        );
        let header = |o: &mut String, what: &str| {
            let _ = writeln!(
                o,
                "\n{what}:\n  {:<8} {:<40} {:>10} {:>10} {:>11} {:>7}",
                "", "", "A", "B", "B - A", "B / A"
            );
        };
        if let Some(m) = &self.method_execute {
            header(&mut o, "method");
            row(&mut o, m);
        }
        header(&mut o, "instructions");
        for r in &self.instructions {
            row(&mut o, r);
        }
        header(&mut o, "operators");
        for r in &self.operators {
            row(&mut o, r);
        }
        if self.unmatched != (0, 0) {
            let _ = writeln!(
                o,
                "\nevents matching no instruction: {} in A, {} in B",
                self.unmatched.0, self.unmatched.1
            );
        }
        let slower = self
            .method_execute
            .iter()
            .chain(&self.instructions)
            .chain(&self.operators)
            .filter(|r| r.exceeds)
            .count();
        let _ = writeln!(
            o,
            "\n{slower} row(s) slower by more than {}%",
            self.threshold * 100.0
        );
        o
    }
}
