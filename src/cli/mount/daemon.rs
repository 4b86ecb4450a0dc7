//! The daemon: forking away from the terminal, serving until unmounted or
//! signalled, and reporting to the waiting parent.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::mpsc;

use fuser::{Config, Session};

use super::mountpoint::unmount_path;
use super::options::Options;
use crate::cli::{OK, TROUBLE, error};
use crate::fs::Fs;
use crate::fuse::PtefsFs;
use crate::view::View;

/// Forks: the child mounts and serves; the parent returns once the child
/// reports the mount live, or fails with the child's error.
pub(super) fn detach(
    view: View,
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
    let mut fds = [0; 2];
    // SAFETY: pipe writes two new descriptors into the array we own.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        error(format_args!("pipe: {}", io::Error::last_os_error()));
        return Err(TROUBLE);
    }
    // SAFETY: both descriptors were just created and are owned here only.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: no other thread exists yet (the view is built on this one), so
    // the child may go on running ordinary Rust code.
    match unsafe { libc::fork() } {
        -1 => {
            error(format_args!("fork: {}", io::Error::last_os_error()));
            Err(TROUBLE)
        }
        0 => {
            drop(read_end);
            // SAFETY: setsid has no memory-safety preconditions.
            unsafe { libc::setsid() };
            // Log to the file from the start; failures before the mount is
            // live still reach the terminal, through the parent.
            if let Some(l) = &log {
                use std::os::fd::AsRawFd;
                // SAFETY: dup2 onto stderr from a descriptor we own.
                unsafe { libc::dup2(l.as_raw_fd(), 2) };
            }
            let status = serve(
                view,
                mountpoint,
                options,
                threads,
                Some((File::from(write_end), log)),
            );
            std::process::exit(status.unwrap_or_else(|c| c));
        }
        _child => {
            drop(write_end);
            drop(view);
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

/// What the daemon tells the waiting parent, and where it logs after that.
type Detached = (File, Option<File>);

/// Mounts and serves until unmounted or signalled.
pub(super) fn serve(
    view: View,
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
    let fs = PtefsFs::new(Fs::new(view));
    let mut config = Config::default();
    config.mount_options = options.mount.clone();
    config.acl = options.acl;
    config.n_threads = Some(usize::from(threads));
    config.clone_fd = true;
    let mut session = Session::new(fs, mountpoint, &config)
        .map_err(|e| fail(format!("{}: cannot mount: {e}", mountpoint.display())))?;
    let mut unmounter = session.unmount_callable();
    let (tx, rx) = mpsc::channel::<Event>();
    let ended = tx.clone();
    std::thread::Builder::new()
        .name("session".into())
        .spawn(move || {
            let result = session.run();
            let _ = ended.send(Event::Ended(result.err().map(|e| e.to_string())));
        })
        .map_err(|e| fail(format!("cannot start: {e}")))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut sig = 0;
            // SAFETY: `signals` is an initialized set; sig is written by sigwait.
            while unsafe { libc::sigwait(&signals, &mut sig) } == 0 {
                if tx.send(Event::Signal(sig)).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| fail(format!("cannot start: {e}")))?;
    // The mount answers once the workers run: prove it before reporting.
    std::fs::metadata(mountpoint).map_err(|e| {
        fail(format!(
            "{}: mount does not answer: {e}",
            mountpoint.display()
        ))
    })?;
    raise_readahead(mountpoint);
    log::info!("mounted {}", mountpoint.display());
    if let Some(mut r) = report.take() {
        let _ = r.write_all(b"ok");
        drop(r);
        redirect_stdio(log.as_ref());
    }
    loop {
        match rx.recv() {
            Ok(Event::Signal(sig)) => {
                log::info!("signal {sig}: unmounting {}", mountpoint.display());
                if let Err(e) = unmounter.unmount() {
                    log::warn!("unmount failed ({e}); detaching lazily");
                    if let Err(e) = unmount_path(mountpoint, true) {
                        log::error!("{e}");
                    }
                }
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

/// Readahead for the mount, in KiB: large sequential reads then reach the
/// daemon as 1 MiB requests (the most FUSE allows) several at a time.
const READAHEAD_KB: u32 = 4096;

/// Raises the kernel's readahead for the mount. It starts at 128 KiB and a
/// FUSE daemon cannot ask for more when the connection starts; root can set
/// it afterwards through sysfs. Others keep the default.
fn raise_readahead(mountpoint: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(mountpoint) else {
        return;
    };
    let dev = meta.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let path = format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb");
    match std::fs::write(&path, READAHEAD_KB.to_string()) {
        Ok(()) => log::debug!("{path}: {READAHEAD_KB}"),
        Err(e) => log::debug!("{path}: {e}; readahead stays at the kernel's default"),
    }
}

enum Event {
    Signal(i32),
    Ended(Option<String>),
}

fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initializes it before use,
    // and pthread_sigmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Points stdin and stdout at /dev/null and stderr at the log (or
/// /dev/null), so the detached daemon holds no terminal.
fn redirect_stdio(log: Option<&File>) {
    use std::os::fd::AsRawFd;
    let Ok(null) = OpenOptions::new().read(true).write(true).open("/dev/null") else {
        return;
    };
    let err = log.map_or(null.as_raw_fd(), |l| l.as_raw_fd());
    // SAFETY: dup2 onto the standard descriptors from descriptors we own.
    unsafe {
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(null.as_raw_fd(), 1);
        libc::dup2(err, 2);
    }
}
