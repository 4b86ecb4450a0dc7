//! `methods/<m>/profile/` of a program shown with its profile (an ETDump
//! given with `--profile` or found beside it): the profile's events joined
//! with the method's instructions ([`crate::meta::profile_join`]) as
//! tables, a summary and an annotated `code.txt`.

use std::sync::Arc;

use serde_json::json;

use super::{Builder, Dir, Origin};
use crate::format::etdump::{ProfileFile, TICK};
use crate::format::{MethodInfo, ProgramFile};
use crate::meta::profile_join::{self, Join, Stats};
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
    /// are `dirs`.
    pub(super) fn method_profile(
        &mut self,
        mdir: &mut Dir,
        join: &Join,
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
                "tick": TICK,
            }),
        );
        self.generated(
            &mut dir,
            "ops.tsv",
            profile_tsv::ops(join).into_bytes().into(),
        );
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
}
