//! The report as files of the tree (`report/`): JSON for the nested parts,
//! tab-separated tables for the rest, so `sort`, `awk` and `jq` reach
//! every number.

use std::io::{self, Write};
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use super::Report;
use crate::tree::Tree;
use crate::tree::report_files::{ReportFile, ReportFiles, ReportInputs};

/// The files of a tree's `report/` directory.
pub use crate::tree::report_files::FILES;

/// The renderer of one tree's `report/` directory (a
/// [`crate::tree::report_files::ReportMaker`]): the report is computed on
/// the first read of any of its files and kept for the others.
pub fn tree_files() -> Arc<dyn ReportFiles> {
    Arc::new(Cached(OnceLock::new()))
}

/// The renderer of the `report/` directory of a tree with remote
/// sources: their images hold only the bytes fetched so far, so each file
/// says how to get the report instead of reporting zeros.
pub fn remote_tree_files() -> Arc<dyn ReportFiles> {
    Arc::new(Remote)
}

struct Remote;

impl ReportFiles for Remote {
    fn render(
        &self,
        _tree: &Tree,
        inputs: &ReportInputs,
        _file: &str,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        writeln!(
            out,
            "{}: the report needs every byte of the file, which a mount of a URL fetches \
             only as files are read; run `ptefs report` on the URL (it fetches the file whole)",
            inputs.shown.name
        )
    }
}

struct Cached(OnceLock<Result<Report, String>>);

impl ReportFiles for Cached {
    fn render(
        &self,
        tree: &Tree,
        inputs: &ReportInputs,
        file: &str,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        match self.0.get_or_init(|| compute(tree, inputs)) {
            Ok(r) => render_file(r, file, out),
            Err(e) => writeln!(out, "cannot compute the report: {e}"),
        }
    }
}

/// The report of `inputs` from `tree`, the tree they are shown in: the
/// files are parsed once more (the tree keeps no parsed views), and
/// their tree is the one already built.
fn compute(tree: &Tree, inputs: &ReportInputs) -> Result<Report, String> {
    let files: Vec<&ReportFile> = std::iter::once(&inputs.shown)
        .chain(&inputs.attached)
        .collect();
    let count = files.iter().map(|f| f.source + 1).max().unwrap_or(0);
    let mut sources: Vec<&[u8]> = vec![&[]; count];
    for f in &files {
        sources[f.source] = (*f.bytes).as_ref();
    }
    // By source order, as the report takes them.
    let mut parsed = files
        .iter()
        .map(|f| {
            let p = crate::format::parse((*f.bytes).as_ref())
                .map_err(|e| format!("{}: {e}", f.name))?;
            Ok((f.source, f.name.as_str(), p))
        })
        .collect::<Result<Vec<_>, String>>()?;
    parsed.sort_by_key(|(source, _, _)| *source);
    let parsed: Vec<_> = parsed.iter().map(|(_, name, p)| (*name, p)).collect();
    Ok(super::summarize(
        super::Subject {
            tree,
            dir: inputs.dir,
            sources: &sources,
        },
        &parsed,
    ))
}

/// A table cell: tabs and line breaks would split rows and columns, and
/// the file is text a terminal shows, escaped as `ls` escapes names.
fn cell(s: &str) -> String {
    crate::escape::escape(s).into_owned()
}

fn num(x: Option<f64>) -> String {
    x.map_or_else(String::new, |v| format!("{v}"))
}

fn json(out: &mut dyn Write, v: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v)?;
    out.write_all(b"\n")
}

/// Writes file `name` of `report/` for `report`.
pub fn render_file(report: &Report, name: &str, out: &mut dyn Write) -> io::Result<()> {
    match name {
        "size.json" => {
            #[derive(Serialize)]
            struct Size<'a> {
                total_bytes: u64,
                files: &'a [super::FileSize],
                by_dtype: &'a [super::DtypeRow],
                by_backend: &'a [super::BackendRow],
                size: &'a super::SizeNode,
            }
            json(
                out,
                &Size {
                    total_bytes: report.total_bytes,
                    files: &report.files,
                    by_dtype: &report.by_dtype,
                    by_backend: &report.by_backend,
                    size: &report.size,
                },
            )
        }
        "coverage.json" => json(out, &report.coverage),
        "layers.tsv" => {
            writeln!(out, "layer\ttensors\tparams\tbytes\tdtypes")?;
            for l in &report.by_layer {
                let dtypes: Vec<String> =
                    l.dtypes.iter().map(|(d, b)| format!("{d}:{b}")).collect();
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}",
                    cell(&l.layer),
                    l.tensors,
                    l.params,
                    l.bytes,
                    cell(&dtypes.join(","))
                )?;
            }
            Ok(())
        }
        "duplicates.tsv" => {
            writeln!(out, "sha256\tbytes\twasted\tfile\toffset\tpath")?;
            for d in &report.duplicates {
                for c in &d.copies {
                    writeln!(
                        out,
                        "{}\t{}\t{}\t{}\t{}\t{}",
                        d.sha256,
                        d.bytes,
                        d.wasted,
                        cell(&c.file),
                        c.offset,
                        cell(&c.path)
                    )?;
                }
            }
            Ok(())
        }
        "quantization.tsv" => {
            writeln!(
                out,
                "path\tname\tdtype\tscheme\tgroup_size\tbits\tbytes\tscale_bytes\tfp32_bytes\tcompression"
            )?;
            for w in &report.quantization.weights {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    cell(&w.path),
                    cell(w.name.as_deref().unwrap_or("")),
                    cell(&w.dtype),
                    cell(&w.scheme),
                    w.group_size.map_or_else(String::new, |g| g.to_string()),
                    w.bits,
                    w.bytes,
                    w.scale_bytes,
                    w.fp32_bytes,
                    w.compression
                )?;
            }
            Ok(())
        }
        "stats.tsv" => {
            writeln!(
                out,
                "path\tname\tlayer\tdtype\telements\tmin\tmax\tmean\tstd\tzeros\tnan\tinf\thistogram\tdq_min\tdq_max\tdq_mean\tdq_std"
            )?;
            for s in &report.stats {
                let m = &s.stored;
                let h: Vec<String> = m.histogram.iter().map(u64::to_string).collect();
                let d = s.dequantized.as_ref();
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    cell(&s.path),
                    cell(s.name.as_deref().unwrap_or("")),
                    cell(&s.layer),
                    cell(&s.dtype),
                    m.elements,
                    num(m.min),
                    num(m.max),
                    num(m.mean),
                    num(m.std),
                    m.zeros,
                    m.nan,
                    m.inf,
                    h.join(","),
                    num(d.and_then(|d| d.min)),
                    num(d.and_then(|d| d.max)),
                    num(d.and_then(|d| d.mean)),
                    num(d.and_then(|d| d.std)),
                )?;
            }
            Ok(())
        }
        "treemap.svg" => out.write_all(crate::report::page::treemap_document(report).as_bytes()),
        other => writeln!(out, "no such report file: {other}"),
    }
}
