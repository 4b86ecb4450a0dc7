//! `ptefs inspect`: what a file holds and what makes it big.

use std::path::PathBuf;

use clap::Args;

use super::progress::Progress;
use super::{OK, TROUBLE, error, open_inputs};
use crate::report::inspect::{inspect, largest};
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    ptefs inspect model.pte\n  \
    ptefs inspect --top 10 model.pte\n  \
    ptefs inspect --json model.pte --data weights.ptd | jq .composition")]
pub(super) struct InspectArgs {
    /// Print JSON for scripts instead of text.
    #[arg(long)]
    json: bool,
    /// Also list the N largest tensors and blobs (each byte range once).
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Also print each tensor's statistics: min, max, mean, std, zeros,
    /// NaN and Inf (as `ptefs report` computes them).
    #[arg(long)]
    stats: bool,
    #[command(flatten)]
    attach: super::Attach,
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
        for w in input.parsed.warnings() {
            error(format_args!(
                "warning: {}: {w}",
                crate::text::escape(&input.name)
            ));
        }
    });
    progress.stage("summarizing");
    let mut report = inspect(&input.name, &input.parsed, &inputs.attached_data());
    if let Some(path) = &args.attach.names {
        progress.stage("loading the checkpoint");
        let checkpoint = crate::view::load_checkpoint(path).map_err(|e| fail(&e))?;
        progress.stage("building the tree with the checkpoint's names");
        let tree = crate::tree::build_with_names(
            std::slice::from_ref(input),
            &inputs.attached,
            false,
            Some(&checkpoint),
        );
        report.checkpoint = Some(matched(&tree, &checkpoint));
    }
    if let Some(n) = args.top {
        progress.stage("building the tree");
        let tree = crate::tree::build(std::slice::from_ref(input), &inputs.attached, false);
        let sizes: Vec<u64> = opened.sources.iter().map(|s| s.opened.len).collect();
        report.largest = Some(largest(&tree, n, &sizes));
    }
    let stats = if args.stats {
        progress.stage("computing statistics");
        let tree = crate::tree::build(std::slice::from_ref(input), &inputs.attached, false);
        let bytes: Vec<&[u8]> = opened.sources.iter().map(|s| s.bytes()).collect();
        let r = crate::report::summary::summarize(crate::report::summary::Subject {
            tree: &tree,
            sources: &bytes,
        });
        report.stats = Some(r.stats.clone());
        Some(r)
    } else {
        None
    };
    progress.finish();
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&report).map_err(|e| {
            error(format_args!("{}: {e}", shown(&args.file)));
            TROUBLE
        })?;
        s.push('\n');
        s
    } else {
        let mut t = report.text();
        if let Some(r) = &stats {
            t.push_str("\nStatistics:\n");
            t.push_str(&r.stats_text());
        }
        t
    };
    super::print(&out)?;
    Ok(OK)
}

/// Which keys of `checkpoint` found a file in `tree` (under `by-name/`).
fn matched(
    tree: &crate::tree::Tree,
    checkpoint: &crate::meta::names::Checkpoint,
) -> crate::meta::names::MatchReport {
    let unmatched: Vec<String> = checkpoint
        .keys
        .keys()
        .filter(|k| {
            let name =
                crate::tree::names::DirNames::default().unique(&crate::tree::names::encode(k), "");
            tree.resolve(&format!("by-name/{name}")).is_none()
        })
        .cloned()
        .collect();
    crate::meta::names::MatchReport {
        keys: checkpoint.keys.len(),
        matched: checkpoint.keys.len() - unmatched.len(),
        unmatched,
    }
}
