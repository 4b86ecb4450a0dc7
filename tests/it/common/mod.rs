//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod docs;
pub mod fetched;
pub mod flatc;
pub mod in_memory;
pub mod mounted;
pub mod packages;
pub mod required;
pub mod servers;
pub mod xnnpack;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

use ptefs::tree::{Ino, ROOT};
use ptefs::view::{Request, View};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Every model in `tests/fixtures`.
pub fn models() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(fixture(""))
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            (n.ends_with(".pte") || n.ends_with(".ptd") || n.ends_with(".bpte")).then_some(n)
        })
        .collect();
    v.sort();
    v
}

/// A view of `files` with `data` attached.
pub fn view_of(files: &[PathBuf], data: &[PathBuf]) -> View {
    View::open(&Request {
        inputs: files.to_vec(),
        data: data.to_vec(),
        recursive: false,
        names: None,
        // As the command line and mount do by default.
        auto_data: true,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A view of one fixture.
pub fn view(name: &str) -> View {
    view_of(&[fixture(name)], &[])
}

/// The bytes of the file at `path`.
pub fn read(v: &View, path: &str) -> Vec<u8> {
    let ino = v
        .tree
        .resolve(path)
        .unwrap_or_else(|| panic!("no {path} in the tree"));
    read_ino(v, ino)
}

/// The bytes of file `ino`, assembled from the tree's description of its
/// content (independently of the filesystem core, whose answers tests
/// compare with this).
pub fn read_ino(v: &View, ino: Ino) -> Vec<u8> {
    let len = v.content(ino).expect("a file").len();
    let out = read_range(v, ino, 0, len);
    assert_eq!(out.len() as u64, len);
    out
}

/// `size` bytes of file `ino` from `offset`, like [`read_ino`]: piece
/// after piece, as an assembled file (`weights.safetensors`) gives one of
/// its parts at a time.
pub fn read_range(v: &View, ino: Ino, offset: u64, size: u64) -> Vec<u8> {
    let content = v.content(ino).expect("a file");
    let mut out = Vec::new();
    loop {
        let at = offset + out.len() as u64;
        let piece = content.read(at, size - out.len() as u64);
        if piece.is_empty() {
            return out;
        }
        let mut tail = Vec::new();
        if let Some((id, span)) = piece.tail {
            let source = &v.sources[id];
            match source.mapped(span) {
                Some(bytes) => tail.extend_from_slice(bytes),
                None => source.read_span(span, &mut tail).unwrap(),
            }
        }
        piece.assemble(&tail, &mut out);
    }
}

/// The JSON file at `path`.
pub fn json(v: &View, path: &str) -> Value {
    serde_json::from_slice(&read(v, path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every file of the tree: path → bytes.
pub fn files(v: &View) -> BTreeMap<String, Vec<u8>> {
    v.tree
        .walk(ROOT)
        .filter(|&(_, i)| v.tree.file(i).is_some())
        .map(|(path, i)| (path, read_ino(v, i)))
        .collect()
}

/// The bytes of a `.npy` after its header.
pub fn npy_payload(npy: &[u8]) -> &[u8] {
    assert_eq!(&npy[..6], b"\x93NUMPY");
    let header = match npy[6] {
        1 => 10 + u16::from_le_bytes([npy[8], npy[9]]) as usize,
        _ => 12 + u32::from_le_bytes([npy[8], npy[9], npy[10], npy[11]]) as usize,
    };
    &npy[header..]
}

/// Lower-case hex SHA-256.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Removes every `ptefs_path` key, to compare with flatc's output.
pub fn strip_ptefs_paths(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("ptefs_path");
            m.values_mut().for_each(strip_ptefs_paths);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_ptefs_paths),
        _ => {}
    }
}

/// The path of the `ptefs` binary.
pub fn ptefs_bin() -> &'static str {
    env!("CARGO_BIN_EXE_ptefs")
}

/// A command running the built `ptefs` binary, to be given its arguments.
pub fn ptefs() -> Command {
    Command::new(ptefs_bin())
}

/// How a finished `ptefs` run ended: its exit code and what it printed.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub out: String,
    pub err: String,
}

/// Runs `ptefs args` to its end, whatever its exit code. Panics naming the
/// command when it does not start, dies by a signal or prints anything but
/// UTF-8 on stdout.
pub fn ptefs_run<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (shown, out) = output(args);
    Run {
        code: out
            .status
            .code()
            .unwrap_or_else(|| panic!("`{shown}` ended by {}", out.status)),
        out: String::from_utf8(out.stdout)
            .unwrap_or_else(|e| panic!("`{shown}` printed no UTF-8: {e}")),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `ptefs args` as a shell would show it, and what running it gave.
fn output<I, S>(args: I) -> (String, std::process::Output)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let shown = std::iter::once("ptefs".into())
        .chain(args.iter().map(|a| a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ");
    let out = ptefs()
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("`{shown}` did not start: {e}"));
    (shown, out)
}

/// What `ptefs args` prints. Panics naming the command, with its exit
/// status and stderr, when it fails.
pub fn ptefs_stdout<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (shown, out) = output(args);
    assert!(
        out.status.success(),
        "`{shown}` failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("`{shown}` printed no UTF-8: {e}"))
}

/// What `ptefs args` prints, parsed as JSON. Panics naming the command,
/// with its exit status and stderr, when it fails or prints anything but
/// one JSON value.
pub fn ptefs_json<I, S>(args: I) -> Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (shown, out) = output(args);
    assert!(
        out.status.success(),
        "`{shown}` failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`{shown}` printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Writes `bytes` as `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A view of `bytes` written to a temporary file named `name`.
pub fn view_bytes(name: &str, bytes: &[u8]) -> (tempfile::TempDir, View) {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), name, bytes);
    let v = view_of(&[p], &[]);
    (dir, v)
}

/// Every entry name of directory `path`.
pub fn ls(v: &View, path: &str) -> Vec<String> {
    let ino = v.tree.resolve(path).unwrap_or_else(|| panic!("no {path}"));
    let entries = v
        .tree
        .entries(ino)
        .unwrap_or_else(|| panic!("{path} is a file"));
    entries.map(|e| e.name.to_string()).collect()
}

/// Writes every file of the tree under `dir`, as a mount would show it.
pub fn extract(v: &View, dir: &Path) {
    for (path, bytes) in files(v) {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// Runs a Python script with `args`; panics with its output on failure.
pub fn python(script: &str, args: &[&Path]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 is needed for the NumPy tests");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "python failed:\n{text}");
    text
}

/// Checks every tensor of every `tensors/index.json` under `root` with
/// NumPy: the `.npy` loads (plainly and memory-mapped) to the `.bin`'s
/// values with the dtype and shape index.json gives. Prints one line per
/// tensor checked.
pub const NUMPY_CHECK: &str = r#"
import json, pathlib, sys
import numpy as np
root = pathlib.Path(sys.argv[1])
n = 0
for index in sorted(root.rglob("index.json")):
    if index.parent.name != "tensors" and "testsets" not in index.parts:
        continue
    for e in json.loads(index.read_text()):
        if not e.get("npy"):
            continue
        d = index.parent
        want = np.frombuffer((d / e["name"]).read_bytes(), dtype=np.dtype(e["numpy_dtype"])).reshape(e["npy_shape"])
        for mode in (None, "r"):
            got = np.load(d / e["npy"], mmap_mode=mode)
            assert got.dtype == np.dtype(e["numpy_dtype"]), (e, got.dtype)
            assert list(got.shape) == e["npy_shape"], (e, got.shape)
            assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), e
            if mode == "r":
                assert isinstance(got, np.memmap)
        n += 1
        print("ok", d / e["npy"], got.dtype, got.shape)
print("checked", n)
"#;

/// A `kB` field of `/proc/<pid>/status` (`pid` may be `self`); 0 if absent.
pub fn status_kb(pid: &str, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// The name the test harness knows test `name` of module `module` by
/// (`module_path!()` there), for running it alone in a child process:
/// the path without this binary's crate name.
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_owned(),
    }
}

/// `dot -Tsvg` of the graph `dot` (graphviz, which scripts/setup.sh
/// installs): the SVG; a failure names `what` with dot's complaint, as any
/// warning counts as one.
pub fn dot_svg(what: &str, dot: &[u8]) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("graphviz's dot is installed by scripts/setup.sh");
    child.stdin.take().unwrap().write_all(dot).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{what}: dot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Damaged copies of `good`: every truncation, then every byte flipped by
/// 0xff, 0x80 and 0x01 in turn.
pub fn damaged(good: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    let cuts = (0..good.len()).map(|n| good[..n].to_vec());
    let flips = (0..good.len()).flat_map(move |at| {
        [0xffu8, 0x80, 0x01].into_iter().map(move |flip| {
            let mut p = good.to_vec();
            p[at] ^= flip;
            p
        })
    });
    cuts.chain(flips)
}

/// Asserts that every file of `tree` reads within `bytes`, its source.
pub fn reads_within(tree: &ptefs::tree::Tree, bytes: &[u8]) {
    for (path, ino) in tree.walk(ROOT) {
        if let Some(f) = tree.file(ino)
            && let Some((_, span)) = f.content.read(0, f.content.len()).tail
        {
            assert!(
                span.end() <= bytes.len() as u64,
                "{path} reads past the file"
            );
        }
    }
}

/// The bytes of an ETDump whose one run, `Execute`, holds `events` (made
/// in `b`): size-prefixed, with identifier `ED00`, as the runtime writes.
pub fn finish_etdump<'b>(
    mut b: flatbuffers::FlatBufferBuilder<'b>,
    events: &[flatbuffers::WIPOffset<ptefs::schema::etdump::Event<'b>>],
) -> Vec<u8> {
    use ptefs::schema::etdump as fb;
    let events = b.create_vector(events);
    let run_name = b.create_string("Execute");
    let run = fb::RunData::create(
        &mut b,
        &fb::RunDataArgs {
            name: Some(run_name),
            events: Some(events),
            ..Default::default()
        },
    );
    let runs = b.create_vector(&[run]);
    let root = fb::ETDump::create(
        &mut b,
        &fb::ETDumpArgs {
            version: 0,
            run_data: Some(runs),
        },
    );
    b.finish_size_prefixed(root, Some("ED00"));
    b.finished_data().to_vec()
}
