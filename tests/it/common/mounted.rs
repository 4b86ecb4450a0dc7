//! Mounting for tests: a [`Mounted`] unmounts on drop.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::ptefs;
use super::required::skip_unless;

/// Whether this machine can mount. Prints a loud notice and returns false
/// when it cannot; panics instead when the run requires every component.
pub fn fuse_or_skip(test: &str) -> bool {
    let why = if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_err()
    {
        Some("/dev/fuse cannot be opened")
    } else if !is_root() && which("fusermount3").is_none() {
        Some("fusermount3 is missing")
    } else {
        None
    };
    skip_unless(test, why)
}

/// Like [`fuse_or_skip`], for tests that also need root (to create users,
/// namespaces or system-wide mounts).
pub fn root_fuse_or_skip(test: &str) -> bool {
    fuse_or_skip(test) && skip_unless(test, (!is_root()).then_some("it needs root"))
}

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(cmd))
        .find(|p| p.exists())
}

/// Whether `dir` is a mount point now.
pub fn is_mounted(dir: &Path) -> bool {
    let dir = dir.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(dir.as_str()))
}

/// Waits up to ten seconds for `f`.
pub fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A live mount in a temporary directory.
pub struct Mounted {
    pub dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Mounted {
    /// `ptefs mount ARGS... DIR`, detached, as users run it.
    pub fn new(args: &[&std::ffi::OsStr]) -> Mounted {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mnt");
        std::fs::create_dir(&dir).unwrap();
        let out = ptefs().arg("mount").args(args).arg(&dir).output().unwrap();
        assert!(
            out.status.success(),
            "mount failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            is_mounted(&dir),
            "ptefs mount returned before the mount was live"
        );
        Mounted { dir, _tmp: tmp }
    }

    /// Mounts `source` detached under a new directory in `dir`, logging at
    /// `rust_log` (`None`: the default level) to a file. Returns the mount
    /// point and the log; unmount with `ptefs umount`.
    pub fn logged(source: &Path, dir: &Path, rust_log: Option<&str>) -> (PathBuf, PathBuf) {
        let log = dir.join("ptefs.log");
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let mut cmd = ptefs();
        match rust_log {
            Some(level) => cmd.env("RUST_LOG", level),
            None => cmd.env_remove("RUST_LOG"),
        };
        let out = cmd
            .arg("mount")
            .arg(source)
            .arg(&mnt)
            .arg("--log-file")
            .arg(&log)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (mnt, log)
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if is_mounted(&self.dir) {
            let out = ptefs().arg("umount").arg(&self.dir).output().unwrap();
            if !out.status.success() {
                let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
            }
        }
    }
}

/// The pid of the daemon serving `dir`, found by its command line.
pub fn daemon_pid(dir: &Path) -> Option<i32> {
    let want = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<String> = cmd
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        (args.iter().any(|a| a.ends_with("ptefs")) && args.contains(&want)).then_some(pid)
    })
}
