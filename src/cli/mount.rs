//! `ptefs mount` and `ptefs umount`.
//!
//! The files are validated before anything is mounted. Unless `-f` is
//! given, the process forks; the parent waits until the child's mount
//! answers and exits 0, or prints the child's error and exits 2, as sshfs
//! does. SIGINT, SIGTERM and SIGHUP unmount and end the daemon.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;

use clap::Args;
use fuser::{Config, MountOption, Session, SessionACL};

use super::{OK, TROUBLE, error, open_view};
use crate::fuse::PtefsFs;
use crate::view::{Request, View};

#[derive(Args, Debug)]
pub(super) struct MountArgs {
    /// Files or directories to show, then the mount point.
    #[arg(required = true, value_name = "SOURCE... MOUNTPOINT")]
    paths: Vec<PathBuf>,
    /// A .ptd whose tensors and named blobs programs may use (repeatable).
    #[arg(long = "data", value_name = "PTD")]
    data: Vec<PathBuf>,
    /// Descend into subdirectories of directory sources.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// Stay in the foreground, logging to stderr.
    #[arg(short = 'f', long)]
    foreground: bool,
    /// Mount options, comma-separated (repeatable): allow_other,
    /// allow_root, auto_unmount, default_permissions, fsname=, subtype=,
    /// and the generic ro, nosuid, nodev, noexec, noatime, ...
    #[arg(short = 'o', value_name = "OPTIONS")]
    options: Vec<String>,
    /// Worker threads serving requests.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
    /// Where a detached daemon writes its log.
    #[arg(long, value_name = "PATH")]
    log_file: Option<PathBuf>,
}

/// Options as fuser takes them.
#[derive(Debug)]
struct Options {
    mount: Vec<MountOption>,
    acl: SessionACL,
}

/// Generic options mount(8) passes that mean nothing to a read-only FUSE
/// filesystem, or that mount(8) itself acts on.
const ACCEPTED: &[&str] = &[
    "ro",
    "defaults",
    "relatime",
    "norelatime",
    "strictatime",
    "lazytime",
    "nolazytime",
    "diratime",
    "nodiratime",
    "auto",
    "noauto",
    "user",
    "nouser",
    "users",
    "owner",
    "group",
    "nofail",
    "_netdev",
    "silent",
    "loud",
    "sync",
    "async",
    "dirsync",
];

fn parse_options(given: &[String], source: &str) -> Result<Options, String> {
    let mut mount = vec![MountOption::RO, MountOption::FSName(source.to_owned())];
    let mut acl = SessionACL::Owner;
    let mut subtype = "ptefs".to_owned();
    let mut auto_unmount = false;
    for opt in given
        .iter()
        .flat_map(|o| o.split(','))
        .filter(|o| !o.is_empty())
    {
        match opt {
            "rw" => return Err("ptefs is read-only: the option \"rw\" is not supported".into()),
            "allow_other" => acl = SessionACL::All,
            "allow_root" if acl == SessionACL::Owner => acl = SessionACL::RootAndOwner,
            "allow_root" => {}
            "auto_unmount" => auto_unmount = true,
            "default_permissions" => mount.push(MountOption::DefaultPermissions),
            "nosuid" => mount.push(MountOption::NoSuid),
            "suid" => mount.push(MountOption::Suid),
            "nodev" => mount.push(MountOption::NoDev),
            "dev" => mount.push(MountOption::Dev),
            "noexec" => mount.push(MountOption::NoExec),
            "exec" => mount.push(MountOption::Exec),
            "noatime" => mount.push(MountOption::NoAtime),
            "atime" => mount.push(MountOption::Atime),
            o if o.starts_with("fsname=") => {
                mount.retain(|m| !matches!(m, MountOption::FSName(_)));
                mount.push(MountOption::FSName(o["fsname=".len()..].to_owned()));
            }
            o if o.starts_with("subtype=") => subtype = o["subtype=".len()..].to_owned(),
            o if ACCEPTED.contains(&o) || o.starts_with("x-") || o.starts_with("comment=") => {}
            o => return Err(format!("unknown mount option \"{o}\"")),
        }
    }
    if auto_unmount {
        // Unmounting after the daemon dies is fusermount's job, and it only
        // takes it on with allow_root or allow_other.
        mount.push(MountOption::AutoUnmount);
        if acl == SessionACL::Owner {
            acl = SessionACL::RootAndOwner;
        }
    }
    // A kernel option too, so that mounts made by root through mount(2)
    // show as fuse.ptefs just as those made by fusermount3 do.
    mount.push(MountOption::CUSTOM(format!("subtype={subtype}")));
    Ok(Options { mount, acl })
}

pub(super) fn run(args: MountArgs) -> Result<i32, i32> {
    let mut inputs = args.paths;
    let Some(mountpoint) = inputs.pop().filter(|_| !inputs.is_empty()) else {
        error(
            "mount needs at least one source and a mount point: ptefs mount SOURCE... MOUNTPOINT",
        );
        return Err(TROUBLE);
    };
    let source_name = inputs
        .first()
        .map(|p| {
            std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string()
        })
        .unwrap_or_default();
    let options = parse_options(&args.options, &source_name).map_err(|e| {
        error(e);
        TROUBLE
    })?;
    let view = open_view(&Request {
        inputs,
        data: args.data,
        recursive: args.recursive,
    })?;
    let mountpoint = check_mountpoint(&mountpoint).map_err(|e| {
        error(e);
        TROUBLE
    })?;
    check_dev_fuse().map_err(|e| {
        error(e);
        TROUBLE
    })?;
    if args.foreground {
        return serve(view, &mountpoint, &options, args.threads, None);
    }
    detach(
        view,
        &mountpoint,
        &options,
        args.threads,
        args.log_file.as_deref(),
    )
}

/// Whether an error says the FUSE daemon behind a mount is gone.
fn is_dead(e: Option<&io::Error>) -> bool {
    matches!(
        e.and_then(io::Error::raw_os_error),
        Some(libc::ENOTCONN | libc::ECONNABORTED)
    )
}

/// Why `path` cannot be mounted on, if it cannot.
fn check_mountpoint(path: &Path) -> Result<PathBuf, String> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if is_dead(Some(&e)) => {
            return Err(format!(
                "{shown}: is a FUSE mount whose daemon is gone; clean it up with `ptefs umount {shown}`"
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("{shown}: mount point does not exist"));
        }
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if !meta.is_dir() {
        return Err(format!("{shown}: mount point is not a directory"));
    }
    let path = path.canonicalize().map_err(|e| format!("{shown}: {e}"))?;
    if let Some(m) = mount_at(&path) {
        let dead = is_dead(std::fs::read_dir(&path).err().as_ref());
        return Err(if dead {
            format!(
                "{shown}: is a FUSE mount whose daemon is gone; clean it up with `ptefs umount {shown}`"
            )
        } else if m.fstype == "fuse.ptefs" {
            format!(
                "{shown}: is already a ptefs mount (of {}); unmount it first with `ptefs umount {shown}`",
                m.source
            )
        } else {
            format!(
                "{shown}: is already a mount point ({} of {})",
                m.fstype, m.source
            )
        });
    }
    let mut entries = std::fs::read_dir(&path).map_err(|e| format!("{shown}: {e}"))?;
    if entries.next().is_some() {
        return Err(format!("{shown}: mount point is not empty"));
    }
    Ok(path)
}

fn check_dev_fuse() -> Result<(), String> {
    const HINT: &str = "`ptefs ls` and `ptefs cat` read the same tree without mounting";
    match OpenOptions::new().read(true).write(true).open("/dev/fuse") {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
            "/dev/fuse does not exist, so FUSE is unavailable here (try `modprobe fuse`); {HINT}"
        )),
        Err(e) => Err(format!("cannot open /dev/fuse: {e}; {HINT}")),
    }
}

/// An entry of /proc/self/mountinfo.
struct MountInfo {
    fstype: String,
    source: String,
}

/// The mount whose mount point is `path`, if any.
fn mount_at(path: &Path) -> Option<MountInfo> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = path.as_os_str().as_bytes();
    text.lines().rev().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let point = unescape(fields.get(4)?);
        let dash = fields.iter().position(|f| *f == "-")?;
        if point.as_bytes() != want {
            return None;
        }
        Some(MountInfo {
            fstype: fields.get(dash + 1)?.to_string(),
            source: unescape(fields.get(dash + 2)?),
        })
    })
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Forks: the child mounts and serves; the parent returns once the child
/// reports the mount live, or fails with the child's error.
fn detach(
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
fn serve(
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
    let fs = PtefsFs::new(view, current_uid(), current_gid());
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

fn current_uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

fn current_gid() -> u32 {
    // SAFETY: getgid cannot fail.
    unsafe { libc::getgid() }
}

/// Unmounts `path`: umount(2) as root, fusermount3 otherwise; `lazy`
/// detaches a busy mount.
fn unmount_path(path: &Path, lazy: bool) -> Result<(), String> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::EPERM) {
        return Err(format!("{}: {err}", path.display()));
    }
    let mut cmd = Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd
        .arg("--")
        .arg(path)
        .output()
        .map_err(|e| format!("fusermount3: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

pub(super) fn unmount(mountpoint: &Path) -> Result<i32, i32> {
    let shown = mountpoint.display();
    // canonicalize fails on a mount whose daemon died; use the path as given.
    let path = std::path::absolute(mountpoint).unwrap_or_else(|_| mountpoint.to_owned());
    let path = path.canonicalize().unwrap_or(path);
    match mount_at(&path) {
        Some(m) if m.fstype == "fuse.ptefs" || m.fstype.starts_with("fuse") => {}
        Some(m) => {
            error(format_args!("{shown}: is a {} mount, not ptefs", m.fstype));
            return Err(TROUBLE);
        }
        None => {
            error(format_args!("{shown}: is not a mount point"));
            return Err(TROUBLE);
        }
    }
    unmount_path(&path, false).map(|()| OK).map_err(|e| {
        error(if e.contains("busy") || e.contains("EBUSY") {
            format!("{e} (close what uses it, or `umount -l`)")
        } else {
            e
        });
        TROUBLE
    })
}
