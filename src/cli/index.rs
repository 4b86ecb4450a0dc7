//! `ptefs index`: a Parquet catalog of many files at once.

use std::cell::Cell;

use clap::Args;

use super::progress::Progress;
use super::{OK, TROUBLE, error};
use crate::index::listing::Shard;
use crate::index::{Options, Summary};

/// Some file could not be read (it has a row with its error).
const FAILED: i32 = 1;

#[derive(Args, Debug)]
#[command(
    after_help = "Writes one folder per table under DIR (files, tensors, operators, \
    delegates, checks), each holding one Parquet part file per run or shard; DuckDB, \
    Spark or any Parquet reader queries them (docs/index.md lists the columns). A \
    re-run indexes only files not yet in DIR, changed since (by size and mtime or etag, \
    theirs or their data files'), or lacking what it asks for (a --runtime verdict, \
    --hash); it removes the rows of files gone from a directory or prefix it lists.\n\n\
    Exit status: 0 every file listed has its rows, 1 some file listed could not be \
    read (its row, new or kept from an earlier run, says why; so is a path an @list \
    names that does not exist), 2 the run itself failed (a SOURCE argument that does \
    not exist, DIR unusable, a bad spec).\n\n\
    Examples:\n  \
    ptefs index exports/ -o catalog\n  \
    ptefs index 'exports/**/*.pte' @more.txt -o catalog --runtime executorch-1.5.1 --runtime app.yaml\n  \
    ptefs index exports/ -o catalog --hash --shard 0/4"
)]
pub(super) struct IndexArgs {
    /// The catalog folder (made when missing), or a prefix of an object
    /// store (s3://bucket/catalog/).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: String,
    /// A runtime each program is checked against, alone (repeatable: one
    /// verdict per spec); `a+b` adds specs up. Default executorch-1.5.1.
    #[arg(long = "runtime", value_name = "SPEC")]
    runtime: Vec<String>,
    /// Also the sha256 of each file and of each stored tensor's bytes
    /// (which are then read whole).
    #[arg(long)]
    hash: bool,
    /// Files indexed at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Index only the I-th of N shares of the listing (0/4 .. 3/4), split
    /// by a digest of each source, for N machines writing into one DIR.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// Index again files whose rows DIR already has.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    http: super::HttpHeaders,
    /// Files, directories (walked recursively), globs ('models/**/*.pte')
    /// and @list.txt files of paths or URLs, one a line.
    #[arg(required = true, value_name = "SOURCE")]
    sources: Vec<String>,
}

/// The progress bar of a run: files done of those to do, bytes read.
struct Bar {
    progress: Progress,
    bytes: Cell<u64>,
}

impl crate::index::Progress for Bar {
    fn start(&self, todo: usize) {
        self.progress.count("indexing", todo as u64);
    }

    fn done(&self, _source: &str, bytes: u64) {
        self.bytes.set(self.bytes.get() + bytes);
        self.progress.message(&format!(
            "indexing, {:.1} MiB read,",
            self.bytes.get() as f64 / f64::from(1 << 20)
        ));
        self.progress.inc(1);
    }
}

pub(super) fn run(args: &IndexArgs) -> Result<i32, i32> {
    args.http.apply()?;
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
    if jobs == 0 {
        error("--jobs 0: at least one file must be indexed at a time");
        return Err(TROUBLE);
    }
    let opts = Options {
        sources: args.sources.clone(),
        out: args.output.clone(),
        runtimes: args.runtime.clone(),
        hash: args.hash,
        jobs,
        shard: args.shard.unwrap_or(Shard::ALL),
        force: args.force,
    };
    let bar = Bar {
        progress: Progress::new(&crate::source::redact::redact(&args.output)),
        bytes: Cell::new(0),
    };
    let summary = crate::index::run(&opts, &bar).map_err(|e| {
        bar.progress.suspend(|| error(e));
        TROUBLE
    })?;
    drop(bar);
    print_summary(&summary);
    Ok(if summary.failed + summary.unchanged_failed > 0 {
        FAILED
    } else {
        OK
    })
}

fn print_summary(s: &Summary) {
    for (left_out, kept) in &s.same_files {
        eprintln!("ptefs: {left_out}: the same file as {kept}, indexed once, as {kept}");
    }
    let mut line = format!(
        "ptefs: {} files listed, {} indexed ({} could not be read), {} unchanged since the last run",
        s.listed, s.indexed, s.failed, s.unchanged
    );
    if s.unchanged_failed > 0 {
        line.push_str(&format!(
            " ({} of them could not be read)",
            s.unchanged_failed
        ));
    }
    if s.gone > 0 {
        line.push_str(&format!(", {} gone since the last run", s.gone));
    }
    eprintln!("{line}");
}
