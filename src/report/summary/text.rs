//! The report as terminal text: the tables, without the pictures.

use std::fmt::Write;

use super::Report;
use crate::escape::escape;

/// `12.3 MB` and the like (powers of 1000, as `du --si`).
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn pct(part: u64, whole: u64) -> String {
    format!("{:.1}%", super::share(part, whole) * 100.0)
}

impl Report {
    /// The statistics table alone (`inspect --stats`).
    pub fn stats_text(&self) -> String {
        crate::report::stats::table(&self.stats)
    }
}

/// The sections of the text report, in the order printed.
const SECTIONS: [fn(&Report, &mut String); 12] = [
    files,
    sizes,
    by_dtype,
    by_layer,
    by_backend,
    duplicates,
    coverage,
    quantization,
    memory,
    statistics,
    checks,
    notes,
];

impl Report {
    /// The whole report as text.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for section in SECTIONS {
            section(self, &mut s);
        }
        s
    }
}

/// The total, then each input file's share of it.
fn files(r: &Report, s: &mut String) {
    let total = r.total_bytes;
    let _ = writeln!(s, "{}: {} ({} bytes)", escape(&r.file), human(total), total);
    for f in &r.files {
        let _ = writeln!(
            s,
            "  {:<40} {:>12} {:>7}",
            escape(&f.name),
            human(f.bytes),
            pct(f.bytes, total)
        );
    }
}

/// The first level of the size tree below each file.
fn sizes(r: &Report, s: &mut String) {
    let _ = writeln!(s, "\nWhere the bytes go:");
    let several = r.size.children.len() > 1;
    for file in &r.size.children {
        for c in &file.children {
            // A store's name says which file only when there are several.
            let name = if several && c.kind == "store" {
                format!("{}: {}", file.name, c.name)
            } else {
                c.name.to_string()
            };
            let _ = writeln!(
                s,
                "  {:<56} {:>12} {:>7}",
                escape(&name),
                human(c.bytes),
                pct(c.bytes, r.total_bytes)
            );
        }
    }
}

fn by_dtype(r: &Report, s: &mut String) {
    let _ = writeln!(s, "\nBy dtype:");
    for d in &r.by_dtype {
        let _ = writeln!(
            s,
            "  {:<28} {:>6} tensors {:>12} params {:>12} {:>7}",
            escape(&d.dtype),
            d.tensors,
            d.params,
            human(d.bytes),
            pct(d.bytes, r.total_bytes)
        );
    }
}

/// The largest layers only: a model has thousands.
fn by_layer(r: &Report, s: &mut String) {
    let _ = writeln!(s, "\nBy layer (largest 20 of {}):", r.by_layer.len());
    for l in r.by_layer.iter().take(20) {
        let _ = writeln!(
            s,
            "  {:<48} {:>5} tensors {:>12} params {:>12}",
            escape(&l.layer),
            l.tensors,
            l.params,
            human(l.bytes)
        );
    }
}

fn by_backend(r: &Report, s: &mut String) {
    let _ = writeln!(s, "\nBy backend:");
    for b in &r.by_backend {
        let _ = writeln!(
            s,
            "  {:<28} {:>3} delegates {:>12} payload {:>12} weights {:>6} nodes",
            escape(&b.backend),
            b.delegates,
            human(b.blob_bytes),
            human(b.weight_bytes),
            b.nodes
        );
    }
}

/// The bytes wasted in all, then the largest 20 duplicated ranges and
/// where each copy is.
fn duplicates(r: &Report, s: &mut String) {
    let wasted: u64 = r.duplicates.iter().map(|d| d.wasted).sum();
    let _ = writeln!(
        s,
        "\nDuplicates: {} ranges stored more than once, {} wasted",
        r.duplicates.len(),
        human(wasted)
    );
    for d in r.duplicates.iter().take(20) {
        let _ = writeln!(
            s,
            "  {} {} x{}",
            &d.sha256[..16.min(d.sha256.len())],
            human(d.bytes),
            d.copies.len()
        );
        for c in &d.copies {
            let _ = writeln!(
                s,
                "    {}@{} {}",
                escape(&c.file),
                c.offset,
                escape(&c.path)
            );
        }
    }
}

/// Per method: its kernel calls and its delegates.
fn coverage(r: &Report, s: &mut String) {
    let _ = writeln!(s, "\nCoverage:");
    for m in &r.coverage {
        let _ = writeln!(
            s,
            "  {}/{}: {} kernel calls, {} delegated nodes in {} delegates",
            escape(&m.file),
            escape(&m.method),
            m.kernel_calls,
            m.delegated_nodes,
            m.delegates.len()
        );
        for k in &m.kernels {
            let flag = if k.portable {
                ""
            } else {
                "  (not in the portable kernels)"
            };
            let _ = writeln!(s, "    {:>6} x {}{flag}", k.calls, escape(&k.op));
        }
        for d in &m.delegates {
            let _ = writeln!(
                s,
                "    delegate {} {}: {} nodes",
                d.index,
                escape(&d.backend),
                d.nodes
            );
        }
    }
}

fn quantization(r: &Report, s: &mut String) {
    let q = &r.quantization;
    let _ = writeln!(
        s,
        "\nQuantization: {} weights, {} stored, {} as float32 ({}x)",
        q.weights.len(),
        human(q.stored_bytes),
        human(q.fp32_bytes),
        q.compression
    );
    if let Some(w) = &q.warning {
        let _ = writeln!(s, "  warning: {}", escape(w));
    }
}

/// Per method: its memory buffers and how many values are planned in them.
fn memory(r: &Report, s: &mut String) {
    let _ = writeln!(s, "\nMemory plan:");
    for m in &r.memory {
        let bufs: Vec<String> = m
            .buffers
            .iter()
            .map(|b| format!("{}:{}", b.mem_id, human(b.bytes.max(0) as u64)))
            .collect();
        let _ = writeln!(
            s,
            "  {}/{}: buffers {} ; {} planned values over {} instructions",
            escape(&m.file),
            escape(&m.method),
            bufs.join(", "),
            m.values.len(),
            m.instructions
        );
    }
}

fn statistics(r: &Report, s: &mut String) {
    let _ = writeln!(s, "\nStatistics:");
    s.push_str(&r.stats_text());
}

/// One section per runtime checked against, when any was asked for.
fn checks(r: &Report, s: &mut String) {
    for c in &r.checks {
        let _ = writeln!(s, "\nWill it load? (ptefs check)");
        s.push_str(&c.text());
    }
}

fn notes(r: &Report, s: &mut String) {
    for n in &r.notes {
        let _ = writeln!(s, "note: {}", escape(n));
    }
}
