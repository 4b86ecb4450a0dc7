//! Progress on stderr: drawn for `inspect` and `diff` when stderr is a
//! terminal, and nothing at all otherwise.

use crate::common;
use crate::writer;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::mounted::{fuse_or_skip, which};
use common::required::skip_unless;
use common::*;
use ptefs::schema::ScalarType;
use writer::{Bytes, Data, Program, Tensor, Value};

/// A program of `n` float tensors written by the test writer; `seed`
/// changes the last one's bytes.
fn large_program(dir: &Path, name: &str, n: u64, seed: u64) -> PathBuf {
    let values = (0..n)
        .map(|i| {
            let t = Tensor::new(
                ScalarType::FLOAT,
                &[64],
                Data::Constant(Bytes::Pattern {
                    len: 256,
                    seed: if i + 1 == n { seed } else { i },
                }),
            );
            Value::Tensor(t.named(&format!("layers.{i}.weight")))
        })
        .collect();
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    Program::forward(values).write(&mut f).unwrap();
    path
}

#[test]
fn nothing_reaches_stderr_when_it_is_not_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let a = large_program(tmp.path(), "a.pte", 20_000, 20_000);
    let b = large_program(tmp.path(), "b.pte", 20_000, 7);
    let out = ptefs_run([OsStr::new("inspect"), a.as_os_str()]);
    assert_eq!(out.code, 0);
    assert!(out.out.contains("20000"));
    assert_eq!(out.err, "");
    let out = ptefs_run([OsStr::new("diff"), a.as_os_str(), b.as_os_str()]);
    assert_eq!(out.code, 1, "the last tensor differs");
    assert_eq!(out.err, "");
    // An error is the one line it always was, with nothing drawn around it.
    let bytes = std::fs::read(&a).unwrap();
    let cut = write_file(tmp.path(), "cut.pte", &bytes[..bytes.len() / 2]);
    for args in [
        vec!["inspect".as_ref(), cut.as_os_str()],
        vec!["diff".as_ref(), a.as_os_str(), cut.as_os_str()],
    ] {
        let out = ptefs_run(&args);
        assert_eq!(out.code, 2);
        let err = out.err;
        assert!(
            err.starts_with("ptefs: ") && err.contains("cut.pte"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
    }
}

/// Runs ptefs with `args` on a pseudo-terminal (`script`), returning all
/// it wrote there, stdout and stderr together; `None` without `script`.
fn on_a_terminal(args: &[&Path]) -> Option<String> {
    which("script")?;
    let mut cmd = String::from(ptefs_bin());
    for a in args {
        cmd.push(' ');
        cmd.push_str(&format!("'{}'", a.display()));
    }
    // script copies its stdin to the terminal, and at the end of stdin
    // may hang the terminal up under a command still starting: keep it
    // open until the command is done.
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let err = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    let out = std::io::read_to_string(child.stdout.take().unwrap()).unwrap_or_default();
    child.wait().unwrap();
    drop(stdin);
    let err = err.join().unwrap_or_default();
    Some(if err.is_empty() {
        out
    } else {
        format!("{out}[script's stderr: {err}]")
    })
}

#[test]
fn a_terminal_sees_the_stages() {
    let tmp = tempfile::tempdir().unwrap();
    let a = large_program(tmp.path(), "a.pte", 20_000, 20_000);
    let b = large_program(tmp.path(), "b.pte", 20_000, 7);
    let Some(out) = on_a_terminal(&[Path::new("inspect"), &a]) else {
        skip_unless("a_terminal_sees_the_stages", Some("`script` is missing"));
        return;
    };
    // The terminal draws at most 20 times a second, so a quick stage may
    // never be drawn; some stage is.
    let drawn = |out: &str, stages: &[&str]| stages.iter().any(|s| out.contains(s));
    let stages = ["a.pte: opening", "a.pte: parsing", "a.pte: summarizing"];
    assert!(drawn(&out, &stages), "none of {stages:?} in {out:?}");
    // The report itself follows, on the cleared line.
    assert!(out.contains("20000"), "{out:?}");
    let out = on_a_terminal(&[Path::new("diff"), &a, &b]).unwrap();
    let stages = [
        "b.pte: opening",
        "b.pte: parsing",
        "b.pte: building the trees",
        "b.pte: comparing",
    ];
    assert!(drawn(&out, &stages), "none of {stages:?} in {out:?}");
}

/// `ptefs mount` shows its stage on a terminal until the tree is ready,
/// and the line is gone once it returns.
#[test]
fn a_terminal_sees_a_mount_lay_out_its_tree() {
    if !fuse_or_skip("a_terminal_sees_a_mount_lay_out_its_tree") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let a = large_program(tmp.path(), "a.pte", 20_000, 1);
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let Some(out) = on_a_terminal(&[Path::new("mount"), &a, &mnt]) else {
        skip_unless(
            "a_terminal_sees_a_mount_lay_out_its_tree",
            Some("`script` is missing"),
        );
        return;
    };
    let mounted = std::fs::read_dir(&mnt).map(|d| d.count()).unwrap_or(0) > 0;
    let _ = ptefs().arg("umount").arg(&mnt).status();
    assert!(mounted, "{out:?}");
    assert!(
        out.contains("a.pte: reading its structure and laying out the tree"),
        "{out:?}"
    );
}

/// `ptefs index` shows on a terminal how many files are done of those
/// listed, and the bytes read, then its summary on the cleared line.
#[test]
fn a_terminal_sees_index_count_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    std::fs::create_dir(&dir).unwrap();
    for (i, name) in ["a.pte", "b.pte", "c.pte"].iter().enumerate() {
        large_program(&dir, name, 20_000, i as u64);
    }
    let out_dir = tmp.path().join("catalog");
    let args = [
        Path::new("index"),
        &dir,
        Path::new("-o"),
        &out_dir,
        Path::new("--jobs"),
        Path::new("1"),
    ];
    let Some(out) = on_a_terminal(&args) else {
        skip_unless(
            "a_terminal_sees_index_count_its_files",
            Some("`script` is missing"),
        );
        return;
    };
    assert!(out.contains("indexing, "), "{out:?}");
    assert!(out.contains(" MiB read, "), "{out:?}");
    assert!(out.contains("/3"), "{out:?}");
    assert!(out.contains("3 files listed, 3 indexed"), "{out:?}");
}
