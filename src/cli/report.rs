//! `ptefs report`: where a file's bytes go, what runs where, what the
//! weights look like, as text, JSON or one self-contained HTML page.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::progress::Progress;
use super::{OK, TROUBLE, error};
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    ptefs report model.pte -o report.html\n  \
    ptefs report model.pte --data weights.ptd --json | jq .duplicates\n  \
    ptefs report model.pte --names model.safetensors")]
pub(super) struct ReportArgs {
    /// Print the report as JSON (total_bytes, by_dtype, by_layer,
    /// by_backend, duplicates, coverage, quantization, stats, memory).
    #[arg(long)]
    json: bool,
    /// Write the report as one self-contained HTML page to FILE.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    attach: super::Attach,
    #[arg(help = super::INPUT_KINDS)]
    file: PathBuf,
}

/// Opens `file` with what `attach` names and computes its report.
pub(super) fn compute(
    file: &std::path::Path,
    attach: &super::Attach,
    progress: &Progress,
) -> Result<crate::report::summary::Report, i32> {
    let req = attach.request(vec![file.to_path_buf()], false)?;
    progress.stage("opening");
    let mut view = progress.suspend(|| super::open_view(&req))?;
    progress.stage("computing the report");
    view.report().map_err(|e| {
        progress.suspend(|| error(e));
        TROUBLE
    })
}

pub(super) fn run(args: &ReportArgs) -> Result<i32, i32> {
    let progress = Progress::new(&shown(&args.file));
    let report = compute(&args.file, &args.attach, &progress)?;
    progress.finish();
    if let Some(path) = &args.output {
        let page = crate::report::page::html(&report);
        std::fs::write(path, page).map_err(|e| {
            error(format_args!("{}: {e}", shown(path)));
            TROUBLE
        })?;
    }
    if args.json {
        // Written as it is serialized: a report of a million tensors runs
        // to hundreds of megabytes of JSON.
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, &report)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush())
            .map_err(super::output_error)?;
    } else if args.output.is_none() {
        super::print(&report.text())?;
    }
    Ok(OK)
}
