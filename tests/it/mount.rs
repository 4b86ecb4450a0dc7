//! Real mounts: what the kernel shows through ptefs equals the offline
//! tree, byte for byte, under the tools users run.

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::mounted::*;
use common::required::skip_unless;
use common::*;

/// Every entry under `root`: relative path → bytes (`None` for directories).
fn walk(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
                out.insert(rel, None);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                assert_eq!(meta.len(), bytes.len() as u64, "{rel}: stat size");
                out.insert(rel, Some(bytes));
            }
        }
    }
    out
}

fn offline(v: &ptefs::view::View) -> BTreeMap<String, Option<Vec<u8>>> {
    use ptefs::tree::ROOT;
    v.tree
        .walk(ROOT)
        .skip(1)
        .map(|(path, i)| {
            let bytes = v.tree.file(i).map(|_| read_ino(v, i));
            (path, bytes)
        })
        .collect()
}

#[test]
fn every_fixture_mounts_to_its_offline_tree() {
    if !fuse_or_skip("every_fixture_mounts_to_its_offline_tree") {
        return;
    }
    for model in models() {
        let m = Mounted::new(&[fixture(&model).as_os_str()]);
        let got = walk(&m.dir);
        let want = offline(&view(&model));
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{model}: names"
        );
        for (k, v) in &want {
            assert!(got[k] == *v, "{model}: {k} differs");
        }
    }
}

#[test]
fn attributes_tell_the_truth() {
    if !fuse_or_skip("attributes_tell_the_truth") {
        return;
    }
    let src = fixture("mv2_xnnpack.pte");
    let m = Mounted::new(&[src.as_os_str()]);
    let m2 = Mounted::new(&[src.as_os_str()]);
    let src_meta = std::fs::metadata(&src).unwrap();
    let mut total = 0;
    let mut blocks = 0;
    // du and statfs count a file with several names once.
    let mut seen = std::collections::HashSet::new();
    for (rel, bytes) in walk(&m.dir) {
        let meta = std::fs::metadata(m.path(&rel)).unwrap();
        assert_eq!(meta.mtime(), src_meta.mtime(), "{rel}");
        assert_eq!(meta.uid(), nix::unistd::getuid().as_raw());
        assert_eq!(meta.gid(), nix::unistd::getgid().as_raw());
        assert_eq!(
            meta.ino(),
            std::fs::metadata(m2.path(&rel)).unwrap().ino(),
            "{rel}: inode stable"
        );
        match bytes {
            Some(b) => {
                assert_eq!(meta.permissions().mode() & 0o777, 0o444, "{rel}");
                assert_eq!(meta.blocks(), (b.len() as u64).div_ceil(512), "{rel}");
                if seen.insert(meta.ino()) {
                    total += b.len() as u64;
                    blocks += meta.blocks();
                }
            }
            None => assert_eq!(meta.permissions().mode() & 0o777, 0o555, "{rel}"),
        }
    }
    let du = Command::new("du")
        .args(["-s", "-B512"])
        .arg(&m.dir)
        .output()
        .unwrap();
    let du: u64 = String::from_utf8_lossy(&du.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(du, blocks, "du adds up the blocks");
    let apparent = Command::new("du")
        .args(["-s", "-b"])
        .arg(&m.dir)
        .output()
        .unwrap();
    let apparent: u64 = String::from_utf8_lossy(&apparent.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(apparent >= total, "du -b {apparent} < {total}");
    // statfs
    let out = Command::new("stat")
        .args(["-f", "-c", "%b %S %c %l"])
        .arg(&m.dir)
        .output()
        .unwrap();
    let f: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(f[0] * f[1], total.div_ceil(4096) * 4096);
    assert_eq!(f[3], 255);
    // Writes fail with EROFS.
    let e = std::fs::write(m.path("x"), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    let e = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path("header.json"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    let e = std::fs::remove_file(m.path("header.json")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
}

#[test]
fn files_with_the_same_bytes_are_one_inode() {
    if !fuse_or_skip("files_with_the_same_bytes_are_one_inode") {
        return;
    }
    let m = Mounted::new(&[fixture("mlp.pte").as_os_str()]);
    let a = std::fs::metadata(m.path("constants/1.bin")).unwrap();
    let b = std::fs::metadata(m.path("methods/forward/tensors/0.bin")).unwrap();
    assert_eq!(a.ino(), b.ino());
    // Also the alias from its first use and `values/0`.
    assert_eq!((a.nlink(), b.nlink()), (4, 4));
    let out = Command::new("find")
        .arg(&m.dir)
        .args(["-samefile"])
        .arg(m.path("constants/1.bin"))
        .output()
        .unwrap();
    let mut found: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.strip_prefix(&format!("{}/", m.dir.display()))
                .unwrap()
                .to_owned()
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            "constants/1.bin",
            "methods/forward/tensors/0.bin",
            "methods/forward/tensors/0.permute_copy.self.bin",
            "methods/forward/values/0"
        ]
    );
    // Either name tells the tensor's type.
    let out = python(
        "import os,sys\nprint(os.getxattr(sys.argv[1], 'user.ptefs.dtype').decode())",
        &[&m.path("constants/1.bin")],
    );
    assert_eq!(out.trim(), "FLOAT");
}

#[test]
fn xattrs_say_where_bytes_come_from() {
    if !fuse_or_skip("xattrs_say_where_bytes_come_from") {
        return;
    }
    let m = Mounted::new(&[fixture("mlp.pte").as_os_str()]);
    let out = python(
        "import os,sys,json\np=sys.argv[1]\nprint(json.dumps({k: os.getxattr(p,k).decode() for k in os.listxattr(p)}))",
        &[&m.path("methods/forward/tensors/0.npy")],
    );
    let x: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(x["user.ptefs.dtype"], "FLOAT");
    assert_eq!(x["user.ptefs.shape"], "[32, 16]");
    assert_eq!(x["user.ptefs.offset"], "2176");
    assert_eq!(x["user.ptefs.source"], "mlp.pte");
}

#[test]
fn numpy_mmap_of_npy_and_mmap_of_bin() {
    if !fuse_or_skip("numpy_mmap_of_npy_and_mmap_of_bin") {
        return;
    }
    for model in ["dtypes.pte", "mlp.pte", "mlp_external.ptd"] {
        let m = Mounted::new(&[fixture(model).as_os_str()]);
        let out = python(NUMPY_CHECK, &[&m.dir]);
        assert!(!out.contains("checked 0"), "{out}");
        let script = r#"
import mmap, sys, pathlib, hashlib
n = 0
for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.bin")):
    data = p.read_bytes()
    if not data:
        continue
    with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
        assert m[:] == data, p
    n += 1
print("mapped", n)
"#;
        let out = python(script, &[&m.dir]);
        assert!(!out.contains("mapped 0"), "{out}");
    }
}

#[test]
fn sixteen_threads_read_random_ranges() {
    if !fuse_or_skip("sixteen_threads_read_random_ranges") {
        return;
    }
    let model = "mv2_xnnpack.pte";
    let m = Mounted::new(&[fixture(model).as_os_str()]);
    let want: Vec<(String, Vec<u8>)> = files(&view(model)).into_iter().collect();
    std::thread::scope(|s| {
        for t in 0..16u64 {
            let (want, m) = (&want, &m);
            s.spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for _ in 0..400 {
                    let (path, bytes) = &want[(next() % want.len() as u64) as usize];
                    let f = std::fs::File::open(m.path(path)).unwrap();
                    let len = bytes.len() as u64;
                    let off = if len == 0 { 0 } else { next() % len };
                    let n = (next() % (1 << 20)).min(len - off) as usize;
                    let mut buf = vec![0; n];
                    f.read_exact_at(&mut buf, off).unwrap();
                    assert!(
                        buf == bytes[off as usize..off as usize + n],
                        "{path} @{off}+{n}"
                    );
                }
            });
        }
    });
}

#[test]
fn umount_and_sigterm_leave_nothing_behind() {
    if !fuse_or_skip("umount_and_sigterm_leave_nothing_behind") {
        return;
    }
    let m = Mounted::new(&[fixture("add.pte").as_os_str()]);
    let pid = daemon_pid(&m.dir).expect("daemon pid");
    let out = ptefs().arg("umount").arg(&m.dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(&m.dir));
    wait_for("the daemon to exit", || {
        !Path::new(&format!("/proc/{pid}")).exists() || zombie(pid)
    });

    // Foreground daemon, SIGTERM: clean exit, nothing mounted.
    let tmp = tempfile::tempdir().unwrap();
    let mut child = ptefs()
        .args([
            OsStr::new("mount"),
            OsStr::new("-f"),
            fixture("add.pte").as_os_str(),
            tmp.path().as_os_str(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the mount", || is_mounted(tmp.path()));
    assert!(std::fs::metadata(tmp.path().join("header.json")).is_ok());
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(!is_mounted(tmp.path()));

    // SIGINT to a detached daemon.
    let m = Mounted::new(&[fixture("add.pte").as_os_str()]);
    let pid = daemon_pid(&m.dir).unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    );
    wait_for("unmount on SIGINT", || !is_mounted(&m.dir));
}

/// `ptefs umount X && ptefs mount B X` while the daemon unmounted first
/// is still exiting (held here with SIGSTOP): its exit must leave the new
/// mount alone, which it would not if it unmounted X by path on the way
/// out.
#[test]
fn a_daemon_exiting_late_leaves_the_next_mount_at_its_path_alone() {
    if !fuse_or_skip("a_daemon_exiting_late_leaves_the_next_mount_at_its_path_alone") {
        return;
    }
    let first = Mounted::new(&[fixture("add.pte").as_os_str()]);
    let pid = nix::unistd::Pid::from_raw(daemon_pid(&first.dir).expect("daemon pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    ptefs_stdout([OsStr::new("umount"), first.dir.as_os_str()]);
    ptefs_stdout([
        OsStr::new("mount"),
        fixture("mlp.pte").as_os_str(),
        first.dir.as_os_str(),
    ]);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    wait_for("the first daemon to exit", || {
        !Path::new(&format!("/proc/{pid}")).exists() || zombie(pid.as_raw())
    });
    assert!(is_mounted(&first.dir), "the second mount was unmounted");
    let listed = ptefs_stdout(["cat", fixture("mlp.pte").to_str().unwrap(), "header.json"]);
    assert_eq!(
        std::fs::read_to_string(first.path("header.json")).unwrap(),
        listed,
        "the mount at the path is the second one"
    );
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

fn ptefs_fails(args: &[&OsStr], says: &str) {
    let out = ptefs().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err:?} lacks {says:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn mount_errors_are_clear() {
    if !fuse_or_skip("mount_errors_are_clear") {
        return;
    }
    let pte = fixture("mlp.pte");
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("x"), b"").unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let mount = OsStr::new("mount");
    ptefs_fails(
        &[mount, pte.as_os_str(), tmp.path().join("nope").as_os_str()],
        "mount point does not exist",
    );
    ptefs_fails(
        &[mount, pte.as_os_str(), file.as_os_str()],
        "mount point is not a directory",
    );
    ptefs_fails(
        &[mount, pte.as_os_str(), full.as_os_str()],
        "mount point is not empty",
    );
    ptefs_fails(
        &[
            mount,
            OsStr::new("-o"),
            OsStr::new("ro,rw"),
            pte.as_os_str(),
            empty.as_os_str(),
        ],
        "\"rw\" is not supported",
    );
    ptefs_fails(
        &[
            mount,
            OsStr::new("-o"),
            OsStr::new("nosuid,frobnicate"),
            pte.as_os_str(),
            empty.as_os_str(),
        ],
        "unknown mount option \"frobnicate\"",
    );
    ptefs_fails(
        &[
            mount,
            fixture("../../Cargo.toml").as_os_str(),
            empty.as_os_str(),
        ],
        "not an ExecuTorch file",
    );
    assert!(!is_mounted(&empty), "nothing is mounted for a bad file");
    let m = Mounted::new(&[pte.as_os_str()]);
    ptefs_fails(
        &[mount, pte.as_os_str(), m.dir.as_os_str()],
        "is already a ptefs mount",
    );
    ptefs_fails(
        &[OsStr::new("umount"), empty.as_os_str()],
        "is not a mount point",
    );
}

#[test]
fn without_dev_fuse_the_error_suggests_ls_and_cat() {
    if !root_fuse_or_skip("without_dev_fuse_the_error_suggests_ls_and_cat") {
        return;
    }
    // A private mount namespace whose /dev lacks fuse.
    let tmp = tempfile::tempdir().unwrap();
    let script = format!(
        "mount -t tmpfs none /dev && exec {} mount {} {}",
        ptefs_bin(),
        fixture("mlp.pte").display(),
        tmp.path().display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/dev/fuse does not exist") && err.contains("`ptefs ls`"),
        "{err}"
    );
}

/// A user for the tests that need one that is not root, created once.
fn test_user() -> Option<(String, u32)> {
    static USER: std::sync::OnceLock<Option<(String, u32)>> = std::sync::OnceLock::new();
    USER.get_or_init(create_test_user).clone()
}

fn create_test_user() -> Option<(String, u32)> {
    if !is_root() {
        return None;
    }
    let name = "ptefs-test";
    if Command::new("id").arg(name).output().ok()?.status.code() != Some(0) {
        let ok = Command::new("useradd")
            .args(["-M", "-s", "/bin/sh", name])
            .status()
            .ok()?
            .success();
        assert!(ok, "useradd failed");
    }
    let out = Command::new("id").args(["-u", name]).output().ok()?;
    Some((
        name.to_owned(),
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()?,
    ))
}

/// A copy of the `ptefs` binary in `dir`, for tests that run it as another
/// user: the checkout may lie under a directory that user cannot enter
/// (root's home, or any `mktemp -d`). `dir` must be reachable by them; the
/// copy goes with it.
fn binary_for_others(dir: &Path) -> PathBuf {
    let copy = dir.join("ptefs");
    std::fs::copy(ptefs_bin(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

fn as_user(user: &str, cmd: &str) -> std::process::Output {
    Command::new("runuser")
        .args(["-u", user, "--", "sh", "-c", cmd])
        .output()
        .unwrap()
}

#[test]
fn an_unprivileged_user_mounts_and_unmounts() {
    if !fuse_or_skip("an_unprivileged_user_mounts_and_unmounts") {
        return;
    }
    let Some((user, uid)) = test_user() else {
        skip_unless(
            "an_unprivileged_user_mounts_and_unmounts",
            Some("not root, cannot create a user"),
        );
        return;
    };
    assert!(
        which("fusermount3").is_some(),
        "fusermount3 is needed (apt-get install fuse3)"
    );
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let pte = tmp.path().join("mlp.pte");
    std::fs::copy(fixture("mlp.pte"), &pte).unwrap();
    std::os::unix::fs::chown(&pte, Some(uid), None).unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    std::os::unix::fs::chown(&mnt, Some(uid), None).unwrap();
    // /dev/fuse must be usable by everyone for fusermount3's users.
    let dev = std::fs::metadata("/dev/fuse").unwrap().permissions().mode();
    if dev & 0o006 != 0o006 {
        std::fs::set_permissions("/dev/fuse", std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    let bin = binary_for_others(tmp.path());
    let bin = bin.display();
    let out = as_user(
        &user,
        &format!("{bin} mount {} {}", pte.display(), mnt.display()),
    );
    assert!(
        out.status.success(),
        "mount as {user}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_mounted(&mnt));
    let out = as_user(
        &user,
        &format!(
            "sha256sum {}/segments/0.bin && stat -c %u {}/header.json",
            mnt.display(),
            mnt.display()
        ),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("123e96c44be97de09bbf094da890b28c84f22ffa7f1227f1aa67c9d7ada954cb"),
        "{text}"
    );
    assert!(
        text.trim_end().ends_with(&uid.to_string()),
        "owned by the source's owner: {text}"
    );
    // Without allow_other, nobody else may enter, root included.
    let e = std::fs::read_dir(&mnt).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES), "{e}");
    let out = as_user(&user, &format!("{bin} umount {}", mnt.display()));
    assert!(
        out.status.success(),
        "umount as {user}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(&mnt));
}

#[test]
fn allow_other_lets_others_read() {
    if !root_fuse_or_skip("allow_other_lets_others_read") {
        return;
    }
    let (user, _) = test_user().expect("a test user");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = Mounted::new(&[
        OsStr::new("-o"),
        OsStr::new("allow_other"),
        fixture("mlp.pte").as_os_str(),
    ]);
    let parent = m.dir.parent().unwrap();
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = as_user(
        &user,
        &format!("cat {}/methods/forward/code.txt", m.dir.display()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("aten::addmm.out"));
    let out = as_user(&user, &format!("touch {}/x", m.dir.display()));
    assert!(!out.status.success());
    let m2 = Mounted::new(&[fixture("mlp.pte").as_os_str()]);
    std::fs::set_permissions(
        m2.dir.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let out = as_user(&user, &format!("ls {}", m2.dir.display()));
    assert!(
        !out.status.success(),
        "without allow_other another user is refused"
    );
}

#[test]
fn a_detached_daemon_logs_to_its_log_file() {
    if !fuse_or_skip("a_detached_daemon_logs_to_its_log_file") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("ptefs.log");
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let out = ptefs()
        .env("RUST_LOG", "info")
        .args([
            OsStr::new("mount"),
            fixture("mlp.pte").as_os_str(),
            mnt.as_os_str(),
            OsStr::new("--log-file"),
            log.as_os_str(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "the parent prints nothing on success"
    );
    let out = ptefs().arg("umount").arg(&mnt).output().unwrap();
    assert!(out.status.success());
    wait_for("the daemon to log its exit", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("unmounted")
    });
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(&format!("mounted {}", mnt.display())),
        "{text}"
    );
}

#[test]
fn a_dev_fuse_not_permitted_gives_a_clear_error() {
    if !root_fuse_or_skip("a_dev_fuse_not_permitted_gives_a_clear_error") {
        return;
    }
    let (user, uid) = test_user().expect("a test user");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let pte = tmp.path().join("mlp.pte");
    std::fs::copy(fixture("mlp.pte"), &pte).unwrap();
    std::fs::set_permissions(&pte, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    std::os::unix::fs::chown(&mnt, Some(uid), None).unwrap();
    // A private /dev whose fuse node only root may open.
    let script = format!(
        "mount -t tmpfs none /dev && mknod -m 600 /dev/fuse c 10 229 && mknod -m 666 /dev/null c 1 3 && exec runuser -u {user} -- {} mount {} {}",
        binary_for_others(tmp.path()).display(),
        pte.display(),
        mnt.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot open /dev/fuse: Permission denied") && err.contains("`ptefs ls`"),
        "{err}"
    );
}

/// Runs `cmd` (a `ptefs mount` of `mnt`), failing the test if it has not
/// returned within ten seconds; the mount is then detached so nothing is
/// left behind. Returns whether it succeeded, and its stderr.
fn returns_within_ten_seconds(cmd: &mut Command, mnt: &Path) -> (bool, String) {
    use std::io::{Read, Seek};
    // A file, not a pipe: a hung daemon holding a pipe would hang the read.
    let mut err = tempfile::tempfile().unwrap();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            let _ = Command::new("umount").arg("-l").arg(mnt).status();
            panic!("{cmd:?} did not return within ten seconds");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut text = String::new();
    err.rewind().unwrap();
    err.read_to_string(&mut text).unwrap();
    (status.success(), text)
}

const MLP_SEGMENT_SHA256: &str = "123e96c44be97de09bbf094da890b28c84f22ffa7f1227f1aa67c9d7ada954cb";

/// The mount at `mnt` serves mlp.pte, and goes away once its daemon is
/// killed outright: fusermount3, left waiting by auto_unmount, unmounts it.
fn mlp_mount_goes_with_its_daemon(mnt: &Path) {
    assert!(is_mounted(mnt), "returned before the mount was live");
    let seg = std::fs::read(mnt.join("segments/0.bin")).unwrap();
    assert_eq!(sha256(&seg), MLP_SEGMENT_SHA256);
    let pid = daemon_pid(mnt).expect("the daemon's pid");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    wait_for("the mount to go with its daemon", || !is_mounted(mnt));
}

#[test]
fn auto_unmount_returns_once_mounted_and_unmounts_when_the_daemon_dies() {
    if !root_fuse_or_skip("auto_unmount_returns_once_mounted_and_unmounts_when_the_daemon_dies") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    // Descriptors 7 and 8 come from the caller, as a shell may pass them.
    let script = format!(
        "exec 7</dev/null 8>>{}; exec {} mount -o auto_unmount {} {}",
        tmp.path().join("caller").display(),
        ptefs_bin(),
        fixture("mlp.pte").display(),
        mnt.display()
    );
    let (ok, err) = returns_within_ten_seconds(Command::new("sh").args(["-c", &script]), &mnt);
    assert!(ok, "mount -o auto_unmount: {err}");
    // fusermount3 stays to unmount when the daemon dies, holding only its
    // socket to the daemon beside the standard descriptors.
    let helper = helper_pid(&mnt).expect("fusermount3 waiting");
    let mut held = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{helper}/fd")).unwrap() {
        let fd = fd.unwrap();
        let n: i32 = fd.file_name().to_str().unwrap().parse().unwrap();
        let to = std::fs::read_link(fd.path()).unwrap();
        let to = to.to_string_lossy().into_owned();
        if (n > 2 && !to.starts_with("socket:")) || (n == 0 && to != "/dev/null") {
            held.push(format!("{n} -> {to}"));
        }
    }
    mlp_mount_goes_with_its_daemon(&mnt);
    assert!(held.is_empty(), "fusermount3 holds {held:?}");
}

/// The fusermount3 that waits to unmount `mnt`.
fn helper_pid(mnt: &Path) -> Option<i32> {
    let want = mnt.to_string_lossy().into_owned();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        let ours = args.first()?.ends_with(b"fusermount3") && args.contains(&want.as_bytes());
        ours.then_some(pid)
    })
}

/// Runs `f` with `/usr/local/bin/ptefs` (where mount.fuse3 looks for
/// helpers) pointing at this build, unless it is another ptefs already.
fn with_ptefs_installed(f: impl FnOnce()) {
    let link = Path::new("/usr/local/bin/ptefs");
    let ours = link.read_link().ok().as_deref() == Some(Path::new(ptefs_bin()));
    let made = if link.exists() && !ours {
        eprintln!("{} is another ptefs; using it", link.display());
        false
    } else {
        let _ = std::fs::remove_file(link);
        std::os::unix::fs::symlink(ptefs_bin(), link).unwrap();
        true
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    if made {
        let _ = std::fs::remove_file(link);
    }
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn mount_t_fuse_ptefs_with_auto_unmount_returns_and_unmounts_when_the_daemon_dies() {
    let name = "mount_t_fuse_ptefs_with_auto_unmount_returns_and_unmounts_when_the_daemon_dies";
    if !root_fuse_or_skip(name) {
        return;
    }
    assert!(
        which("mount.fuse3").is_some() || Path::new("/sbin/mount.fuse3").exists(),
        "mount -t fuse.ptefs needs mount.fuse3 (apt-get install fuse3)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    with_ptefs_installed(|| {
        let (ok, err) = returns_within_ten_seconds(
            Command::new("mount")
                .args(["-t", "fuse.ptefs"])
                .arg(fixture("mlp.pte"))
                .arg(&mnt)
                .args(["-o", "ro,auto_unmount"]),
            &mnt,
        );
        assert!(ok, "mount -t fuse.ptefs -o ro,auto_unmount: {err}");
        mlp_mount_goes_with_its_daemon(&mnt);
    });
}

/// A directory `dir` that the test user can reach, with `/dev/fuse` open
/// to them, the mount point `dir/mnt` theirs, and a copy of the binary.
fn unprivileged_setup(dir: &Path, uid: u32) -> (PathBuf, PathBuf) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    std::os::unix::fs::chown(&mnt, Some(uid), None).unwrap();
    let dev = std::fs::metadata("/dev/fuse").unwrap().permissions().mode();
    if dev & 0o006 != 0o006 {
        std::fs::set_permissions("/dev/fuse", std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    (binary_for_others(dir), mnt)
}

#[test]
fn an_unprivileged_user_mounts_a_source_whose_path_has_a_comma() {
    let name = "an_unprivileged_user_mounts_a_source_whose_path_has_a_comma";
    if !fuse_or_skip(name) {
        return;
    }
    let Some((user, uid)) = test_user() else {
        skip_unless(name, Some("not root, cannot create a user"));
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (bin, mnt) = unprivileged_setup(tmp.path(), uid);
    let dir = tmp.path().join("a,b");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pte = dir.join("ml,p.pte");
    std::fs::copy(fixture("mlp.pte"), &pte).unwrap();
    let (bin, pte_s, mnt_s) = (bin.display(), pte.display(), mnt.display());
    let out = as_user(&user, &format!("{bin} mount '{pte_s}' {mnt_s}"));
    assert!(
        out.status.success(),
        "mount as {user}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_mounted(&mnt));
    let out = as_user(&user, &format!("sha256sum {mnt_s}/segments/0.bin"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with(MLP_SEGMENT_SHA256), "{text}");
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = info
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(&*mnt_s.to_string()))
        .unwrap();
    let source = line.split(" - ").nth(1).unwrap().split(' ').nth(1).unwrap();
    assert_eq!(source, pte_s.to_string(), "the mount names its source");
    // A busy mount: the unmounting shell stands in it.
    let out = as_user(&user, &format!("cd {mnt_s} && {bin} umount {mnt_s}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("busy") && err.contains("close what uses it, or `umount -l`"),
        "{err}"
    );
    let out = as_user(&user, &format!("{bin} umount {mnt_s}"));
    assert!(
        out.status.success(),
        "umount as {user}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(&mnt));
}

#[test]
fn a_busy_mount_is_not_unmounted_and_the_error_says_what_to_do() {
    if !fuse_or_skip("a_busy_mount_is_not_unmounted_and_the_error_says_what_to_do") {
        return;
    }
    let m = Mounted::new(&[fixture("mlp.pte").as_os_str()]);
    let open = std::fs::File::open(m.path("header.json")).unwrap();
    ptefs_fails(
        &[OsStr::new("umount"), m.dir.as_os_str()],
        "close what uses it, or `umount -l`",
    );
    assert!(is_mounted(&m.dir));
    drop(open);
}

#[test]
fn errors_for_allow_root_and_auto_unmount_name_the_option_given() {
    let name = "errors_for_allow_root_and_auto_unmount_name_the_option_given";
    if !root_fuse_or_skip(name) {
        return;
    }
    let (user, uid) = test_user().expect("a test user");
    let tmp = tempfile::tempdir().unwrap();
    let (bin, mnt) = unprivileged_setup(tmp.path(), uid);
    let pte = tmp.path().join("mlp.pte");
    std::fs::copy(fixture("mlp.pte"), &pte).unwrap();
    // A fuse.conf without user_allow_other, in a private mount namespace.
    let conf = tmp.path().join("fuse.conf");
    std::fs::write(&conf, "# nothing allowed\n").unwrap();
    for opt in ["allow_root", "auto_unmount", "allow_other"] {
        let script = format!(
            "mount --bind {} /etc/fuse.conf && exec runuser -u {user} -- {} mount -o {opt} {} {}",
            conf.display(),
            bin.display(),
            pte.display(),
            mnt.display()
        );
        let out = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "-o {opt}: {err}");
        assert_eq!(err.lines().count(), 1, "-o {opt}: {err}");
        assert!(
            err.contains(&format!("-o {opt} ")) && err.contains("user_allow_other"),
            "-o {opt}: {err}"
        );
        let others = ["allow_root", "auto_unmount", "allow_other"];
        for other in others.iter().filter(|o| **o != opt) {
            assert!(!err.contains(&format!("-o {other}")), "-o {opt}: {err}");
            assert!(!err.contains(&format!("option {other}")), "-o {opt}: {err}");
        }
        assert!(!is_mounted(&mnt));
    }
}

#[test]
fn mount_help_shows_an_example_and_r_is_not_a_mount_flag() {
    let out = ptefs().args(["mount", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    assert!(help.contains("Example"), "{help}");
    assert!(help.contains("ptefs mount model.pte"), "{help}");
    assert!(help.contains("--subdirs"), "{help}");
    assert!(!help.contains("-R"), "{help}");
    // `-R` is ls's recursive listing; mount has no such flag.
    let out = ptefs()
        .args(["mount", "-R"])
        .arg(fixture(""))
        .arg("/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unexpected argument '-R'"), "{err}");
}

#[test]
fn subdirs_takes_models_from_subdirectories_of_a_directory_source() {
    if !fuse_or_skip("subdirs_takes_models_from_subdirectories_of_a_directory_source") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("models");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::copy(fixture("add.pte"), src.join("add.pte")).unwrap();
    std::fs::copy(fixture("mlp.pte"), src.join("sub/mlp.pte")).unwrap();
    let names = |m: &Mounted| {
        let mut v: Vec<String> = std::fs::read_dir(&m.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let flat = Mounted::new(&[src.as_os_str(), fixture("dtypes.pte").as_os_str()]);
    assert_eq!(names(&flat), ["add.pte", "dtypes.pte"]);
    let deep = Mounted::new(&[
        OsStr::new("--subdirs"),
        src.as_os_str(),
        fixture("dtypes.pte").as_os_str(),
    ]);
    // A model found in a subdirectory is named by its relative path.
    assert_eq!(names(&deep), ["add.pte", "dtypes.pte", "sub"]);
    let seg = std::fs::read(deep.path("sub/mlp.pte/segments/0.bin")).unwrap();
    assert_eq!(sha256(&seg), MLP_SEGMENT_SHA256);
}

#[test]
fn allow_other_grants_no_more_than_the_source_does() {
    if !root_fuse_or_skip("allow_other_grants_no_more_than_the_source_does") {
        return;
    }
    let (user, _) = test_user().expect("a test user");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for (mode, readable) in [(0o600, false), (0o644, true)] {
        let src = tmp.path().join(format!("mlp-{mode:o}.pte"));
        std::fs::copy(fixture("mlp.pte"), &src).unwrap();
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(mode)).unwrap();
        let m = Mounted::new(&[OsStr::new("-o"), OsStr::new("allow_other"), src.as_os_str()]);
        let parent = m.dir.parent().unwrap();
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = as_user(
            &user,
            &format!("sha256sum {}/segments/0.bin", m.dir.display()),
        );
        let (text, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        if readable {
            assert!(out.status.success(), "{mode:o}: {err}");
            assert!(text.starts_with(MLP_SEGMENT_SHA256), "{mode:o}: {text}");
        } else {
            assert!(!out.status.success(), "{mode:o}: {user} read {text}");
            assert!(err.contains("Permission denied"), "{mode:o}: {err}");
        }
        // Root, who mounted it, reads it either way.
        let seg = std::fs::read(m.path("segments/0.bin")).unwrap();
        assert_eq!(sha256(&seg), MLP_SEGMENT_SHA256);
    }
}

#[test]
fn a_second_long_listing_does_not_ask_for_acls_again() {
    if !fuse_or_skip("a_second_long_listing_does_not_ask_for_acls_again") {
        return;
    }
    // ACLs are not supported here, and once told so `ls -l` asks no other
    // file of the listing: one ACL request per listing.
    let tmp = tempfile::tempdir().unwrap();
    let (mnt, log) = Mounted::logged(
        &fixture("mv2_xnnpack.pte"),
        tmp.path(),
        Some("fuser::request=debug"),
    );
    let files = walk(&mnt).len();
    let acl_requests = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .matches("system.posix_acl_access")
            .count()
    };
    for _ in 0..3 {
        let ok = Command::new("ls")
            .arg("-lR")
            .arg(&mnt)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let n = acl_requests();
    assert!(
        n <= 3,
        "{n} ACL requests for {files} paths listed three times"
    );
    let out = Command::new("getfacl")
        .arg("-c")
        .arg(mnt.join("header.json"))
        .output();
    if let Ok(out) = out {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = ptefs().arg("umount").arg(&mnt).output().unwrap();
    assert!(out.status.success());
}
