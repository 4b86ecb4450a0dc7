//! `ptefs diff`: exit 0 when the files are the same, 1 when they differ
//! (like cmp), 2 on trouble.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::progress::Progress;
use super::{NOT_FOUND, OK, TROUBLE, error, open_inputs};
use crate::meta::checkpoint::Checkpoint;
use crate::report::diff::{self, Directories, Options, Pairing, Report, Section, Tolerance};
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(
    after_help = "Sections (for --only and as JSON keys), in order: file, methods, \
    then for each method in both files io, instructions, memory, delegates, tensors; last, \
    program-wide data under tensors.\n\n\
    Examples:\n  \
    ptefs diff old.pte new.pte\n  \
    ptefs diff --stat old.pte new.pte\n  \
    ptefs diff --only tensors --atol 1e-6 --rtol 1e-4 --json old.pte new.pte\n  \
    ptefs diff exports/v1 exports/v2\n  \
    ptefs diff --program model.pte --threshold 5 before.etdp after.etdp\n  \
    ptefs diff --json v1.etrecord v2.etrecord\n\n\
    Two ETDumps (.etdp) are compared as a speed report instead: per instruction and per \
    operator the mean time per call in A and B, B - A and B / A; the exit status is 1 when \
    B is slower than A by more than --threshold anywhere.\n\n\
    Two ETRecords are compared graph by graph: nodes added, removed or changed (op, target, \
    args, module stack), and state-dict and constant tensors as the tensors section does; \
    an ETRecord is compared only with another ETRecord."
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
    /// For two ETDumps: the slowdown (percent of A's time) beyond which
    /// a row counts as slower and the exit status is 1.
    #[arg(long, default_value_t = 10.0, value_name = "PERCENT")]
    threshold: f64,
    /// For two ETDumps: the program that ran, whose operators name the
    /// instructions.
    #[arg(long, value_name = "PTE")]
    program: Option<PathBuf>,
    #[command(flatten)]
    attach: super::Attach,
    /// The first: a .pte, .ptd, .bpte or .ptn file, a directory of them,
    /// or an http(s)://, s3://, gs:// or az:// URL of one; or an ETDump or
    /// an ETRecord, compared with another of its kind.
    a: PathBuf,
    /// The second, the reference: any input the first may be.
    b: PathBuf,
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
    args.attach.headers()?;
    if let Some(status) = profiles(args)? {
        return Ok(status);
    }
    if let Some(status) = etrecords(args, opt.tolerance)? {
        return Ok(status);
    }
    let names = match &args.attach.names {
        Some(p) => Some(crate::view::load_checkpoint(p).map_err(|e| {
            error(e);
            TROUBLE
        })?),
        None => None,
    };
    let names = names.as_ref();
    let (a, b) = (shown(&args.a), shown(&args.b));
    let progress = Progress::new(&format!("{a} vs {b}"));
    let auto_data = !args.attach.no_auto_data;
    let out = if args.a.is_dir() && args.b.is_dir() {
        let d = dirs(&args.a, &args.b, &opt, (names, auto_data), &progress)?;
        let differ = d.differ;
        (render_dirs(&d, args)?, differ)
    } else {
        let r = compare_files(
            (&args.a, &args.attach.data),
            (&args.b, &args.attach.data),
            (&a, &b),
            &opt,
            (names, auto_data),
            (&progress, ""),
        )?;
        (render(&r, args)?, r.differ)
    };
    progress.finish();
    super::print(&out.0)?;
    Ok(if out.1 { NOT_FOUND } else { OK })
}

/// Two ETDumps compared as a speed report, or `None` when A and B are
/// not both ETDumps.
fn profiles(args: &DiffArgs) -> Result<Option<i32>, i32> {
    let Some(pair) = crate::view::profile_diff::ProfilePair::of(&args.a, &args.b) else {
        if args.program.is_some() {
            error("--program is for comparing two ETDumps (.etdp)");
            return Err(TROUBLE);
        }
        return Ok(None);
    };
    if args.threshold.is_nan() || args.threshold < 0.0 {
        error("--threshold must be a number at or above 0");
        return Err(TROUBLE);
    }
    let report = pair
        .compare(args.program.as_deref(), args.threshold / 100.0)
        .map_err(|e| {
            error(e);
            TROUBLE
        })?;
    let out = if args.json {
        json(&report)?
    } else {
        report.text()
    };
    super::print(&out)?;
    Ok(Some(if report.exceeded { NOT_FOUND } else { OK }))
}

/// Two ETRecords compared graph by graph, or `None` when A and B are not
/// both ETRecords; an ETRecord paired with another kind of file is an error.
fn etrecords(args: &DiffArgs, tolerance: Tolerance) -> Result<Option<i32>, i32> {
    let report = match crate::view::etrecord_diff::compare_etrecords(&args.a, &args.b, tolerance) {
        Ok(Some(report)) => report,
        Ok(None) => return Ok(None),
        Err(e) => {
            error(e);
            return Err(TROUBLE);
        }
    };
    if !args.only.is_empty() {
        error("--only names sections of programs; two ETRecords are compared whole");
        return Err(TROUBLE);
    }
    let out = if args.json {
        json(&report)?
    } else if args.stat {
        report.stat()
    } else {
        report.text()
    };
    super::print(&out)?;
    // Differences found are differences; none found where not everything
    // could be read is not "the same".
    Ok(Some(match (report.differ, report.problems.is_empty()) {
        (true, _) => NOT_FOUND,
        (false, true) => OK,
        (false, false) => TROUBLE,
    }))
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
    } else {
        Ok(text(r, args))
    }
}

/// A report as text, or as `--stat` lines when it differs.
fn text(r: &Report, args: &DiffArgs) -> String {
    match (args.stat, r.differ) {
        (true, true) => r.stat(),
        (true, false) => String::new(),
        (false, _) => r.text(),
    }
}

fn render_dirs(d: &Directories, args: &DiffArgs) -> Result<String, i32> {
    if args.json {
        json(d)
    } else {
        Ok(d.text(|r| text(r, args)))
    }
}

/// Compares two files, each with the data files to attach to it (and,
/// with `auto_data`, those found beside it), showing each stage on
/// `progress` after the label given with it.
fn compare_files(
    a: (&Path, &[PathBuf]),
    b: (&Path, &[PathBuf]),
    names: (&str, &str),
    opt: &Options,
    (checkpoint, auto_data): (Option<&Checkpoint>, bool),
    (progress, label): (&Progress, &str),
) -> Result<Report, i32> {
    let fail = |e: &dyn std::fmt::Display| {
        progress.suspend(|| error(e));
        TROUBLE
    };
    let stage = |what: &str| progress.stage(&format!("{label}{what}"));
    stage("opening");
    let (mut oa, mut ob) = progress.suspend(|| -> Result<_, i32> {
        Ok((
            open_inputs(&[a.0.to_owned()], a.1, auto_data)?,
            open_inputs(&[b.0.to_owned()], b.1, auto_data)?,
        ))
    })?;
    // Tensors are compared byte for byte: remote files are read whole.
    oa.fetch_whole().map_err(|e| fail(&e))?;
    ob.fetch_whole().map_err(|e| fail(&e))?;
    stage("parsing");
    let (ia, ib) = (
        oa.parse().map_err(|e| fail(&e))?,
        ob.parse().map_err(|e| fail(&e))?,
    );
    diff::compare_inputs(
        (&ia.shown, &ia.attached),
        (&ib.shown, &ib.attached),
        names,
        opt,
        checkpoint,
        &mut |what| stage(what),
    )
    .ok_or(TROUBLE)
}

/// Model files under `root` by relative path, found by their content.
fn models(root: &Path) -> Result<Vec<PathBuf>, i32> {
    let opened = crate::view::Opened::open(&crate::view::Request {
        inputs: vec![root.to_owned()],
        data: Vec::new(),
        recursive: true,
        names: None,
        auto_data: false,
        debug_buffer: None,
        profile: None,
        etrecord: None,
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

/// Two directories, file by file; with `auto_data`, a program is compared
/// with the data files beside it on its side that hold what it needs.
fn dirs(
    a: &Path,
    b: &Path,
    opt: &Options,
    (names, auto_data): (Option<&Checkpoint>, bool),
    progress: &Progress,
) -> Result<Directories, i32> {
    progress.stage("finding model files");
    let (ma, mb) = progress.suspend(|| -> Result<_, i32> { Ok((models(a)?, models(b)?)) })?;
    let pairing = Pairing::of(&ma, &mb);
    let show = |p: &Path| shown(p);
    let mut files = Vec::new();
    let pairs = pairing.both.len();
    for (i, rel) in pairing.both.iter().enumerate() {
        let (pa, pb) = (a.join(rel), b.join(rel));
        let label = format!("{}/{pairs} {}: ", i + 1, crate::escape::escape(&show(rel)));
        files.push(compare_files(
            (&pa, &[]),
            (&pb, &[]),
            (&show(&pa), &show(&pb)),
            opt,
            (names, auto_data),
            (progress, &label),
        )?);
    }
    Ok(Directories::new(
        (shown(a), shown(b)),
        &pairing,
        files,
        show,
    ))
}
