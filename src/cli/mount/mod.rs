//! `ptefs mount` and `ptefs umount`.
//!
//! The files are validated before anything is mounted. Unless `-f` is
//! given, the process forks; the parent waits until the child's mount
//! answers and exits 0, or prints the child's error and exits 2, as sshfs
//! does. SIGINT, SIGTERM and SIGHUP unmount and end the daemon.

mod daemon;
mod mountpoint;
mod options;

use std::path::{Path, PathBuf};

use clap::Args;
use nix::errno::Errno;

use super::progress::Progress;
use super::{OK, TROUBLE, error, report_view};
use crate::edit::journal;
use crate::fs::{Fs, ReadMode, ReadPolicy, Writable};
use crate::source::redact::redact;
use crate::view::View;
use mountpoint::{check_dev_fuse, check_mountpoint, mount_at, unmount_path};
use options::parse_options;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ptefs mount model.pte /tmp/model
      shows model.pte read-only under /tmp/model; returns once it answers
  ptefs mount model.pte --data weights.ptd -o allow_other /tmp/model
      with the tensors model.pte keeps in weights.ptd; others may read it
  ptefs mount https://example.com/models/model.pte /tmp/model
      reads the remote file by byte ranges, as they are needed
  ptefs mount --header \"Authorization: Bearer $TOKEN\" https://example.com/m.pte /tmp/m
      with a token (also: user info in the URL, PTEFS_HTTP_HEADERS, ~/.netrc)
  ptefs mount --subdirs exports/ /tmp/all
      one directory per model in exports/ and its subdirectories
  ptefs umount /tmp/model")]
pub(super) struct MountArgs {
    /// Sources to show (.pte, .ptd, .bpte or .ptn files, directories of
    /// them, or http(s)://, s3://, gs:// or az:// URLs of one), then the
    /// mount point.
    #[arg(required = true, value_name = "SOURCE... MOUNTPOINT")]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    attach: super::Attach,
    #[command(flatten)]
    profile: super::ProfileArgs,
    /// Take models from subdirectories of directory sources too.
    #[arg(long)]
    subdirs: bool,
    /// Stay in the foreground, logging to stderr.
    #[arg(short = 'f', long)]
    foreground: bool,
    /// Mount options, comma-separated (repeatable): allow_other,
    /// allow_root, auto_unmount, default_permissions, fsname=, subtype=,
    /// cache_size= (remote sources' block cache, e.g. 512M), and the
    /// generic ro, nosuid, nodev, noexec, noatime, ...
    #[arg(short = 'o', value_name = "OPTIONS")]
    options: Vec<String>,
    /// How readers get a file's bytes: `cached` (through the kernel's page
    /// cache, which serves re-reads without the daemon) or `direct` (files
    /// of --direct-from bytes or more are copied once, straight into the
    /// reader's buffer, and asked of the daemon on every read; memory maps
    /// still work).
    #[arg(long, value_name = "MODE", default_value = "cached", value_parser = ["cached", "direct"])]
    read_mode: String,
    /// With --read-mode direct, the size from which files are read
    /// directly (suffixes K, M, G).
    #[arg(long, value_name = "SIZE", default_value = "1M")]
    direct_from: String,
    /// The largest read request the kernel sends (suffixes K, M, G; a
    /// multiple of 4K up to 16M; the kernel grants at most
    /// fs.fuse.max_pages_limit pages, 1M by default). Readahead is four
    /// requests [default: 256K through the page cache, 1M when files are
    /// read directly (--read-mode direct, --writable)]
    #[arg(long, value_name = "SIZE")]
    max_request: Option<String>,
    /// Worker threads serving requests.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
    /// Where a detached daemon writes its log.
    #[arg(long, value_name = "PATH")]
    log_file: Option<PathBuf>,
    /// Let stored tensors' files be overwritten in place (copy on write:
    /// the sources are never written); save with `ptefs commit`.
    #[arg(long)]
    writable: bool,
    /// With --writable, the directory journals of edits are kept in
    /// [default: $XDG_STATE_HOME/ptefs/edits, or ~/.local/state/ptefs/edits]
    #[arg(long, value_name = "DIR", requires = "writable")]
    work_dir: Option<PathBuf>,
    /// With --writable, drop the edits an earlier mount of the same
    /// source left, instead of taking them up again.
    #[arg(long, requires = "writable")]
    discard_edits: bool,
    /// With --writable, save the edited file to OUT at unmount.
    #[arg(long = "commit", value_name = "OUT", requires = "writable")]
    commit: Option<PathBuf>,
}

pub(super) fn run(args: MountArgs) -> Result<i32, i32> {
    let mut inputs = args.paths;
    let Some(mountpoint) = inputs.pop().filter(|_| !inputs.is_empty()) else {
        error(
            "mount needs at least one source and a mount point: ptefs mount SOURCE... MOUNTPOINT",
        );
        return Err(TROUBLE);
    };
    // The mount's fsname, which /proc/mounts shows to every user.
    let source_name = inputs
        .first()
        .map(|p| {
            if let Some(url) = p.to_str().filter(|p| crate::source::remote::is_url(p)) {
                return redact(url);
            }
            std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string()
        })
        .unwrap_or_default();
    let root = nix::unistd::geteuid().is_root();
    let mut options = parse_options(&args.options, &source_name, root).map_err(|e| {
        error(e);
        TROUBLE
    })?;
    if args.writable {
        options.mount.retain(|o| *o != fuser::MountOption::RO);
    }
    // The daemon leaves the working directory: paths must be whole.
    let whole = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let commit = args.commit.as_deref().map(whole);
    if let Some(out) = &commit {
        check_commit_output(out).map_err(|e| {
            error(e);
            TROUBLE
        })?;
    }
    let read_policy = read_policy(
        &args.read_mode,
        &args.direct_from,
        args.max_request.as_deref(),
        args.writable,
    )?;
    let mut req = args.attach.request(inputs, args.subdirs)?;
    args.profile.apply(&mut req);
    // Fetching a remote file's structure, or laying out a large tree, takes
    // a while: a terminal sees which, until the tree is ready.
    let progress = Progress::new(&source_name);
    progress.stage("reading its structure and laying out the tree");
    let opened = View::open(&req);
    progress.finish();
    let view = report_view(opened)?;
    if let Some(bytes) = options.cache_size {
        view.set_cache_size(bytes);
    }
    let mountpoint = check_mountpoint(&mountpoint).map_err(|e| {
        error(e);
        TROUBLE
    })?;
    check_dev_fuse().map_err(|e| {
        error(e);
        TROUBLE
    })?;
    let fs = match args.writable {
        true => {
            let base = match args.work_dir.as_deref().map(whole) {
                Some(dir) => dir,
                None => journal::default_base().ok_or_else(|| {
                    error("--writable: no state directory to keep the edits in (neither XDG_STATE_HOME nor HOME is set); give --work-dir");
                    TROUBLE
                })?,
            };
            let opened = Writable::open(&view, &base, commit, args.discard_edits).map_err(|e| {
                match e {
                    journal::JournalError::Io { .. } => error(format_args!(
                        "--writable: cannot keep the journal of the edits: {e} (--work-dir DIR keeps it elsewhere)"
                    )),
                    _ => error(e),
                }
                TROUBLE
            })?;
            if opened.replayed > 0 {
                eprintln!(
                    "ptefs: note: {} write(s) kept from an earlier mount of {} are taken up again (journal {}); `ptefs edits` lists them, --discard-edits drops them",
                    opened.replayed,
                    source_name,
                    opened.journal.display()
                );
            }
            Fs::new_writable(view, opened.writable)
        }
        false => Fs::new(view),
    }
    .with_read_policy(read_policy);
    if args.foreground {
        return daemon::serve(fs, &mountpoint, &options, args.threads, None);
    }
    daemon::detach(
        fs,
        &mountpoint,
        &options,
        args.threads,
        args.log_file.as_deref(),
    )
}

/// Checks at mount time that the file `--commit` saves to can be written:
/// its directory exists and takes new files, and it is no directory.
fn check_commit_output(out: &Path) -> Result<(), String> {
    let shown = out.display();
    if out.is_dir() {
        return Err(format!("--commit {shown}: is a directory"));
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "--commit {shown}: {} is not a directory",
                dir.display()
            ));
        }
        Err(e) => return Err(format!("--commit {shown}: {}: {e}", dir.display())),
    }
    nix::unistd::access(
        dir,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .map_err(|e| {
        format!(
            "--commit {shown}: cannot write in {}: {}",
            dir.display(),
            e.desc()
        )
    })
}

/// The read policy the options give, on a mount that is `writable` or not.
fn read_policy(
    mode: &str,
    direct_from: &str,
    max_request: Option<&str>,
    writable: bool,
) -> Result<ReadPolicy, i32> {
    let mode = match mode {
        "direct" => ReadMode::Direct,
        _ => ReadMode::Cached,
    };
    let size = |option: &str, value: &str| {
        crate::cli::size::value(value).map_err(|e| {
            error(format_args!("{option}: {e}"));
            TROUBLE
        })
    };
    let direct_from = size("--direct-from", direct_from)?;
    let max_request = match max_request {
        Some(value) => size("--max-request", value)?,
        None => u64::from(mode.default_max_request(writable)),
    };
    ReadPolicy::new(mode, direct_from, max_request).map_err(|e| {
        error(format_args!("--max-request: {e}"));
        TROUBLE
    })
}

/// The type of the mount at `dir` (`fuse.ptefs`), if one is there.
pub(super) fn fstype(dir: &Path) -> Option<String> {
    let path = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let path = path.canonicalize().unwrap_or(path);
    mount_at(&path).map(|m| m.fstype)
}

/// What the writable mount at `path` says of its journal, or `None` when
/// it does not answer within `wait`.
fn journal_info_within(
    path: &Path,
    wait: std::time::Duration,
) -> Option<Result<crate::fs::JournalInfo, String>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = path.to_owned();
    // A request the daemon never answers holds this thread; the process
    // ends without it.
    std::thread::spawn(move || {
        let _ = tx.send(super::commit::journal_info(&path));
    });
    rx.recv_timeout(wait).ok()
}

/// Unmounts a ptefs mount. A writable mount given `--commit OUT` saves
/// its edits first, from this process: when that fails, the mount stays,
/// with its edits, and the exit status says so.
pub(super) fn unmount(mountpoint: &Path) -> Result<i32, i32> {
    let shown = mountpoint.display();
    // canonicalize fails on a mount whose daemon died; use the path as given.
    let path = std::path::absolute(mountpoint).unwrap_or_else(|_| mountpoint.to_owned());
    let path = path.canonicalize().unwrap_or(path);
    let writable = match mount_at(&path) {
        Some(m) if m.fstype == "fuse.ptefs" || m.fstype.starts_with("fuse") => m.writable,
        Some(m) => {
            error(format_args!("{shown}: is a {} mount, not ptefs", m.fstype));
            return Err(TROUBLE);
        }
        None => {
            error(format_args!("{shown}: is not a mount point"));
            return Err(TROUBLE);
        }
    };
    // A read-only mount has nothing to save, nor a dead daemon's (its
    // journal keeps the edits); a daemon stopped or hung is not waited for.
    let info = match writable {
        true => match journal_info_within(&path, std::time::Duration::from_secs(10)) {
            Some(info) => info.ok(),
            None => {
                error(format_args!(
                    "{shown}: its daemon does not answer (stopped or hung), so nothing was saved and it stays mounted; `umount -l {shown}` detaches it, and the edits it answered stay in its journal"
                ));
                return Err(TROUBLE);
            }
        },
        false => None,
    };
    if let Some(info) = &info
        && let Some(out) = &info.commit
    {
        let written = super::commit::commit_to(&path, info, out).map_err(|why| {
            error(format_args!(
                "{shown}: not unmounted: its edits could not be saved to {}: {why}; they stay in the mount (ptefs commit {shown} -o OTHER saves them elsewhere)",
                out.display()
            ));
            TROUBLE
        })?;
        super::print(&super::commit::summary(
            &out.display().to_string(),
            &written,
        ))?;
    }
    unmount_path(&path, false).map_err(|e| {
        if e.errno() == Some(Errno::EBUSY) {
            error(format_args!("{e} (close what uses it, or `umount -l`)"));
        } else {
            error(e);
        }
        TROUBLE
    })?;
    // The daemon ends after the unmount: wait for it to let the journal go
    // (having saved or removed it), so that what follows sees it done.
    if let Some(info) = &info
        && !journal::wait_released(&info.journal)
    {
        error(format_args!(
            "{shown}: unmounted, but its daemon still holds {}",
            info.journal.display()
        ));
        return Err(TROUBLE);
    }
    if let Some(info) = info.filter(|i| i.commit.is_none() && !i.saved) {
        let source = info.source.display();
        // The journal is BASE/<source>-<digest>/journal: a base other than
        // the default must be named again to find it.
        let base = info.journal.parent().and_then(Path::parent);
        let work_dir = match base {
            Some(b) if journal::default_base().as_deref() != Some(b) => {
                format!(" --work-dir {}", b.display())
            }
            _ => String::new(),
        };
        eprintln!(
            "ptefs: note: the edits of {shown} were not committed; they stay in {} for the next `ptefs mount --writable{work_dir} {source}` (`ptefs commit {source}{work_dir} -o OUT` writes them, --discard-edits drops them)",
            info.journal.display()
        );
    }
    Ok(OK)
}
