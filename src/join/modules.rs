//! A profile joined with its program and the program's ETRecord: each
//! instruction's time put on the model module its graph nodes come from
//! (the innermost of the `nn_module_stack` Inspector reports), as time
//! per module, self and total, per run (`by-module.tsv`), and as folded
//! stacks for flame graphs (`modules.folded`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use super::etrecord::SourceRow;
use super::profile::Join;
use crate::meta::etrecord_graph::Module;

/// The modules an instruction runs in, outermost first, one per module
/// path (a stack may name one module under several keys): those every
/// one of its nodes with a module stack runs in, so that a delegate call
/// spanning several modules is put on the one holding them all.
fn stack_of(row: &SourceRow) -> Vec<Module> {
    let dedup = |stack: &[Module]| {
        let mut out: Vec<Module> = Vec::new();
        for m in stack {
            if out.last().is_none_or(|l| l.path != m.path) {
                out.push(m.clone());
            }
        }
        out
    };
    let mut stacks = (row.nodes.iter())
        .filter(|n| !n.module_stack.is_empty())
        .map(|n| dedup(&n.module_stack));
    let Some(mut common) = stacks.next() else {
        return Vec::new();
    };
    for s in stacks {
        let same = common
            .iter()
            .zip(&s)
            .take_while(|(a, b)| a.path == b.path)
            .count();
        common.truncate(same);
    }
    common
}

/// `stack` with a module for each prefix of a module path it lacks: a
/// container never called (a `ModuleList`'s `blocks` above `blocks.0`,
/// `encoder.layers`) is on no `nn_module_stack`, but holds the time of
/// what is in it. Its class is not recorded: it is left empty.
fn with_prefixes(stack: Vec<Module>) -> Vec<Module> {
    let mut out: Vec<Module> = Vec::with_capacity(stack.len());
    for m in stack {
        let parent = out.last().map_or(String::new(), |p| p.path.clone());
        let mut missing = Vec::new();
        let mut path = m.path.as_str();
        while let Some((prefix, _)) = path.rsplit_once('.') {
            let under = parent.is_empty() || prefix.starts_with(&format!("{parent}."));
            if prefix == parent || !under {
                break;
            }
            missing.push(prefix);
            path = prefix;
        }
        for p in missing.into_iter().rev() {
            out.push(Module {
                key: String::new(),
                path: p.to_owned(),
                class: String::new(),
            });
        }
        out.push(m);
    }
    out
}

/// The module stacks of the method's instructions, by instruction index
/// (the debug-handle map, as Inspector, keys instructions by index alone),
/// each with the containers of [`with_prefixes`].
pub fn stacks(rows: &[SourceRow]) -> HashMap<usize, Vec<Module>> {
    rows.iter()
        .filter(|r| r.kind == "instruction")
        .filter_map(|r| Some((r.id.parse().ok()?, with_prefixes(stack_of(r)))))
        .filter(|(_, s): &(usize, Vec<Module>)| !s.is_empty())
        .collect()
}

/// A module's path as `by-module.tsv` shows it: `.` for the model itself.
fn shown(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

/// The last part of a dotted class name (`Linear`).
fn short(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

/// Time of one module in one run.
#[derive(Debug, Default, Clone)]
struct ModuleTime {
    class: String,
    instructions: usize,
    self_ticks: u64,
    total_ticks: u64,
}

/// `by-module.tsv`: per run and module path, the instructions whose
/// innermost module it is, their time (`self`), and the time of every
/// instruction inside it (`total`); instructions the ETRecord places in
/// no module are under `(none)`. Modules in path order.
pub fn by_module_tsv(j: &Join, stacks: &HashMap<usize, Vec<Module>>) -> String {
    let mut per: BTreeMap<(usize, String), ModuleTime> = BTreeMap::new();
    for i in &j.instructions {
        let stack = stacks.get(&i.index);
        let inner = stack
            .and_then(|s| s.last())
            .map_or("(none)".to_owned(), |m| shown(&m.path).to_owned());
        // Counted once per run the instruction was timed in.
        let mut counted: Vec<usize> = Vec::new();
        for (&d, &run) in i.durations.iter().zip(&i.runs) {
            let own = per.entry((run, inner.clone())).or_default();
            own.self_ticks = own.self_ticks.saturating_add(d);
            if !counted.contains(&run) {
                own.instructions += 1;
                counted.push(run);
            }
            match stack {
                Some(s) => {
                    for m in s {
                        let t = per.entry((run, shown(&m.path).to_owned())).or_default();
                        t.class.clone_from(&m.class);
                        t.total_ticks = t.total_ticks.saturating_add(d);
                    }
                }
                None => own.total_ticks = own.total_ticks.saturating_add(d),
            }
        }
    }
    let mut o = String::from(
        "run\tmodule\tclass\tinstructions\tself_ticks\ttotal_ticks\tself_ms\ttotal_ms\n",
    );
    for ((run, path), t) in per {
        let _ = writeln!(
            o,
            "{run}\t{path}\t{}\t{}\t{}\t{}\t{:.6}\t{:.6}",
            t.class,
            t.instructions,
            t.self_ticks,
            t.total_ticks,
            t.self_ticks as f64 / 1e6,
            t.total_ticks as f64 / 1e6
        );
    }
    o
}

/// `modules.folded`: one line per distinct stack, `method;module;…;operator
/// ticks`, summed over every run, as flamegraph.pl, inferno and speedscope
/// read them; a delegate call's own events are frames under it. The model is framed by its class (`MLP`), a submodule by
/// its path and class (`l1 (Linear)`).
pub fn folded(j: &Join, stacks: &HashMap<usize, Vec<Module>>) -> String {
    // `;` separates frames and a line is one stack.
    let frame = |s: &str| s.replace(';', ",").replace(['\t', '\n'], " ");
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for i in &j.instructions {
        let total = i.durations.iter().fold(0u64, |a, &x| a.saturating_add(x));
        if total == 0 {
            continue;
        }
        let mut frames = vec![frame(&j.method)];
        for m in stacks.get(&i.index).map_or(&[][..], Vec::as_slice) {
            frames.push(if m.path.is_empty() {
                frame(short(&m.class))
            } else if m.class.is_empty() {
                frame(&m.path)
            } else {
                format!("{} ({})", frame(&m.path), frame(short(&m.class)))
            });
        }
        frames.push(frame(&i.does.label()));
        // A delegate call's own events (XNNPACK's operators) are frames
        // under it, each with its time; the call keeps the rest.
        let mut own = total;
        let mut stacks: Vec<(String, u64)> = Vec::new();
        for e in
            (j.delegate_events.iter()).filter(|e| e.chain == i.chain && e.instruction == i.index)
        {
            let ticks = e.durations.iter().fold(0u64, |a, &x| a.saturating_add(x));
            own = own.saturating_sub(ticks);
            stacks.push((
                format!("{};{}", frames.join(";"), frame(&e.id.to_string())),
                ticks,
            ));
        }
        stacks.insert(0, (frames.join(";"), own));
        for (key, ticks) in stacks {
            if ticks == 0 {
                continue;
            }
            let n = lines.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                0
            });
            *n = n.saturating_add(ticks);
        }
    }
    let mut o = String::new();
    for k in order {
        let _ = writeln!(o, "{k} {}", lines[&k]);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(path: &str, class: &str) -> Module {
        Module {
            key: path.to_owned(),
            path: path.to_owned(),
            class: class.to_owned(),
        }
    }

    #[test]
    fn containers_never_called_get_a_module_of_their_own() {
        let stack = vec![
            m("", "GPT"),
            m("blocks.0", "Block"),
            m("blocks.0.attn", "Attention"),
        ];
        let nested = vec![m("", "GPT"), m("encoder.layers.1.mlp", "MLP")];
        let paths: Vec<(String, String)> = (with_prefixes(stack).into_iter())
            .chain(with_prefixes(nested))
            .map(|m| (m.path, m.class))
            .collect();
        let want = [
            ("", "GPT"),
            ("blocks", ""),
            ("blocks.0", "Block"),
            ("blocks.0.attn", "Attention"),
            ("", "GPT"),
            ("encoder", ""),
            ("encoder.layers", ""),
            ("encoder.layers.1", ""),
            ("encoder.layers.1.mlp", "MLP"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect();
        assert_eq!(paths, want);
    }
}
