//! Data files found by themselves for the named data of delegates: an
//! XNNPACK program whose weights live in a `.ptd` under any name gets its
//! weights from it on a mount, in `ls`, `inspect` and `diff`, with one
//! note saying what it supplies; `--no-auto-data` turns it off.

use crate::common;
use crate::writer;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::mounted::{Mounted, fuse_or_skip};
use common::*;
use ptefs::view::{Request, View};
use serde_json::Value;

const WEIGHTS: &str = "methods/forward/delegates/0-XnnpackBackend/xnnpack/weights";

/// The oracle's records of `xnnpack_external.pte`'s constant values.
fn oracle_values() -> Vec<Value> {
    let text =
        std::fs::read_to_string(fixture("xnnpack_external.pte.xnnpack.oracle.jsonl")).unwrap();
    let values: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["value"].is_u64())
        .collect();
    assert_eq!(values.len(), 4);
    values
}

/// A copy of `xnnpack_external.pte` in `dir`, with its `.ptd` beside it
/// as `ptd_name`; the program's path.
fn program_with_data_as(dir: &Path, ptd_name: &str) -> PathBuf {
    std::fs::copy(fixture("xnnpack_external.ptd"), dir.join(ptd_name)).unwrap();
    let pte = dir.join("xnnpack_external.pte");
    std::fs::copy(fixture("xnnpack_external.pte"), &pte).unwrap();
    pte
}

fn open(input: &Path, auto_data: bool) -> View {
    View::open(&Request {
        inputs: vec![input.to_owned()],
        auto_data,
        ..Request::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// `ptefs args files`.
fn ptefs_on(args: &[&str], files: &[&Path]) -> Output {
    ptefs().args(args).args(files).output().unwrap()
}

/// Every oracle value's file under `weights/` (read by `read`) has the
/// oracle's bytes, and index.json places it in `ptd` at the oracle's
/// offset.
fn check_weights(index: &Value, ptd: &str, read: impl Fn(&str) -> Vec<u8>) {
    let by_id: HashMap<u64, &Value> = index
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["value_id"].as_u64().unwrap(), e))
        .collect();
    for rec in oracle_values() {
        let e = by_id[&rec["value"].as_u64().unwrap()];
        assert_eq!(e["key"], rec["named_key"], "{e}");
        assert_eq!(e["source"]["file"], ptd, "{e}");
        assert_eq!(e["source"]["offset"], rec["source"]["offset"], "{e}");
        let bin = read(e["name"].as_str().unwrap_or_else(|| panic!("no file: {e}")));
        assert_eq!(bin.len() as u64, rec["nbytes"].as_u64().unwrap());
        assert_eq!(sha256(&bin), rec["sha256"].as_str().unwrap(), "{e}");
    }
}

#[test]
fn a_delegates_weights_are_found_in_a_ptd_of_any_name() {
    let dir = tempfile::tempdir().unwrap();
    let pte = program_with_data_as(dir.path(), "anything.ptd");
    write_file(dir.path(), "notes.txt", b"not a model");
    let v = open(&pte, true);
    assert_eq!(v.notes.len(), 1, "{:?}", v.notes);
    let want = "xnnpack_external.pte: attached anything.ptd (found beside it) for 4 named \
                blobs of its XnnpackBackend delegates: \
                c56e8d751c6cfbc98a5507c1a7112aca92e49a44a340c5839984d9e065b0dc11, \
                f3c277d0b18828b8002be68cf9894d5dea773fdc0e93b3b6cb60da9a52e7c617, \
                dbd9d31580a6519630fa8220ed95368ffe7be572911a575410fea8f4ebfaff56, and 1 more";
    assert_eq!(v.notes[0], want);
    assert!(v.tree.warnings.is_empty(), "{:?}", v.tree.warnings);
    let index = json(&v, &format!("{WEIGHTS}/index.json"));
    check_weights(&index, "anything.ptd", |name| {
        read(&v, &format!("{WEIGHTS}/{name}"))
    });
    // Off: the weights are missing, as without the file.
    let off = open(&pte, false);
    assert!(off.notes.is_empty());
    assert_eq!(ls(&off, WEIGHTS), ["index.json"]);
    let out = ptefs_on(&["ls", "--no-auto-data"], &[&pte, Path::new(WEIGHTS)]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "index.json\n");
    let out = ptefs_on(&["ls"], &[&pte, Path::new(WEIGHTS)]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(listed.lines().count(), 9, "{listed}");
    assert!(
        listed.contains("000-fully_connected.filter.npy\n"),
        "{listed}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("ptefs: note: {want}\n")
    );
}

#[test]
fn a_mount_serves_the_weights_found_beside_the_program() {
    if !fuse_or_skip("a_mount_serves_the_weights_found_beside_the_program") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pte = program_with_data_as(dir.path(), "foundation.ptd");
    let m = Mounted::new(&[pte.as_os_str()]);
    let weights = m.path(WEIGHTS);
    let index: Value =
        serde_json::from_slice(&std::fs::read(weights.join("index.json")).unwrap()).unwrap();
    check_weights(&index, "foundation.ptd", |name| {
        std::fs::read(weights.join(name)).unwrap()
    });
    drop(m);
    let m = Mounted::new(&[pte.as_os_str(), "--no-auto-data".as_ref()]);
    let listed: Vec<_> = std::fs::read_dir(m.path(WEIGHTS))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(listed, ["index.json"]);
}

#[test]
fn a_ptd_holding_only_keys_the_program_has_is_not_attached() {
    // mv2_xnnpack.pte keeps its weights in its own named data: a data file
    // holding one of those keys supplies nothing.
    let bytes = std::fs::read(fixture("mv2_xnnpack.pte")).unwrap();
    let Ok(ptefs::format::Parsed::Program(p)) = ptefs::format::parse(&bytes) else {
        panic!("not a program")
    };
    let key = p.named[0].key.as_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "mv2.pte", &bytes);
    let ptd = writer::DataFile {
        entries: vec![(key, None, writer::Bytes::Owned(vec![0; 16]))],
    };
    write_file(dir.path(), "shadow.ptd", &ptd.to_bytes());
    let v = open(&pte, true);
    assert!(v.notes.is_empty(), "{:?}", v.notes);
}

#[test]
fn inspect_counts_and_diff_pairs_the_weights_found_beside_it() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pa = program_with_data_as(a.path(), "anything.ptd");
    let pb = program_with_data_as(b.path(), "weights.ptd");
    let fp32_bytes: u64 = oracle_values()
        .iter()
        .map(|r| r["nbytes"].as_u64().unwrap())
        .sum();
    let decoded = |args: &[&str]| {
        let mut all: Vec<&OsStr> = ["inspect", "--json"]
            .iter()
            .chain(args)
            .map(OsStr::new)
            .collect();
        all.push(pa.as_os_str());
        let j = ptefs_json(all);
        j["program"]["delegates"][0]["decoded"].clone()
    };
    assert_eq!(
        decoded(&[])["constant_bytes"]["xnn_datatype_fp32"],
        fp32_bytes
    );
    assert_eq!(
        decoded(&["--no-auto-data"])["constant_bytes"],
        serde_json::json!({})
    );
    // One element of the first weight changed on B's side: one change,
    // named by layer and role.
    let ptd = b.path().join("weights.ptd");
    let mut bytes = std::fs::read(&ptd).unwrap();
    let at = oracle_values()[0]["source"]["offset"].as_u64().unwrap() as usize + 4;
    bytes[at] ^= 0x40;
    std::fs::write(&ptd, bytes).unwrap();
    let out = ptefs_on(&["diff", "--stat"], &[&pa, &pb]);
    let stat = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stat}");
    assert!(
        stat.contains("xnnpack/weights/000-fully_connected.filter.bin | 1 of 8192 elements"),
        "{stat}"
    );
    assert!(stat.ends_with(" 1 change\n"), "{stat}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 2, "a note per side: {err}");
    let out = ptefs_on(&["diff", "--no-auto-data"], &[&pa, &pb]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Directories: each side's program with the data found beside it.
    let out = ptefs_on(&["diff", "--stat"], &[a.path(), b.path()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("000-fully_connected.filter.bin"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
