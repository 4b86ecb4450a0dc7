//! What is at a mount point, and unmounting it.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether an error says the FUSE daemon behind a mount is gone.
fn is_dead(e: Option<&io::Error>) -> bool {
    matches!(
        e.and_then(io::Error::raw_os_error),
        Some(libc::ENOTCONN | libc::ECONNABORTED)
    )
}

/// Why `path` cannot be mounted on, if it cannot.
pub(super) fn check_mountpoint(path: &Path) -> Result<PathBuf, String> {
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

pub(super) fn check_dev_fuse() -> Result<(), String> {
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
pub(super) struct MountInfo {
    pub(super) fstype: String,
    pub(super) source: String,
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

/// Unmounts `path`: umount(2) as root, fusermount3 otherwise; `lazy`
/// detaches a busy mount.
pub(super) fn unmount_path(path: &Path, lazy: bool) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
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
