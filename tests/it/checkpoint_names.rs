//! `--names`: checkpoint keys name the tensors that hold their bytes,
//! under `by-name/` and in `index.json`, offline and in a mount.

use crate::common;
use crate::writer;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use common::*;
use ptefs::meta::checkpoint::{Checkpoint, report};
use ptefs::schema::ScalarType;
use ptefs::view::{Request, View};
use serde_json::Value;
use writer::{Data, Program, Tensor, Value as V};

/// `state_dicts.json`'s record of the module fixture `model` came from.
fn state(model: &str) -> BTreeMap<String, Value> {
    let all: Value =
        serde_json::from_slice(&std::fs::read(fixture("state_dicts.json")).unwrap()).unwrap();
    let stem = model.trim_end_matches(".pte");
    all[stem]["state"]
        .as_object()
        .map(|m| m.clone().into_iter().collect())
        .unwrap_or_default()
}

/// The JSON map {name: sha256} of `model`'s module, written to `dir`.
fn names_file(dir: &Path, model: &str) -> PathBuf {
    let map: BTreeMap<String, Value> = state(model)
        .into_iter()
        .map(|(k, v)| (k, v["sha256"].clone()))
        .collect();
    write_file(dir, "names.json", &serde_json::to_vec(&map).unwrap())
}

fn open(files: &[PathBuf], data: &[PathBuf], names: &Path) -> View {
    View::open(&Request {
        inputs: files.to_vec(),
        data: data.to_vec(),
        recursive: false,
        names: Some(names.to_owned()),
        auto_data: false,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Fixtures without delegates, with the data files they need.
const PORTABLE: &[(&str, &[&str])] = &[
    ("dtypes.pte", &[]),
    ("dynamic.pte", &[]),
    ("mlp.pte", &[]),
    ("mlp_external.pte", &["mlp_external.ptd"]),
    ("mlp_stacktrace.pte", &[]),
    ("multi_method.pte", &[]),
];

#[test]
fn every_constant_of_a_portable_export_is_reachable_by_its_checkpoint_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut keys = 0;
    for (model, data) in PORTABLE {
        let names = names_file(dir.path(), model);
        let data: Vec<PathBuf> = data.iter().map(|d| fixture(d)).collect();
        let v = open(&[fixture(model)], &data, &names);
        let state = state(model);
        assert!(!state.is_empty(), "{model}");
        // Each key has its entry, holding exactly the bytes hashed.
        let listed = ls(&v, "by-name");
        assert_eq!(listed.len(), state.len(), "{model}: {listed:?}");
        for (key, rec) in &state {
            let bytes = read(&v, &format!("by-name/{key}"));
            assert_eq!(
                &sha256(&bytes),
                rec["sha256"].as_str().unwrap(),
                "{model} {key}"
            );
            keys += 1;
        }
        // Every tensor file with bytes is one of them, and says so.
        let by_name: Vec<u64> = listed
            .iter()
            .map(|k| v.tree.resolve(&format!("by-name/{k}")).unwrap())
            .collect();
        for m in ls(&v, "methods") {
            let index = json(&v, &format!("methods/{m}/tensors/index.json"));
            for e in index.as_array().unwrap() {
                let Some(name) = e["name"].as_str() else {
                    continue;
                };
                let ino = v
                    .tree
                    .resolve(&format!("methods/{m}/tensors/{name}"))
                    .unwrap();
                assert!(
                    by_name.contains(&ino),
                    "{model}: {name} has no checkpoint name"
                );
                let names = e["checkpoint_names"].as_array().unwrap();
                assert!(!names.is_empty(), "{model} {name}");
                for n in names {
                    let linked = v.tree.resolve(&format!("by-name/{}", n.as_str().unwrap()));
                    assert_eq!(linked, Some(ino), "{model} {n}");
                }
            }
        }
    }
    assert!(keys >= 25, "{keys}");
}

#[test]
fn mobilenet_keys_sharing_bytes_each_get_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let names = names_file(dir.path(), "mv2_xnnpack.pte");
    let v = open(&[fixture("mv2_xnnpack.pte")], &[], &names);
    let state = state("mv2_xnnpack.pte");
    let checkpoint = Checkpoint::parse(&std::fs::read(&names).unwrap()).unwrap();
    assert_eq!(checkpoint.keys.len(), 314);
    let distinct: std::collections::HashSet<&Value> =
        state.values().map(|r| &r["sha256"]).collect();
    assert_eq!(distinct.len(), 81, "314 keys over 81 byte strings");
    // Every key found is an entry of its own, on the file with its bytes.
    let listed = ls(&v, "by-name");
    let mut inodes: HashMap<u64, usize> = HashMap::new();
    for key in &listed {
        let bytes = read(&v, &format!("by-name/{key}"));
        assert_eq!(&Value::from(sha256(&bytes)), &state[key.as_str()]["sha256"]);
        *inodes
            .entry(v.tree.resolve(&format!("by-name/{key}")).unwrap())
            .or_default() += 1;
    }
    assert!(inodes.values().any(|&n| n > 1), "tied keys share one file");
    // The report the CLI gives: matched keys and the ones that found none.
    let digests: Vec<[u8; 32]> = listed
        .iter()
        .map(|k| ptefs::meta::checkpoint::digest(&read(&v, &format!("by-name/{k}"))))
        .collect();
    let r = report(&checkpoint, &digests);
    assert_eq!(r.matched, listed.len());
    assert_eq!(r.matched + r.unmatched.len(), 314);
    eprintln!("mv2_xnnpack: {} of 314 checkpoint keys matched", r.matched);
}

/// A program with two constants and the safetensors checkpoint it came
/// from: two keys tied to one constant, one key the program lacks.
fn tied() -> (Vec<u8>, Vec<u8>) {
    let w: Vec<u8> = (0..24).collect();
    let b: Vec<u8> = (100..108).collect();
    let p = Program::forward(vec![
        V::Tensor(Tensor::new(
            ScalarType::FLOAT,
            &[2, 3],
            Data::Constant(w.clone().into()),
        )),
        V::Tensor(Tensor::new(
            ScalarType::FLOAT,
            &[2],
            Data::Constant(b.clone().into()),
        )),
    ]);
    fn f32s(v: &[u8]) -> safetensors::tensor::TensorView<'_> {
        safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![v.len() / 4], v).unwrap()
    }
    let other: Vec<u8> = vec![9; 8];
    let tensors = vec![
        ("embed.weight", f32s(&w)),
        ("head.weight", f32s(&w)),
        ("head.bias", f32s(&b)),
        ("missing.bias", f32s(&other)),
    ];
    let st = safetensors::tensor::serialize(tensors, None).unwrap();
    (p.to_bytes(), st)
}

#[test]
fn a_safetensors_checkpoint_names_tied_tensors_and_reports_what_is_missing() {
    let (pte, st) = tied();
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "m.pte", &pte);
    let names = write_file(dir.path(), "model.safetensors", &st);
    let v = open(&[p], &[], &names);
    assert_eq!(
        ls(&v, "by-name"),
        ["embed.weight", "head.bias", "head.weight"]
    );
    let a = v.tree.resolve("by-name/embed.weight").unwrap();
    assert_eq!(v.tree.resolve("by-name/head.weight"), Some(a));
    assert_eq!(v.tree.resolve("methods/forward/tensors/0.bin"), Some(a));
    assert_eq!(
        read(&v, "by-name/head.bias"),
        (100..108).collect::<Vec<u8>>()
    );
    let index = json(&v, "methods/forward/tensors/index.json");
    assert_eq!(
        index[0]["checkpoint_names"],
        serde_json::json!(["embed.weight", "head.weight"])
    );
    let checkpoint = Checkpoint::parse(&st).unwrap();
    let digests = [ptefs::meta::checkpoint::digest(&read(
        &v,
        "by-name/head.bias",
    ))];
    let r = report(&checkpoint, &digests);
    assert_eq!((r.keys, r.matched), (4, 1));
    assert_eq!(r.unmatched, ["embed.weight", "head.weight", "missing.bias"]);
}

#[test]
fn names_that_are_not_a_checkpoint_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_file(dir.path(), "bad.json", b"{\"w\": \"abc\"}");
    let e = View::open(&Request {
        inputs: vec![fixture("mlp.pte")],
        data: vec![],
        recursive: false,
        names: Some(bad.clone()),
        auto_data: false,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("bad.json") && e.contains("\"w\"") && e.contains("sha256"),
        "{e}"
    );
    let out = ptefs()
        .args(["ls", "--names"])
        .arg(&bad)
        .arg(fixture("mlp.pte"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
}

#[test]
fn by_name_entries_are_hard_links_in_a_mount() {
    use std::os::unix::fs::MetadataExt;
    if !common::mounted::fuse_or_skip("by_name_entries_are_hard_links_in_a_mount") {
        return;
    }
    let (pte, st) = tied();
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "m.pte", &pte);
    let names = write_file(dir.path(), "model.safetensors", &st);
    let m = common::mounted::Mounted::new(&[p.as_os_str(), "--names".as_ref(), names.as_os_str()]);
    let a = std::fs::metadata(m.path("by-name/embed.weight")).unwrap();
    let b = std::fs::metadata(m.path("by-name/head.weight")).unwrap();
    let t = std::fs::metadata(m.path("methods/forward/tensors/0.bin")).unwrap();
    assert_eq!((a.ino(), b.ino()), (t.ino(), t.ino()));
    assert!(t.nlink() >= 4, "{}", t.nlink());
    assert_eq!(
        std::fs::read(m.path("by-name/embed.weight")).unwrap(),
        (0..24).collect::<Vec<u8>>()
    );
    let out = ptefs()
        .args(["cat", "--names"])
        .arg(&names)
        .arg(&p)
        .arg("by-name/head.bias")
        .output()
        .unwrap();
    assert_eq!(out.stdout, (100..108).collect::<Vec<u8>>());
}

#[test]
fn a_convolution_filter_stored_ohwi_by_xnnpack_matches_its_oihw_checkpoint() {
    let (o, i, h, w) = (2usize, 3usize, 2usize, 2usize);
    // The checkpoint's OIHW filter: element (o, i, h, w) = its own index.
    let oihw: Vec<f32> = (0..o * i * h * w).map(|x| x as f32).collect();
    let mut ohwi = Vec::new();
    for oo in 0..o {
        for hh in 0..h {
            for ww in 0..w {
                for ii in 0..i {
                    ohwi.push(oihw[((oo * i + ii) * h + hh) * w + ww]);
                }
            }
        }
    }
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (stored, original) = (bytes(&ohwi), bytes(&oihw));
    assert_ne!(stored, original);
    let p = Program {
        named: vec![("a1b2".into(), stored.clone().into())],
        ..Program::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "x.pte", &p.to_bytes());
    let view =
        safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![o, i, h, w], &original)
            .unwrap();
    let st = safetensors::tensor::serialize(vec![("conv.weight", view)], None).unwrap();
    let json_map = serde_json::json!({"conv.weight": {
        "sha256": sha256(&original), "dtype": "float32", "shape": [o, i, h, w]}});
    for (name, names) in [
        ("m.safetensors", st),
        ("m.json", serde_json::to_vec(&json_map).unwrap()),
    ] {
        let names = write_file(dir.path(), name, &names);
        let v = open(std::slice::from_ref(&pte), &[], &names);
        assert_eq!(ls(&v, "by-name"), ["conv.weight"], "{name}");
        assert_eq!(
            v.tree.resolve("by-name/conv.weight"),
            v.tree.resolve("named/a1b2.bin")
        );
        assert_eq!(read(&v, "by-name/conv.weight"), stored, "the stored layout");
        let index = json(&v, "named/index.json");
        assert_eq!(
            index[0]["checkpoint_names"],
            serde_json::json!(["conv.weight"])
        );
    }
    // Without the shape there is nothing to permute by.
    let plain = serde_json::json!({"conv.weight": sha256(&original)});
    let names = write_file(
        dir.path(),
        "plain.json",
        &serde_json::to_vec(&plain).unwrap(),
    );
    let v = open(&[pte], &[], &names);
    assert!(ls(&v, "by-name").is_empty());
}
