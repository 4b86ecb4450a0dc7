//! The check as text: the runtime, each method's verdict with its
//! problems, then warnings.

use std::fmt::Write;

use super::findings::{Check, Finding, Kind};

impl Check {
    /// True when every problem of `method` is an arena over the memory
    /// limit: it would load, on a target with room for it.
    fn only_over_memory(&self, method: &str) -> bool {
        self.problems
            .iter()
            .filter(|p| p.method.as_deref() == Some(method))
            .all(|p| p.kind == Kind::ArenaOverLimit)
    }

    /// The check as text: the runtime, each method's verdict with its
    /// problems, then warnings.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "file: {}", crate::escape::escape(&self.file));
        let ops = self
            .runtime
            .operators
            .map_or("every operator".to_owned(), |n| format!("{n} operators"));
        let backends = if self.runtime.backends.is_empty() {
            "no backends".to_owned()
        } else {
            format!("backends {}", self.runtime.backends.join(", "))
        };
        let _ = writeln!(
            out,
            "runtime: {} ({ops}; {backends})",
            self.runtime.specs.join(" + ")
        );
        let data = if self.data.is_empty() {
            "none".to_owned()
        } else {
            self.data.join(", ")
        };
        let _ = writeln!(out, "data: {}", crate::escape::escape(&data));
        for p in self
            .problems
            .iter()
            .filter(|p| p.kind == Kind::ProgramRefused)
        {
            let e = p.error.unwrap_or_default();
            let _ = writeln!(out, "program: does not load: Program::load returns {e}");
            let _ = writeln!(out, "  {}", line(p));
            let _ = writeln!(out, "  the runtime logs:");
            for l in &p.log {
                let _ = writeln!(out, "    {}", crate::escape::escape(l));
            }
        }
        for m in &self.methods {
            let verdict = match (m.ok, m.error) {
                (true, _) => "loads".to_owned(),
                (false, Some(e)) => format!("does not load: load_method returns {e}"),
                (false, None) if self.only_over_memory(&m.name) => "does not fit".to_owned(),
                (false, None) => "does not load".to_owned(),
            };
            let _ = writeln!(out, "{}: {verdict}", crate::escape::escape(&m.name));
            for p in self
                .problems
                .iter()
                .filter(|p| p.method.as_deref() == Some(&m.name))
            {
                let _ = writeln!(out, "  {}", line(p));
            }
            if !m.log.is_empty() {
                let _ = writeln!(out, "  the runtime logs:");
                for l in &m.log {
                    let _ = writeln!(out, "    {}", crate::escape::escape(l));
                }
            }
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(out, "warnings:");
            for w in &self.warnings {
                let at = w
                    .method
                    .as_deref()
                    .map_or(String::new(), |m| format!("{m}: "));
                let _ = writeln!(out, "  {}{}", crate::escape::escape(&at), line(w));
            }
        }
        let failing = self.methods.iter().filter(|m| !m.ok).count();
        let _ = if self.ok {
            writeln!(out, "ok: every method loads")
        } else if self.methods.is_empty() {
            writeln!(out, "the program does not load")
        } else {
            writeln!(
                out,
                "{} problem{} in {failing} of {} method{}",
                self.problems.len(),
                if self.problems.len() == 1 { "" } else { "s" },
                self.methods.len(),
                if self.methods.len() == 1 { "" } else { "s" },
            )
        };
        out
    }
}

/// One finding on a line: where, what, why.
fn line(f: &Finding) -> String {
    let mut at = Vec::new();
    if let Some(i) = f.operator {
        at.push(format!("operator [{i}]"));
    }
    if let Some(d) = f.delegate {
        at.push(format!("delegate {d}"));
    }
    if !f.instructions.is_empty() {
        let list: Vec<String> = f.instructions.iter().map(usize::to_string).collect();
        let s = if list.len() == 1 { "" } else { "s" };
        at.push(format!("instruction{s} {}", list.join(", ")));
    }
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" ({})", at.join(", "))
    };
    crate::escape::escape(&format!(
        "{}: {}{at}: {}",
        serde_json::to_value(f.kind)
            .ok()
            .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
            .unwrap_or_default(),
        f.name,
        f.why
    ))
    .into_owned()
}
