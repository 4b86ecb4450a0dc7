//! `ptefs diff`: exit 0 when the files are the same, 1 when they differ
//! (like cmp), 2 on trouble.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::{NOT_FOUND, OK, TROUBLE, error, open_inputs};
use crate::meta::names::Checkpoint;
use crate::report::diff::{self, Options, Report, Section, Side, Tolerance};
use crate::tree;

#[derive(Args, Debug)]
#[command(
    after_help = "Sections (for --only and as JSON keys), in order: file, methods, \
    then for each method in both files io, instructions, memory, delegates, tensors; last, \
    program-wide data under tensors.\n\n\
    Examples:\n  \
    ptefs diff old.pte new.pte\n  \
    ptefs diff --stat old.pte new.pte\n  \
    ptefs diff --only tensors --atol 1e-6 --rtol 1e-4 --json old.pte new.pte\n  \
    ptefs diff exports/v1 exports/v2"
)]
pub(super) struct DiffArgs {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// One line per changed section and tensor, then a total.
    #[arg(long, conflicts_with = "json")]
    stat: bool,
    /// Only these sections (comma-separated); the exit status follows them.
    #[arg(long, value_delimiter = ',', value_name = "SECTION")]
    only: Vec<Section>,
    /// Absolute tolerance: elements within `atol + rtol * |b|` are equal.
    #[arg(long, default_value_t = 0.0, value_name = "ATOL")]
    atol: f64,
    /// Relative tolerance, with B (the second file) as the reference.
    #[arg(long, default_value_t = 0.0, value_name = "RTOL")]
    rtol: f64,
    /// A safetensors checkpoint or JSON map {name: sha256}: tensors the
    /// files store without a name pair by the checkpoint's names.
    #[arg(long, value_name = "FILE")]
    names: Option<PathBuf>,
    /// A .ptd attached to both files (repeatable).
    #[arg(long = "data", value_name = "PTD")]
    data: Vec<PathBuf>,
    /// The first file (or directory of them).
    a: PathBuf,
    /// The second file (or directory), the reference.
    b: PathBuf,
}

/// Two directories compared file by file.
#[derive(Serialize)]
struct Dirs {
    a: String,
    b: String,
    differ: bool,
    /// Relative paths of model files only in A.
    only_in_a: Vec<String>,
    /// Relative paths of model files only in B.
    only_in_b: Vec<String>,
    /// Each pair of files with the same relative path.
    files: Vec<Report>,
}

pub(super) fn run(args: &DiffArgs) -> Result<i32, i32> {
    if !(args.atol >= 0.0 && args.rtol >= 0.0) {
        error("--atol and --rtol must be numbers at or above 0");
        return Err(TROUBLE);
    }
    let opt = Options {
        only: args.only.clone(),
        tolerance: Tolerance {
            atol: args.atol,
            rtol: args.rtol,
        },
    };
    let names = match &args.names {
        Some(p) => Some(crate::view::load_checkpoint(p).map_err(|e| {
            error(e);
            TROUBLE
        })?),
        None => None,
    };
    let names = names.as_ref();
    let out = if args.a.is_dir() && args.b.is_dir() {
        let d = dirs(&args.a, &args.b, &opt, names)?;
        let differ = d.differ;
        (render_dirs(&d, args)?, differ)
    } else {
        let r = compare_files(
            (&args.a, &args.data),
            (&args.b, &args.data),
            (&args.a.display().to_string(), &args.b.display().to_string()),
            &opt,
            names,
        )?;
        (render(&r, args)?, r.differ)
    };
    super::print(&out.0)?;
    Ok(if out.1 { NOT_FOUND } else { OK })
}

fn json(v: &impl Serialize) -> Result<String, i32> {
    let mut s = serde_json::to_string_pretty(v).map_err(|e| {
        error(e);
        TROUBLE
    })?;
    s.push('\n');
    Ok(s)
}

fn render(r: &Report, args: &DiffArgs) -> Result<String, i32> {
    if args.json {
        json(r)
    } else if args.stat {
        Ok(if r.differ { r.stat() } else { String::new() })
    } else {
        Ok(r.text())
    }
}

fn render_dirs(d: &Dirs, args: &DiffArgs) -> Result<String, i32> {
    if args.json {
        return json(d);
    }
    let mut o = String::new();
    for p in &d.only_in_a {
        o.push_str(&format!("only in {}: {}\n", d.a, crate::text::escape(p)));
    }
    for p in &d.only_in_b {
        o.push_str(&format!("only in {}: {}\n", d.b, crate::text::escape(p)));
    }
    for r in d.files.iter().filter(|r| r.differ) {
        o.push_str(&format!("== {} {}\n", r.a, r.b));
        o.push_str(&render(r, args)?);
    }
    Ok(o)
}

/// Compares two files, each with the data files to attach to it.
fn compare_files(
    a: (&Path, &[PathBuf]),
    b: (&Path, &[PathBuf]),
    names: (&str, &str),
    opt: &Options,
    checkpoint: Option<&Checkpoint>,
) -> Result<Report, i32> {
    let fail = |e: &dyn std::fmt::Display| {
        error(e);
        TROUBLE
    };
    let (mut oa, mut ob) = (
        open_inputs(&[a.0.to_owned()], a.1)?,
        open_inputs(&[b.0.to_owned()], b.1)?,
    );
    // Tensors are compared byte for byte: remote files are read whole.
    oa.fetch_whole().map_err(|e| fail(&e))?;
    ob.fetch_whole().map_err(|e| fail(&e))?;
    let (ia, ib) = (
        oa.parse().map_err(|e| fail(&e))?,
        ob.parse().map_err(|e| fail(&e))?,
    );
    let (Some(xa), Some(xb)) = (ia.shown.first(), ib.shown.first()) else {
        return Err(TROUBLE);
    };
    let (ta, tb) = (
        tree::build_with_names(&ia.shown, &ia.attached, false, checkpoint),
        tree::build_with_names(&ib.shown, &ib.attached, false, checkpoint),
    );
    let side = |input, attached, tree| Side {
        input,
        attached,
        tree,
    };
    Ok(diff::compare(
        &side(xa, &ia.attached, &ta),
        &side(xb, &ib.attached, &tb),
        names,
        opt,
    ))
}

/// Model files under `root` by relative path, found by their content.
fn models(root: &Path) -> Result<Vec<PathBuf>, i32> {
    let opened = crate::view::Opened::open(&crate::view::Request {
        inputs: vec![root.to_owned()],
        data: Vec::new(),
        recursive: true,
        names: None,
        auto_data: false,
    })
    .map_err(|e| {
        error(e);
        TROUBLE
    })?;
    let mut out: Vec<PathBuf> = opened
        .sources
        .iter()
        .filter_map(|s| s.path.strip_prefix(root).ok().map(Path::to_owned))
        .collect();
    out.sort();
    Ok(out)
}

/// Two directories, file by file; a `.pte` is compared with the `.ptd`
/// files beside it on its side attached.
fn dirs(a: &Path, b: &Path, opt: &Options, names: Option<&Checkpoint>) -> Result<Dirs, i32> {
    let (ma, mb) = (models(a)?, models(b)?);
    let mut d = Dirs {
        a: a.display().to_string(),
        b: b.display().to_string(),
        differ: false,
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        files: Vec::new(),
    };
    let show = |p: &Path| p.display().to_string();
    d.only_in_a = ma
        .iter()
        .filter(|p| !mb.contains(p))
        .map(|p| show(p))
        .collect();
    d.only_in_b = mb
        .iter()
        .filter(|p| !ma.contains(p))
        .map(|p| show(p))
        .collect();
    let beside = |root: &Path, rel: &Path, all: &[PathBuf]| -> Vec<PathBuf> {
        let dir = rel.parent().unwrap_or(Path::new(""));
        all.iter()
            .filter(|p| p.parent().unwrap_or(Path::new("")) == dir)
            .filter(|p| p.extension().is_some_and(|e| e == "ptd") && *p != rel)
            .map(|p| root.join(p))
            .collect()
    };
    for rel in ma.iter().filter(|p| mb.contains(p)) {
        let is_program = rel.extension().is_some_and(|e| e == "pte");
        let (da, db) = if is_program {
            (beside(a, rel, &ma), beside(b, rel, &mb))
        } else {
            (Vec::new(), Vec::new())
        };
        let (pa, pb) = (a.join(rel), b.join(rel));
        let r = compare_files((&pa, &da), (&pb, &db), (&show(&pa), &show(&pb)), opt, names)?;
        d.files.push(r);
    }
    d.differ =
        !d.only_in_a.is_empty() || !d.only_in_b.is_empty() || d.files.iter().any(|r| r.differ);
    Ok(d)
}
