//! `methods/<m>/profile/` of a program shown with its profile (an ETDump
//! given with `--profile` or found beside it): the profile's events joined
//! with the method's instructions ([`crate::join::profile`]) as
//! tables, a summary and an annotated `code.txt`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Builder, Dir, Origin};
use crate::format::etdump::{ProfileFile, TICK};
use crate::format::etrecord::EtRecordFile;
use crate::format::{MethodInfo, ProgramFile, scalar};
use crate::join::profile::{self as profile_join, DelegateId, Does, Join, Logged, Stats};
use crate::join::{etrecord, modules, numeric_gap};
use crate::tree::file_names::{encode, padded};
use crate::tree::render::{code_txt, profile_tsv};

/// The profile attached to the programs shown: its source and name.
#[derive(Debug, Clone)]
pub struct AttachedProfile {
    /// The ETDump's source.
    pub source: crate::tree::SourceId,
    /// Its base name.
    pub name: String,
}

impl Builder {
    /// The attached profile joined with `p`, or `None` without one (or
    /// when it no longer parses, which the tree's warnings say).
    pub(super) fn profile_join(&mut self, file_name: &str, p: &ProgramFile<'_>) -> Option<Join> {
        let attached = self.profile.clone()?;
        let bytes = self.source_bytes.get(&attached.source)?.clone();
        let profile = match ProfileFile::parse((*bytes).as_ref()) {
            Ok(profile) => profile,
            Err(e) => {
                self.warnings
                    .push(format!("{file_name}: profile {}: {e}", attached.name));
                return None;
            }
        };
        let join = profile_join::join(p, &profile)?;
        if let Some(why) = join.disagreement() {
            let why = format!(
                "profile {}: not joined: it is not a profile of {file_name}: {why}",
                attached.name
            );
            let dir = format!("methods/{}/profile/", encode(&join.method));
            self.warnings
                .push(format!("{file_name}: {why}; not made: {dir}"));
            self.not_made.push(format!("{dir}: {why}"));
            return None;
        }
        if let Some(first) = join.unmatched.first() {
            self.warnings.push(format!(
                "{file_name}: profile {}: {} events match no instruction of method {:?} \
                 (listed in methods/{}/profile/unmatched.tsv); the first: run {} event {}: {}",
                attached.name,
                join.unmatched.len(),
                join.method,
                crate::tree::file_names::encode(&join.method),
                first.run,
                first.event,
                first.why
            ));
        }
        Some(join)
    }

    /// `profile/` of method `m` (index `mi`), whose delegates' directories
    /// are `dirs`, with the ETRecord's `rows` of the method when it has
    /// been joined with it.
    pub(super) fn method_profile(
        &mut self,
        mdir: &mut Dir,
        (join, rows): (&Join, Option<Arc<Vec<etrecord::SourceRow>>>),
        (p, m, mi): (&ProgramFile<'_>, &MethodInfo<'_>, usize),
        dirs: &[String],
        origin: Origin,
    ) {
        let name = self.profile.as_ref().map(|a| a.name.clone());
        let mut dir = self.subdir(mdir, "profile");
        let total = join.method_total();
        let method_events: Vec<_> = join
            .method_events
            .iter()
            .map(|(n, d)| {
                let s = Stats::of(d);
                json!({
                    "name": n,
                    "calls": d.len(),
                    "total_ticks": s.map(|s| s.total),
                    "mean_ms": s.map(|s| s.mean / 1e6),
                    "min_ms": s.map(|s| s.min as f64 / 1e6),
                    "max_ms": s.map(|s| s.max as f64 / 1e6),
                })
            })
            .collect();
        let recorded = join
            .instructions
            .iter()
            .filter(|i| !i.durations.is_empty())
            .count();
        self.json(
            &mut dir,
            "summary.json",
            &json!({
                "profile": name,
                "method": join.method,
                "method_chosen_because": join.chosen_because,
                "method_total_ticks": total,
                "method_total_ms": total as f64 / 1e6,
                "method_total_is": join.method_total_source(),
                "instructions": join.instructions.len(),
                "instructions_recorded": recorded,
                "instructions_total_ticks": join.instructions_total(),
                "method_events": method_events,
                "delegate_events": join.delegate_events.len(),
                "unmatched_events": join.unmatched.len(),
                "logged_tensors": join.logged.len(),
                "tick": TICK,
            }),
        );
        let sources = rows
            .as_deref()
            .map(|rows| etrecord::instruction_sources(rows))
            .unwrap_or_default();
        self.generated(
            &mut dir,
            "ops.tsv",
            profile_tsv::ops(join, &sources).into_bytes().into(),
        );
        if let Some(rows) = &rows {
            let stacks = modules::stacks(rows);
            self.generated(
                &mut dir,
                "by-module.tsv",
                modules::by_module_tsv(join, &stacks).into_bytes().into(),
            );
            self.generated(
                &mut dir,
                "modules.folded",
                modules::folded(join, &stacks).into_bytes().into(),
            );
        }
        self.generated(
            &mut dir,
            "by-operator.tsv",
            profile_tsv::by_operator(join).into_bytes().into(),
        );
        self.generated(
            &mut dir,
            "unmatched.tsv",
            profile_tsv::unmatched(join).into_bytes().into(),
        );
        self.logged_outputs(&mut dir, join, m);
        // Each delegate with events of its own.
        let mut delegates: Vec<usize> = join
            .delegate_events
            .iter()
            .filter_map(|e| e.delegate)
            .collect();
        delegates.sort_unstable();
        delegates.dedup();
        if !delegates.is_empty() {
            let mut ddir = self.subdir(&mut dir, "delegates");
            for d in delegates {
                let Some(pos) = m.delegates.iter().position(|x| x.index == d) else {
                    continue;
                };
                let del = &m.delegates[pos];
                let events = profile_tsv::delegate_events(join, d);
                let ids = profile_tsv::string_ids(&events);
                let matched = match (del.processed, del.id.as_str()) {
                    (Some(span), Some(backend)) if !ids.is_empty() => {
                        crate::delegate::profile_nodes(backend, span.bytes(p.bytes), &ids)
                    }
                    _ => None,
                };
                let dname = dirs.get(pos).cloned().unwrap_or_else(|| d.to_string());
                let mut one = self.subdir(&mut ddir, &dname);
                self.generated(
                    &mut one,
                    "nodes.tsv",
                    profile_tsv::nodes(join, d, matched.as_ref())
                        .into_bytes()
                        .into(),
                );
            }
        }
        let notes = Arc::new(profile_tsv::notes(join));
        let dirs = dirs.to_vec();
        self.lazy_program(
            &mut dir,
            "code.txt",
            origin,
            p.bytes.len(),
            move |p, out| match p.methods.get(mi) {
                Some(m) => out.write_all(
                    profile_tsv::annotate(&code_txt::render_with_dirs(m.plan, &dirs), &notes)
                        .as_bytes(),
                ),
                None => Ok(()),
            },
        );
    }

    /// `outputs/`: each tensor the profile's debug events logged, in a
    /// directory per run data block: `<instruction>-<what it does>.<k>.npy`
    /// for the k-th value an instruction logged (`<chain>.<instruction>`
    /// when the method has several chains; `.<j>` after `k` for the j-th
    /// tensor of a list; `.<debug id>` before `k` for a value a delegate
    /// logged itself), `output.<k>.npy` for the method's k-th output, and
    /// `.ERROR.txt` in place of a tensor the buffer does not hold. Its
    /// `index.json` gives each one's run, event, instruction, delegate
    /// debug id, position, type and shape, and the value of the plan it
    /// is, where the instruction's arguments say so and agree. Without the
    /// debug buffer, `index.json` alone says why there are no files.
    fn logged_outputs(&mut self, dir: &mut Dir, join: &Join, m: &MethodInfo<'_>) {
        if join.logged.is_empty() {
            return;
        }
        let buffer =
            (self.profile.as_ref()).and_then(|a| self.debug_buffers.get(&a.source).copied());
        let mut odir = self.subdir(dir, "outputs");
        // Named as the ETDump's own `runs/<n>`.
        let runs_max = join.runs.saturating_sub(1) as u64;
        let does: HashMap<(usize, usize), &Does> = (join.instructions.iter())
            .map(|i| ((i.chain, i.index), &i.does))
            .collect();
        let mut last_in_chain: HashMap<usize, usize> = HashMap::new();
        for i in &join.instructions {
            let last = last_in_chain.entry(i.chain).or_default();
            *last = (*last).max(i.index);
        }
        let chains = last_in_chain.len();
        let mut runs: BTreeMap<usize, Dir> = BTreeMap::new();
        let mut index = Vec::with_capacity(join.logged.len());
        for l in &join.logged {
            let what = l.at.and_then(|at| does.get(&at).copied());
            let mut stem = match (l.at, what) {
                (Some((c, i)), Some(d)) => {
                    let chain = if chains > 1 {
                        format!("{c}.")
                    } else {
                        String::new()
                    };
                    let width = last_in_chain.get(&c).copied().unwrap_or(0) as u64;
                    let label = encode(file_label(d));
                    format!("{chain}{}-{label}", padded(i as u64, width))
                }
                _ => "output".to_owned(),
            };
            if let Some(id) = &l.delegate_id {
                stem = format!("{stem}.{}", encode(id.to_string()));
            }
            stem = format!("{stem}.{}", l.position);
            if let Some(j) = l.item {
                stem = format!("{stem}.{j}");
            }
            let file = match buffer {
                Some(buffer) => {
                    let run = padded(l.run as u64, runs_max);
                    let rdir = (runs.entry(l.run)).or_insert_with(|| self.subdir(&mut odir, &run));
                    (self.debug_tensor(rdir, &stem, buffer, &l.tensor))
                        .map(|name| format!("{run}/{name}"))
                }
                None => Err(super::profile::NO_DEBUG_BUFFER.to_owned()),
            };
            let value = logged_value(m, l);
            let (file, missing) = match file {
                Ok(f) => (Some(f), None),
                Err(why) => (None, Some(why)),
            };
            index.push(json!({
                "run": l.run,
                "event": l.event,
                "chain": l.at.map(|a| a.0),
                "instruction": l.at.map(|a| a.1),
                "operator": what.map(Does::label),
                "delegate_debug_id": l.delegate_id.as_ref().map(|d| match d {
                    DelegateId::Int(i) => json!(i),
                    DelegateId::Str(s) => json!(s),
                }),
                "position": l.position,
                "item": l.item,
                "value": value,
                "scalar_type": scalar::name(l.tensor.scalar_type),
                "sizes": l.tensor.sizes,
                "file": file,
                "missing": missing,
            }));
        }
        if buffer.is_none() {
            let profile = self
                .profile
                .as_ref()
                .map(|a| a.name.clone())
                .unwrap_or_default();
            let why = format!(
                "profile {profile}: its runs logged {} tensors, and {}",
                join.logged.len(),
                super::profile::NO_DEBUG_BUFFER
            );
            let method = encode(&join.method);
            self.warnings.push(format!(
                "{why}: methods/{method}/profile/outputs/ holds index.json alone, and no compare.tsv \
                 (give the buffer with --debug-buffer)"
            ));
            (self.not_made).push(format!(
                "methods/{method}/profile/outputs/<run>/*.npy, compare.tsv: {why}"
            ));
        }
        self.json(&mut odir, "index.json", &Value::Array(index));
        if let Some((buffer, _)) = buffer {
            self.output_comparison(&mut odir, join, buffer);
        }
    }

    /// `outputs/compare.tsv`, given an ETRecord with reference outputs:
    /// each method output the runs logged against its reference
    /// ([`numeric_gap`]), computed from the debug buffer `buffer` and the
    /// ETRecord when first read.
    fn output_comparison(&mut self, odir: &mut Dir, join: &Join, buffer: crate::tree::SourceId) {
        let Some(etrecord) = (self.etrecord).and_then(|e| self.source_bytes.get(&e).cloned())
        else {
            return;
        };
        let Ok(r) = EtRecordFile::parse((*etrecord).as_ref()) else {
            return;
        };
        let Some(Ok(references)) = &r.reference_outputs else {
            return;
        };
        let bundled: Vec<i32> = (self.profile.as_ref())
            .and_then(|a| self.source_bytes.get(&a.source))
            .and_then(|b| ProfileFile::parse((**b).as_ref()).ok())
            .map(|p| p.runs.iter().map(|r| r.bundled_input_index).collect())
            .unwrap_or_default();
        let pairs = numeric_gap::pairs(join, &references.value, &bundled);
        if pairs.is_empty() {
            return;
        }
        self.lazy(
            odir,
            "compare.tsv",
            buffer,
            Box::new(move |bytes, out| {
                out.write_all(
                    numeric_gap::compare_tsv(&pairs, (*etrecord).as_ref(), bytes).as_bytes(),
                )
            }),
        );
    }
}

/// What an instruction does, for a file name: its operator
/// (`aten::addmm.out`), `delegate-<index>-<backend>`, or what else it does.
fn file_label(d: &Does) -> String {
    match d {
        Does::Kernel(op) | Does::Recorded(op) => op.clone(),
        Does::Delegate { index, backend } => format!("delegate-{index}-{backend}"),
        Does::Other(what) => (*what).to_owned(),
    }
}

/// The value of the plan a logged tensor is: for a delegate call the
/// argument at its position (the runtime logs every argument, in order),
/// for a kernel call the out argument at its position (the runtime logs
/// the call's last arguments, its outputs), for the method the output at
/// its position, and within a list the list's item; `None` for a value a
/// delegate logged itself, and unless the value found is a tensor of the
/// same type and sizes.
fn logged_value(m: &MethodInfo<'_>, l: &Logged) -> Option<usize> {
    fn at<'a, T: flatbuffers::Follow<'a> + 'a>(
        v: Option<flatbuffers::Vector<'a, T>>,
        i: usize,
    ) -> Option<T::Inner> {
        v.filter(|v| i < v.len()).map(|v| v.get(i))
    }
    if l.delegate_id.is_some() {
        return None;
    }
    let plan = m.plan;
    let id = match l.at {
        None => at(plan.outputs(), l.position)?,
        Some((c, i)) => {
            let ins = at(at(plan.chains(), c)?.instructions(), i)?;
            if let Some(d) = ins.instr_args_as_delegate_call() {
                at(d.args(), l.position)?
            } else if let Some(k) = ins.instr_args_as_kernel_call() {
                let args = k.args()?;
                let first_out = args.len().checked_sub(l.of)?;
                at(Some(args), first_out + l.position)?
            } else {
                return None;
            }
        }
    };
    let mut value = at(plan.values(), usize::try_from(id).ok()?)?;
    let mut id = usize::try_from(id).ok()?;
    if let Some(j) = l.item {
        let item = at(value.val_as_tensor_list()?.items(), j)?;
        id = usize::try_from(item).ok()?;
        value = at(plan.values(), id)?;
    }
    let t = value.val_as_tensor()?;
    let sizes = t
        .sizes()
        .map(|s| s.iter().map(i64::from).collect::<Vec<_>>());
    let agrees =
        l.tensor.scalar_type == t.scalar_type() && sizes.is_some_and(|s| s == l.tensor.sizes);
    agrees.then_some(id)
}
