//! Sources truncated while ptefs parses, renders or decodes them: a
//! program's `plan.json`, `code.txt` and report files, a delegate's
//! `graph.json`, a profile's files. Whenever the cut falls, a command ends
//! with exit status 2 and a message naming the file (or 0, having finished
//! first), a reader of the mount gets an error, and the daemon lives on:
//! no signal ends either.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::mounted::{Mounted, daemon_pid, fuse_or_skip};
use crate::common::{finish_etdump, ptefs, read, view_of, write_file};
use crate::writer::xnnpack::{Graph, Node, Value as XValue};
use crate::writer::{Bytes, Data, Program, Tensor, Value};
use ptefs::schema::ScalarType;

/// A program of `n` small tensors: its `plan.json` runs to megabytes.
fn many_values(n: u64) -> Vec<u8> {
    let values = (0..n)
        .map(|i| {
            let t = Tensor::new(
                ScalarType::FLOAT,
                &[16],
                Data::Constant(Bytes::Pattern { len: 64, seed: i }),
            );
            Value::Tensor(t.named(&format!("layers.{i}.weight")))
        })
        .collect();
    Program::forward(values).to_bytes()
}

/// A program whose XNNPACK delegate chains `n` additions: its
/// `graph.json` and `code.txt` are decoded from the payload when read.
fn many_nodes(n: u32) -> Vec<u8> {
    const FP32: i16 = 1;
    let g = Graph {
        nodes: (0..n)
            .map(|i| {
                let add = Node::Add {
                    a: i,
                    b: i,
                    output: i + 1,
                };
                (add, None)
            })
            .collect(),
        values: (0..=n).map(|i| XValue::new(i, FP32, &[1, 4], 0)).collect(),
        inputs: vec![0],
        outputs: vec![n],
        ..Graph::default()
    };
    crate::writer::payloads::one_delegate(
        "XnnpackBackend",
        g.payload(true, &[]),
        Vec::new(),
        Vec::new(),
    )
}

/// An ETDump of one run of `n` profiled operator calls.
fn many_events(n: i32) -> Vec<u8> {
    use ptefs::schema::etdump as fb;
    let mut b = flatbuffers::FlatBufferBuilder::new();
    let name = b.create_string("native_call_add.out");
    let events: Vec<_> = (0..n)
        .map(|i| {
            let p = fb::ProfileEvent::create(
                &mut b,
                &fb::ProfileEventArgs {
                    name: Some(name),
                    chain_index: 0,
                    instruction_id: i,
                    start_time: u64::from(i.unsigned_abs()) * 10,
                    end_time: u64::from(i.unsigned_abs()) * 10 + 7,
                    ..Default::default()
                },
            );
            fb::Event::create(
                &mut b,
                &fb::EventArgs {
                    profile_event: Some(p),
                    ..Default::default()
                },
            )
        })
        .collect();
    finish_etdump(b, &events)
}

/// What each input is, and the files of its tree that take long to make.
fn cases() -> Vec<(&'static str, Vec<u8>, Vec<&'static str>)> {
    vec![
        (
            "values.pte",
            many_values(10_000),
            vec![
                "methods/forward/plan.json",
                "methods/forward/code.txt",
                "report/stats.tsv",
            ],
        ),
        (
            "nodes.pte",
            many_nodes(10_000),
            vec![
                "methods/forward/delegates/0-XnnpackBackend/xnnpack/graph.json",
                "methods/forward/delegates/0-XnnpackBackend/xnnpack/code.txt",
            ],
        ),
        ("events.etdp", many_events(50_000), vec!["trace.json"]),
    ]
}

/// Runs `cmd` and cuts `file` to half its size `after` it starts.
fn cut_while_running(mut cmd: Command, file: &Path, after: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let len = std::fs::metadata(file).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    child.wait_with_output().unwrap()
}

/// How long `cmd` takes on an intact file, to spread the cuts over.
fn duration(mut cmd: Command) -> Duration {
    let start = Instant::now();
    let out = cmd.stdout(Stdio::null()).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    start.elapsed()
}

/// Cuts along the run of a command that takes `whole`.
fn delays(whole: Duration) -> impl Iterator<Item = Duration> {
    [0.2, 0.5, 0.8].into_iter().map(move |f| whole.mul_f64(f))
}

/// A fresh copy of `bytes` named `name` in `dir`.
fn fresh(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let _ = std::fs::remove_file(dir.join(name));
    write_file(dir, name, bytes)
}

#[test]
fn commands_end_with_an_error_whenever_the_cut_falls() {
    let dir = tempfile::tempdir().unwrap();
    let mut cut_short = 0;
    for (name, bytes, paths) in cases() {
        let commands: Vec<Vec<&str>> = paths
            .iter()
            .map(|p| vec!["cat", p])
            .chain([vec!["ls", "-lR"], vec!["report", "--json"]])
            .collect();
        for args in commands {
            let command = |file: &Path| {
                let mut cmd = ptefs();
                cmd.arg(args[0]).arg(file).args(&args[1..]);
                cmd
            };
            let whole = duration(command(&fresh(dir.path(), name, &bytes)));
            for after in delays(whole) {
                let file = fresh(dir.path(), name, &bytes);
                let out = cut_while_running(command(&file), &file, after);
                let err = String::from_utf8_lossy(&out.stderr);
                let what = format!("ptefs {args:?} on {name}, cut after {after:?} of {whole:?}");
                assert_eq!(out.status.signal(), None, "{what}: killed; {err}");
                match out.status.code() {
                    Some(0) => {}
                    Some(2) => {
                        assert!(
                            err.contains(name)
                                && (err.contains("since it was opened") || err.contains("changed")),
                            "{what}: {err}"
                        );
                        cut_short += 1;
                    }
                    code => panic!("{what}: exit {code:?}; {err}"),
                }
            }
        }
    }
    assert!(cut_short > 0, "no cut fell while a command ran");
}

#[test]
fn a_mount_answers_errors_and_lives_whenever_the_cut_falls() {
    if !fuse_or_skip("a_mount_answers_errors_and_lives_whenever_the_cut_falls") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes, paths) in cases() {
        for path in paths {
            let whole = {
                let m = Mounted::new(&[fresh(dir.path(), name, &bytes).as_os_str()]);
                let mut cat = Command::new("cat");
                cat.arg(m.path(path));
                duration(cat)
            };
            for after in delays(whole) {
                let file = fresh(dir.path(), name, &bytes);
                let m = Mounted::new(&[file.as_os_str()]);
                let pid = daemon_pid(&m.dir).expect("the daemon's pid");
                let mut cat = Command::new("cat");
                cat.arg(m.path(path));
                let out = cut_while_running(cat, &file, after);
                let what = format!("cat of {name}/{path}, cut after {after:?} of {whole:?}");
                assert_eq!(out.status.signal(), None, "{what}");
                if !out.status.success() {
                    let err = String::from_utf8_lossy(&out.stderr);
                    assert!(err.contains("Input/output error"), "{what}: {err}");
                }
                // The daemon lives and still answers what it holds.
                assert!(
                    Path::new(&format!("/proc/{pid}")).exists(),
                    "{what}: the daemon died"
                );
                std::fs::read(m.path("README.txt"))
                    .unwrap_or_else(|e| panic!("{what}: the mount no longer answers: {e}"));
            }
        }
    }
}

/// In this process, with no check before it: a file rendered over a
/// source cut beneath it reads zeros where pages vanished, and the source
/// then counts as changed.
#[test]
fn a_render_over_vanished_pages_returns_and_marks_the_source_changed() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "values.pte", &many_values(5_000));
    let v = view_of(std::slice::from_ref(&file), &[]);
    assert!(!read(&v, "methods/forward/code.txt").is_empty());
    assert!(v.check_unchanged().is_ok());
    let len = std::fs::metadata(&file).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(4096).unwrap();
    let path = "methods/forward/plan.json";
    let (_, at) = v
        .tree
        .walk(ptefs::tree::ROOT)
        .find(|(p, _)| p == path)
        .unwrap();
    let content = v.content(at).unwrap();
    let _ = content.read(0, 1 << 20);
    f.set_len(len).unwrap();
    assert!(
        v.check_unchanged().is_err(),
        "a source read over vanished pages is changed"
    );
}
