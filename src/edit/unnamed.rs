//! The file a writer fills before it replaces its output: unnamed
//! (`O_TMPFILE`) in the output's directory, so that a writer killed by any
//! signal, SIGKILL included, leaves nothing behind; it gets a name only
//! once it is complete, and that name is renamed over the output at once.
//! Where the filesystem has no unnamed files, a named one (`.OUT.*.tmp`)
//! is used instead and removed on SIGINT, SIGTERM and SIGHUP as well.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// A file being written beside its destination.
#[derive(Debug)]
pub struct Unnamed {
    file: File,
    dir: PathBuf,
    /// The name it has: none while it is unnamed.
    named: Option<Pending>,
}

impl Unnamed {
    /// A new, empty file in `dir` with permission bits `mode` (less the
    /// umask), unnamed where the filesystem allows it.
    pub fn create(dir: &Path, stem: &str, mode: u32) -> io::Result<Unnamed> {
        // Linking an unnamed file takes its /proc/self/fd name.
        if Path::new("/proc/self/fd").is_dir() {
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_TMPFILE)
                .mode(mode)
                .open(dir);
            match opened {
                Ok(file) => {
                    return Ok(Unnamed {
                        file,
                        dir: dir.to_owned(),
                        named: None,
                    });
                }
                // The filesystem (or the kernel) has no unnamed files.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR)) => {}
                Err(e) => return Err(e),
            }
        }
        Unnamed::named(dir, stem, mode)
    }

    /// A new, empty file named `.<stem>.<random>.tmp` in `dir`, removed
    /// when dropped or when a signal ends the process.
    fn named(dir: &Path, stem: &str, mode: u32) -> io::Result<Unnamed> {
        let (file, path) = create_named(dir, stem, mode)?;
        Ok(Unnamed {
            file,
            dir: dir.to_owned(),
            named: Some(Pending::register(path)),
        })
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// A path that opens the file, for reading it back as any reader
    /// would.
    pub fn reopen_path(&self) -> PathBuf {
        match &self.named {
            Some(p) => p.path.clone(),
            None => PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd())),
        }
    }

    /// Gives the complete file the name `out`, replacing what was there.
    pub fn place(mut self, out: &Path, stem: &str) -> io::Result<()> {
        let pending = match self.named.take() {
            Some(p) => p,
            None => {
                let from = CString::new(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
                    .expect("no NUL in a /proc path");
                // A fresh name beside the output, then a rename over it:
                // linking cannot replace an existing name.
                let mut tries = 0;
                loop {
                    let to = self.dir.join(format!(".{stem}.{}.tmp", random_suffix()));
                    let c_to = CString::new(to.as_os_str().as_bytes())
                        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
                    // Registered first: a signal between link and rename
                    // removes the name.
                    let pending = Pending::register(to);
                    // SAFETY: both paths are NUL-terminated and live across
                    // the call.
                    let r = unsafe {
                        libc::linkat(
                            libc::AT_FDCWD,
                            from.as_ptr(),
                            libc::AT_FDCWD,
                            c_to.as_ptr(),
                            libc::AT_SYMLINK_FOLLOW,
                        )
                    };
                    if r == 0 {
                        break pending;
                    }
                    let e = io::Error::last_os_error();
                    pending.forget();
                    tries += 1;
                    if e.raw_os_error() != Some(libc::EEXIST) || tries > 100 {
                        return Err(e);
                    }
                }
            }
        };
        std::fs::rename(&pending.path, out)?;
        pending.forget();
        Ok(())
    }
}

impl Drop for Unnamed {
    fn drop(&mut self) {
        if let Some(p) = self.named.take() {
            let _ = std::fs::remove_file(&p.path);
            p.forget();
        }
    }
}

fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
}

/// A named temporary file, created exclusively.
fn create_named(dir: &Path, stem: &str, mode: u32) -> io::Result<(File, PathBuf)> {
    let mut tries = 0;
    loop {
        let path = dir.join(format!(".{stem}.{}.tmp", random_suffix()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
        {
            Ok(f) => return Ok((f, path)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 100 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Names of temporary files to remove when a signal ends the process.
const SLOTS: usize = 16;
static PENDING: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
static INSTALLED: AtomicBool = AtomicBool::new(false);
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
static PREVIOUS: std::sync::OnceLock<[libc::sigaction; 3]> = std::sync::OnceLock::new();

/// A name that a signal removes until it is forgotten.
#[derive(Debug)]
struct Pending {
    path: PathBuf,
    slot: Option<usize>,
}

impl Pending {
    fn register(path: PathBuf) -> Pending {
        install();
        let raw = CString::new(path.as_os_str().as_bytes())
            .ok()
            .map(CString::into_raw);
        let slot = raw.and_then(|raw| {
            let free = PENDING.iter().position(|s| {
                s.compare_exchange(
                    std::ptr::null_mut(),
                    raw,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                )
                .is_ok()
            });
            if free.is_none() {
                // SAFETY: `raw` came from CString::into_raw just above and
                // was stored nowhere.
                drop(unsafe { CString::from_raw(raw) });
            }
            free
        });
        Pending { path, slot }
    }

    /// The name is no longer this process's to remove.
    fn forget(self) {
        if let Some(slot) = self.slot {
            let raw = PENDING[slot].swap(std::ptr::null_mut(), Ordering::SeqCst);
            if !raw.is_null() {
                // SAFETY: only `register` stores pointers, each from
                // CString::into_raw, and the swap took it out.
                drop(unsafe { CString::from_raw(raw) });
            }
        }
    }
}

/// Installs the handler that removes pending names, once per process,
/// keeping the handlers it replaces to pass the signal on to.
fn install() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = PREVIOUS.get_or_init(|| {
        // SAFETY: sigaction is plain data, valid all zeros (SIG_DFL), and
        // a null new action only reads the current one.
        let mut previous: [libc::sigaction; 3] = unsafe { std::mem::zeroed() };
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: as above; `previous[i]` is valid for writing.
            unsafe { libc::sigaction(sig, std::ptr::null(), &mut previous[i]) };
        }
        previous
    });
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // A signal the process ignores stays ignored.
        if previous[i].sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: a zeroed sigaction is valid; the handler is an extern
        // "C" fn of the signature sa_handler has without SA_SIGINFO.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Removes every pending name, then hands the signal to the handler it
/// replaced (for the default one, ending the process as it would have).
extern "C" fn on_signal(sig: libc::c_int) {
    for slot in &PENDING {
        let raw = slot.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !raw.is_null() {
            // SAFETY: `raw` is a NUL-terminated path from `register`;
            // unlink is async-signal-safe. The string is not freed here:
            // freeing is not.
            unsafe { libc::unlink(raw) };
        }
    }
    let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
        return;
    };
    INSTALLED.store(false, Ordering::SeqCst);
    if let Some(previous) = PREVIOUS.get() {
        // SAFETY: sigaction and raise are async-signal-safe; the previous
        // action was read from the kernel by `install`. The raised signal
        // is delivered to it once this handler returns.
        unsafe {
            libc::sigaction(sig, &previous[i], std::ptr::null_mut());
            libc::raise(sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use nix::sys::signal::Signal;
    use nix::sys::wait::{WaitStatus, waitpid};
    use nix::unistd::ForkResult;

    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn an_unnamed_file_is_named_only_when_placed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::write(&out, b"old").unwrap();
        let t = Unnamed::create(dir.path(), "out", 0o600).unwrap();
        assert!(t.named.is_none(), "this filesystem has unnamed files");
        t.file().write_all(b"new").unwrap();
        assert_eq!(names(dir.path()), ["out"]);
        assert_eq!(std::fs::read(t.reopen_path()).unwrap(), b"new");
        t.place(&out, "out").unwrap();
        assert_eq!(names(dir.path()), ["out"]);
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        // Dropped unplaced, it leaves nothing.
        drop(Unnamed::create(dir.path(), "out", 0o600).unwrap());
        assert_eq!(names(dir.path()), ["out"]);
    }

    #[test]
    fn a_named_file_is_removed_when_dropped_placed_or_ended_by_a_signal() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let t = Unnamed::named(dir.path(), "out", 0o600).unwrap();
        t.file().write_all(b"new").unwrap();
        assert_eq!(names(dir.path()).len(), 1);
        t.place(&out, "out").unwrap();
        assert_eq!(names(dir.path()), ["out"]);
        drop(Unnamed::named(dir.path(), "out", 0o600).unwrap());
        assert_eq!(names(dir.path()), ["out"]);
        // SIGTERM (ending the process by default) removes it first.
        for sig in [Signal::SIGTERM, Signal::SIGINT] {
            let t = Unnamed::named(dir.path(), "out", 0o600).unwrap();
            assert_eq!(names(dir.path()).len(), 2);
            // SAFETY: the child only raises a signal, whose handler makes
            // async-signal-safe calls only, and exits.
            match unsafe { nix::unistd::fork() }.unwrap() {
                // SAFETY: raise and _exit are async-signal-safe.
                ForkResult::Child => unsafe {
                    libc::raise(sig as libc::c_int);
                    libc::_exit(0)
                },
                ForkResult::Parent { child } => {
                    let status = waitpid(child, None).unwrap();
                    assert_eq!(status, WaitStatus::Signaled(child, sig, false));
                }
            }
            assert_eq!(names(dir.path()), ["out"], "{sig} removed it");
            drop(t);
        }
    }
}
