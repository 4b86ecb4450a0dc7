//! `inspect`'s report as lines a person reads.

use std::fmt::Write;

use super::{Data, DtypeCount, Inspection, Program};
use crate::escape::escape;

impl Inspection {
    /// The report as text: the same figures as its JSON.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let kind = match self.kind {
            "program" => "ExecuTorch program",
            "data" => "ExecuTorch data file",
            "package" => "ExecuTorch native program package",
            "profile" => "ExecuTorch ETDump (runtime profile)",
            "etrecord" => "ExecuTorch ETRecord",
            _ => "ExecuTorch bundled program",
        };
        let _ = writeln!(
            o,
            "{}: {kind}, identifier {}, version {}, {} bytes",
            escape(&self.file),
            escape(&self.identifier),
            self.version,
            self.file_size
        );
        if let Some(b) = &self.bundle {
            let p = b.embedded_program;
            let _ = writeln!(
                o,
                "embedded program: bytes {}..{}{}",
                p.offset,
                p.offset + p.size,
                self.program.as_ref().map_or(String::new(), |p| format!(
                    ", identifier {}, version {}",
                    escape(&p.identifier),
                    p.version
                ))
            );
            let _ = writeln!(o, "test suites: {}", b.test_suites.len());
            for s in &b.test_suites {
                let _ = writeln!(o, "  {}: {} cases", escape(&s.method), s.cases);
            }
        }
        if let Some(p) = &self.program {
            program(&mut o, p);
        }
        if let Some(d) = &self.data {
            data(&mut o, d);
        }
        if let Some(p) = &self.package {
            super::package::text(&mut o, p);
        }
        if let Some(p) = &self.profile {
            super::profile::text(&mut o, p);
        }
        if let Some(r) = &self.etrecord {
            super::etrecord::text(&mut o, r);
        }
        if let Some(c) = &self.checkpoint {
            let _ = writeln!(o, "\ncheckpoint: {} of {} keys found", c.matched, c.keys);
            const SHOWN: usize = 20;
            for k in c.unmatched.iter().take(SHOWN) {
                let _ = writeln!(o, "  not found: {}", escape(k));
            }
            if c.unmatched.len() > SHOWN {
                let _ = writeln!(o, "  and {} more not found", c.unmatched.len() - SHOWN);
            }
        }
        if let Some(top) = &self.largest {
            let _ = writeln!(o, "\nlargest {}:", top.len());
            for l in top {
                let what = match (&l.scalar_type, &l.sizes) {
                    (Some(t), Some(s)) => format!("{t} {s:?}"),
                    _ => "blob".to_owned(),
                };
                let _ = writeln!(
                    o,
                    "  {:>14} bytes {:>6.1}% of {:<16} {:<24} {}",
                    l.bytes,
                    l.share * 100.0,
                    escape(&l.source),
                    what,
                    escape(&l.path)
                );
            }
        }
        let _ = writeln!(o, "\nwhat the {} bytes are:", self.file_size);
        for r in &self.composition {
            let _ = writeln!(
                o,
                "  {:<24} {:>14} bytes {:>6.1}%",
                r.category,
                r.bytes,
                r.share * 100.0
            );
        }
        if let Some(stats) = &self.stats {
            o.push_str("\nStatistics:\n");
            o.push_str(&crate::report::stats::table(stats));
        }
        o
    }
}

fn program(o: &mut String, p: &Program) {
    let _ = writeln!(o, "\nmethods: {}", p.methods.len());
    for m in &p.methods {
        let external = match (m.external_tensors, m.external_missing) {
            (0, _) => String::new(),
            (n, 0) => format!(", {n} external"),
            (n, k) => format!(", {n} external of which {k} not in any --data file"),
        };
        let _ = writeln!(
            o,
            "  {}: {} values, {} instructions, {} operators, {} tensors ({} bytes){external}, {} delegates",
            escape(&m.name),
            m.values,
            m.instructions,
            m.operators,
            m.tensors,
            m.tensor_bytes,
            m.delegates,
        );
        let mut calls: Vec<(&String, u64)> = m.calls.iter().map(|(k, v)| (k, *v)).collect();
        calls.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (op, n) in calls {
            let _ = writeln!(o, "    {n:>6}  {}", escape(op));
        }
    }
    tensors(o, &p.tensors);
    let _ = writeln!(
        o,
        "\nsegments: {} ({} bytes)",
        p.segments.count, p.segments.bytes
    );
    let _ = writeln!(
        o,
        "named data: {} ({} bytes)",
        p.named_data.count, p.named_data.bytes
    );
    let _ = writeln!(o, "delegates: {}", p.delegates.len());
    for d in &p.delegates {
        let _ = writeln!(
            o,
            "  {} #{} {}: {} bytes",
            escape(&d.method),
            d.index,
            escape(&d.id),
            d.bytes
        );
        if let Some(e) = &d.error {
            let _ = writeln!(o, "    payload not decoded: {}", escape(e));
        }
        if d.decoded.is_none() && d.error.is_none() && crate::delegate::backend(&d.id).is_none() {
            let _ = writeln!(o, "    not decoded ({} bytes)", d.bytes);
        }
        for (k, v) in &d.facts {
            let _ = writeln!(o, "    {}: {}", escape(k), escape(v));
        }
        if let Some(s) = d.decoded.as_ref().filter(|_| !d.facts.is_empty()) {
            for (name, bytes) in &s.constant_bytes {
                let _ = writeln!(o, "    {bytes:>14} bytes in {}", escape(name));
            }
        } else if let Some(s) = &d.decoded {
            let _ = writeln!(o, "    {} nodes, {} values", s.nodes, s.values);
            let mut ops: Vec<(&String, &usize)> = s.ops.iter().collect();
            ops.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (op, n) in ops {
                let _ = writeln!(o, "    {n:>6}  {}", escape(op));
            }
            for (dtype, bytes) in &s.constant_bytes {
                let _ = writeln!(o, "    {bytes:>14} bytes of {}", escape(dtype));
            }
            if s.shared_values > 0 {
                let _ = writeln!(
                    o,
                    "    ({} values share bytes another value holds; counted once)",
                    s.shared_values
                );
            }
        }
    }
}

fn data(o: &mut String, d: &Data) {
    tensors(o, &d.tensors);
    let _ = writeln!(
        o,
        "\nsegments: {} ({} bytes)",
        d.segments.count, d.segments.bytes
    );
    let _ = writeln!(o, "named data: {}", d.named_data);
    let _ = writeln!(
        o,
        "opaque blobs: {} ({} bytes)",
        d.opaque_blobs.count, d.opaque_blobs.bytes
    );
}

fn tensors(o: &mut String, tensors: &[DtypeCount]) {
    let count: u64 = tensors.iter().map(|t| t.count).sum();
    let bytes: u64 = tensors.iter().map(|t| t.bytes).sum();
    let _ = writeln!(o, "\ntensors: {count} ({bytes} bytes)");
    for t in tensors {
        let _ = writeln!(
            o,
            "  {:<16} {:>8} tensors {:>14} bytes",
            t.scalar_type, t.count, t.bytes
        );
    }
}
