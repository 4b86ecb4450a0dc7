//! The diff report as text, and as `--stat`.

use std::fmt::Write;

use super::{Changed, Method, PlanChange, Ref, Report, Tensors};
use crate::escape::escape;

fn place(r: &Ref) -> String {
    let mut s = escape(&r.path).into_owned();
    if s.is_empty() {
        s = escape(&r.name).into_owned();
    }
    if !r.aliases.is_empty() {
        let aliases: Vec<String> = r.aliases.iter().map(|a| escape(a).into_owned()).collect();
        let _ = write!(s, " (also {})", aliases.join(", "));
    }
    s
}

fn shape(r: &Ref) -> String {
    match (&r.scalar_type, &r.sizes) {
        (Some(t), Some(s)) => format!("{t} {s:?}"),
        _ => format!("{} bytes", r.nbytes),
    }
}

fn changed(o: &mut String, scope: &str, c: &Changed) {
    let _ = write!(o, "{scope}tensor changed: {}", place(&c.a));
    if let Some(b) = &c.b_path {
        let _ = write!(o, " -> {}", escape(b));
    }
    if let Some((a, b)) = &c.retyped {
        let _ = write!(o, ": type {a} -> {b}");
    }
    if let Some((a, b)) = &c.reshaped {
        let _ = write!(o, ": shape {a:?} -> {b:?}");
    }
    if let Some(e) = &c.elements {
        let _ = write!(o, ": {} of {} elements differ", e.differing, e.elements);
        if let (Some(abs), Some(at)) = (e.max_abs, &e.at) {
            let _ = write!(
                o,
                "; max abs diff {abs} at {:?} ({} vs {})",
                at.index, at.a, at.b
            );
        }
        if let Some(rel) = e.max_rel {
            let _ = write!(o, "; max rel diff {rel}");
        }
        if let Some(mean) = e.mean_abs {
            let _ = write!(o, "; mean abs diff {mean}");
        }
        if e.nan_a + e.nan_b > 0 {
            let _ = write!(o, "; NaN: {} in A, {} in B", e.nan_a, e.nan_b);
        }
        if e.nonfinite > 0 {
            let _ = write!(o, "; {} differences involve NaN or infinity", e.nonfinite);
        }
    }
    if !c.used_by.is_empty() {
        let users: Vec<String> = c.used_by.iter().map(|u| escape(u).into_owned()).collect();
        let _ = write!(o, "; used by {}", users.join(", "));
    }
    if let Some(b) = &c.bytes {
        let _ = write!(
            o,
            ": {} of {} bytes differ",
            b.differing,
            b.sizes.0.min(b.sizes.1)
        );
        if let Some(first) = b.first {
            let _ = write!(o, ", the first at {first}");
        }
        if b.sizes.0 != b.sizes.1 {
            let _ = write!(o, "; size {} -> {}", b.sizes.0, b.sizes.1);
        }
    }
    o.push('\n');
}

/// The moved, changed, added and removed tensors of `t`, a line each,
/// each line starting with `scope`.
pub(super) fn tensors(o: &mut String, scope: &str, t: &Tensors) {
    for m in &t.moved {
        let _ = writeln!(o, "{scope}tensor moved: {} -> {}", place(&m.a), place(&m.b));
    }
    for c in &t.changed {
        changed(o, scope, c);
    }
    for r in &t.added {
        let _ = writeln!(o, "{scope}tensor added: {} ({})", place(r), shape(r));
    }
    for r in &t.removed {
        let _ = writeln!(o, "{scope}tensor removed: {} ({})", place(r), shape(r));
    }
}

fn method(o: &mut String, name: &str, m: &Method) {
    let scope = format!("method {}: ", escape(name));
    // The documented order: io, instructions, memory, delegates, tensors.
    let plan = |o: &mut String, changes: &Option<Vec<PlanChange>>| {
        for c in changes.iter().flatten() {
            let _ = writeln!(o, "{scope}{} {}: {} -> {}", c.at, c.field, c.a, c.b);
        }
    };
    plan(o, &m.io);
    if let Some(i) = &m.instructions {
        for (op, (a, b)) in &i.counts {
            let _ = writeln!(o, "{scope}{} calls {a} -> {b}", escape(op));
        }
        o.push_str(&i.unified);
    }
    plan(o, &m.memory);
    for d in m.delegates.iter().flatten() {
        let id = |x: &Option<String>| {
            x.as_deref()
                .map_or("none".to_owned(), |s| escape(s).into_owned())
        };
        let _ = write!(o, "{scope}delegate {}", d.index);
        if d.backend.0 != d.backend.1 {
            let _ = write!(o, ": backend {} -> {}", id(&d.backend.0), id(&d.backend.1));
        } else {
            let _ = write!(o, " {}", id(&d.backend.0));
        }
        for s in &d.compile_specs {
            let _ = write!(
                o,
                "; compile spec {}: {} -> {}",
                escape(&s.key),
                id(&s.a),
                id(&s.b)
            );
        }
        if let Some((a, b)) = d.payload {
            let _ = write!(o, "; payload differs ({a} -> {b} bytes)");
        }
        o.push('\n');
        for h in &d.header {
            let _ = writeln!(
                o,
                "{scope}  header {}: {} -> {}",
                escape(&h.key),
                id(&h.a),
                id(&h.b)
            );
        }
        for x in &d.artifacts {
            let size = |s: Option<u64>| s.map_or("none".to_owned(), |n| format!("{n} bytes"));
            let _ = writeln!(
                o,
                "{scope}  {}: {} -> {}, bytes {}",
                escape(&x.name),
                size(x.size.0),
                size(x.size.1),
                if x.equal { "equal" } else { "differ" }
            );
        }
        if let Some(nodes) = &d.nodes {
            o.push_str(nodes);
        }
    }
    if let Some(t) = &m.tensors {
        tensors(o, &scope, t);
    }
}

impl Report {
    /// The report as lines a person reads, section by section.
    pub fn text(&self) -> String {
        let mut o = String::new();
        for f in self.file.iter().flatten() {
            let _ = writeln!(o, "file: {} {} -> {}", f.field, f.a, f.b);
        }
        for m in self.methods.added.iter().flatten() {
            let _ = writeln!(o, "method added: {}", escape(m));
        }
        for m in self.methods.removed.iter().flatten() {
            let _ = writeln!(o, "method removed: {}", escape(m));
        }
        for (name, m) in &self.methods.common {
            method(&mut o, name, m);
        }
        if let Some(t) = &self.tensors {
            tensors(&mut o, "", t);
        }
        o
    }

    /// One line per changed section and tensor with counts, then a total,
    /// like `git diff --stat`.
    pub fn stat(&self) -> String {
        let mut rows: Vec<(String, String)> = Vec::new();
        let tensor_rows = |rows: &mut Vec<(String, String)>, t: &Tensors| {
            let at =
                |r: &Ref| escape(if r.path.is_empty() { &r.name } else { &r.path }).into_owned();
            for m in &t.moved {
                rows.push((at(&m.a), format!("moved to {}", at(&m.b))));
            }
            for c in &t.changed {
                let what = match &c.elements {
                    Some(e) => format!("{} of {} elements", e.differing, e.elements),
                    None if c.retyped.is_some() => "type".into(),
                    None if c.reshaped.is_some() => "shape".into(),
                    None => c
                        .bytes
                        .as_ref()
                        .map_or("bytes".into(), |b| format!("{} bytes", b.differing)),
                };
                rows.push((at(&c.a), what));
            }
            for r in &t.added {
                rows.push((at(r), "added".into()));
            }
            for r in &t.removed {
                rows.push((at(r), "removed".into()));
            }
        };
        if let Some(f) = self.file.as_ref().filter(|f| !f.is_empty()) {
            rows.push(("file".into(), format!("{} fields", f.len())));
        }
        let (added, removed) = (
            self.methods.added.as_ref().map_or(0, Vec::len),
            self.methods.removed.as_ref().map_or(0, Vec::len),
        );
        if added + removed > 0 {
            rows.push((
                "methods".into(),
                format!("{added} added, {removed} removed"),
            ));
        }
        for (name, m) in &self.methods.common {
            let name = escape(name);
            for (section, c) in [("io", &m.io), ("memory", &m.memory)] {
                if let Some(c) = c.as_ref().filter(|c| !c.is_empty()) {
                    rows.push((format!("{name}/{section}"), format!("{} fields", c.len())));
                }
            }
            if let Some(i) = m.instructions.as_ref().filter(|i| i.differs()) {
                let lines = i
                    .unified
                    .lines()
                    .filter(|l| {
                        (l.starts_with('+') || l.starts_with('-'))
                            && !l.starts_with("+++")
                            && !l.starts_with("---")
                    })
                    .count();
                rows.push((
                    format!("{name}/instructions"),
                    format!("{lines} lines, {} operator counts", i.counts.len()),
                ));
            }
            if let Some(d) = m.delegates.as_ref().filter(|d| !d.is_empty()) {
                rows.push((format!("{name}/delegates"), format!("{} changed", d.len())));
            }
            if let Some(t) = &m.tensors {
                tensor_rows(&mut rows, t);
            }
        }
        if let Some(t) = &self.tensors {
            tensor_rows(&mut rows, t);
        }
        let width = rows
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        let mut o = String::new();
        for (k, v) in &rows {
            let _ = writeln!(o, " {k:<width$} | {v}");
        }
        let plural = if rows.len() == 1 { "" } else { "s" };
        let _ = writeln!(o, " {} change{plural}", rows.len());
        o
    }
}
