//! The source file changing under a mount, and daemons that die: the
//! daemon never crashes, reads of bytes that are gone fail with EIO, and
//! the mount can always be unmounted.

use crate::common;
use crate::writer;

use std::path::Path;
use std::process::Command;

use common::mounted::*;
use common::*;

/// Every file under `root`: (path, whether it could be read in full).
fn read_all(root: &Path) -> Vec<(String, std::io::Result<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p)));
            }
        }
    }
    out
}

fn is_raw(path: &str) -> bool {
    // `values/<id>` are further names of tensor files; weights.safetensors
    // is the tensors' bytes after a header.
    path.ends_with(".bin")
        || path.ends_with(".npy")
        || path.contains("/values/")
        || path.ends_with("weights.safetensors")
}

/// Files rendered from the source when first read (see `tree::lazy`):
/// once the source changed, they cannot be rendered from it.
fn is_lazy(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    // Every file of `report/` is rendered when first read.
    path.starts_with("report/")
        || matches!(
            name,
            "plan.json" | "code.txt" | "memory.json" | "graph.dot" | "program.json" | "graph.json"
        )
}

fn copy(dir: &Path, model: &str) -> std::path::PathBuf {
    let p = dir.join(model);
    std::fs::copy(fixture(model), &p).unwrap();
    p
}

#[test]
fn truncated_source_gives_eio_and_the_daemon_lives() {
    if !fuse_or_skip("truncated_source_gives_eio_and_the_daemon_lives") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = copy(dir.path(), "mv2_xnnpack.pte");
    let m = Mounted::new(&[src.as_os_str()]);
    let pid = daemon_pid(&m.dir).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&src)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let mut eio = 0;
    for (path, r) in read_all(&m.dir) {
        match r {
            Ok(_) => assert!(
                !(is_raw(&path) || is_lazy(&path)) || path.ends_with("segments/000.bin"),
                "{path} read after truncation"
            ),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EIO), "{path}: {e}");
                assert!(
                    is_raw(&path) || is_lazy(&path),
                    "{path}: files rendered at build stay readable"
                );
                eio += 1;
            }
        }
    }
    assert!(eio > 100, "{eio}");
    assert!(Path::new(&format!("/proc/{pid}")).exists(), "daemon died");
    // Files rendered at build are still served.
    assert!(
        std::fs::read_to_string(m.path("header.json"))
            .unwrap()
            .contains("\"program\"")
    );
    drop(m);
}

#[test]
fn rewritten_source_gives_eio_not_other_bytes() {
    if !fuse_or_skip("rewritten_source_gives_eio_not_other_bytes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = copy(dir.path(), "mlp.pte");
    let m = Mounted::new(&[src.as_os_str()]);
    // Same size, other bytes: what `cp other.pte mlp.pte` does in place.
    let mut bytes = std::fs::read(&src).unwrap();
    for b in &mut bytes[2176..] {
        *b = !*b;
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&src, &bytes).unwrap();
    let e = std::fs::read(m.path("segments/0.bin")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    let e = std::fs::read(m.path("methods/forward/tensors/0.npy")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    // Rendered at build: still served; rendered when first read: refused
    // rather than rendered from other bytes.
    assert!(std::fs::read(m.path("methods/forward/io.json")).is_ok());
    let e = std::fs::read(m.path("methods/forward/plan.json")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
}

#[test]
fn deleted_source_keeps_serving_until_unmount() {
    if !fuse_or_skip("deleted_source_keeps_serving_until_unmount") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = copy(dir.path(), "mlp.pte");
    let want = files(&view("mlp.pte"));
    let m = Mounted::new(&[src.as_os_str()]);
    std::fs::remove_file(&src).unwrap();
    for (path, r) in read_all(&m.dir) {
        assert!(
            r.as_ref().ok() == want.get(&path),
            "{path} after the source was deleted"
        );
    }
}

#[test]
fn a_killed_daemon_leaves_a_mount_that_umount_cleans_up() {
    if !fuse_or_skip("a_killed_daemon_leaves_a_mount_that_umount_cleans_up") {
        return;
    }
    let m = Mounted::new(&[fixture("add.pte").as_os_str()]);
    let pid = daemon_pid(&m.dir).unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    wait_for("the daemon to die", || {
        !Path::new(&format!("/proc/{pid}/cmdline")).exists()
            || std::fs::read(format!("/proc/{pid}/cmdline"))
                .unwrap_or_default()
                .is_empty()
    });
    assert!(is_mounted(&m.dir), "the dead mount stays until cleaned up");
    let e = std::fs::metadata(m.path("header.json")).unwrap_err();
    assert!(
        matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)),
        "{e}"
    );
    // Mounting over it says what to do.
    let out = ptefs()
        .arg("mount")
        .arg(fixture("add.pte"))
        .arg(&m.dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("whose daemon is gone; clean it up with `ptefs umount")
    );
    let out = ptefs().arg("umount").arg(&m.dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(&m.dir));
    // And the place can be mounted again.
    let out = ptefs()
        .arg("mount")
        .arg(fixture("add.pte"))
        .arg(&m.dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn names_from_the_file_stay_inside_the_mount() {
    if !fuse_or_skip("names_from_the_file_stay_inside_the_mount") {
        return;
    }
    let (bytes, keys) = hostile_names();
    let dir = tempfile::tempdir().unwrap();
    let src = write_file(dir.path(), "names.pte", &bytes);
    let m = Mounted::new(&[src.as_os_str()]);
    let listed: Vec<String> = std::fs::read_dir(m.path("named"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(listed.len(), keys.len() + 1, "{listed:?}");
    for name in &listed {
        assert!(
            !name.contains('/')
                && !name.is_empty()
                && name != "."
                && name != ".."
                && name.len() <= 255,
            "{name:?}"
        );
        let p = m.path("named").join(name);
        assert!(
            p.canonicalize().unwrap().starts_with(&m.dir),
            "{name:?} escapes"
        );
    }
    // Each blob is reachable under its encoded name and holds its bytes.
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.path("named/index.json")).unwrap()).unwrap();
    for (i, e) in index.as_array().unwrap().iter().enumerate() {
        assert_eq!(e["key"], keys[i].as_str());
        assert_eq!(
            std::fs::read(m.path("named").join(e["name"].as_str().unwrap())).unwrap(),
            [i as u8]
        );
    }
}

/// A program whose named data keys are every kind of hostile name.
fn hostile_names() -> (Vec<u8>, Vec<String>) {
    let keys: Vec<String> = [
        "..",
        ".",
        "/",
        "../../etc/passwd",
        "a/../../b",
        "",
        "\0",
        "x\0y",
        "dup",
        "dup",
        "~",
        "%",
        &"n".repeat(400),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let p = writer::Program {
        named: keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), vec![i as u8].into()))
            .collect(),
        ..writer::Program::default()
    };
    (p.to_bytes(), keys)
}

/// `ptefs cat` of the largest file while its source is cut at `cut(offset,
/// size)`: a clear error naming the file and exit 2, never a signal.
fn cat_while_truncating(cut: impl Fn(u64, u64) -> u64) {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let src = copy(dir.path(), "mv2_xnnpack.pte");
    let v = view_of(std::slice::from_ref(&src), &[]);
    // The largest file that is one range of the source.
    let (path, ino) = v
        .tree
        .walk(ptefs::tree::ROOT)
        .filter(|(_, i)| v.content(*i).is_some() && !v.tree.xattrs(*i).is_empty())
        .max_by_key(|(_, i)| v.content(*i).unwrap().len())
        .unwrap();
    let size = v.content(ino).unwrap().len();
    assert!(size > 4 << 20, "{path}: {size}");
    let offset: u64 = v
        .tree
        .xattrs(ino)
        .into_iter()
        .find(|(k, _)| *k == "user.ptefs.offset")
        .map(|(_, x)| String::from_utf8(x).unwrap().parse().unwrap())
        .unwrap();
    drop(v);
    let mut child = ptefs()
        .arg("cat")
        .arg(&src)
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = vec![0; 64 << 10];
    stdout.read_exact(&mut first).unwrap();
    let at = cut(offset, size);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&src)
        .unwrap()
        .set_len(at)
        .unwrap();
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "cut at {at}: {:?} {err}",
        out.status
    );
    assert!(
        err.contains("mv2_xnnpack.pte") && err.contains("changed"),
        "cut at {at}: {err}"
    );
    assert!((first.len() + rest.len()) as u64 <= size);
}

#[test]
fn cat_of_a_source_truncated_inside_the_file_fails_cleanly() {
    cat_while_truncating(|offset, size| offset + size / 2);
}

#[test]
fn cat_of_a_source_truncated_where_the_file_starts_fails_cleanly() {
    cat_while_truncating(|offset, _| offset);
}

#[test]
fn cat_of_a_source_truncated_to_nothing_fails_cleanly() {
    cat_while_truncating(|_, _| 0);
}

fn unmount_and_read_log(mnt: &Path, log: &Path) -> String {
    let out = ptefs().arg("umount").arg(mnt).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(log).unwrap_or_default()
}

#[test]
fn ordinary_use_logs_nothing() {
    if !fuse_or_skip("ordinary_use_logs_nothing") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = copy(dir.path(), "mlp.pte");
    let (mnt, log) = Mounted::logged(&src, dir.path(), None);
    let read = read_all(&mnt);
    assert!(read.iter().all(|(_, r)| r.is_ok()));
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ls -lR {0} >/dev/null && cat {0}/segments/* >/dev/null",
            mnt.display()
        ))
        .status()
        .unwrap();
    assert!(out.success());
    let text = unmount_and_read_log(&mnt, &log);
    assert_eq!(
        text, "",
        "the default log has nothing to say about ordinary reads"
    );
}

#[test]
fn a_changed_source_is_logged_once() {
    if !fuse_or_skip("a_changed_source_is_logged_once") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = copy(dir.path(), "mv2_xnnpack.pte");
    let (mnt, log) = Mounted::logged(&src, dir.path(), None);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&src)
        .unwrap()
        .set_len(4096)
        .unwrap();
    // Many reads of bytes that are gone, all failing with EIO.
    let mut eio = 0;
    for _ in 0..3 {
        for (_, r) in read_all(&mnt) {
            if r.is_err() {
                eio += 1;
            }
        }
    }
    assert!(eio > 100, "{eio}");
    let text = unmount_and_read_log(&mnt, &log);
    let changed = text.lines().filter(|l| l.contains("changed size")).count();
    assert_eq!(changed, 1, "{text}");
    assert!(!text.contains("Bad address"), "{text}");
    assert!(text.lines().count() <= 2, "{text}");
}
