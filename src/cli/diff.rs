//! `ptefs diff`: exit 0 when the files are identical, 1 when they differ
//! (like cmp), 2 on trouble.

use std::path::PathBuf;

use clap::Args;

use super::{NOT_FOUND, OK, open_source, parse_data, parse_source};
use crate::diff::{self, Side};

#[derive(Args, Debug)]
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
    let (sa, sb) = (open_source(&args.a)?, open_source(&args.b)?);
    let data_sources = args
        .data
        .iter()
        .map(|p| open_source(p))
        .collect::<Result<Vec<_>, _>>()?;
    let (pa, pb) = (parse_source(&sa)?, parse_source(&sb)?);
    let data = parse_data(&data_sources)?;
    if sa.bytes() == sb.bytes() {
        return Ok(OK);
    }
    let report = diff::compare(
        &Side {
            parsed: &pa,
            data: &data,
        },
        &Side {
            parsed: &pb,
            data: &data,
        },
    );
    let out = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        )
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
