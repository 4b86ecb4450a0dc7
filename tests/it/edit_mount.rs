//! `ptefs mount --writable`: real mounts. A weight overwritten through the
//! mount reads back through every name of its bytes, `ptefs edits` lists
//! it, and `ptefs commit` (or `--commit` at unmount) writes the very file
//! ExecuTorch wrote with that weight; everything else that would write is
//! refused with its errno and a log line; the sources stay untouched.

use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::mounted::*;
use crate::common::*;

fn edit_fixture(name: &str) -> PathBuf {
    fixture("edit").join(name)
}

fn oracle(name: &str) -> Value {
    let text = std::fs::read_to_string(edit_fixture(&format!("{name}.oracle.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A copy of fixture `name` in `dir`, to mount (and to check untouched).
fn copy(name: &str, dir: &Path) -> PathBuf {
    let p = dir.join(name);
    std::fs::copy(edit_fixture(name), &p).unwrap();
    p
}

fn errno_of<T>(r: std::io::Result<T>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

/// The tensor file under `dir` of the mount whose stored bytes have
/// sha256 `sha` (its `.npy`).
fn npy_with_digest(m: &Mounted, dir: &str, sha: &str) -> PathBuf {
    let mut names: Vec<String> = std::fs::read_dir(m.path(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".npy"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| m.path(&format!("{dir}/{n}")))
        .find(|p| sha256(npy_payload(&std::fs::read(p).unwrap())) == sha)
        .unwrap_or_else(|| panic!("no tensor under {dir} holds {sha}"))
}

#[test]
fn weights_copied_into_the_mount_commit_to_executorchs_own_file() {
    if !fuse_or_skip("weights_copied_into_the_mount_commit_to_executorchs_own_file") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("portable.pte", tmp.path());
    let o = oracle("portable");
    let m = Mounted::new(&["--writable".as_ref(), pte.as_os_str()]);
    let dir = "methods/forward/tensors";
    let mut edited = Vec::new();
    for e in o["edited"].as_object().unwrap().values() {
        let path = npy_with_digest(&m, dir, e["original_sha256"].as_str().unwrap());
        let npy = edit_fixture(e["npy"].as_str().unwrap());
        // As a user would: cp over the served .npy.
        let st = Command::new("cp").arg(&npy).arg(&path).status().unwrap();
        assert!(st.success(), "cp {} {}", npy.display(), path.display());
        edited.push((path, std::fs::read(&npy).unwrap()));
    }
    for (path, npy) in &edited {
        assert_eq!(&std::fs::read(path).unwrap(), npy, "{}", path.display());
        // Every other name of the same stored bytes reads them too.
        let bin = path.with_extension("bin");
        assert_eq!(std::fs::read(&bin).unwrap(), npy_payload(npy));
    }
    let stem = edited[0]
        .0
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let alias = std::fs::read_dir(m.path(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(&format!("{stem}.")) && n.ends_with(".bin")
        })
        .unwrap();
    assert_eq!(std::fs::read(&alias).unwrap(), npy_payload(&edited[0].1));
    // The edits, as the daemon lists them.
    let rows = ptefs_json([OsStr::new("edits"), OsStr::new("--json"), m.dir.as_os_str()]);
    let mut got: Vec<(String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["old_sha256"].as_str().unwrap().into(),
                r["new_sha256"].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut want: Vec<(String, String)> = o["edited"]
        .as_object()
        .unwrap()
        .values()
        .map(|e| {
            let npy = std::fs::read(edit_fixture(e["npy"].as_str().unwrap())).unwrap();
            (
                e["original_sha256"].as_str().unwrap().into(),
                sha256(npy_payload(&npy)),
            )
        })
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let saved = tmp.path().join("saved.pte");
    let out = ptefs()
        .arg("commit")
        .arg(&m.dir)
        .arg("-o")
        .arg(&saved)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        sha256(&std::fs::read(&saved).unwrap()),
        o["edited_sha256"].as_str().unwrap()
    );
    assert_eq!(
        sha256(&std::fs::read(&pte).unwrap()),
        o["original_sha256"].as_str().unwrap(),
        "the source is untouched"
    );
}

#[test]
fn a_delegates_weights_in_a_data_file_commit_to_a_new_data_file_at_unmount() {
    if !fuse_or_skip("a_delegates_weights_in_a_data_file_commit_to_a_new_data_file_at_unmount") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("xnnpack.pte", tmp.path());
    let ptd = copy("xnnpack.ptd", tmp.path());
    let o = oracle("xnnpack");
    let saved = tmp.path().join("saved.ptd");
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    // The journal in a directory of the test's own.
    let m = Mounted::new(&[
        "--writable".as_ref(),
        "--work-dir".as_ref(),
        work.as_os_str(),
        "--commit".as_ref(),
        saved.as_os_str(),
        pte.as_os_str(),
    ]);
    let weights = "methods/forward/delegates/0-XnnpackBackend/xnnpack/weights";
    for e in o["edited"].as_object().unwrap().values() {
        let path = npy_with_digest(&m, weights, e["original_sha256"].as_str().unwrap());
        let npy = std::fs::read(edit_fixture(e["npy"].as_str().unwrap())).unwrap();
        // As numpy.save does: open for writing with O_TRUNC, then write.
        let mut f = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.write_all(&npy).unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), npy);
        // named/<key>.bin is the same stored bytes.
        let key = e["original_sha256"].as_str().unwrap();
        assert_eq!(
            std::fs::read(m.path(&format!("named/{key}.bin"))).unwrap(),
            npy_payload(&npy)
        );
    }
    let dir = m.dir.clone();
    drop(m);
    wait_for("the save at unmount", || {
        saved.exists() && !is_mounted(&dir)
    });
    // With the keys renamed as the exporter renamed them, ExecuTorch's file.
    let mut b = std::fs::read(&saved).unwrap();
    for e in o["edited"].as_object().unwrap().values() {
        let (old, new) = (
            e["original_sha256"].as_str().unwrap().as_bytes(),
            e["edited_sha256"].as_str().unwrap().as_bytes(),
        );
        let at = b.windows(old.len()).position(|w| w == old).unwrap();
        b[at..at + old.len()].copy_from_slice(new);
    }
    assert_eq!(sha256(&b), o["edited_ptd_sha256"].as_str().unwrap());
    assert_eq!(
        sha256(&std::fs::read(&ptd).unwrap()),
        o["original_ptd_sha256"].as_str().unwrap()
    );
}

#[test]
fn what_would_write_anything_else_is_refused_with_its_errno_and_a_log_line() {
    if !fuse_or_skip("what_would_write_anything_else_is_refused_with_its_errno_and_a_log_line") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("portable.pte", tmp.path());
    let log = tmp.path().join("log");
    let m = Mounted::new(&[
        "--writable".as_ref(),
        "--log-file".as_ref(),
        log.as_os_str(),
        pte.as_os_str(),
    ]);
    let t = |n: &str| m.path(&format!("methods/forward/tensors/{n}"));
    let open_rw = |p: &Path| OpenOptions::new().read(true).write(true).open(p);
    assert_eq!(
        errno_of(std::fs::write(m.path("new.bin"), b"x")),
        Some(libc::EPERM)
    );
    assert_eq!(
        errno_of(std::fs::remove_file(m.path("README.txt"))),
        Some(libc::EPERM)
    );
    assert_eq!(
        errno_of(std::fs::rename(t("0.bin"), t("9.bin"))),
        Some(libc::EPERM)
    );
    assert_eq!(
        errno_of(std::fs::create_dir(m.path("d"))),
        Some(libc::EPERM)
    );
    assert_eq!(
        errno_of(open_rw(&m.path("methods/forward/code.txt"))),
        Some(libc::EROFS)
    );
    assert_eq!(
        errno_of(open_rw(&m.path("segments/0.bin"))),
        Some(libc::EROFS)
    );
    let f = open_rw(&t("0.bin")).unwrap();
    assert_eq!(errno_of(f.set_len(10)), Some(libc::EINVAL));
    let size = f.metadata().unwrap().len();
    assert_eq!(
        errno_of(f.write_all_at(b"abcd", size - 2)),
        Some(libc::EFBIG)
    );
    let npy = open_rw(&t("0.npy")).unwrap();
    assert_eq!(errno_of(npy.write_all_at(b"X", 1)), Some(libc::EINVAL));
    let perm = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    assert_eq!(
        errno_of(std::fs::set_permissions(t("0.bin"), perm)),
        Some(libc::EPERM)
    );
    // An in-bounds overwrite of the header with its own bytes is fine.
    let mut head = [0u8; 16];
    npy.read_exact_at(&mut head, 0).unwrap();
    npy.write_all_at(&head, 0).unwrap();
    drop((f, npy));
    let text = std::fs::read_to_string(&log).unwrap();
    for says in [
        "refused: create \"new.bin\"",
        "refused: remove \"README.txt\"",
        "refused: rename \"0.bin\"",
        "refused: mkdir \"d\"",
        "refused: methods/forward/code.txt: is rendered",
        "refused: segments/0.bin: holds stored bytes that are not one tensor",
        "cannot become 10",
        "goes past its end",
        "changes its .npy header",
        "not its mode, owner or times",
    ] {
        assert!(
            text.contains(says),
            "the log does not say {says:?}:\n{text}"
        );
    }
    // Nothing was changed, so nothing is listed.
    let out = ptefs().arg("edits").arg(&m.dir).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
}

#[test]
fn readers_see_a_write_whole_or_not_at_all_and_a_killed_daemon_leaves_the_source() {
    if !fuse_or_skip(
        "readers_see_a_write_whole_or_not_at_all_and_a_killed_daemon_leaves_the_source",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("portable.pte", tmp.path());
    let before = std::fs::read(&pte).unwrap();
    // The journal the killed daemon leaves goes with the test's directory.
    let work = tmp.path().join("work");
    let m = Mounted::new(&[
        "--writable".as_ref(),
        "--work-dir".as_ref(),
        work.as_os_str(),
        "--threads".as_ref(),
        "4".as_ref(),
        pte.as_os_str(),
    ]);
    let bin = m.path("methods/forward/tensors/0.bin");
    let len = std::fs::metadata(&bin).unwrap().len() as usize;
    // One fill first: the stored weights are no one byte repeated.
    std::fs::write(&bin, vec![0x55; len]).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let f = OpenOptions::new().write(true).open(&bin).unwrap();
            for i in 0..400u32 {
                let fill = if i % 2 == 0 { 0xAA } else { 0x55 };
                f.write_all_at(&vec![fill; len], 0).unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let f = std::fs::File::open(&bin).unwrap();
                    let mut buf = vec![0u8; len];
                    let mut seen = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        f.read_exact_at(&mut buf, 0).unwrap();
                        let first = buf[0];
                        assert!(buf.iter().all(|&b| b == first), "a read mixed two writes");
                        seen += 1;
                    }
                    seen
                })
            })
            .collect();
        writer.join().unwrap();
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    });
    let pid = daemon_pid(&m.dir).expect("the daemon runs");
    // SAFETY: kill with a pid found in /proc; SIGKILL ends it at once.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    wait_for("the daemon to die", || daemon_pid(&m.dir).is_none());
    let _ = Command::new("umount").arg("-l").arg(&m.dir).status();
    assert_eq!(
        std::fs::read(&pte).unwrap(),
        before,
        "the source is untouched"
    );
}

#[test]
fn an_unprivileged_owner_edits_and_commits() {
    use std::os::unix::fs::PermissionsExt;
    if !root_fuse_or_skip("an_unprivileged_owner_edits_and_commits") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    // The binary and inputs where nobody can reach them.
    let bin = dir.join("ptefs");
    std::fs::copy(ptefs_bin(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    // nobody owns the source, and so the mount's files.
    for f in ["portable.pte", "portable.fc1.weight.npy"] {
        std::os::unix::fs::chown(copy(f, dir), Some(65534), None).unwrap();
    }
    let dev = std::fs::metadata("/dev/fuse").unwrap().permissions().mode();
    if dev & 0o006 != 0o006 {
        std::fs::set_permissions("/dev/fuse", std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    let o = oracle("portable");
    let sha = o["edited"]["fc1.weight"]["original_sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    let script = format!(
        "set -e; cd {d}; mkdir mnt; XDG_STATE_HOME={d}/state ./ptefs mount --writable portable.pte mnt; \
         for f in mnt/methods/forward/tensors/*.npy; do \
           if [ \"$(tail -c +129 $f | sha256sum | cut -c1-64)\" = {sha} ]; then cp portable.fc1.weight.npy $f; fi; \
         done; \
         ./ptefs edits mnt | wc -l; ./ptefs commit mnt -o out.pte; ./ptefs umount mnt",
        d = dir.display()
    );
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("1\n"));
    let saved = std::fs::read(dir.join("out.pte")).unwrap();
    let v = view_of(&[dir.join("out.pte")], &[]);
    let edited = std::fs::read(edit_fixture("portable.fc1.weight.npy")).unwrap();
    assert!(
        (0..4)
            .any(|i| read(&v, &format!("methods/forward/tensors/{i}.bin")) == npy_payload(&edited)),
        "the committed file holds the new weight"
    );
    assert_eq!(
        saved.len(),
        std::fs::metadata(edit_fixture("portable.pte"))
            .unwrap()
            .len() as usize
    );
}
