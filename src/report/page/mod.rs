//! The report as one self-contained HTML page: inline CSS, a few lines of
//! inline script (sorting tables), inline SVG pictures; nothing fetched,
//! so it opens from disk in any browser. Every string from the files goes
//! through [`esc`], and the page is well-formed XML as well as HTML, so
//! that XML tools read it too.
//!
//! Large programs are capped so the page stays small (under 2 MB for a
//! 100k-tensor program): treemap leaves beyond [`treemap::MAX_LEAVES`] are
//! merged per group, and long tables show their first rows (largest
//! first) with a line saying how many more the `report/` files and
//! `--json` hold.

mod treemap;

use std::fmt::Write;

use crate::report::summary::text::human;
use crate::report::summary::{MethodMemory, Report, TensorStats};

/// Rows shown at most per table.
pub const MAX_ROWS: usize = 1000;
/// Tensors shown at most in the statistics table.
pub const MAX_STATS: usize = 500;
/// Values drawn at most per method in the lifetime chart.
pub const MAX_LIFETIMES: usize = 1500;

/// `s` safe inside HTML and SVG text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // XML allows no control character but these two, and no
            // U+FFFE or U+FFFF; bidi controls would reorder what the page
            // shows. All are written out as text output writes them.
            c if crate::escape::is_hidden(c) && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The treemap alone, as an SVG document (`report/treemap.svg`).
pub fn treemap_document(report: &Report) -> String {
    let (root, _) = treemap::capped(&report.size);
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.push_str(&treemap::svg(&root));
    s.push('\n');
    s
}

const STYLE: &str = "body{font:13px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:1.8em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}th{cursor:pointer;background:#f4f4f4}\
tr.bad td{background:#fde0e0}.warn{background:#fff3cd;border:1px solid #e0c060;padding:.5em}\
.bar{display:flex;height:18px;width:900px;border:1px solid #999;margin:2px 0}.bar div{height:100%}\
.note{color:#666}.flag{color:#b00;font-weight:bold}svg.treemap{border:1px solid #333}";

const SCRIPT: &str = "document.querySelectorAll('table.sortable th').forEach(function(th,i){\
th.addEventListener('click',function(){var t=th.closest('table'),b=t.tBodies[0];\
var rows=Array.prototype.slice.call(b.rows),d=th.dataset.dir==='a'?-1:1;th.dataset.dir=d>0?'a':'d';\
rows.sort(function(x,y){var p=x.cells[i],q=y.cells[i];var u=p.dataset.v,v=q.dataset.v;\
if(u!==undefined&&v!==undefined){return d*(parseFloat(u)-parseFloat(v));}\
return d*p.textContent.localeCompare(q.textContent);});rows.forEach(function(r){b.appendChild(r);});});});";

/// A table: header cells (`n`-classed when numeric) and rows of cells
/// (already escaped HTML, with the sort value of numeric ones).
struct Table {
    id: String,
    head: Vec<(&'static str, bool)>,
    rows: Vec<(bool, Vec<Cell>)>,
}

enum Cell {
    Text(String),
    Num(f64, String),
    Html(String),
}

impl Table {
    fn new(id: impl Into<String>, head: &[(&'static str, bool)]) -> Table {
        Table {
            id: id.into(),
            head: head.to_vec(),
            rows: Vec::new(),
        }
    }

    fn render(&self, s: &mut String) {
        let _ = write!(
            s,
            "<table class=\"sortable\" id=\"t-{}\"><thead><tr>",
            self.id
        );
        for (h, n) in &self.head {
            let _ = write!(
                s,
                "<th{}>{}</th>",
                if *n { " class=\"n\"" } else { "" },
                esc(h)
            );
        }
        s.push_str("</tr></thead><tbody>");
        for (bad, row) in &self.rows {
            s.push_str(if *bad { "<tr class=\"bad\">" } else { "<tr>" });
            for c in row {
                match c {
                    Cell::Text(t) => {
                        let _ = write!(s, "<td>{}</td>", esc(t));
                    }
                    Cell::Num(v, t) => {
                        let v = if v.is_finite() { *v } else { 0.0 };
                        let _ = write!(s, "<td class=\"n\" data-v=\"{v}\">{}</td>", esc(t));
                    }
                    Cell::Html(h) => {
                        let _ = write!(s, "<td>{h}</td>");
                    }
                }
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
    }
}

fn bytes_cell(b: u64) -> Cell {
    Cell::Num(b as f64, human(b))
}

fn int_cell(n: u64) -> Cell {
    Cell::Num(n as f64, n.to_string())
}

fn float_cell(x: Option<f64>) -> Cell {
    match x {
        Some(v) => Cell::Num(v, format!("{v:.6}")),
        None => Cell::Text("-".to_owned()),
    }
}

fn capped_note(s: &mut String, shown: usize, total: usize, file: &str) {
    if total > shown {
        let _ = write!(
            s,
            "<p class=\"note\">The largest {shown} of {total} rows are shown; report/{} and --json hold all.</p>",
            esc(file)
        );
    }
}

/// A histogram as a sparkline of bars: one path, so a row costs little.
fn sparkline(h: &[u64]) -> String {
    let max = h.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut d = String::new();
    for (i, &c) in h.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let hgt = (c as f64 / max * 16.0).max(1.0);
        let _ = write!(d, "M{} 16v-{hgt:.1}h3v{hgt:.1}z", i * 4);
    }
    format!(
        "<svg class=\"spark\" width=\"64\" height=\"16\" viewBox=\"0 0 64 16\"><path fill=\"#4a7bd0\" d=\"{d}\"/></svg>"
    )
}

/// The whole page.
pub fn html(report: &Report) -> String {
    let mut s = String::with_capacity(1 << 20);
    let title = format!("ptefs report: {}", report.file);
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"/><title>{}</title><style>{STYLE}</style></head><body>",
        esc(&title)
    );
    let _ = write!(
        s,
        "<h1>{}</h1><p>{} in all ({} bytes) in {} file(s).</p>",
        esc(&title),
        human(report.total_bytes),
        report.total_bytes,
        report.files.len()
    );
    // Treemap.
    let (root, merged) = treemap::capped(&report.size);
    s.push_str("<h2 id=\"size\">Where the bytes go</h2>");
    s.push_str(
        "<p class=\"note\">Each rectangle's area is its share of the bytes: file, then store \
         (constants, named data, delegates), then layer, then tensor. Hover for path and size.</p>",
    );
    if merged > 0 {
        let _ = write!(
            s,
            "<p class=\"note\">{merged} small tensors are drawn merged, per group, as \"N smaller items\" \
             to keep the page small; report/size.json holds each.</p>"
        );
    }
    s.push_str(&treemap::svg(&root));
    files_and_dtypes(&mut s, report);
    duplicates(&mut s, report);
    layers(&mut s, report);
    coverage(&mut s, report);
    checks(&mut s, report);
    quantization(&mut s, report);
    stats(&mut s, report);
    memory(&mut s, report);
    for n in &report.notes {
        let _ = write!(s, "<p class=\"note\">note: {}</p>", esc(n));
    }
    // The script's `&&` and `<` would end XML text: a CDATA section,
    // hidden from the script by comments, keeps the page XML too.
    let _ = writeln!(
        s,
        "<script>//<![CDATA[\n{SCRIPT}\n//]]></script></body></html>"
    );
    s
}

fn files_and_dtypes(s: &mut String, r: &Report) {
    s.push_str("<h2 id=\"files\">Files</h2>");
    let mut t = Table::new("files", &[("file", false), ("bytes", true)]);
    for f in &r.files {
        t.rows
            .push((false, vec![Cell::Text(f.name.clone()), bytes_cell(f.bytes)]));
    }
    t.render(s);
    s.push_str("<h2 id=\"dtypes\">By dtype</h2>");
    let mut t = Table::new(
        "by_dtype",
        &[
            ("dtype", false),
            ("tensors", true),
            ("params", true),
            ("bytes", true),
        ],
    );
    for d in &r.by_dtype {
        t.rows.push((
            false,
            vec![
                Cell::Text(d.dtype.to_string()),
                int_cell(d.tensors),
                int_cell(d.params),
                bytes_cell(d.bytes),
            ],
        ));
    }
    t.render(s);
    s.push_str("<h2 id=\"backends\">By backend</h2>");
    let mut t = Table::new(
        "by_backend",
        &[
            ("backend", false),
            ("delegates", true),
            ("payload bytes", true),
            ("weight bytes", true),
            ("nodes", true),
        ],
    );
    for b in &r.by_backend {
        t.rows.push((
            false,
            vec![
                Cell::Text(b.backend.clone()),
                int_cell(b.delegates),
                bytes_cell(b.blob_bytes),
                bytes_cell(b.weight_bytes),
                int_cell(b.nodes),
            ],
        ));
    }
    t.render(s);
}

fn duplicates(s: &mut String, r: &Report) {
    let wasted: u64 = r.duplicates.iter().map(|d| d.wasted).sum();
    let _ = write!(
        s,
        "<h2 id=\"duplicates\">Duplicates</h2><p>{} byte ranges stored more than once; {} wasted.</p>",
        r.duplicates.len(),
        human(wasted)
    );
    let mut t = Table::new(
        "duplicates",
        &[
            ("sha256", false),
            ("bytes", true),
            ("copies", true),
            ("wasted", true),
            ("where (file@offset path)", false),
        ],
    );
    for d in r.duplicates.iter().take(MAX_ROWS) {
        let wheres: Vec<String> = d
            .copies
            .iter()
            .map(|c| format!("{}@{} {}", esc(&c.file), c.offset, esc(&c.path)))
            .collect();
        t.rows.push((
            false,
            vec![
                Cell::Text(d.sha256.clone()),
                bytes_cell(d.bytes),
                int_cell(d.copies.len() as u64),
                bytes_cell(d.wasted),
                Cell::Html(wheres.join("<br/>")),
            ],
        ));
    }
    t.render(s);
    capped_note(s, MAX_ROWS, r.duplicates.len(), "duplicates.tsv");
}

fn layers(s: &mut String, r: &Report) {
    s.push_str("<h2 id=\"layers\">By layer</h2>");
    let mut t = Table::new(
        "by_layer",
        &[
            ("layer", false),
            ("tensors", true),
            ("params", true),
            ("bytes", true),
            ("dtypes", false),
        ],
    );
    for l in r.by_layer.iter().take(MAX_ROWS) {
        let mix: Vec<String> = l
            .dtypes
            .iter()
            .map(|(d, b)| format!("{d} {}", human(b)))
            .collect();
        t.rows.push((
            false,
            vec![
                Cell::Text(l.layer.to_string()),
                int_cell(l.tensors),
                int_cell(l.params),
                bytes_cell(l.bytes),
                Cell::Text(mix.join(", ")),
            ],
        ));
    }
    t.render(s);
    capped_note(s, MAX_ROWS, r.by_layer.len(), "layers.tsv");
}

/// Whether each program loads on the default runtime, and why not.
fn checks(s: &mut String, r: &Report) {
    for c in &r.checks {
        let _ = write!(
            s,
            "<h2 id=\"check\">Will it load?</h2><p>{} against {}: {}</p>",
            esc(&c.file),
            esc(&c.runtime.specs.join(" + ")),
            if c.ok {
                "every method loads".to_owned()
            } else {
                format!("{} problems", c.problems.len())
            }
        );
        if !c.ok {
            s.push_str("<pre>");
            s.push_str(&esc(&c.text()));
            s.push_str("</pre>");
        }
    }
}

fn coverage(s: &mut String, r: &Report) {
    s.push_str(
        "<h2 id=\"coverage\">Delegation coverage</h2><p class=\"note\">Per method: kernel calls \
         (blue; red when ExecuTorch 1.5's portable kernel library lacks the operator) and nodes \
         inside delegates (green).</p>",
    );
    for (i, m) in r.coverage.iter().enumerate() {
        let total = m.kernel_calls + m.delegated_nodes;
        let _ = write!(
            s,
            "<h3>{} / {}</h3><p>{} kernel calls, {} delegated nodes in {} delegate(s), {} other instructions.</p><div class=\"bar\">",
            esc(&m.file),
            esc(&m.method),
            m.kernel_calls,
            m.delegated_nodes,
            m.delegates.len(),
            m.other_instructions
        );
        let pct = |n: u64| {
            if total == 0 {
                0.0
            } else {
                n as f64 / total as f64 * 100.0
            }
        };
        for k in &m.kernels {
            let color = if k.portable { "#4a7bd0" } else { "#d04a4a" };
            let _ = write!(
                s,
                "<div style=\"width:{:.3}%;background:{color}\" title=\"{}\"></div>",
                pct(k.calls),
                esc(&format!("{}: {} calls", k.op, k.calls))
            );
        }
        for d in &m.delegates {
            let _ = write!(
                s,
                "<div style=\"width:{:.3}%;background:#3fa34d\" title=\"{}\"></div>",
                pct(d.nodes),
                esc(&format!(
                    "delegate {} {}: {} nodes",
                    d.index, d.backend, d.nodes
                ))
            );
        }
        s.push_str("</div>");
        let mut t = Table::new(
            format!("coverage-{i}"),
            &[
                ("runs on", false),
                ("operator", false),
                ("count", true),
                ("portable kernel", false),
            ],
        );
        for k in &m.kernels {
            t.rows.push((
                !k.portable,
                vec![
                    Cell::Text("kernels".to_owned()),
                    Cell::Text(k.op.clone()),
                    int_cell(k.calls),
                    Cell::Html(if k.portable {
                        "yes".to_owned()
                    } else {
                        "<span class=\"flag\">missing</span>".to_owned()
                    }),
                ],
            ));
        }
        for d in &m.delegates {
            let on = format!("delegate {} {}", d.index, d.backend);
            if d.ops.is_empty() {
                t.rows.push((
                    false,
                    vec![
                        Cell::Text(on.clone()),
                        Cell::Text(
                            if d.decoded {
                                "(no nodes)"
                            } else {
                                "(not decoded)"
                            }
                            .to_owned(),
                        ),
                        int_cell(d.nodes),
                        Cell::Text(String::new()),
                    ],
                ));
            }
            for (op, n) in &d.ops {
                t.rows.push((
                    false,
                    vec![
                        Cell::Text(on.clone()),
                        Cell::Text(op.clone()),
                        int_cell(*n),
                        Cell::Text(String::new()),
                    ],
                ));
            }
        }
        t.render(s);
    }
    let missing: std::collections::BTreeSet<&str> = r
        .coverage
        .iter()
        .flat_map(|m| {
            m.kernels
                .iter()
                .filter(|k| !k.portable)
                .map(|k| k.op.as_str())
        })
        .collect();
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|m| esc(m)).collect();
        let _ = write!(
            s,
            "<p class=\"warn\">Not in ExecuTorch 1.5's portable kernels (a runtime needs another \
             kernel library for these): {}</p>",
            list.join(", ")
        );
    }
}

fn quantization(s: &mut String, r: &Report) {
    let q = &r.quantization;
    let _ = write!(
        s,
        "<h2 id=\"quantization\">Quantization</h2><p>{} weights: {} stored, {} as float32 ({}× smaller).</p>",
        q.weights.len(),
        human(q.stored_bytes),
        human(q.fp32_bytes),
        q.compression
    );
    if let Some(w) = &q.warning {
        let _ = write!(s, "<p class=\"warn\" id=\"quant-warning\">{}</p>", esc(w));
    }
    let mut t = Table::new(
        "quantization",
        &[
            ("weight", false),
            ("dtype", false),
            ("scheme", false),
            ("bits", true),
            ("bytes", true),
            ("scales", true),
            ("vs fp32", true),
        ],
    );
    let mut weights: Vec<_> = q.weights.iter().collect();
    weights.sort_by_key(|w| std::cmp::Reverse(w.bytes));
    for w in weights.iter().take(MAX_ROWS) {
        let scheme = match w.group_size {
            Some(g) => format!("{} (group {g})", w.scheme),
            None => w.scheme.to_string(),
        };
        t.rows.push((
            false,
            vec![
                Cell::Text(w.name.as_ref().unwrap_or(&w.path).to_string()),
                Cell::Text(w.dtype.to_string()),
                Cell::Text(scheme),
                int_cell(u64::from(w.bits)),
                bytes_cell(w.bytes),
                bytes_cell(w.scale_bytes),
                Cell::Num(w.compression, format!("{}×", w.compression)),
            ],
        ));
    }
    t.render(s);
    capped_note(s, MAX_ROWS, q.weights.len(), "quantization.tsv");
}

fn stats(s: &mut String, r: &Report) {
    s.push_str(
        "<h2 id=\"stats\">Weight statistics</h2><p class=\"note\">Over the finite values; NaN and \
         Inf counted apart (rows with either are highlighted). Click a heading to sort.</p>",
    );
    // Tensors with NaN or Inf first, then the largest.
    let mut order: Vec<&TensorStats> = r.stats.iter().collect();
    order.sort_by(|a, b| {
        let bad = |t: &TensorStats| t.stored.nan + t.stored.inf > 0;
        bad(b)
            .cmp(&bad(a))
            .then(b.stored.elements.cmp(&a.stored.elements))
            .then_with(|| a.path.cmp(&b.path))
    });
    let mut t = Table::new(
        "stats",
        &[
            ("tensor", false),
            ("dtype", false),
            ("elements", true),
            ("min", true),
            ("max", true),
            ("mean", true),
            ("std", true),
            ("zeros", true),
            ("nan", true),
            ("inf", true),
            ("histogram", false),
        ],
    );
    for x in order.iter().take(MAX_STATS) {
        let m = &x.stored;
        t.rows.push((
            m.nan + m.inf > 0,
            vec![
                Cell::Text(x.name.as_ref().unwrap_or(&x.path).to_string()),
                Cell::Text(x.dtype.to_string()),
                int_cell(m.elements),
                float_cell(m.min),
                float_cell(m.max),
                float_cell(m.mean),
                float_cell(m.std),
                int_cell(m.zeros),
                int_cell(m.nan),
                int_cell(m.inf),
                Cell::Html(sparkline(&m.histogram)),
            ],
        ));
    }
    t.render(s);
    capped_note(s, MAX_STATS, r.stats.len(), "stats.tsv");
}

fn memory(s: &mut String, r: &Report) {
    s.push_str(
        "<h2 id=\"memory\">Memory plan</h2><p class=\"note\">Per method, each planned value as a \
         bar from its first to its last instruction (across) at its place in its buffer (down).</p>",
    );
    for m in &r.memory {
        lifetime_chart(s, m);
    }
}

fn lifetime_chart(s: &mut String, m: &MethodMemory) {
    let bufs: Vec<String> = m
        .buffers
        .iter()
        .map(|b| format!("buffer {}: {}", b.mem_id, human(b.bytes.max(0) as u64)))
        .collect();
    let _ = write!(
        s,
        "<h3>{} / {}</h3><p>{}; {} planned values, {} instructions.</p>",
        esc(&m.file),
        esc(&m.method),
        esc(&bufs.join(", ")),
        m.values.len(),
        m.instructions
    );
    let (w, h) = (900.0, 240.0);
    // Buffers stacked top to bottom, each as tall as its share of bytes.
    let total: f64 = m
        .buffers
        .iter()
        .map(|b| b.bytes.max(1) as f64)
        .sum::<f64>()
        .max(1.0);
    let mut top = std::collections::HashMap::new();
    let mut y = 0.0;
    for b in &m.buffers {
        top.insert(b.mem_id as u32, y);
        y += b.bytes.max(1) as f64 / total * h;
    }
    let steps = m.instructions.max(1) as f64;
    let _ = write!(
        s,
        "<svg class=\"lifetimes\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\"><rect width=\"{w}\" height=\"{h}\" fill=\"#fafafa\" stroke=\"#999\"/>"
    );
    for v in m
        .values
        .iter()
        .filter(|v| v.first.is_some())
        .take(MAX_LIFETIMES)
    {
        let (Some(first), Some(last)) = (v.first, v.last) else {
            continue;
        };
        let Some(&y0) = top.get(&v.mem_id) else {
            continue;
        };
        let x = first as f64 / steps * w;
        let width = ((last - first + 1) as f64 / steps * w).max(1.0);
        let yy = y0 + v.offset as f64 / total * h;
        let hh = (v.bytes as f64 / total * h).max(1.0);
        let _ = write!(
            s,
            "<rect x=\"{x:.2}\" y=\"{yy:.2}\" width=\"{width:.2}\" height=\"{hh:.2}\" fill=\"#e8a33d\" fill-opacity=\"0.7\"><title>{}</title></rect>",
            esc(&format!(
                "value {}: {} at buffer {} offset {}, instructions {first}..{last}",
                v.value,
                human(v.bytes),
                v.mem_id,
                v.offset
            ))
        );
    }
    s.push_str("</svg>");
    let drawn = m.values.iter().filter(|v| v.first.is_some()).count();
    if drawn > MAX_LIFETIMES {
        let _ = write!(
            s,
            "<p class=\"note\">The first {MAX_LIFETIMES} of {drawn} values are drawn; --json holds all.</p>"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
