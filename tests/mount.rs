//! Real mounts: what the kernel shows through ptefs equals the offline
//! tree, byte for byte, under the tools users run.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::mounted::*;
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
    use ptefs::tree::{NodeKind, ROOT};
    v.tree
        .walk(ROOT)
        .into_iter()
        .skip(1)
        .map(|(path, i)| {
            let bytes = match v.tree.node(i).unwrap().kind {
                NodeKind::File(_) => Some(read_ino(v, i)),
                NodeKind::Dir(_) => None,
            };
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
        assert_eq!(meta.uid(), unsafe { libc::getuid() });
        assert_eq!(meta.gid(), unsafe { libc::getgid() });
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
    assert_eq!((a.nlink(), b.nlink()), (2, 2));
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
    assert_eq!(found, ["constants/1.bin", "methods/forward/tensors/0.bin"]);
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
    let out = Command::new(ptefs_bin())
        .arg("umount")
        .arg(&m.dir)
        .output()
        .unwrap();
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
    let mut child = Command::new(ptefs_bin())
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
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(!is_mounted(tmp.path()));

    // SIGINT to a detached daemon.
    let m = Mounted::new(&[fixture("add.pte").as_os_str()]);
    let pid = daemon_pid(&m.dir).unwrap();
    unsafe { libc::kill(pid, libc::SIGINT) };
    wait_for("unmount on SIGINT", || !is_mounted(&m.dir));
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

fn ptefs_fails(args: &[&OsStr], says: &str) {
    let out = Command::new(ptefs_bin()).args(args).output().unwrap();
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
            fixture("../bad_input.rs").as_os_str(),
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
        report_skip(
            "an_unprivileged_user_mounts_and_unmounts",
            "not root, cannot create a user",
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
        "owned by the mounting user: {text}"
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
    let out = Command::new(ptefs_bin())
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
    let out = Command::new(ptefs_bin())
        .arg("umount")
        .arg(&mnt)
        .output()
        .unwrap();
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
