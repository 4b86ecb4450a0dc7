//! `ptefs diff`: exit 0 when the files are identical, 1 when they differ
//! (like cmp), 2 on trouble.

use std::path::PathBuf;

use clap::Args;

use super::{NOT_FOUND, OK, TROUBLE, error, open_inputs};
use crate::report::diff::{self, Side};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    ptefs diff old.pte new.pte\n  \
    ptefs diff --json old.pte new.pte --data weights.ptd")]
pub(super) struct DiffArgs {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// A .ptd attached to both files (repeatable).
    #[arg(long = "data", value_name = "PTD")]
    data: Vec<PathBuf>,
    /// The first file.
    a: PathBuf,
    /// The second file.
    b: PathBuf,
}

pub(super) fn run(args: &DiffArgs) -> Result<i32, i32> {
    let fail = |e: &dyn std::fmt::Display| {
        error(e);
        TROUBLE
    };
    let (oa, ob) = (
        open_inputs(std::slice::from_ref(&args.a), &args.data)?,
        open_inputs(std::slice::from_ref(&args.b), &[])?,
    );
    let (ia, ib) = (
        oa.parse().map_err(|e| fail(&e))?,
        ob.parse().map_err(|e| fail(&e))?,
    );
    let (Some(pa), Some(pb)) = (ia.shown.first(), ib.shown.first()) else {
        return Err(TROUBLE);
    };
    if oa.sources[pa.source].bytes() == ob.sources[pb.source].bytes() {
        return Ok(OK);
    }
    let data = ia.attached_data();
    let report = diff::compare(
        &Side {
            parsed: &pa.parsed,
            data: &data,
        },
        &Side {
            parsed: &pb.parsed,
            data: &data,
        },
    );
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&report).map_err(|e| fail(&e))?;
        s.push('\n');
        s
    } else if report.is_empty() {
        format!(
            "{} and {} differ, but not in methods, operators, tensors or blobs\n",
            args.a.display(),
            args.b.display()
        )
    } else {
        diff::text(&report)
    };
    super::print(&out)?;
    Ok(NOT_FOUND)
}
