//! What is at a mount point, and unmounting it.

use std::fs::OpenOptions;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::errno::Errno;
use nix::mount::{MntFlags, umount2};

/// Whether an error says the FUSE daemon behind a mount is gone.
fn is_dead(e: Option<&io::Error>) -> bool {
    matches!(
        e.and_then(io::Error::raw_os_error).map(Errno::from_raw),
        Some(Errno::ENOTCONN | Errno::ECONNABORTED)
    )
}

const OFFLINE_HINT: &str = "`ptefs ls` and `ptefs cat` read the same tree without mounting";

/// Why a directory cannot be mounted on, or FUSE cannot be used.
#[derive(Debug, thiserror::Error)]
pub(super) enum MountpointError {
    #[error("{}: mount point does not exist", .0.display())]
    Missing(PathBuf),
    #[error("{}: mount point is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("{}: mount point is not empty", .0.display())]
    NotEmpty(PathBuf),
    #[error(
        "{}: is a FUSE mount whose daemon is gone; clean it up with `ptefs umount {}`",
        .0.display(), .0.display()
    )]
    DaemonGone(PathBuf),
    #[error(
        "{}: is already a ptefs mount (of {of}); unmount it first with `ptefs umount {}`",
        .path.display(), .path.display()
    )]
    AlreadyPtefs { path: PathBuf, of: String },
    #[error("{}: is already a mount point ({fstype} of {of})", .path.display())]
    AlreadyMounted {
        path: PathBuf,
        fstype: String,
        of: String,
    },
    #[error("{}: {err}", .path.display())]
    Io { path: PathBuf, err: io::Error },
    #[error(
        "/dev/fuse does not exist, so FUSE is unavailable here (try `modprobe fuse`); {OFFLINE_HINT}"
    )]
    NoDevFuse,
    #[error("cannot open /dev/fuse: {0}; {OFFLINE_HINT}")]
    DevFuse(io::Error),
}

/// Why `path` cannot be mounted on, if it cannot; else its canonical form.
pub(super) fn check_mountpoint(path: &Path) -> Result<PathBuf, MountpointError> {
    let io_error = |err| MountpointError::Io {
        path: path.to_owned(),
        err,
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if is_dead(Some(&e)) => return Err(MountpointError::DaemonGone(path.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(MountpointError::Missing(path.to_owned()));
        }
        Err(e) => return Err(io_error(e)),
    };
    if !meta.is_dir() {
        return Err(MountpointError::NotADirectory(path.to_owned()));
    }
    let canonical = path.canonicalize().map_err(io_error)?;
    if let Some(m) = mount_at(&canonical) {
        return Err(if is_dead(std::fs::read_dir(&canonical).err().as_ref()) {
            MountpointError::DaemonGone(path.to_owned())
        } else if m.fstype == "fuse.ptefs" {
            MountpointError::AlreadyPtefs {
                path: path.to_owned(),
                of: m.source,
            }
        } else {
            MountpointError::AlreadyMounted {
                path: path.to_owned(),
                fstype: m.fstype,
                of: m.source,
            }
        });
    }
    let mut entries = std::fs::read_dir(&canonical).map_err(io_error)?;
    if entries.next().is_some() {
        return Err(MountpointError::NotEmpty(path.to_owned()));
    }
    Ok(canonical)
}

/// Whether /dev/fuse can be opened, as mounting needs.
pub(super) fn check_dev_fuse() -> Result<(), MountpointError> {
    match OpenOptions::new().read(true).write(true).open("/dev/fuse") {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(MountpointError::NoDevFuse),
        Err(e) => Err(MountpointError::DevFuse(e)),
    }
}

/// An entry of /proc/self/mountinfo.
pub(super) struct MountInfo {
    pub(super) fstype: String,
    pub(super) source: String,
    /// Mounted read-write (a writable ptefs mount).
    pub(super) writable: bool,
}

/// The mount whose mount point is `path`, if any.
pub(super) fn mount_at(path: &Path) -> Option<MountInfo> {
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
            writable: fields.get(5)?.split(',').any(|o| o == "rw"),
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

/// Why an unmount failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum UnmountError {
    /// umount(2) refused.
    #[error("{}: {}", .path.display(), io::Error::from(*.errno))]
    Refused { path: PathBuf, errno: Errno },
    /// fusermount3 could not be run.
    #[error("fusermount3: {0}")]
    NoHelper(io::Error),
    /// fusermount3 refused; `errno` is the cause it reported, if known.
    #[error("{message}")]
    HelperRefused {
        message: String,
        errno: Option<Errno>,
    },
}

impl UnmountError {
    /// The error number behind the failure, when the system gave one.
    pub(super) fn errno(&self) -> Option<Errno> {
        match self {
            UnmountError::Refused { errno, .. } => Some(*errno),
            UnmountError::NoHelper(e) => e.raw_os_error().map(Errno::from_raw),
            UnmountError::HelperRefused { errno, .. } => *errno,
        }
    }
}

/// Unmounts `path`: umount(2) as root, fusermount3 otherwise; `lazy`
/// detaches a busy mount.
pub(super) fn unmount_path(path: &Path, lazy: bool) -> Result<(), UnmountError> {
    let flags = if lazy {
        MntFlags::MNT_DETACH
    } else {
        MntFlags::empty()
    };
    match umount2(path, flags) {
        Ok(()) => return Ok(()),
        Err(Errno::EPERM) => {}
        Err(errno) => {
            return Err(UnmountError::Refused {
                path: path.to_owned(),
                errno,
            });
        }
    }
    let mut cmd = Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    // In the C locale, fusermount3 words the cause as strerror does here.
    let out = cmd
        .env("LC_ALL", "C")
        .arg("--")
        .arg(path)
        .output()
        .map_err(UnmountError::NoHelper)?;
    if out.status.success() {
        return Ok(());
    }
    let message = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let errno = errno_reported(&message);
    Err(UnmountError::HelperRefused { message, errno })
}

/// The error number whose description ends `message`, as in fusermount3's
/// "failed to unmount PATH: Device or resource busy": the helper reports
/// its cause only in words.
fn errno_reported(message: &str) -> Option<Errno> {
    let (_, cause) = message.rsplit_once(": ")?;
    (1..256).find_map(|n| {
        let described = io::Error::from_raw_os_error(n).to_string();
        let words = described.strip_suffix(&format!(" (os error {n})"))?;
        (words == cause).then(|| Errno::from_raw(n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helpers_cause_is_read_back_as_an_errno() {
        let busy = io::Error::from(Errno::EBUSY).to_string();
        let busy = busy.split(" (os error").next().unwrap();
        let message = format!("fusermount3: failed to unmount /tmp/a: b: {busy}");
        assert_eq!(errno_reported(&message), Some(Errno::EBUSY));
        assert_eq!(errno_reported("fusermount3: something odd"), None);
        assert_eq!(errno_reported("no cause"), None);
    }

    #[test]
    fn mountinfo_paths_are_unescaped() {
        assert_eq!(
            super::unescape(r"/mnt/my\040models\134x"),
            r"/mnt/my models\x"
        );
        assert_eq!(super::unescape(r"/plain"), "/plain");
        assert_eq!(super::unescape(r"/odd\04"), r"/odd\04");
    }
}
