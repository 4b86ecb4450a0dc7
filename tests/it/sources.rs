//! What may be a source: regular files, followed through symbolic links.
//! FIFOs, sockets and devices are refused by name, without blocking, from
//! every command; in a directory they are skipped with a note.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::required::slow_or_skip;
use common::*;

/// Runs `ptefs args`, failing the test if it does not end within 20 s.
fn ptefs_within_20s(args: &[&std::ffi::OsStr]) -> Output {
    let mut child = ptefs()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("ptefs {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success());
}

#[test]
fn a_fifo_is_refused_by_every_command() {
    if !slow_or_skip("a_fifo_is_refused_by_every_command") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("model.pte");
    mkfifo(&fifo);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mlp = fixture("mlp.pte");
    let f = fifo.as_os_str();
    let s = std::ffi::OsStr::new;
    let cases: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec![s("ls"), f],
        vec![s("cat"), f, s("header.json")],
        vec![s("stat"), f, s("header.json")],
        vec![s("inspect"), f],
        vec![s("diff"), f, mlp.as_os_str()],
        vec![s("diff"), mlp.as_os_str(), f],
        vec![s("ls"), mlp.as_os_str(), s("--data"), f],
        vec![s("mount"), f, mnt.as_os_str()],
        vec![s("mount"), mlp.as_os_str(), mnt.as_os_str(), s("--data"), f],
    ];
    for args in cases {
        let out = ptefs_within_20s(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "{}: is a FIFO, not a regular file",
                fifo.display()
            )),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_socket_is_refused() {
    if !slow_or_skip("a_socket_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("model.pte");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let out = ptefs_within_20s(&["ls".as_ref(), sock.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is a socket"), "{err}");
}

#[test]
fn a_directory_skips_what_is_no_model_and_says_so() {
    if !slow_or_skip("a_directory_skips_what_is_no_model_and_says_so") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("pipe.pte"));
    std::fs::write(dir.path().join("notes.txt"), b"not a model at all").unwrap();
    std::os::unix::fs::symlink(fixture("mlp.pte"), dir.path().join("linked.pte")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let out = ptefs_within_20s(&["ls".as_ref(), dir.path().as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // A symbolic link to a model is a model, shown in a directory of its own.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "linked.pte/\n");
    for (name, why) in [
        ("pipe.pte", "is a FIFO"),
        ("notes.txt", "not an ExecuTorch file"),
        (
            "sub",
            "is a subdirectory (mount --subdirs descends into them)",
        ),
    ] {
        let line = format!(
            "ptefs: note: skipped {}: {why}",
            dir.path().join(name).display()
        );
        assert!(err.contains(&line), "{line:?} not in {err}");
    }
}

#[test]
fn a_directory_with_one_model_shows_it_in_its_own_directory() {
    if !slow_or_skip("a_directory_with_one_model_shows_it_in_its_own_directory") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("add.pte"), dir.path().join("add.pte")).unwrap();
    let v = view_of(&[dir.path().to_owned()], &[]);
    assert_eq!(ls(&v, ""), ["add.pte"]);
    assert!(ls(&v, "add.pte").contains(&"header.json".to_owned()));
}
