//! `ptefs inspect`: what a file holds and what makes it big.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use super::OK;
use crate::format::{DataFile, Parsed, ProgramFile, Span, TensorData, operator_name, scalar};
use crate::schema::program as fb;

#[derive(Args, Debug)]
pub(super) struct InspectArgs {
    /// Print JSON for scripts instead of text.
    #[arg(long)]
    json: bool,
    /// A .ptd to look external tensors up in (repeatable).
    #[arg(long = "data", value_name = "PTD")]
    data: Vec<PathBuf>,
    /// A .pte, .ptd or .bpte file.
    file: PathBuf,
}

pub(super) fn run(args: &InspectArgs) -> Result<i32, i32> {
    let source = super::open_source(&args.file)?;
    let parsed = super::parse_source(&source)?;
    for w in parsed.warnings() {
        eprintln!("ptefs: warning: {}: {w}", source.name);
    }
    let data_sources = args
        .data
        .iter()
        .map(|p| super::open_source(p))
        .collect::<Result<Vec<_>, _>>()?;
    let keys: std::collections::HashSet<String> = super::parse_data(&data_sources)?
        .iter()
        .flat_map(|d| d.entries.iter().map(|e| e.key.to_string()))
        .collect();
    let summary = match &parsed {
        Parsed::Program(p) => program(p, 0, &keys),
        Parsed::Data(d) => data(d),
        Parsed::Bundled(b) => {
            let mut s = program(&b.program, b.program_span.offset, &keys);
            s["kind"] = json!("bundled_program");
            s["file_size"] = json!(b.bytes.len());
            s["embedded_program"] =
                json!({"offset": b.program_span.offset, "size": b.program_span.len});
            s["test_suites"] = b
                .suites
                .iter()
                .map(|(m, cases)| json!({"method": m, "cases": cases.len()}))
                .collect();
            s
        }
    };
    let out = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&summary).unwrap_or_default()
        )
    } else {
        text(&source.name, &summary)
    };
    super::print(&out)?;
    Ok(OK)
}

/// Bytes by category, each byte of the file counted once.
#[derive(Default)]
struct Composition {
    spans: Vec<(&'static str, Span)>,
}

impl Composition {
    fn add(&mut self, category: &'static str, span: Span) {
        self.spans.push((category, span));
    }

    /// Categories with their bytes; overlaps go to the category added
    /// first, and whatever no category covers is `padding`.
    fn finish(mut self, file_size: u64) -> Value {
        let order: Vec<&str> = {
            let mut seen = Vec::new();
            for (c, _) in &self.spans {
                if !seen.contains(c) {
                    seen.push(*c);
                }
            }
            seen
        };
        let rank = |c: &str| order.iter().position(|x| *x == c).unwrap_or(usize::MAX);
        self.spans.sort_by_key(|(c, s)| (s.offset, rank(c)));
        let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
        let mut covered_to = 0u64;
        // Sweep in file order; a byte already counted is not counted again.
        for (c, s) in &self.spans {
            let start = s.offset.max(covered_to);
            if s.end() > start {
                *totals.entry(c).or_default() += s.end() - start;
                covered_to = s.end();
            }
        }
        let counted: u64 = totals.values().sum();
        let mut rows: Vec<Value> = order
            .iter()
            .map(|c| {
                let b = totals.get(c).copied().unwrap_or(0);
                json!({"category": c, "bytes": b, "share": share(b, file_size)})
            })
            .collect();
        let padding = file_size.saturating_sub(counted);
        rows.push(
            json!({"category": "padding", "bytes": padding, "share": share(padding, file_size)}),
        );
        Value::Array(rows)
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64 * 1000.0).round() / 1000.0
    }
}

fn program(p: &ProgramFile<'_>, shift: u64, attached: &std::collections::HashSet<String>) -> Value {
    let mut comp = Composition::default();
    let mut by_dtype: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut methods = Vec::new();
    let mut delegates = Vec::new();
    for m in &p.methods {
        let mut ops: BTreeMap<String, u64> = BTreeMap::new();
        let mut instructions = 0;
        for chain in m.plan.chains().iter().flatten() {
            for ins in chain.instructions().iter().flatten() {
                instructions += 1;
                let name = match ins.instr_args_type() {
                    fb::InstructionArguments::KernelCall => ins
                        .instr_args_as_kernel_call()
                        .and_then(|k| operator_name(m.plan, k.op_index()))
                        .unwrap_or_else(|| "<invalid operator>".to_owned()),
                    fb::InstructionArguments::DelegateCall => "<delegate call>".to_owned(),
                    other => format!(
                        "<{}>",
                        other.variant_name().unwrap_or("unknown").to_lowercase()
                    ),
                };
                *ops.entry(name).or_default() += 1;
            }
        }
        let mut bytes = 0;
        for t in &m.tensors {
            let e = by_dtype.entry(scalar::name(t.scalar_type)).or_default();
            e.0 += 1;
            e.1 += t.nbytes;
            bytes += t.nbytes;
        }
        for d in &m.delegates {
            delegates.push(
                json!({"method": m.name, "index": d.index, "id": d.id, "bytes": d.processed.map_or(0, |s| s.len)}),
            );
        }
        methods.push(json!({
            "name": m.name,
            "values": m.plan.values().map_or(0, |v| v.len()),
            "instructions": instructions,
            "operators": m.plan.operators().map_or(0, |v| v.len()),
            "calls": ops,
            "tensors": m.tensors.len(),
            "tensor_bytes": bytes,
            "external_tensors": m.tensors.iter().filter(|t| matches!(t.data, TensorData::External { .. })).count(),
            "external_missing": m.tensors.iter().filter(|t| matches!(t.data, TensorData::External { key } if !attached.contains(&key.to_string()))).count(),
            "delegates": m.delegates.len(),
        }));
    }
    let at = |s: Span| Span {
        offset: s.offset + shift,
        len: s.len,
    };
    comp.add(
        "header and program",
        Span {
            offset: shift,
            len: p.flatbuffer.len,
        },
    );
    let mut constant_segments = Vec::new();
    if let Some(cs) = p.program.constant_segment() {
        constant_segments.push(cs.segment_index() as usize);
    }
    for (i, s) in p.segments.iter().enumerate() {
        let is_delegate = p
            .methods
            .iter()
            .flat_map(|m| &m.delegates)
            .any(|d| d.processed == Some(*s));
        let is_named = p.named.iter().any(|n| n.span == *s);
        let is_mutable = p
            .program
            .mutable_data_segments()
            .iter()
            .flatten()
            .any(|m| m.segment_index() as usize == i);
        let category = if constant_segments.contains(&i) {
            "constants"
        } else if is_mutable {
            "mutable initial state"
        } else if is_delegate {
            "delegate blobs"
        } else if is_named {
            "named data"
        } else {
            "other segments"
        };
        comp.add(category, at(*s));
    }
    // Inline constants and delegate data live inside the flatbuffer; count
    // them as what they are, not as metadata.
    let mut rows = comp.finish(p.bytes.len() as u64);
    let inline_constants: u64 = p.constants.iter().flatten().map(|s| s.len).sum::<u64>()
        * u64::from(p.program.constant_buffer().is_some_and(|b| !b.is_empty()));
    let inline_delegates: u64 = p
        .program
        .backend_delegate_data()
        .iter()
        .flatten()
        .map(|d| d.data().map_or(0, |v| v.len() as u64))
        .sum();
    move_bytes(
        &mut rows,
        "header and program",
        "constants",
        inline_constants,
        p.bytes.len() as u64,
    );
    move_bytes(
        &mut rows,
        "header and program",
        "delegate blobs",
        inline_delegates,
        p.bytes.len() as u64,
    );
    json!({
        "kind": "program",
        "identifier": String::from_utf8_lossy(&p.header.magic),
        "version": p.program.version(),
        "file_size": p.bytes.len(),
        "methods": methods,
        "tensors": by_dtype.iter().map(|(t, (n, b))| json!({"scalar_type": t, "count": n, "bytes": b})).collect::<Vec<_>>(),
        "segments": {"count": p.segments.len(), "bytes": p.segments.iter().map(|s| s.len).sum::<u64>()},
        "named_data": {"count": p.named.len(), "bytes": p.named.iter().map(|n| n.span.len).sum::<u64>()},
        "delegates": delegates,
        "composition": rows,
    })
}

/// Moves `bytes` from one composition row to another.
fn move_bytes(rows: &mut Value, from: &str, to: &str, bytes: u64, file_size: u64) {
    if bytes == 0 {
        return;
    }
    let Some(list) = rows.as_array_mut() else {
        return;
    };
    if !list.iter().any(|r| r["category"] == to) {
        let at = list.len().saturating_sub(1);
        list.insert(at, json!({"category": to, "bytes": 0, "share": 0.0}));
    }
    for r in list.iter_mut() {
        let b = r["bytes"].as_u64().unwrap_or(0);
        let nb = if r["category"] == from {
            b.saturating_sub(bytes)
        } else if r["category"] == to {
            b + bytes
        } else {
            continue;
        };
        r["bytes"] = json!(nb);
        r["share"] = json!(share(nb, file_size));
    }
}

fn data(d: &DataFile<'_>) -> Value {
    let mut comp = Composition::default();
    comp.add("header and metadata", d.flatbuffer);
    let mut by_dtype: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for e in &d.entries {
        match &e.layout {
            Some(l) => {
                let x = by_dtype.entry(scalar::name(l.scalar_type)).or_default();
                x.0 += 1;
                x.1 += e.span.len;
                comp.add("tensors", e.span);
            }
            None => comp.add("opaque blobs", e.span),
        }
    }
    json!({
        "kind": "data",
        "identifier": String::from_utf8_lossy(&d.header.magic),
        "version": d.flat.version(),
        "file_size": d.bytes.len(),
        "named_data": d.entries.len(),
        "tensors": by_dtype.iter().map(|(t, (n, b))| json!({"scalar_type": t, "count": n, "bytes": b})).collect::<Vec<_>>(),
        "opaque_blobs": {"count": d.entries.iter().filter(|e| e.layout.is_none()).count(), "bytes": d.entries.iter().filter(|e| e.layout.is_none()).map(|e| e.span.len).sum::<u64>()},
        "segments": {"count": d.segments.len(), "bytes": d.segments.iter().map(|s| s.len).sum::<u64>()},
        "composition": comp.finish(d.bytes.len() as u64),
    })
}

/// The human summary, from the same data as `--json`.
fn text(name: &str, s: &Value) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let kind = match s["kind"].as_str() {
        Some("program") => "ExecuTorch program",
        Some("data") => "ExecuTorch data file",
        _ => "ExecuTorch bundled program",
    };
    let _ = writeln!(
        o,
        "{name}: {kind}, identifier {}, version {}, {} bytes",
        s["identifier"].as_str().unwrap_or(""),
        s["version"],
        s["file_size"]
    );
    if let Some(methods) = s["methods"].as_array() {
        let _ = writeln!(o, "\nmethods: {}", methods.len());
        for m in methods {
            let _ = writeln!(
                o,
                "  {}: {} values, {} instructions, {} operators, {} tensors ({} bytes){}, {} delegates",
                m["name"].as_str().unwrap_or(""),
                m["values"],
                m["instructions"],
                m["operators"],
                m["tensors"],
                m["tensor_bytes"],
                match (
                    m["external_tensors"].as_u64(),
                    m["external_missing"].as_u64()
                ) {
                    (Some(0) | None, _) => String::new(),
                    (Some(n), Some(0) | None) => format!(", {n} external"),
                    (Some(n), Some(k)) =>
                        format!(", {n} external of which {k} not in any --data file"),
                },
                m["delegates"],
            );
            if let Some(calls) = m["calls"].as_object() {
                let mut calls: Vec<(&String, u64)> = calls
                    .iter()
                    .map(|(k, v)| (k, v.as_u64().unwrap_or(0)))
                    .collect();
                calls.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                for (op, n) in calls {
                    let _ = writeln!(o, "    {n:>6}  {op}");
                }
            }
        }
    }
    if let Some(tensors) = s["tensors"].as_array() {
        let count: u64 = tensors.iter().filter_map(|t| t["count"].as_u64()).sum();
        let bytes: u64 = tensors.iter().filter_map(|t| t["bytes"].as_u64()).sum();
        let _ = writeln!(o, "\ntensors: {count} ({bytes} bytes)");
        for t in tensors {
            let _ = writeln!(
                o,
                "  {:<16} {:>8} tensors {:>14} bytes",
                t["scalar_type"].as_str().unwrap_or(""),
                t["count"].as_u64().unwrap_or(0),
                t["bytes"].as_u64().unwrap_or(0)
            );
        }
    }
    let _ = writeln!(
        o,
        "\nsegments: {} ({} bytes)",
        s["segments"]["count"], s["segments"]["bytes"]
    );
    if let Some(n) = s["named_data"].as_object() {
        let _ = writeln!(o, "named data: {} ({} bytes)", n["count"], n["bytes"]);
    } else if let Some(n) = s["named_data"].as_u64() {
        let _ = writeln!(o, "named data: {n}");
    }
    if let Some(b) = s["opaque_blobs"].as_object() {
        let _ = writeln!(o, "opaque blobs: {} ({} bytes)", b["count"], b["bytes"]);
    }
    if let Some(ds) = s["delegates"].as_array() {
        let _ = writeln!(o, "delegates: {}", ds.len());
        for d in ds {
            let _ = writeln!(
                o,
                "  {} #{} {}: {} bytes",
                d["method"].as_str().unwrap_or(""),
                d["index"],
                d["id"].as_str().unwrap_or(""),
                d["bytes"]
            );
        }
    }
    if let Some(ts) = s["test_suites"].as_array() {
        let _ = writeln!(o, "test suites: {}", ts.len());
        for t in ts {
            let _ = writeln!(
                o,
                "  {}: {} cases",
                t["method"].as_str().unwrap_or(""),
                t["cases"]
            );
        }
    }
    let _ = writeln!(o, "\nwhat the {} bytes are:", s["file_size"]);
    for r in s["composition"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "  {:<24} {:>14} bytes {:>6.1}%",
            r["category"].as_str().unwrap_or(""),
            r["bytes"].as_u64().unwrap_or(0),
            r["share"].as_f64().unwrap_or(0.0) * 100.0
        );
    }
    o
}
