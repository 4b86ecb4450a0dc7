//! The tree of every fixture against the independent oracles in
//! `tests/fixtures`: expected hashes, the exporting module's state dicts,
//! and flatc's JSON rendering.

use crate::common;

use std::collections::{HashMap, HashSet};

use common::*;
use ptefs::tree::ROOT;
use serde_json::Value;

fn jsonl(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture(&format!("{name}.oracle.jsonl"))).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_expected_hash_is_a_file_at_its_offset() {
    let mut checked = 0;
    for model in models() {
        let v = view(&model);
        let mut by_hash: HashMap<String, Vec<String>> = HashMap::new();
        for (path, bytes) in files(&v) {
            by_hash.entry(sha256(&bytes)).or_default().push(path);
        }
        // Raw files carry user.ptefs.offset: where their bytes start.
        let mut at: HashSet<(u64, u64)> = HashSet::new();
        for (_, ino) in v.tree.walk(ROOT) {
            if let Some(f) = v.tree.file(ino)
                && let Some((_, off)) = v
                    .tree
                    .xattrs(ino)
                    .into_iter()
                    .find(|(k, _)| *k == "user.ptefs.offset")
            {
                let off: u64 = std::str::from_utf8(&off).unwrap().parse().unwrap();
                at.insert((off, f.content.len()));
            }
        }
        for rec in jsonl(&model) {
            let Some(hash) = rec["sha256"].as_str() else {
                assert_eq!(rec["where"], "external", "{model}: {rec}");
                continue;
            };
            assert!(by_hash.contains_key(hash), "{model}: no file holds {rec}");
            let (off, n) = (
                rec["file_offset"].as_u64().unwrap(),
                rec["nbytes"].as_u64().unwrap(),
            );
            assert!(
                at.contains(&(off, n)),
                "{model}: no raw file of {n} bytes at {off}: {rec}"
            );
            checked += 1;
        }
    }
    assert!(checked > 250, "only {checked} records checked");
}

/// Schema names of the torch dtypes in state_dicts.json.
fn scalar_type_of(torch: &str) -> &'static str {
    match torch {
        "float32" => "FLOAT",
        "float16" => "HALF",
        "bfloat16" => "BFLOAT16",
        "float64" => "DOUBLE",
        "int8" => "CHAR",
        "int16" => "SHORT",
        "int32" => "INT",
        "int64" => "LONG",
        "uint8" => "BYTE",
        "bool" => "BOOL",
        other => panic!("unmapped dtype {other}"),
    }
}

/// `(sha256, scalar type, sizes)` of every `.bin` listed in a `tensors/index.json`.
fn tensors_of(v: &ptefs::view::View) -> HashSet<(String, String, Vec<i64>)> {
    let mut out = HashSet::new();
    let all = files(v);
    for (path, bytes) in &all {
        if !path.ends_with("tensors/index.json") {
            continue;
        }
        let dir = path.trim_end_matches("index.json");
        let index: Value = serde_json::from_slice(bytes).unwrap();
        for e in index.as_array().unwrap() {
            let Some(name) = e["name"].as_str() else {
                continue;
            };
            let sizes = e["sizes"]
                .as_array()
                .map(|a| a.iter().map(|x| x.as_i64().unwrap()).collect());
            let Some(sizes) = sizes else { continue };
            let bin = &all[&format!("{dir}{name}")];
            assert_eq!(
                bin.len() as u64,
                e["nbytes"].as_u64().unwrap(),
                "{dir}{name}"
            );
            out.insert((
                sha256(bin),
                e["scalar_type"].as_str().unwrap().to_owned(),
                sizes,
            ));
        }
    }
    out
}

#[test]
fn state_dict_tensors_are_found_by_bytes_with_dtype_and_shape() {
    let sd: Value =
        serde_json::from_slice(&std::fs::read(fixture("state_dicts.json")).unwrap()).unwrap();
    let cases = [
        ("mlp", "mlp.pte"),
        ("mlp_stacktrace", "mlp_stacktrace.pte"),
        ("multi_method", "multi_method.pte"),
        ("dtypes", "dtypes.pte"),
        ("dynamic", "dynamic.pte"),
        ("mlp_external", "mlp_external.ptd"),
    ];
    for (model, file) in cases {
        let found = tensors_of(&view(file));
        let state = sd[model]["state"].as_object().unwrap();
        assert!(!state.is_empty());
        for (name, t) in state {
            let want = (
                t["sha256"].as_str().unwrap().to_owned(),
                scalar_type_of(t["dtype"].as_str().unwrap()).to_owned(),
                t["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_i64().unwrap())
                    .collect::<Vec<_>>(),
            );
            assert!(
                found.contains(&want),
                "{file}: {name} {want:?} not under tensors/"
            );
        }
    }
}

#[test]
fn plan_json_is_flatc_json_plus_paths() {
    for model in models().iter().filter(|m| m.ends_with(".pte")) {
        let v = view(model);
        let oracle: Value = serde_json::from_slice(
            &std::fs::read(fixture(&format!("flatc-json/{model}.json"))).unwrap(),
        )
        .unwrap();
        let plans = oracle["execution_plan"].as_array().unwrap();
        assert!(!plans.is_empty());
        for want in plans {
            let name = want["name"].as_str().unwrap();
            let mut got = json(&v, &format!("methods/{name}/plan.json"));
            strip_ptefs_paths(&mut got);
            assert_eq!(&got, want, "{model}: methods/{name}/plan.json");
        }
    }
}

#[test]
fn flat_tensor_json_is_flatc_json_plus_paths() {
    for model in models().iter().filter(|m| m.ends_with(".ptd")) {
        let v = view(model);
        let want: Value = serde_json::from_slice(
            &std::fs::read(fixture(&format!("flatc-json/{model}.json"))).unwrap(),
        )
        .unwrap();
        let mut got = json(&v, "flat_tensor.json");
        strip_ptefs_paths(&mut got);
        assert_eq!(got, want, "{model}");
    }
}

#[test]
fn ptefs_paths_name_files_holding_the_tensor() {
    for model in models().iter().filter(|m| m.ends_with(".pte")) {
        let v = view(model);
        let program = json(&v, "program.json");
        for m in program["methods"].as_array().unwrap() {
            let m = m.as_str().unwrap();
            let plan = json(&v, &format!("methods/{m}/plan.json"));
            let index = json(&v, &format!("methods/{m}/tensors/index.json"));
            let mut with_path = 0;
            for (i, value) in plan["values"].as_array().unwrap().iter().enumerate() {
                let Some(path) = value["val"]["ptefs_path"].as_str() else {
                    continue;
                };
                with_path += 1;
                let bytes = read(&v, path);
                let entry = index
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["value_index"] == i)
                    .unwrap_or_else(|| panic!("{model}: value {i} not in index.json"));
                assert_eq!(bytes.len() as u64, entry["nbytes"].as_u64().unwrap());
                assert!(path.ends_with(entry["name"].as_str().unwrap()));
            }
            let listed = index
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e.get("missing").is_none())
                .count();
            assert_eq!(with_path, listed, "{model} {m}");
        }
    }
}
