//! `ptefs inspect`: what a file holds and what makes it big.

use std::path::PathBuf;

use clap::Args;

use super::progress::Progress;
use super::{OK, TROUBLE, error, open_inputs};
use crate::report::check::spec::RuntimeSpec;
use crate::report::inspect::check::checked;
use crate::report::inspect::{Extras, inspect_input};
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    ptefs inspect model.pte\n  \
    ptefs inspect --top 10 model.pte\n  \
    ptefs inspect --runtime executorch-1.5.1 model.pte\n  \
    ptefs inspect --json model.pte --data weights.ptd | jq .composition\n  \
    ptefs inspect run.etdp --program model.pte")]
pub(super) struct InspectArgs {
    /// Print JSON for scripts instead of text.
    #[arg(long)]
    json: bool,
    /// Also list the N largest tensors and blobs (each byte range once).
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Also check the program against a runtime, as `ptefs check` does: a
    /// built-in name or a spec file (repeatable; they add up).
    #[arg(long = "runtime", value_name = "SPEC")]
    runtime: Vec<String>,
    /// Also print each tensor's statistics: min, max, mean, std, zeros,
    /// NaN and Inf (as `ptefs report` computes them).
    #[arg(long)]
    stats: bool,
    #[command(flatten)]
    attach: super::Attach,
    /// For an ETDump (.etdp): the program that ran, whose operators name
    /// its instructions.
    #[arg(long, value_name = "PTE")]
    program: Option<PathBuf>,
    #[command(flatten)]
    profile: super::ProfileArgs,
    #[arg(help = super::INPUT_KINDS)]
    file: PathBuf,
}

pub(super) fn run(args: &InspectArgs) -> Result<i32, i32> {
    args.attach.headers()?;
    let progress = Progress::new(&shown(&args.file));
    let fail = |e: &dyn std::fmt::Display| {
        progress.suspend(|| error(e));
        TROUBLE
    };
    progress.stage("opening");
    let opened = progress.suspend(|| {
        open_inputs(
            std::slice::from_ref(&args.file),
            &args.attach.data,
            !args.attach.no_auto_data,
        )
    })?;
    progress.stage("parsing");
    let inputs = opened.parse().map_err(|e| fail(&e))?;
    let Some(input) = inputs.shown.first() else {
        return Err(TROUBLE);
    };
    progress.suspend(|| {
        let prefix = format!("{}: ", crate::escape::escape(&input.name));
        super::warn_capped(input.parsed.warnings(), &prefix);
    });
    let checkpoint = match &args.attach.names {
        Some(path) => {
            progress.stage("loading the checkpoint");
            Some(crate::view::load_checkpoint(path).map_err(|e| fail(&e))?)
        }
        None => None,
    };
    let sources: Vec<&[u8]> = opened.sources.iter().map(|s| s.bytes()).collect();
    let extras = Extras {
        checkpoint: checkpoint.as_ref(),
        top: args.top,
        stats: args.stats,
    };
    let mut report = inspect_input(input, &inputs.attached, &sources, extras, &mut |what| {
        progress.stage(what)
    });
    // The profile and its program: the file and --program, or --profile
    // and the file.
    let other = match (&args.program, &args.profile.profile) {
        (Some(_), Some(_)) => {
            return Err(fail(
                &"--program (for an ETDump) and --profile (for a program) \
                              are not given together",
            ));
        }
        (Some(p), None) | (None, Some(p)) => Some(p),
        (None, None) => None,
    };
    if let Some(path) = other {
        progress.stage("joining the profile with its program");
        let source = crate::source::Source::open(path).map_err(|e| fail(&e))?;
        let parsed = crate::format::parse(source.bytes())
            .map_err(|e| fail(&format_args!("{}: {e}", shown(path))))?;
        let name = crate::source::base_name(path);
        let joined = if args.program.is_some() {
            crate::report::inspect::join_profile(&mut report, &name, &parsed, &input.parsed)
        } else {
            crate::report::inspect::join_profile(&mut report, &input.name, &input.parsed, &parsed)
        };
        joined.map_err(|e| fail(&format_args!("{}: {e}", shown(path))))?;
    }
    progress.finish();
    if !args.runtime.is_empty() {
        return print_checked(args, &report, input, &inputs.attached);
    }
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&report).map_err(|e| {
            error(format_args!("{}: {e}", shown(&args.file)));
            TROUBLE
        })?;
        s.push('\n');
        s
    } else {
        report.text()
    };
    super::print(&out)?;
    Ok(OK)
}

/// Prints `report` with the check of its program against `--runtime`.
fn print_checked(
    args: &InspectArgs,
    report: &crate::report::inspect::Inspection,
    input: &crate::tree::Input<'_>,
    attached: &[crate::tree::Input<'_>],
) -> Result<i32, i32> {
    let fail = |e: &dyn std::fmt::Display| {
        error(e);
        TROUBLE
    };
    let specs = (args.runtime.iter())
        .map(|n| RuntimeSpec::load(n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(&e))?;
    let runtime = RuntimeSpec::merge(specs);
    let checked = checked(report, input, attached, &runtime).map_err(|e| fail(&e))?;
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&checked)
            .map_err(|e| fail(&format_args!("{}: {e}", shown(&args.file))))?;
        s.push('\n');
        s
    } else {
        checked.text()
    };
    super::print(&out)?;
    Ok(OK)
}
