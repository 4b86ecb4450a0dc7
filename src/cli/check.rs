//! `ptefs check`: will a program load and run on a runtime?

use std::path::PathBuf;

use clap::Args;

use super::{OK, TROUBLE, error, open_inputs};
use crate::report::check::Limits;
use crate::report::check::spec::{DEFAULT, RuntimeSpec};

/// Problems found: a method would not load or run.
const PROBLEMS: i32 = 1;

#[derive(Args, Debug)]
#[command(
    after_help = "Runtime specs: executorch-1.5.1 (the default: ExecuTorch 1.5.1's \
    PyPI runtime), portable (the portable kernel library alone), the JSON a Python runtime \
    prints (see docs/check.md), or a selective build's selected_operators.yaml (as the tree's \
    ops.yaml). Several --runtime add up, as do specs joined by + \
    (executorch-1.5.1+my_ops.yaml).\n\n\
    Exit status: 0 every method loads, 1 problems (listed), 2 the input or a spec cannot \
    be read.\n\nExamples:\n  \
    ptefs check model.pte\n  \
    ptefs check model.pte --data weights.ptd --runtime portable --runtime my_ops.yaml\n  \
    ptefs check --json --memory-limit 512K model.pte"
)]
pub(super) struct CheckArgs {
    /// Print JSON for scripts instead of text.
    #[arg(long)]
    json: bool,
    /// A runtime to check against: a built-in name or a spec file
    /// (repeatable; they add up).
    #[arg(long = "runtime", value_name = "SPEC")]
    runtime: Vec<String>,
    /// The largest planned memory arena the target can hold: bytes, or
    /// with a binary K, M or G (512K).
    #[arg(long = "memory-limit", value_name = "SIZE", value_parser = super::size::value)]
    memory_limit: Option<u64>,
    /// A .ptd whose tensors and named blobs programs may use (repeatable).
    #[arg(long = "data", value_name = "PTD")]
    data: Vec<PathBuf>,
    /// Do not attach the .ptd files beside a file that hold data it needs
    /// (external tensors, delegates' named data).
    #[arg(long)]
    no_auto_data: bool,
    #[command(flatten)]
    http: super::HttpHeaders,
    /// A .pte, .bpte or .ptn file, or an http(s)://, s3://, gs:// or az:// URL of one.
    file: PathBuf,
}

pub(super) fn run(args: &CheckArgs) -> Result<i32, i32> {
    args.http.apply()?;
    let names: Vec<&str> = if args.runtime.is_empty() {
        vec![DEFAULT]
    } else {
        args.runtime.iter().map(String::as_str).collect()
    };
    let specs = names
        .iter()
        .map(|n| RuntimeSpec::load(n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            error(e);
            TROUBLE
        })?;
    let runtime = RuntimeSpec::merge(specs);
    let opened = open_inputs(
        std::slice::from_ref(&args.file),
        &args.data,
        !args.no_auto_data,
    )?;
    let limits = Limits {
        memory: args.memory_limit,
    };
    let result = crate::view::check::check(&opened, &runtime, limits).map_err(|e| {
        error(e);
        TROUBLE
    })?;
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&result).map_err(|e| {
            error(e);
            TROUBLE
        })?;
        s.push('\n');
        s
    } else {
        result.text()
    };
    super::print(&out)?;
    Ok(if result.ok { OK } else { PROBLEMS })
}
