//! CUDA (AOTInductor) weights that are views into a larger storage: each
//! weight's files hold the tensor's own bytes (a contiguous view as its
//! byte range of the storage, any other gathered), checked against bytes
//! this test picks out of the storage element by element.

use crate::common;
use crate::writer;

use common::*;
use serde_json::{Value, json};

const DIR: &str = "methods/forward/delegates/0-CudaBackend/aoti";
const STORAGE: &str = "cuda:storage";

/// One weight of the manifest: FQN, storage offset, sizes, strides (in
/// float32 elements).
type View = (&'static str, i64, Vec<i64>, Vec<i64>);

fn views() -> Vec<View> {
    vec![
        ("whole", 0, vec![24], vec![1]),
        ("rows", 8, vec![2, 4], vec![4, 1]),
        ("transposed", 2, vec![3, 4], vec![1, 6]),
        ("strided", 1, vec![2, 2], vec![12, 2]),
        ("past_the_end", 20, vec![2, 4], vec![4, 1]),
    ]
}

/// `ETCUDAFQN3` as ExecuTorch's `encode_cuda_weight_metadata` writes it.
fn manifest(so_key: &str, storage_nbytes: u64) -> Vec<u8> {
    let mut b = b"ETCUDAFQN3".to_vec();
    let string = |b: &mut Vec<u8>, s: &str| {
        b.extend((s.len() as u32).to_le_bytes());
        b.extend(s.as_bytes());
    };
    string(&mut b, so_key);
    b.extend((views().len() as u32).to_le_bytes());
    for (fqn, offset, sizes, strides) in views() {
        string(&mut b, fqn);
        string(&mut b, STORAGE);
        b.extend(storage_nbytes.to_le_bytes());
        b.extend(6i32.to_le_bytes()); // float32
        b.extend(1i32.to_le_bytes()); // cuda
        b.extend(offset.to_le_bytes());
        b.extend((sizes.len() as u32).to_le_bytes());
        for x in sizes.iter().chain(&strides) {
            b.extend(x.to_le_bytes());
        }
    }
    b
}

/// The view's values, row-major, read one by one from the storage.
fn expected(storage: &[f32], offset: i64, sizes: &[i64], strides: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    let n: i64 = sizes.iter().product();
    for flat in 0..n {
        // Row-major digits of `flat`.
        let mut rest = flat;
        let mut at = offset;
        for d in (0..sizes.len()).rev() {
            at += (rest % sizes[d]) * strides[d];
            rest /= sizes[d];
        }
        out.extend(storage[at as usize].to_le_bytes());
    }
    out
}

/// A program of one CUDA delegate whose weights are the views of
/// [`views`] into one storage of `storage`'s values.
fn program(storage: &[f32]) -> Vec<u8> {
    let bytes: Vec<u8> = storage.iter().flat_map(|x| x.to_le_bytes()).collect();
    writer::payloads::one_delegate(
        "CudaBackend",
        manifest("cuda:so", bytes.len() as u64),
        vec![],
        vec![(STORAGE.to_owned(), bytes)],
    )
}

fn seed() -> Vec<u8> {
    program(&(0..24).map(|i| i as f32).collect::<Vec<_>>())
}

/// The fuzz and mutation seed for views.
#[test]
fn stored_seed_matches_its_generator() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions/aoti-views.pte");
    if std::env::var_os("PTEFS_WRITE_SEEDS").is_some() {
        std::fs::write(&path, seed()).unwrap();
    }
    assert!(std::fs::read(&path).unwrap() == seed(), "stale seed");
}

#[test]
fn a_weight_that_is_a_view_serves_its_own_bytes() {
    let storage: Vec<f32> = (0..24).map(|i| i as f32 * 1.5 - 7.0).collect();
    let bytes: Vec<u8> = storage.iter().flat_map(|x| x.to_le_bytes()).collect();
    let pte = program(&storage);
    let (_d, v) = view_bytes("views.pte", &pte);
    let index = json(&v, &format!("{DIR}/weights/index.json"));
    let header = json(&v, &format!("{DIR}/header.json"));
    for (fqn, offset, sizes, strides) in views() {
        let e = index
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["fqn"] == fqn)
            .unwrap();
        let f = header["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["fqn"] == fqn)
            .unwrap();
        for x in [e, f] {
            assert_eq!(x["storage_offset"], json!(offset), "{fqn}");
            assert_eq!(x["strides"], json!(strides), "{fqn}");
            assert_eq!(x["sizes"], json!(sizes), "{fqn}");
        }
        if fqn == "past_the_end" {
            let why = e["missing"].as_str().unwrap();
            assert!(
                why.contains("reads up to byte 112 of a storage of 96 bytes"),
                "{why}"
            );
            assert!(
                v.tree
                    .resolve(&format!("{DIR}/weights/{fqn}.bin"))
                    .is_none()
            );
            continue;
        }
        let want = expected(&storage, offset, &sizes, &strides);
        let bin = read(&v, &format!("{DIR}/weights/{fqn}.bin"));
        assert_eq!(bin, want, "{fqn}");
        assert_eq!(e["nbytes"], json!(want.len()), "{fqn}");
        let npy = read(&v, &format!("{DIR}/weights/{fqn}.npy"));
        assert_eq!(npy_payload(&npy), want, "{fqn}.npy");
        let shape: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
        let head = String::from_utf8_lossy(&npy[..npy.len() - want.len()]).into_owned();
        assert!(
            head.contains(&format!("'shape': ({}", shape.join(", "))),
            "{head}"
        );
        // Contiguous views are ranges of the storage, at their offset.
        let storage_at = e["source"]["offset"].as_u64().unwrap();
        let named = index_of_storage(&v);
        let contiguous = fqn == "whole" || fqn == "rows";
        assert_eq!(e.get("gathered").is_some(), !contiguous, "{fqn}");
        if contiguous {
            assert_eq!(storage_at, named + offset as u64 * 4, "{fqn}");
        } else {
            assert_eq!(storage_at, named, "{fqn}");
        }
    }
    // The whole storage stays under named/, byte for byte.
    assert_eq!(read(&v, &format!("named/{STORAGE}.bin")), bytes);
}

/// The file offset of the storage entry, from named/index.json.
fn index_of_storage(v: &ptefs::view::View) -> u64 {
    let named = json(v, "named/index.json");
    let e: &Value = named
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == STORAGE)
        .unwrap();
    e["source"]["offset"]
        .as_u64()
        .unwrap_or_else(|| panic!("{e}"))
}

/// The NumPy view of a gathered weight is what NumPy makes of the storage
/// with the same offset, sizes and strides.
#[test]
fn numpy_agrees_with_the_gathered_views() {
    let storage: Vec<f32> = (0..24).map(|i| (i * i) as f32).collect();
    let pte = program(&storage);
    let (dir, v) = view_bytes("views.pte", &pte);
    extract(&v, &dir.path().join("tree"));
    let out = python(
        r#"
import json, sys, pathlib
import numpy as np
root = pathlib.Path(sys.argv[1]) / "methods/forward/delegates/0-CudaBackend/aoti/weights"
storage = np.frombuffer((pathlib.Path(sys.argv[1]) / "named/cuda:storage.bin").read_bytes(), "<f4")
n = 0
for e in json.loads((root / "index.json").read_text()):
    if "missing" in e:
        continue
    want = np.lib.stride_tricks.as_strided(storage[e["storage_offset"]:],
        shape=e["sizes"], strides=[4 * s for s in e["strides"]])
    got = np.load(root / e["npy"])
    assert np.array_equal(got, want), (e["fqn"], got, want)
    n += 1
print("checked", n)
"#,
        &[&dir.path().join("tree")],
    );
    assert!(out.contains("checked 4"), "{out}");
}

/// A mount serves the same bytes, gathered views included, and `stat`
/// says their size before they are read.
#[test]
fn a_mount_serves_each_views_own_bytes() {
    if !common::mounted::fuse_or_skip("a_mount_serves_each_views_own_bytes") {
        return;
    }
    let storage: Vec<f32> = (0..24).map(|i| 100.0 - i as f32).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "views.pte", &program(&storage));
    let m = common::mounted::Mounted::new(&[path.as_os_str()]);
    for (fqn, offset, sizes, strides) in views() {
        let file = m.dir.join(format!("{DIR}/weights/{fqn}.bin"));
        if fqn == "past_the_end" {
            assert!(!file.exists(), "{fqn}");
            continue;
        }
        let want = expected(&storage, offset, &sizes, &strides);
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            want.len() as u64,
            "{fqn}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), want, "{fqn}");
        let npy = std::fs::read(file.with_extension("npy")).unwrap();
        assert_eq!(npy_payload(&npy), want, "{fqn}.npy");
    }
}
