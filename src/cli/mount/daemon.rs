//! The daemon: forking away from the terminal, serving until unmounted or
//! signalled, and reporting to the waiting parent.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::mpsc;

use fuser::{Config, Session};
use nix::fcntl::OFlag;
use nix::sys::signal::{SigSet, Signal};
use nix::unistd::{ForkResult, dup2_stderr, dup2_stdin, dup2_stdout, fork, pipe2, setsid};

use super::mountpoint::unmount_path;
use super::options::Options;
use crate::cli::{OK, TROUBLE, error};
use crate::fs::Fs;
use crate::fuse::PtefsFs;

/// Forks: the child mounts and serves; the parent returns once the child
/// reports the mount live, or fails with the child's error.
pub(super) fn detach(
    fs: Fs,
    mountpoint: &Path,
    options: &Options,
    threads: u16,
    log_file: Option<&Path>,
) -> Result<i32, i32> {
    let log = match log_file {
        Some(p) => Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| {
                    error(format_args!("{}: {e}", p.display()));
                    TROUBLE
                })?,
        ),
        None => None,
    };
    // Close-on-exec: fusermount3, which the daemon runs to mount, stays
    // behind with auto_unmount, and must not hold the parent's pipe open.
    let (read_end, write_end) = pipe2(OFlag::O_CLOEXEC).map_err(|e| {
        error(format_args!("pipe: {e}"));
        TROUBLE
    })?;
    debug_assert_eq!(thread_count(), 1, "fork needs a single thread");
    // SAFETY: after fork in a multithreaded process the child may only make
    // async-signal-safe calls, as locks other threads held stay locked.
    // This process has one thread (the view is built on it and no thread is
    // started before this point), so the child may run ordinary Rust code.
    match unsafe { fork() } {
        Err(e) => {
            error(format_args!("fork: {e}"));
            Err(TROUBLE)
        }
        Ok(ForkResult::Child) => {
            drop(read_end);
            become_daemon(log.as_ref());
            let status = serve(
                fs,
                mountpoint,
                options,
                threads,
                Some((File::from(write_end), log)),
            );
            std::process::exit(status.unwrap_or_else(|c| c));
        }
        Ok(ForkResult::Parent { .. }) => {
            drop(write_end);
            drop(fs);
            let mut report = String::new();
            let _ = File::from(read_end).read_to_string(&mut report);
            match report.strip_prefix("ok") {
                Some(_) => Ok(OK),
                None if report.is_empty() => {
                    error("the daemon exited before the mount was ready");
                    Err(TROUBLE)
                }
                None => {
                    eprint!("{report}");
                    Err(TROUBLE)
                }
            }
        }
    }
}

/// Threads of this process.
fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count())
}

/// Leaves the terminal's session and stdin, which fusermount3 would
/// otherwise inherit and keep, and logs to the file from the start.
/// Failures before the mount is live still reach the terminal through the
/// parent.
fn become_daemon(log: Option<&File>) {
    if let Err(e) = setsid() {
        log::warn!("setsid: {e}");
    }
    match File::open("/dev/null") {
        Ok(null) => {
            if let Err(e) = dup2_stdin(&null) {
                log::warn!("stdin: {e}");
            }
        }
        Err(e) => log::warn!("/dev/null: {e}"),
    }
    if let Some(l) = log
        && let Err(e) = dup2_stderr(l)
    {
        log::warn!("log file: {e}");
    }
}

/// What the daemon tells the waiting parent, and where it logs after that.
type Detached = (File, Option<File>);

/// Mounts and serves until unmounted or signalled.
pub(super) fn serve(
    fs: Fs,
    mountpoint: &Path,
    options: &Options,
    threads: u16,
    detached: Option<Detached>,
) -> Result<i32, i32> {
    let (mut report, log) = match detached {
        Some((r, l)) => (Some(r), l),
        None => (None, None),
    };
    let mut fail = |msg: String| -> i32 {
        match report.take() {
            Some(mut r) => {
                let _ = writeln!(r, "ptefs: {msg}");
            }
            None => error(msg),
        }
        TROUBLE
    };
    // Signals are taken by one thread with sigwait; every other thread,
    // including fuser's, inherits this mask.
    let signals = block_signals();
    keep_inherited_descriptors_from_helpers();
    let readahead_kb = fs.read_policy().readahead_kb();
    let fs = PtefsFs::new(fs);
    let mut config = Config::default();
    config.mount_options = options.mount.clone();
    config.acl = options.acl;
    config.n_threads = Some(usize::from(threads));
    config.clone_fd = true;
    let session = Session::new(fs, mountpoint, &config)
        .map_err(|e| fail(cannot_mount(mountpoint, options, &e)))?;
    let serving = serve_in_background(session).map_err(|e| {
        unmount_own(mountpoint);
        fail(format!("cannot start: {e}"))
    })?;
    release_free_heap();
    let (tx, rx) = mpsc::channel::<Event>();
    let ended = tx.clone();
    let started = std::thread::Builder::new()
        .name("session".into())
        .spawn(move || {
            let ended_with = match serving.join() {
                Ok(result) => result.err().map(|e| e.to_string()),
                Err(_) => Some("the session panicked".to_owned()),
            };
            let _ = ended.send(Event::Ended(ended_with));
        })
        .and_then(|_| {
            std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || forward_signals(signals, tx))
        });
    if let Err(e) = started {
        unmount_own(mountpoint);
        return Err(fail(format!("cannot start: {e}")));
    }
    // The mount answers once the workers run: prove it before reporting.
    std::fs::metadata(mountpoint).map_err(|e| {
        unmount_own(mountpoint);
        fail(format!(
            "{}: mount does not answer: {e}",
            mountpoint.display()
        ))
    })?;
    raise_readahead(mountpoint, readahead_kb);
    log::info!("mounted {}", mountpoint.display());
    if let Some(mut r) = report.take() {
        let _ = r.write_all(b"ok");
        drop(r);
        redirect_stdio(log.as_ref());
    }
    serve_until_unmounted(&rx, mountpoint)
}

/// Sends each signal of `signals` as it arrives, until nobody listens.
fn forward_signals(signals: SigSet, tx: mpsc::Sender<Event>) {
    while let Ok(sig) = signals.wait() {
        if tx.send(Event::Signal(sig)).is_err() {
            break;
        }
    }
}

/// Starts serving `session` on fuser's threads, and returns the thread
/// to join.
///
/// fuser unmounts the mount's path when its handle to the mount is
/// dropped, even after the mount was unmounted from outside (`ptefs
/// umount`, `umount`), when whatever is mounted at that path by then is
/// another daemon's: `ptefs umount X && ptefs mount A X` lost the new
/// mount whenever this daemon exited after it was made. So the handle is
/// never dropped: this daemon unmounts its own mount itself, on a signal,
/// while the mount is still its own.
fn serve_in_background(
    session: Session<PtefsFs>,
) -> io::Result<std::thread::JoinHandle<io::Result<()>>> {
    // The handle's join would drop it; its thread is taken out instead,
    // and a finished one left in its place.
    let finished = std::thread::Builder::new().spawn(|| Ok(()))?;
    let mut background = session.spawn()?;
    let serving = std::mem::replace(&mut background.guard, finished);
    std::mem::forget(background);
    Ok(serving)
}

/// Unmounts this daemon's mount at `mountpoint`, lazily when it is busy.
fn unmount_own(mountpoint: &Path) {
    if let Err(e) = unmount_path(mountpoint, false) {
        log::warn!("unmount failed ({e}); detaching lazily");
        if let Err(e) = unmount_path(mountpoint, true) {
            log::error!("{e}");
        }
    }
}

/// Unmounts on a signal, and returns when the session ends.
fn serve_until_unmounted(rx: &mpsc::Receiver<Event>, mountpoint: &Path) -> Result<i32, i32> {
    loop {
        match rx.recv() {
            Ok(Event::Signal(sig)) => {
                log::info!("{sig}: unmounting {}", mountpoint.display());
                unmount_own(mountpoint);
            }
            Ok(Event::Ended(None)) | Err(_) => {
                log::info!("unmounted {}", mountpoint.display());
                return Ok(OK);
            }
            Ok(Event::Ended(Some(e))) => {
                log::error!("session ended: {e}");
                return Err(TROUBLE);
            }
        }
    }
}

/// Raises the kernel's readahead for the mount to `kb` KiB, so that large
/// sequential reads reach the daemon as requests of the largest size
/// several at a time. It starts at 128 KiB and a FUSE daemon cannot ask
/// for more when the connection starts; root can set it afterwards through
/// sysfs. Others keep the default.
fn raise_readahead(mountpoint: &Path, kb: u32) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(mountpoint) else {
        return;
    };
    let dev = meta.dev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    let path = format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb");
    match std::fs::write(&path, kb.to_string()) {
        Ok(()) => log::debug!("{path}: {kb}"),
        Err(e) => log::debug!("{path}: {e}; readahead stays at the kernel's default"),
    }
}

enum Event {
    Signal(Signal),
    Ended(Option<String>),
}

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread, and so in every
/// thread started after, and returns them for [`SigSet::wait`].
fn block_signals() -> SigSet {
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(s);
    }
    if let Err(e) = set.thread_block() {
        log::warn!("cannot block signals: {e}");
    }
    set
}

/// Why the mount failed. fusermount3 refuses an unprivileged
/// `allow_other`, which fuser also asks for `allow_root` and
/// `auto_unmount`: name the option the user gave instead.
fn cannot_mount(mountpoint: &Path, options: &Options, e: &io::Error) -> String {
    let shown = mountpoint.display();
    match options.lets_others_in {
        Some(opt)
            if e.kind() == io::ErrorKind::PermissionDenied
                && e.to_string().contains("user_allow_other") =>
        {
            let why = if opt == "auto_unmount" {
                " (fusermount3 unmounts only mounts root may enter)"
            } else {
                ""
            };
            format!(
                "{shown}: cannot mount: -o {opt} is for root only, unless /etc/fuse.conf has the line `user_allow_other`{why}"
            )
        }
        _ => format!("{shown}: cannot mount: {e}"),
    }
}

/// Marks every descriptor from 3 up close-on-exec, so that those the
/// caller passed down (a shell's redirections, a supervisor's pipe) do not
/// reach fusermount3, which with auto_unmount outlives the mount command.
/// The daemon's own descriptors are close-on-exec already.
fn keep_inherited_descriptors_from_helpers() {
    // SAFETY: with CLOSE_RANGE_CLOEXEC, close_range closes nothing: it only
    // sets a flag that takes effect at exec, so no owner of a descriptor is
    // affected. Neither nix nor std wraps it.
    let done = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if done != 0 {
        log::debug!("close_range: {}", io::Error::last_os_error());
    }
}

/// Hands the heap that building the view freed back to the system: the
/// daemon may serve for days, and glibc keeps freed memory otherwise.
#[cfg(target_env = "gnu")]
fn release_free_heap() {
    // SAFETY: malloc_trim has no preconditions; it only returns free pages
    // of the heap to the kernel. nix has no wrapper for it.
    unsafe { libc::malloc_trim(0) };
}

#[cfg(not(target_env = "gnu"))]
fn release_free_heap() {}

/// Points stdout at /dev/null and stderr at the log (or /dev/null), so
/// the detached daemon holds nothing of the terminal.
fn redirect_stdio(log: Option<&File>) {
    let Ok(null) = OpenOptions::new().write(true).open("/dev/null") else {
        return;
    };
    let stdout = dup2_stdout(&null);
    let stderr = match log {
        Some(l) => dup2_stderr(l),
        None => dup2_stderr(&null),
    };
    if let Err(e) = stdout.and(stderr) {
        log::warn!("cannot leave the terminal: {e}");
    }
}
