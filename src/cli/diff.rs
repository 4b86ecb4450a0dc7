//! `ptefs diff`: exit 0 when the files are identical, 1 when they differ
//! (like cmp), 2 on trouble.

use std::path::PathBuf;

use clap::Args;

use super::{NOT_FOUND, OK, TROUBLE, error};
use crate::diff::{self, Side};
use crate::format::{self, Parsed};
use crate::source::Source;

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

fn open(path: &PathBuf) -> Result<Source, i32> {
    Source::open(path).map_err(|e| {
        error(format_args!("{}: {e}", path.display()));
        TROUBLE
    })
}

fn parse<'a>(s: &'a Source) -> Result<Parsed<'a>, i32> {
    format::parse(s.bytes()).map_err(|e| {
        error(format_args!("{}: {e}", s.path.display()));
        TROUBLE
    })
}

pub(super) fn run(args: &DiffArgs) -> Result<i32, i32> {
    let (sa, sb) = (open(&args.a)?, open(&args.b)?);
    let data_sources = args.data.iter().map(open).collect::<Result<Vec<_>, _>>()?;
    let (pa, pb) = (parse(&sa)?, parse(&sb)?);
    let mut data = Vec::new();
    for s in &data_sources {
        match parse(s)? {
            Parsed::Data(d) => data.push(d),
            _ => {
                error(format_args!(
                    "{}: is given with --data but is not a data file (.ptd)",
                    s.path.display()
                ));
                return Err(TROUBLE);
            }
        }
    }
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
