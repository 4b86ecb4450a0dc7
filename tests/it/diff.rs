//! `ptefs diff`: sections, pairing of tensors, element statistics,
//! tolerances, `--only`, `--stat`, JSON, directories and exit status, on
//! programs the writer makes and on the fixtures.

use crate::common;
use crate::writer;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::*;
use ptefs::schema::ScalarType;
use serde_json::Value;
use writer::{Chain, Data, Delegate, Instr, Method, Program, Tensor, Value as V};

/// A one-method program: float constants `(fqn, values)` (an empty fqn
/// means none), one kernel call of `op`, and a delegate with the compile
/// spec `level`.
fn export(weights: &[(&str, &[f32])], op: &str, level: &str) -> Vec<u8> {
    let floats = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut values: Vec<V> = weights
        .iter()
        .map(|(fqn, w)| {
            let t = Tensor::new(
                ScalarType::FLOAT,
                &[w.len() as i32],
                Data::Constant(floats(w).into()),
            );
            V::Tensor(if fqn.is_empty() { t } else { t.named(fqn) })
        })
        .collect();
    let out = values.len() as i32;
    values.push(V::Tensor(Tensor::new(ScalarType::FLOAT, &[4], Data::None)));
    let mut m = Method {
        name: "forward".into(),
        values,
        chains: vec![Chain::default()],
        ..Method::default()
    };
    m.operators = vec![(op.into(), "out".into())];
    m.chains[0].instructions = vec![
        Instr::Kernel {
            op: 0,
            args: vec![0, out, out],
        },
        Instr::Delegate {
            index: 0,
            args: vec![out],
        },
    ];
    m.delegates = vec![Delegate {
        id: "TestBackend".into(),
        blob: vec![1u8, 2, 3].into(),
        inline: false,
        compile_specs: vec![("level".into(), level.as_bytes().to_vec())],
    }];
    Program {
        methods: vec![m],
        ..Program::default()
    }
    .to_bytes()
}

const W: &[f32] = &[1.0, 2.0, -4.0, 0.5];

fn base() -> Vec<u8> {
    export(&[("w1", W), ("w2", &[7.0, 8.0])], "aten::add", "1")
}

/// `ptefs diff args files`.
fn diff(args: &[&str], files: &[&Path]) -> Run {
    let mut all: Vec<&OsStr> = vec![OsStr::new("diff")];
    all.extend(args.iter().map(OsStr::new));
    all.extend(files.iter().map(|f| f.as_os_str()));
    ptefs_run(all)
}

fn two(a: &[u8], b: &[u8]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let pa = write_file(dir.path(), "a.pte", a);
    let pb = write_file(dir.path(), "b.pte", b);
    (dir, pa, pb)
}

fn json(args: &[&str], a: &Path, b: &Path) -> (i32, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let r = diff(&all, &[a, b]);
    assert!(r.code == 0 || r.code == 1, "{}", r.err);
    (r.code, serde_json::from_str(&r.out).unwrap())
}

#[test]
fn identical_files_exit_0_with_an_empty_report() {
    let (_d, a, b) = two(&base(), &base());
    let r = diff(&[], &[&a, &b]);
    assert_eq!((r.code, r.out.as_str(), r.err.as_str()), (0, "", ""));
    let (code, j) = json(&[], &a, &b);
    assert_eq!(code, 0);
    assert_eq!(j["differ"], false);
    assert_eq!(j["file"], serde_json::json!([]));
    let t = &j["methods"]["common"]["forward"]["tensors"];
    assert_eq!(t["unchanged"], 2);
    for k in ["moved", "changed", "added", "removed"] {
        assert_eq!(t[k], serde_json::json!([]), "{k}");
    }
}

#[test]
fn one_changed_weight_names_the_element_and_both_values() {
    let b = export(
        &[("w1", &[1.0, 2.5, -4.0, 0.25]), ("w2", &[7.0, 8.0])],
        "aten::add",
        "1",
    );
    let (_d, pa, pb) = two(&base(), &b);
    let r = diff(&[], &[&pa, &pb]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.out,
        "method forward: tensor changed: methods/forward/tensors/0.w1.bin \
         (also constants/1.bin, methods/forward/values/0): \
         2 of 4 elements differ; max abs diff 0.5 at [1] (2 vs 2.5); \
         max rel diff 1; mean abs diff 0.375; used by add.self\n"
    );
    let (_, j) = json(&[], &pa, &pb);
    let c = &j["methods"]["common"]["forward"]["tensors"]["changed"][0];
    assert_eq!(c["a"]["name"], "w1");
    assert_eq!(c["a"]["path"], "methods/forward/tensors/0.w1.bin");
    assert_eq!(
        c["a"]["aliases"],
        serde_json::json!(["constants/1.bin", "methods/forward/values/0"])
    );
    let e = &c["elements"];
    assert_eq!(e["differing"], 2);
    assert_eq!(e["elements"], 4);
    assert_eq!(e["max_abs"], 0.5);
    assert_eq!(e["at"]["index"], serde_json::json!([1]));
    assert_eq!(
        (e["at"]["a"].clone(), e["at"]["b"].clone()),
        (2.0.into(), 2.5.into())
    );
    // Relative to B: |0.5 - 0.25| / 0.25.
    assert_eq!(e["max_rel"], 1.0);
    assert_eq!(e["mean_abs"], 0.375);
    assert_eq!(j["methods"]["common"]["forward"]["tensors"]["unchanged"], 1);
}

#[test]
fn nan_and_infinity_are_counted_the_same_in_text_and_json() {
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    let a = export(&[("w1", &[nan, 1.0, inf, 5.0])], "aten::add", "1");
    let b = export(&[("w1", &[nan, nan, -inf, 4.0])], "aten::add", "1");
    let (_d, pa, pb) = two(&a, &b);
    let r = diff(&[], &[&pa, &pb]);
    // NaN equals NaN; NaN or an infinity against something else is a
    // difference, counted, and kept out of the maxima and the mean.
    assert!(
        r.out.contains(
            "3 of 4 elements differ; max abs diff 1 at [3] (5 vs 4); \
             max rel diff 0.25; mean abs diff 1; NaN: 1 in A, 2 in B; \
             2 differences involve NaN or infinity"
        ),
        "{}",
        r.out
    );
    let (_, j) = json(&[], &pa, &pb);
    let e = &j["methods"]["common"]["forward"]["tensors"]["changed"][0]["elements"];
    assert_eq!(
        (
            e["differing"].clone(),
            e["nan_a"].clone(),
            e["nan_b"].clone()
        ),
        (3.into(), 1.into(), 2.into())
    );
    assert_eq!(
        (e["max_abs"].clone(), e["max_rel"].clone()),
        (1.0.into(), 0.25.into())
    );
    assert_eq!(e["nonfinite"], 2);
}

#[test]
fn equal_bytes_at_another_place_are_moved_not_changed() {
    // w1 and w2 swap their values; w3 is renamed w4.
    let a = export(
        &[("w1", &[1.0, 2.0]), ("w2", &[3.0, 4.0]), ("w3", &[5.0])],
        "aten::add",
        "1",
    );
    let b = export(
        &[("w1", &[3.0, 4.0]), ("w2", &[1.0, 2.0]), ("w4", &[5.0])],
        "aten::add",
        "1",
    );
    let (_d, pa, pb) = two(&a, &b);
    let (code, j) = json(&[], &pa, &pb);
    assert_eq!(code, 1);
    let t = &j["methods"]["common"]["forward"]["tensors"];
    let moved: Vec<(String, String)> = t["moved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["a"]["name"].as_str().unwrap().into(),
                m["b"]["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        moved,
        [
            ("w1".into(), "w2".into()),
            ("w2".into(), "w1".into()),
            ("w3".into(), "w4".into())
        ]
    );
    for k in ["changed", "added", "removed"] {
        assert_eq!(t[k], serde_json::json!([]), "{k}");
    }
    let r = diff(&[], &[&pa, &pb]);
    assert!(
        r.out
            .contains("tensor moved: methods/forward/tensors/2.w3.bin"),
        "{}",
        r.out
    );
}

#[test]
fn new_and_dropped_tensors_are_added_and_removed() {
    let a = export(&[("w1", W), ("old", &[9.0])], "aten::add", "1");
    let b = export(&[("w1", W), ("new", &[6.0, 6.5])], "aten::add", "1");
    let (_d, pa, pb) = two(&a, &b);
    let (_, j) = json(&[], &pa, &pb);
    let t = &j["methods"]["common"]["forward"]["tensors"];
    assert_eq!(t["added"][0]["name"], "new");
    assert_eq!(t["added"][0]["sizes"], serde_json::json!([2]));
    assert_eq!(t["removed"][0]["name"], "old");
    assert_eq!(t["unchanged"], 1);
}

#[test]
fn tolerances_decide_what_is_a_change_and_the_exit_status() {
    let b = export(
        &[("w1", &[1.0, 2.0001, -4.0, 0.5]), ("w2", &[7.0, 8.0])],
        "aten::add",
        "1",
    );
    let (_d, pa, pb) = two(&base(), &b);
    assert_eq!(diff(&[], &[&pa, &pb]).code, 1);
    let r = diff(&["--atol", "0.001"], &[&pa, &pb]);
    assert_eq!((r.code, r.out.as_str()), (0, ""), "{}", r.err);
    let (code, j) = json(&["--rtol", "0.0001"], &pa, &pb);
    assert_eq!(code, 0);
    assert_eq!(
        j["methods"]["common"]["forward"]["tensors"]["within_tolerance"],
        1
    );
    assert_eq!(diff(&["--rtol", "0.00001"], &[&pa, &pb]).code, 1);
    assert_eq!(diff(&["--atol", "-1"], &[&pa, &pb]).code, 2);
}

#[test]
fn instructions_and_delegates_sections() {
    let b = export(&[("w1", W), ("w2", &[7.0, 8.0])], "aten::mul", "2");
    let (_d, pa, pb) = two(&base(), &b);
    let (code, j) = json(&[], &pa, &pb);
    assert_eq!(code, 1);
    let m = &j["methods"]["common"]["forward"];
    let unified = m["instructions"]["unified"].as_str().unwrap();
    assert!(
        unified.starts_with("--- a/methods/forward/code.txt\n+++ b/methods/forward/code.txt\n"),
        "{unified}"
    );
    assert!(
        unified.contains(
            "\n-0: aten::add.out %0:f32[4] %2:f32[4] %2\n+0: aten::mul.out %0:f32[4] %2:f32[4] out=%2\n"
        ),
        "{unified}"
    );
    assert_eq!(
        m["instructions"]["counts"]["aten::add.out"],
        serde_json::json!([1, 0])
    );
    assert_eq!(
        m["instructions"]["counts"]["aten::mul.out"],
        serde_json::json!([0, 1])
    );
    let d = &m["delegates"][0];
    assert_eq!(
        d["backend"],
        serde_json::json!(["TestBackend", "TestBackend"])
    );
    assert_eq!(
        d["compile_specs"][0],
        serde_json::json!({"key": "level", "a": "1", "b": "2"})
    );
    let text = diff(&[], &[&pa, &pb]).out;
    assert!(
        text.contains("method forward: aten::mul.out calls 0 -> 1\n"),
        "{text}"
    );
    assert!(
        text.contains("method forward: delegate 0 TestBackend; compile spec level: 1 -> 2\n"),
        "{text}"
    );
}

#[test]
fn only_selects_sections_and_the_exit_status() {
    let b = export(
        &[("w1", &[1.0, 2.5, -4.0, 0.5]), ("w2", &[7.0, 8.0])],
        "aten::add",
        "1",
    );
    let (_d, pa, pb) = two(&base(), &b);
    let r = diff(&["--only", "instructions,delegates"], &[&pa, &pb]);
    assert_eq!((r.code, r.out.as_str()), (0, ""), "{}", r.err);
    let (code, j) = json(&["--only", "tensors"], &pa, &pb);
    assert_eq!(code, 1);
    assert!(j.get("file").is_none());
    assert!(
        j["methods"]["common"]["forward"]
            .get("instructions")
            .is_none()
    );
    assert!(j["methods"]["common"]["forward"].get("tensors").is_some());
    assert_eq!(diff(&["--only", "bogus"], &[&pa, &pb]).code, 2);
}

#[test]
fn stat_has_a_line_per_change_and_a_total() {
    let b = export(
        &[("w1", &[1.0, 2.5, -4.0, 0.5]), ("w2", &[7.0, 8.0])],
        "aten::mul",
        "1",
    );
    let (_d, pa, pb) = two(&base(), &b);
    let r = diff(&["--stat"], &[&pa, &pb]);
    assert_eq!(r.code, 1);
    let lines: Vec<&str> = r.out.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("forward/instructions")
                && l.contains("| 2 lines, 2 operator counts")),
        "{}",
        r.out
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("methods/forward/tensors/0.w1.bin")
                && l.contains("| 1 of 4 elements")),
        "{}",
        r.out
    );
    assert_eq!(lines.last(), Some(&" 2 changes"));
}

#[test]
fn every_fixture_equals_itself_and_mlp_differs_from_dynamic() {
    for m in models() {
        let r = diff(&[], &[&fixture(&m), &fixture(&m)]);
        assert_eq!((r.code, r.out.as_str()), (0, ""), "{m}: {}", r.err);
    }
    let (code, j) = json(&[], &fixture("mlp.pte"), &fixture("dynamic.pte"));
    assert_eq!(code, 1);
    let fields: Vec<&str> = j["file"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"flatbuffer_size"), "{fields:?}");
    assert_eq!(
        j["methods"]["common"]["forward"]["tensors"]["changed"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn directories_pair_files_by_relative_path() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [a.path(), b.path()] {
        std::fs::create_dir(d.join("sub")).unwrap();
        for f in ["mlp_external.pte", "mlp_external.ptd"] {
            std::fs::copy(fixture(f), d.join("sub").join(f)).unwrap();
        }
        std::fs::write(d.join("README"), "not a model").unwrap();
    }
    let r = diff(&[], &[a.path(), b.path()]);
    assert_eq!((r.code, r.out.as_str()), (0, ""), "{}", r.err);
    // The .pte was compared with the .ptd beside it attached.
    let (_, j) = json(&[], a.path(), b.path());
    let pte = j["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["a"].as_str().unwrap().ends_with("mlp_external.pte"))
        .unwrap();
    assert_eq!(
        pte["methods"]["common"]["forward"]["tensors"]["unchanged"],
        4
    );
    write_file(a.path(), "only-a.pte", &base());
    write_file(&b.path().join("sub"), "m.pte", &base());
    write_file(a.path(), "same.pte", &base());
    write_file(
        b.path(),
        "same.pte",
        &export(&[("w1", W), ("w2", &[7.0, 8.5])], "aten::add", "1"),
    );
    let r = diff(&[], &[a.path(), b.path()]);
    assert_eq!(r.code, 1);
    assert!(
        r.out
            .contains(&format!("only in {}: only-a.pte\n", a.path().display())),
        "{}",
        r.out
    );
    assert!(
        r.out
            .contains(&format!("only in {}: sub/m.pte\n", b.path().display())),
        "{}",
        r.out
    );
    assert!(
        r.out
            .contains("same.pte\nmethod forward: tensor changed: methods/forward/tensors/1.w2.bin"),
        "{}",
        r.out
    );
}

#[test]
fn packages_pair_their_tensors_by_data_key() {
    let r = diff(&[], &[&fixture("kv.ptn"), &fixture("kv.ptn")]);
    assert_eq!((r.code, r.out.as_str()), (0, ""), "{}", r.err);
    let (code, j) = json(&[], &fixture("mlp.ptn"), &fixture("tied.ptn"));
    assert_eq!(code, 1);
    let t = &j["tensors"];
    let names = |k: &str| -> Vec<String> {
        t[k].as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(names("removed").contains(&"fc1.weight".to_owned()), "{t}");
    // An alias is another name of its owner's bytes: listed once.
    let added = t["added"].as_array().unwrap();
    let pos = added
        .iter()
        .find(|r| r["path"] == "tensors/pos_a.bin")
        .unwrap();
    assert_eq!(pos["aliases"], serde_json::json!(["tensors/pos_b.bin"]));
}

#[test]
fn io_and_memory_sections_say_what_the_exporter_recorded_differently() {
    let (a, b) = (fixture("mlp.pte"), fixture("dynamic.pte"));
    let (code, j) = json(&["--only", "io,memory"], &a, &b);
    assert_eq!(code, 1);
    let m = &j["methods"]["common"]["forward"];
    let io: Vec<(String, String, Value, Value)> = m["io"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["at"].as_str().unwrap().into(),
                c["field"].as_str().unwrap().into(),
                c["a"].clone(),
                c["b"].clone(),
            )
        })
        .collect();
    // The exported shapes and their dynamism, from flatc's own JSON.
    let plan = |f: &str| -> Value {
        let t = std::fs::read_to_string(fixture(&format!("flatc-json/{f}.json"))).unwrap();
        serde_json::from_str::<Value>(&t).unwrap()["execution_plan"][0].clone()
    };
    let (pa, pb) = (plan("mlp.pte"), plan("dynamic.pte"));
    let input = |p: &Value| p["values"][p["inputs"][0].as_u64().unwrap() as usize]["val"].clone();
    let (ia, ib) = (input(&pa), input(&pb));
    assert!(
        io.contains(&(
            "input 0".into(),
            "sizes".into(),
            ia["sizes"].clone(),
            ib["sizes"].clone()
        )),
        "{io:?}"
    );
    assert!(
        io.contains(&(
            "input 0".into(),
            "shape_dynamism".into(),
            ia["shape_dynamism"].clone(),
            ib["shape_dynamism"].clone()
        )),
        "{io:?}"
    );
    assert!(
        io.iter().all(|c| c.1 != "mem_offset"),
        "placements belong to memory: {io:?}"
    );
    let memory = m["memory"].as_array().unwrap();
    let sizes = |p: &Value| p["non_const_buffer_sizes"][1].clone();
    assert!(
        memory
            .iter()
            .any(|c| c["at"] == "buffer 1" && c["a"] == sizes(&pa) && c["b"] == sizes(&pb)),
        "{memory:?}"
    );
    assert!(m.get("tensors").is_none() && j.get("file").is_none());
    // The same pair differs in nothing else that --only leaves out.
    let r = diff(&["--only", "methods,delegates"], &[&a, &b]);
    assert_eq!((r.code, r.out.as_str()), (0, ""));
}

#[test]
fn a_changed_delegate_weight_is_one_change_by_layer_and_role() {
    // Re-exporting with one weight changed renames its blob (keys are the
    // sha256 of the bytes): rename it everywhere and change one float.
    let mut bytes = std::fs::read(fixture("mv2_xnnpack.pte")).unwrap();
    let oracle = std::fs::read_to_string(fixture("mv2_xnnpack.pte.xnnpack.oracle.jsonl")).unwrap();
    let fc: Value = oracle
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|o| o["nbytes"] == 5_120_000)
        .unwrap();
    let key = fc["named_key"].as_str().unwrap().as_bytes().to_vec();
    let new_key = vec![b'f'; key.len()];
    let mut renamed = 0;
    let mut i = 0;
    while let Some(at) = bytes[i..]
        .windows(key.len())
        .position(|w| w == key.as_slice())
    {
        let at = i + at;
        bytes[at..at + key.len()].copy_from_slice(&new_key);
        renamed += 1;
        i = at + key.len();
    }
    assert!(
        renamed >= 2,
        "the key is in the program's named data and in the payload"
    );
    let offset = fc["source"]["offset"].as_u64().unwrap() as usize;
    let x = offset + 4 * 10;
    let v = f32::from_le_bytes(bytes[x..x + 4].try_into().unwrap());
    bytes[x..x + 4].copy_from_slice(&(v + 1.0).to_le_bytes());
    let (_d, pa, pb) = two(&std::fs::read(fixture("mv2_xnnpack.pte")).unwrap(), &bytes);
    let (code, j) = json(&["--only", "tensors"], &pa, &pb);
    assert_eq!(code, 1);
    let t = &j["tensors"];
    assert_eq!(t["added"], serde_json::json!([]), "{t}");
    assert_eq!(t["removed"], serde_json::json!([]), "{t}");
    let changed = t["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{t}");
    let c = &changed[0];
    assert!(
        c["a"]["path"]
            .as_str()
            .unwrap()
            .ends_with("xnnpack/weights/066-fully_connected.filter.bin"),
        "{c}"
    );
    assert_eq!(c["elements"]["differing"], 1);
    let delta = c["elements"]["max_abs"].as_f64().unwrap();
    assert!((delta - 1.0).abs() < 1e-5, "{c}");
    assert_eq!(c["elements"]["at"]["index"], serde_json::json!([0, 10]));
    assert!(t["unchanged"].as_u64().unwrap() > 60, "{t}");
}

#[test]
fn names_pair_unnamed_tensors_by_their_checkpoint_names() {
    // Two exports whose unnamed constants swap value indices: by index
    // their bytes moved; named by a checkpoint, each is the same tensor.
    let a = export(&[("", &[1.0, 2.0]), ("", &[3.0, 4.0])], "aten::add", "1");
    let b = export(&[("", &[3.0, 4.0]), ("", &[1.0, 2.0])], "aten::add", "1");
    let (dir, pa, pb) = two(&a, &b);
    let sha = |v: &[f32]| sha256(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
    let map = serde_json::json!({"p": sha(&[1.0, 2.0]), "q": sha(&[3.0, 4.0])});
    let names = write_file(dir.path(), "names.json", &serde_json::to_vec(&map).unwrap());
    let (code, j) = json(
        &["--names", names.to_str().unwrap(), "--only", "tensors"],
        &pa,
        &pb,
    );
    let t = &j["methods"]["common"]["forward"]["tensors"];
    assert_eq!(code, 0, "{t}");
    assert_eq!(t["unchanged"], 2, "{t}");
    assert_eq!(t["moved"], serde_json::json!([]), "{t}");
    // Without names the same pair is two values whose bytes moved.
    let (code, j) = json(&["--only", "tensors"], &pa, &pb);
    assert_eq!(code, 1);
    let moved = &j["methods"]["common"]["forward"]["tensors"]["moved"];
    assert_eq!(moved.as_array().unwrap().len(), 2, "{moved}");
}

#[test]
fn xnnpack_delegates_differ_node_by_node() {
    let (code, j) = json(
        &["--only", "delegates"],
        &fixture("mv2_xnnpack.pte"),
        &fixture("quant_xnnpack.pte"),
    );
    assert_eq!(code, 1);
    let d = &j["methods"]["common"]["forward"]["delegates"][0];
    let nodes = d["nodes"].as_str().unwrap();
    assert!(
        nodes.starts_with(
            "--- a/methods/forward/delegates/0-XnnpackBackend/xnnpack/code.txt\n\
             +++ b/methods/forward/delegates/0-XnnpackBackend/xnnpack/code.txt\n"
        ),
        "{nodes}"
    );
    assert!(
        nodes
            .lines()
            .any(|l| l.starts_with('-') && !l.starts_with("---")),
        "{nodes}"
    );
    assert!(
        nodes
            .lines()
            .any(|l| l.starts_with('+') && !l.starts_with("+++")),
        "{nodes}"
    );
    // The same nodes with other weights: the payload differs, the nodes do not.
    let mut bytes = std::fs::read(fixture("mv2_xnnpack.pte")).unwrap();
    let key = b"9795a48635a05f981dc0553e184f50bf13e9d3009a7ab084fb893c6ac3b7689f";
    let mut i = 0;
    while let Some(at) = bytes[i..].windows(key.len()).position(|w| w == key) {
        let at = i + at;
        bytes[at..at + key.len()].copy_from_slice(&[b'e'; 64]);
        i = at + key.len();
    }
    let (_d, pa, pb) = two(&std::fs::read(fixture("mv2_xnnpack.pte")).unwrap(), &bytes);
    let (_, j) = json(&["--only", "delegates"], &pa, &pb);
    let d = &j["methods"]["common"]["forward"]["delegates"][0];
    assert!(d["payload"].is_array(), "{d}");
    assert_eq!(d["nodes"], "", "{d}");
}

/// Sections print in the documented order: file, methods, io,
/// instructions, memory, delegates, tensors.
#[test]
fn text_sections_follow_the_documented_order() {
    let r = diff(&[], &[&fixture("mlp.pte"), &fixture("dynamic.pte")]);
    assert_eq!(r.code, 1);
    let at = |needle: &str| {
        r.out
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {}", r.out))
    };
    let order = [
        "file: flatbuffer_size",
        "method forward: input 0 sizes",
        "--- a/methods/forward/code.txt",
        "method forward: buffer 1 value",
        "method forward: tensor changed",
    ];
    for pair in order.windows(2) {
        assert!(
            at(pair[0]) < at(pair[1]),
            "{pair:?} out of order:\n{}",
            r.out
        );
    }
}

/// Files of one base name in different subdirectories are two files,
/// named by their paths relative to the directory given: `diff` of two
/// such directories pairs them, and a tree of one shows both.
#[test]
fn same_named_files_in_subdirectories_stay_apart() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (d, second) in [(a.path(), "add.pte"), (b.path(), "dynamic.pte")] {
        for (sub, f) in [("x", "mlp.pte"), ("y", second)] {
            std::fs::create_dir(d.join(sub)).unwrap();
            std::fs::copy(fixture(f), d.join(sub).join("m.pte")).unwrap();
        }
    }
    let r = diff(&[], &[a.path(), b.path()]);
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(r.err.is_empty(), "{}", r.err);
    let header = format!(
        "== {} {}",
        a.path().join("y/m.pte").display(),
        b.path().join("y/m.pte").display()
    );
    assert!(r.out.contains(&header), "{}", r.out);
    assert!(
        !r.out.contains("x/m.pte"),
        "x/m.pte is the same on both sides: {}",
        r.out
    );
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![a.path().to_owned()],
        data: vec![],
        recursive: true,
        names: None,
        auto_data: true,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ls(&v, ""), ["x", "y"]);
    assert_eq!(ls(&v, "x"), ["m.pte"]);
    assert_eq!(
        read(&v, "x/m.pte/header.json"),
        read(&view("mlp.pte"), "header.json")
    );
    assert_eq!(
        read(&v, "y/m.pte/header.json"),
        read(&view("add.pte"), "header.json")
    );
}

/// A package and a program of the same module have the same methods:
/// none is added or removed, and each is compared by its operator calls.
#[test]
fn a_package_and_a_program_compare_methods_by_name() {
    let r = diff(&[], &[&fixture("mlp.ptn"), &fixture("mlp.pte")]);
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(!r.out.contains("method added"), "{}", r.out);
    assert!(!r.out.contains("method removed"), "{}", r.out);
    assert!(
        r.out.contains("method forward: aten::addmm calls 0 -> 2\n"),
        "{}",
        r.out
    );
    let (_, j) = json(&[], &fixture("mlp.ptn"), &fixture("mlp.pte"));
    assert_eq!(j["methods"]["added"], serde_json::json!([]));
    let counts = &j["methods"]["common"]["forward"]["instructions"]["counts"];
    // The package's calls, from the oracle of its graph.
    let oracle = std::fs::read_to_string(fixture("mlp.ptn.oracle.jsonl")).unwrap();
    let method: serde_json::Value = oracle
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["method"] == "forward")
        .unwrap();
    for (target, n) in method["targets"].as_object().unwrap() {
        let op = target.trim_start_matches("torch.ops.");
        let mut parts = op.split('.');
        let op = format!("{}::{}", parts.next().unwrap(), parts.next().unwrap());
        assert_eq!(counts[&op][0], *n, "{op}: {counts}");
    }
}

/// Every decoded backend's `code.txt` is diffed, not only XNNPACK's.
#[test]
fn a_decoded_delegate_of_any_backend_diffs_its_code() {
    let r = diff(
        &[],
        &[
            &fixture("backends/coreml_mlp.pte"),
            &fixture("backends/coreml_multimethod.pte"),
        ],
    );
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(
        r.out
            .contains("--- a/methods/forward/delegates/0-CoreMLBackend/coreml/code.txt\n"),
        "{}",
        r.out
    );
    assert!(
        r.out.contains("+function forward(%x: fp32[1,16])"),
        "{}",
        r.out
    );
}

#[test]
fn a_changed_payload_weight_is_one_change_by_layer_and_role() {
    // Weights inside a payload (not in named data) pair by their file in
    // the backend's weights/, for every backend that decodes them.
    for (file, folder) in [
        ("tosa_fp_mlp", "0-TOSABackend/tosa"),
        ("openvino_tiny", "0-OpenvinoBackend/openvino"),
        ("coreml_mlp", "0-CoreMLBackend/coreml"),
        ("vgf_fp_mlp", "0-VgfBackend/vgf"),
        ("ethosu55_mlp", "0-EthosUBackend/ethos-u"),
    ] {
        let original = std::fs::read(fixture(&format!("backends/{file}.pte"))).unwrap();
        let dir = format!("methods/forward/delegates/{folder}/weights");
        let index = ptefs_json([
            OsStr::new("cat"),
            fixture(&format!("backends/{file}.pte")).as_os_str(),
            format!("{dir}/index.json").as_ref(),
        ]);
        let w = index
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["source"]["file"].is_null() && w["nbytes"].as_u64() >= Some(8))
            .unwrap_or_else(|| panic!("{file}: no weight in the payload"));
        let at = w["source"]["offset"].as_u64().unwrap() as usize + 4;
        let mut changed = original.clone();
        changed[at] ^= 0x5a;
        let (_d, pa, pb) = two(&original, &changed);
        let (code, j) = json(&["--only", "tensors"], &pa, &pb);
        assert_eq!(code, 1, "{file}: {j}");
        let mut all = Vec::new();
        for t in [&j["tensors"], &j["methods"]["common"]["forward"]["tensors"]] {
            assert_eq!(t["added"], serde_json::json!([]), "{file}: {t}");
            assert_eq!(t["removed"], serde_json::json!([]), "{file}: {t}");
            all.extend(t["changed"].as_array().cloned().unwrap_or_default());
        }
        assert_eq!(all.len(), 1, "{file}: {j}");
        let c = &all[0];
        let name = w["name"].as_str().unwrap();
        assert_eq!(c["a"]["path"], format!("{dir}/{name}"), "{file}: {c}");
        // Typed where the weight has a NumPy view: compared element-wise.
        let typed = !w["npy"].is_null();
        assert_eq!(c["elements"].is_object(), typed, "{file}: {c}");
        let differing = if typed {
            &c["elements"]["differing"]
        } else {
            &c["bytes"]["differing"]
        };
        assert_eq!(differing, 1, "{file}: {c}");
    }
}
