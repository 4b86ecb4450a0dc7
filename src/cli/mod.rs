//! The `ptefs` command.
//!
//! Exit status follows `grep` and `diff`: 0 for success, 1 when a path is
//! not in the tree (or, for `diff`, when the files differ), 2 for trouble.

mod cat;
mod check;
pub mod cmdline;
mod commit;
mod diff;
mod index;
mod inspect;
mod list;
mod mount;
mod ops;
mod pack;
pub mod progress;
mod report;
mod set;
mod size;
mod stat;

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::fs::Fs;
use crate::source::redact::shown;
use crate::view::{Opened, Request, View};

/// Success.
pub const OK: i32 = 0;
/// A path not in the tree; files that differ.
pub const NOT_FOUND: i32 = 1;
/// Invalid input, a usage error, or any other trouble.
pub const TROUBLE: i32 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "ptefs",
    version,
    about = "Explore ExecuTorch .pte, .ptd, .bpte, .ptn and .etdp files as directory trees",
    long_about = "Explore ExecuTorch .pte, .ptd, .bpte, .ptn and .etdp files as directory trees.\n\n\
        `ptefs mount` shows them as a read-only FUSE filesystem; `ls`, `cat`, \
        `stat`, `inspect` and `diff` read the same tree without mounting.\n\
        `ptefs SOURCE MOUNTPOINT [-o OPTIONS]` is `ptefs mount`, as mount(8) calls it, \
        when SOURCE exists; a subcommand name always wins (mount a file called `stat` \
        with `ptefs mount stat MOUNTPOINT`).",
    after_help = "Exit status: 0 success, 1 path not in the tree (diff: files differ), 2 trouble."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Mount files as a read-only filesystem.
    Mount(mount::MountArgs),
    /// Unmount a ptefs mount.
    #[command(alias = "unmount", after_help = "Example:\n  ptefs umount /tmp/m")]
    Umount {
        /// The mount point.
        mountpoint: PathBuf,
    },
    /// List a directory of the tree (the root by default).
    Ls(list::LsArgs),
    /// Write files of the tree to standard output.
    Cat(cat::CatArgs),
    /// Show a path's type, mode, size, links and user.ptefs.* attributes.
    Stat(stat::StatArgs),
    /// Summarize a file: methods, operators, tensors, segments, delegates.
    Inspect(inspect::InspectArgs),
    /// Compare two files: methods, operators and tensors that changed.
    Diff(diff::DiffArgs),
    /// Will a program load and run on a runtime? Every reason it would not.
    Check(check::CheckArgs),
    /// The operators of several programs, with their kernel keys merged,
    /// as one selected_operators.yaml for a selective build.
    Ops(ops::OpsArgs),
    /// A Parquet catalog of many files: their files, tensors, operators,
    /// delegates and check verdicts, for DuckDB, Spark or any Parquet
    /// reader.
    Index(index::IndexArgs),
    /// Where the bytes go, what runs where, what the weights look like:
    /// text, JSON, or one HTML page with pictures.
    Report(report::ReportArgs),
    /// Write a new file with stored tensors replaced, every other byte kept.
    Set(set::SetArgs),
    /// Write the data file (.ptd) a program expects from named tensors.
    Pack(pack::PackArgs),
    /// Save the edits of a writable mount as a new file.
    Commit(commit::CommitArgs),
    /// List the changed ranges of a writable mount: path, source, offset,
    /// length, old and new sha256.
    Edits(commit::EditsArgs),
}

/// What every kind of input is, for each command's `--help`.
const INPUT_KINDS: &str = "A .pte, .ptd, .bpte, .ptn or .etdp file, a directory of them, or an http(s)://, s3://, gs:// or az:// URL of one";

/// The file to read and what to attach to it.
#[derive(Args, Debug, Clone)]
pub struct Sources {
    #[arg(help = INPUT_KINDS)]
    file: PathBuf,
    #[command(flatten)]
    attach: Attach,
    #[command(flatten)]
    profile: ProfileArgs,
}

/// What the commands that show a tree attach to an ETDump.
#[derive(Args, Debug, Clone, Default)]
pub struct ProfileArgs {
    /// The debug buffer of the ETDumps (.etdp) opened, shown or given with
    /// --profile: the file the runtime writes intermediate outputs' bytes
    /// to (default: <stem>.debug.bin beside each).
    #[arg(long = "debug-buffer", value_name = "FILE")]
    pub debug_buffer: Option<PathBuf>,
    /// A profile (.etdp) of the program: joined with its instructions
    /// under methods/<m>/profile/ (default: the only .etdp beside the
    /// program, when its events name the program's instructions; not
    /// with --no-auto-data).
    #[arg(long = "profile", value_name = "ETDP")]
    pub profile: Option<PathBuf>,
    /// The ETRecord of the program: its nodes' module paths and source
    /// lines under methods/<m>/source.tsv, and with a profile the logged
    /// outputs against its reference outputs in
    /// profile/outputs/compare.tsv (default: <stem>.etrecord or
    /// etrecord.bin beside the program; not with --no-auto-data).
    #[arg(long = "etrecord", value_name = "FILE")]
    pub etrecord: Option<PathBuf>,
}

impl ProfileArgs {
    /// Puts what is given into `req`.
    pub fn apply(&self, req: &mut Request) {
        req.debug_buffer = self.debug_buffer.clone();
        req.profile = self.profile.clone();
        req.etrecord = self.etrecord.clone();
    }
}

/// What every command attaches to what it opens, defined once: data
/// files, a checkpoint's names, and headers for http(s) sources.
#[derive(Args, Debug, Clone, Default)]
pub struct Attach {
    /// A .ptd whose tensors and named blobs programs may use (repeatable).
    #[arg(long = "data", value_name = "PTD")]
    pub data: Vec<PathBuf>,
    /// A checkpoint (safetensors, or JSON {name: sha256}) naming tensors.
    #[arg(long = "names", value_name = "FILE")]
    pub names: Option<PathBuf>,
    /// Do not attach the .ptd files beside a file that hold data it needs
    /// (external tensors, delegates' named data).
    #[arg(long)]
    pub no_auto_data: bool,
    #[command(flatten)]
    http: HttpHeaders,
}

impl Attach {
    /// Sets the headers of every `http(s)` source opened after; prints the
    /// error of one that is not a header.
    fn headers(&self) -> Result<(), i32> {
        self.http.apply()
    }

    /// What to open: `inputs` with this attached. Sets the headers of
    /// every `http(s)` source opened after; prints the error of one that
    /// is not a header.
    fn request(&self, inputs: Vec<PathBuf>, recursive: bool) -> Result<Request, i32> {
        self.headers()?;
        Ok(Request {
            inputs,
            data: self.data.clone(),
            recursive,
            names: self.names.clone(),
            auto_data: !self.no_auto_data,
            debug_buffer: None,
            profile: None,
            etrecord: None,
        })
    }
}

/// Headers for `http(s)` sources.
#[derive(Args, Debug, Clone, Default)]
pub struct HttpHeaders {
    /// A header sent with each request to an http(s) source's own server
    /// (not to another a redirect names), e.g. 'Authorization: Bearer
    /// TOKEN' (repeatable; PTEFS_HTTP_HEADERS holds more, one per line).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    header: Vec<String>,
}

impl HttpHeaders {
    /// Makes the headers those of every `http(s)` source opened after;
    /// prints the error of one that is not a header.
    fn apply(&self) -> Result<(), i32> {
        crate::source::remote::credentials::set_given_headers(&self.header).map_err(|e| {
            error(e);
            TROUBLE
        })
    }
}

impl Sources {
    /// The tree of the file, served as the mount would serve it.
    fn open(&self) -> Result<Fs, i32> {
        let mut req = self.attach.request(vec![self.file.clone()], false)?;
        self.profile.apply(&mut req);
        open_view(&req).map(Fs::new)
    }
}

/// The command line's definition, for `--help` and for checking the
/// documentation against it.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Prints `ptefs: message` to stderr.
pub fn error(message: impl std::fmt::Display) {
    eprintln!("ptefs: {message}");
}

/// Opens and maps `files` with `data` attached, and with the data files
/// found beside them when `auto_data` is on, without parsing them,
/// printing any error and a note per data file found.
fn open_inputs(files: &[PathBuf], data: &[PathBuf], auto_data: bool) -> Result<Opened, i32> {
    let (req, notes) = Request {
        inputs: files.to_vec(),
        data: data.to_vec(),
        recursive: false,
        names: None,
        auto_data,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    }
    .with_found_data();
    for n in &notes {
        eprintln!("ptefs: note: {n}");
    }
    Opened::open(&req).map_err(|e| {
        error(e);
        TROUBLE
    })
}

/// Prints `warnings` (each after `prefix`), the first few only: a hostile
/// file can warrant one per tensor, a million lines nobody reads.
pub fn warn_capped<W: std::fmt::Display>(warnings: impl IntoIterator<Item = W>, prefix: &str) {
    const SHOWN: usize = 20;
    let mut more = 0usize;
    for (i, w) in warnings.into_iter().enumerate() {
        if i < SHOWN {
            eprintln!("ptefs: warning: {prefix}{w}");
        } else {
            more += 1;
        }
    }
    if more > 0 {
        eprintln!("ptefs: warning: {prefix}and {more} more");
    }
}

/// Opens a view, printing any error and warnings.
pub fn open_view(req: &Request) -> Result<View, i32> {
    report_view(View::open(req))
}

/// Prints what opening a view gave: its warnings and notes, or the error.
pub fn report_view(opened: Result<View, crate::view::OpenError>) -> Result<View, i32> {
    match opened {
        Ok(view) => {
            warn_capped(&view.tree.warnings, "");
            for n in &view.notes {
                eprintln!("ptefs: note: {n}");
            }
            for (p, why) in &view.skipped {
                eprintln!("ptefs: note: skipped {}: {why}", shown(p));
            }
            Ok(view)
        }
        Err(e) => {
            error(e);
            Err(TROUBLE)
        }
    }
}

/// Runs the command line and returns the exit status.
pub fn main() -> i32 {
    main_with_args(std::env::args_os().collect())
}

/// Runs the command line `args` (the program's name first) in this
/// process and returns the exit status: what `ptefs` installed by the
/// Python wheel runs, with the arguments Python was given. `mount` forks
/// from here as from the binary. The process's own argument area (which
/// may be an interpreter's) has its secrets masked all the same.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    // Every read of a source's map in a command (or its daemon) is ptefs's
    // own: one truncated meanwhile is an error, not a SIGBUS.
    crate::source::guard::guard_whole_process();
    // fuser warns when it finds its mount already gone, which is how every
    // `ptefs umount` ends; RUST_LOG can still ask for it.
    let filter = "warn,fuser::session=error";
    // Every line redacted: a library below may quote a URL whole.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(filter))
        .format(|buf, record| {
            let message = crate::source::redact::redact(&record.args().to_string());
            writeln!(
                buf,
                "[{} {:<5} {}] {message}",
                buf.timestamp_millis(),
                record.level(),
                record.target()
            )
        })
        // A second run in one process (from Python) keeps the first logger.
        .try_init()
        .ok();
    // Before anything else runs: the daemon keeps this command line for
    // as long as the mount lives, and every user can read it.
    cmdline::hide_secrets(&std::env::args_os().collect::<Vec<_>>());
    let args = plain_mount_form(args);
    let args_seen = args.clone();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            print_usage_error(&e, &args_seen);
            return if e.use_stderr() { TROUBLE } else { OK };
        }
    };
    let status = match cli.command {
        Command::Mount(args) => mount::run(args),
        Command::Umount { mountpoint } => mount::unmount(&mountpoint),
        Command::Ls(args) => list::run(&args),
        Command::Cat(args) => cat::run(&args),
        Command::Stat(args) => stat::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Ops(args) => ops::run(&args),
        Command::Index(args) => index::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Set(args) => set::run(&args),
        Command::Pack(args) => pack::run(&args),
        Command::Commit(args) => commit::commit(&args),
        Command::Edits(args) => commit::edits(&args),
    };
    status.unwrap_or_else(|code| code)
}

/// Prints clap's answer to `args` (a usage error, or help) with the
/// secrets of every URL among the arguments masked: clap quotes the
/// argument it refuses whole.
fn print_usage_error(e: &clap::Error, args: &[OsString]) {
    use std::io::IsTerminal;
    let mut secrets = crate::source::redact::Secrets::default();
    for a in args {
        secrets.extend(crate::source::redact::Secrets::of_text(
            &a.to_string_lossy(),
        ));
    }
    let styled = e.render();
    let text = if e.use_stderr() {
        if io::stderr().is_terminal() {
            styled.ansi().to_string()
        } else {
            styled.to_string()
        }
    } else if io::stdout().is_terminal() {
        styled.ansi().to_string()
    } else {
        styled.to_string()
    };
    let text = secrets.scrub(&text);
    if e.use_stderr() {
        let _ = io::stderr().write_all(text.as_bytes());
    } else {
        let _ = io::stdout().write_all(text.as_bytes());
    }
}

/// `ptefs SOURCE MOUNTPOINT [-o OPTS]`, the form mount(8) uses through
/// mount.fuse3, means `ptefs mount SOURCE MOUNTPOINT [-o OPTS]`: when the
/// first argument is no subcommand and names something that exists. A
/// mistyped subcommand (`ptefs lss model.pte`) names nothing, and clap
/// answers it with a suggestion.
fn plain_mount_form(mut args: Vec<OsString>) -> Vec<OsString> {
    let cli = Cli::command();
    let is_command = |a: &str| {
        a == "help"
            || cli
                .get_subcommands()
                .any(|c| c.get_name() == a || c.get_all_aliases().any(|x| x == a))
    };
    if let Some(first) = args.get(1)
        && let Some(s) = first.to_str()
        && !s.starts_with('-')
        && !is_command(s)
        && (std::path::Path::new(first).exists() || crate::source::remote::is_url(s))
    {
        args.insert(1, "mount".into());
    }
    args
}

/// Writes `text` to stdout.
fn print(text: &str) -> Result<(), i32> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(output_error)
}

/// The exit status for a failed write: a closed pipe (`ptefs cat ... |
/// head`) ends output quietly; any other write error is trouble.
fn output_error(e: io::Error) -> i32 {
    if e.kind() == io::ErrorKind::BrokenPipe {
        OK
    } else {
        error(format_args!("writing output: {e}"));
        TROUBLE
    }
}
