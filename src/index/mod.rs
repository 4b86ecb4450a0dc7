//! A fleet of files at once: the operator union of many programs
//! ([`ops`]), and the catalog `ptefs index` writes: Parquet tables of
//! every file, stored tensor, operator, delegate and check verdict, one
//! part file per run or shard (see docs/index.md for the columns).
//!
//! A run lists its sources ([`listing`]), keeps its shard's share and the
//! files not indexed yet, computes each file's rows on `jobs` threads
//! ([`facts`], one file per thread at a time, so memory is bounded by the
//! largest file's, not the sum), and writes them as it goes ([`parts`]).

pub mod facts;
pub mod listing;
pub mod ops;
pub mod parts;
pub mod schema;
pub mod weights_names;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use facts::{Runtime, Wanted};
use listing::{Item, ListError, Shard};
use parts::{PartError, Parts};

use crate::report::check::spec::{DEFAULT, RuntimeSpec, SpecError};
use crate::source::remote::is_url;

/// What one `ptefs index` run does.
#[derive(Debug, Clone)]
pub struct Options {
    /// Files, directories, globs and `@list` files.
    pub sources: Vec<String>,
    /// The catalog: a folder, or a prefix of an object store.
    pub out: String,
    /// Runtime specs, each judged alone (`a+b` adds specs up); the
    /// default runtime when none.
    pub runtimes: Vec<String>,
    /// Hash files and stored ranges.
    pub hash: bool,
    /// Threads.
    pub jobs: usize,
    /// The share of the listing this run takes.
    pub shard: Shard,
    /// Index files again whose rows are already in the folder.
    pub force: bool,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Files listed, in this shard.
    pub listed: usize,
    /// Of those, already indexed and unchanged, so skipped.
    pub unchanged: usize,
    /// Of those unchanged, files whose kept row is an error.
    pub unchanged_failed: usize,
    /// Files indexed.
    pub indexed: usize,
    /// Of those, files that could not be read (a row with the error).
    pub failed: usize,
    /// Files with rows from an earlier run that are gone from a directory
    /// or prefix this run lists, whose rows were removed.
    pub gone: usize,
    /// The part files written.
    pub parts: Vec<PathBuf>,
    /// Paths not indexed as another path of a file listed: (left out,
    /// indexed as).
    pub same_files: Vec<(String, String)>,
}

/// Trouble with the run itself (exit 2), as opposed to a file that fails
/// (a row).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A source cannot be listed.
    #[error(transparent)]
    List(#[from] ListError),
    /// A runtime spec cannot be used.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The catalog folder cannot be read or written.
    #[error(transparent)]
    Part(#[from] PartError),
}

/// The runtime `arg` names: a built-in name or spec file, or several
/// joined by `+` and added up.
pub fn runtime(arg: &str) -> Result<Runtime, SpecError> {
    Ok(Runtime {
        name: arg.to_owned(),
        spec: RuntimeSpec::load(arg)?,
    })
}

/// How far a run is: files done of those to do, bytes read.
pub trait Progress {
    /// `todo` files will be indexed.
    fn start(&self, todo: usize);
    /// One more file is done, `bytes` read from it.
    fn done(&self, source: &str, bytes: u64);
}

/// Runs `opts`, reporting to `progress`.
pub fn run(opts: &Options, progress: &dyn Progress) -> Result<Summary, IndexError> {
    let names: Vec<&str> = if opts.runtimes.is_empty() {
        vec![DEFAULT]
    } else {
        opts.runtimes.iter().map(String::as_str).collect()
    };
    let wanted = Wanted {
        runtimes: names
            .into_iter()
            .map(runtime)
            .collect::<Result<Vec<_>, _>>()?,
        hash: opts.hash,
    };
    let listing = listing::list(&opts.sources)?;
    let listed: Vec<Item> = listing
        .items
        .into_iter()
        .filter(|i| opts.shard.takes(&i.source))
        .collect();
    let out = parts::Out::open(&opts.out)?;
    let have = {
        let _lock = out.lock()?;
        parts::indexed(&out)?
    };
    let mut summary = Summary {
        listed: listed.len(),
        same_files: listing.same_files,
        ..Summary::default()
    };
    let sources: HashSet<String> = listed.iter().map(|i| i.source.clone()).collect();
    let mut todo = Vec::new();
    for mut item in listed {
        // A URL listed alone has no stamp until its server is asked; only
        // one already indexed is worth the request.
        if is_url(&item.source)
            && item.size.is_none()
            && !opts.force
            && have.contains_key(&item.source)
            && let Ok((size, mtime, etag)) = crate::source::remote::stamp_of(&item.source)
        {
            (item.size, item.mtime, item.etag) = (Some(size), listing::micros(mtime), etag);
        }
        match have.get(&item.source) {
            Some(s) if !opts.force && unchanged(&item, s, &wanted) => {
                summary.unchanged += 1;
                summary.unchanged_failed += usize::from(s.failed);
            }
            _ => todo.push(item),
        }
    }
    // Rows of files no longer under a directory or prefix this run lists
    // go: this shard's only, so shards listing the same sources agree.
    let roots = listing::roots(&opts.sources);
    let gone: Vec<String> = have
        .iter()
        .filter(|(source, _)| {
            !sources.contains(*source)
                && opts.shard.takes(source)
                && roots.iter().any(|r| listing::is_under(source, r))
        })
        .map(|(source, _)| source.clone())
        .collect();
    let name = parts::part_name(&opts.shard.label());
    if todo.is_empty() {
        summary.gone = gone.len();
        let _lock = out.lock()?;
        parts::drop_rows(&out, &gone.into_iter().collect())?;
        parts::fill_empty(&out, &name)?;
        return Ok(summary);
    }
    let mut parts = Parts::create(out.dir(), &name)?;
    progress.start(todo.len());
    let next = AtomicUsize::new(0);
    let jobs = opts.jobs.clamp(1, todo.len());
    let written = std::thread::scope(|scope| -> Result<(), PartError> {
        // A rendezvous: a finished file waits in its thread for the writer,
        // so at most `jobs` files are held at once.
        let (tx, rx) = std::sync::mpsc::sync_channel::<facts::Facts>(0);
        for _ in 0..jobs {
            let tx = tx.clone();
            let (todo, next, wanted) = (&todo, &next, &wanted);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = todo.get(i) else { break };
                    if tx.send(facts::of(item, wanted)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for f in rx {
            summary.indexed += 1;
            summary.failed += usize::from(f.failed);
            if let Some(source) = f.files.first().and_then(|r| match r.first() {
                Some(schema::V::Str(s)) => Some(s.clone()),
                _ => None,
            }) {
                progress.done(&source, f.bytes);
            }
            if let Err(e) = parts.add(&f) {
                // Workers stop at their next send.
                next.store(usize::MAX / 2, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    });
    if let Err(e) = written {
        parts.abandon();
        return Err(e.into());
    }
    // Any rows of the files indexed anew go just before the new ones
    // appear, those another run wrote since this one read the catalog
    // too, so that each file has one run's rows.
    summary.gone = gone.len();
    let mut replaced: HashSet<String> = todo.into_iter().map(|i| i.source).collect();
    replaced.extend(gone);
    let _lock = out.lock()?;
    parts::drop_rows(&out, &replaced)?;
    summary.parts = parts.finish(&out)?;
    parts::fill_empty(&out, &name)?;
    Ok(summary)
}

/// True when the catalog's rows of `item` are what this run would write:
/// the file and every data file (and folder) its rows were made with are
/// as they were, and the rows hold what `wanted` asks for.
fn unchanged(item: &Item, had: &parts::Indexed, wanted: &Wanted) -> bool {
    if (had.size, had.mtime, &had.etag) != (item.size, item.mtime, &item.etag) {
        return false;
    }
    let Some(data) = &had.data else {
        return false;
    };
    if !data
        .iter()
        .all(|d| listing::stamp(&d.path).as_ref() == Some(d))
    {
        return false;
    }
    // A file that could not be read has no sha256 to add.
    if wanted.hash && !had.hashed && !had.failed {
        return false;
    }
    // A file with verdicts (a program) has one for each runtime asked.
    had.runtimes.is_empty()
        || wanted
            .runtimes
            .iter()
            .all(|r| had.runtimes.contains(&r.name))
}
