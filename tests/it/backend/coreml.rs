//! Core ML delegates decoded, on fixtures written by ExecuTorch 1.5.1's own
//! Core ML backend (`tests/fixtures/backends/coreml_*.pte`, with oracles
//! from ExecuTorch's and coremltools' own readers): every file of the
//! flattened directory byte-exact at its path, the reference of a
//! multi-method program resolved through named data, the decoded model
//! against the oracle (specification version, inputs, outputs, op types per
//! function), weights against `weight.bin`'s blob records; a real mount;
//! hostile payloads; and `inspect`'s summary.

use crate::common;
use crate::writer;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::*;
use ptefs::tree::Tree;
use ptefs::view::View;
use serde_json::Value as Json;

const BACKEND: &str = "CoreMLBackend";

fn fixture_path(name: &str) -> PathBuf {
    fixture(&format!("backends/{name}"))
}

fn oracle(name: &str) -> Json {
    let text = std::fs::read_to_string(fixture_path(&format!("{name}.oracle.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn open(name: &str) -> View {
    view_of(&[fixture_path(&format!("{name}.pte"))], &[])
}

fn folder(plan: &str) -> String {
    format!("methods/{plan}/delegates/0-{BACKEND}/coreml")
}

fn text(v: &View, path: &str) -> String {
    String::from_utf8(read(v, path)).unwrap()
}

/// Checks the oracle's listing of a flattened directory against the folder
/// of `plan`: every file's size and sha256, `metadata.json`, and the
/// decoded model's specification version, inputs, outputs and op types.
fn check_directory(v: &View, plan: &str, inner: &Json) {
    let dir = folder(plan);
    assert_eq!(inner["unflatten_ok"], true);
    let mut listed = Vec::new();
    for f in inner["files"].as_array().unwrap() {
        let path = format!("{dir}/{}", f["path"].as_str().unwrap());
        let bytes = read(v, &path);
        assert_eq!(bytes.len() as u64, f["size"].as_u64().unwrap(), "{path}");
        assert_eq!(sha256(&bytes), f["sha256"].as_str().unwrap(), "{path}");
        listed.push(f["path"].as_str().unwrap().to_owned());
    }
    let tops: Vec<&str> = inner["top_level_dirs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tops.len(), 1);
    let top = tops[0];
    // Nothing else under the top directory.
    let mut shown = Vec::new();
    for (path, _) in files(v) {
        if let Some(rest) = path.strip_prefix(&format!("{dir}/"))
            && rest.starts_with(&format!("{top}/"))
        {
            shown.push(rest.to_owned());
        }
    }
    shown.sort();
    listed.sort();
    assert_eq!(shown, listed);
    let metadata = json(v, &format!("{dir}/{top}/metadata.json"));
    assert_eq!(metadata, inner["metadata.json"]);
    let header = json(v, &format!("{dir}/header.json"));
    let graph = json(v, &format!("{dir}/graph.json"));
    assert_eq!(graph["specification_version"], inner["spec_version"]);
    let names = |list: &Json| -> Vec<Json> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].clone())
            .collect()
    };
    assert_eq!(
        names(&graph["description"]["inputs"]),
        inner["inputs"].as_array().unwrap().clone()
    );
    assert_eq!(
        names(&graph["description"]["outputs"]),
        inner["outputs"].as_array().unwrap().clone()
    );
    let mut functions = BTreeMap::new();
    for (name, f) in graph["program"]["functions"].as_object().unwrap() {
        let ops: Vec<Json> = f["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|op| op["type"].clone())
            .collect();
        functions.insert(name.clone(), Json::Array(ops));
    }
    let want: BTreeMap<String, Json> = inner["mil_functions"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(functions, want);
    // code.txt: one line per op of each function.
    let code = text(v, &format!("{dir}/code.txt"));
    for (name, ops) in &want {
        let start = code
            .lines()
            .position(|l| l.starts_with(&format!("function {name}(")))
            .unwrap_or_else(|| panic!("no function {name} in code.txt:\n{code}"));
        for (i, op) in ops.as_array().unwrap().iter().enumerate() {
            let line = code.lines().nth(start + 1 + i).unwrap();
            let op = op.as_str().unwrap();
            assert!(
                line.starts_with(&format!("  {i:03} %")) && line.contains(&format!(" = {op}(")),
                "{line} (wanted op {op})"
            );
        }
    }
    assert!(header.is_object());
    check_weights(v, &dir);
}

/// Every weight: its `.bin` is the blob data its `index.json` entry
/// locates in `weight.bin` (checked here against the blob's own metadata
/// record), and its `.npy` holds the same bytes after the NumPy header.
fn check_weights(v: &View, dir: &str) {
    let index = json(v, &format!("{dir}/weights/index.json"));
    let entries = index.as_array().unwrap();
    assert!(!entries.is_empty());
    let model_path = json(v, &format!("{dir}/graph.json"))["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let model = read(v, &format!("{dir}/{model_path}"));
    for e in entries {
        let bin = read(v, &format!("{dir}/weights/{}", e["name"].as_str().unwrap()));
        if e["stored"] == "inline" {
            // Packed floats inside model.mlmodel, found where the
            // protobuf holds them.
            assert_eq!(e["field"], "floats");
            let at = e["model_offset"].as_u64().unwrap() as usize;
            assert_eq!(bin, &model[at..at + bin.len()], "{e}");
            assert_eq!(model[at - 2..at], [0x0a, bin.len() as u8]);
        } else {
            assert_eq!(e["stored"], "blob");
            let file = read(v, &format!("{dir}/{}", e["file_path"].as_str().unwrap()));
            let meta = e["metadata_offset"].as_u64().unwrap() as usize;
            let record = &file[meta..meta + 64];
            assert_eq!(&record[..4], &0xDEAD_BEEFu32.to_le_bytes());
            let size = u64::from_le_bytes(record[8..16].try_into().unwrap()) as usize;
            let at = u64::from_le_bytes(record[16..24].try_into().unwrap()) as usize;
            assert_eq!(e["data_offset"].as_u64().unwrap() as usize, at);
            assert_eq!(e["data_size"].as_u64().unwrap() as usize, size);
            assert_eq!(bin, &file[at..at + size], "{}", e["name"]);
        }
        let size = bin.len();
        let npy = read(v, &format!("{dir}/weights/{}", e["npy"].as_str().unwrap()));
        assert!(npy.ends_with(&bin));
        assert!(text_of(&npy[..npy.len() - bin.len()]).contains("'descr': '<f4'"));
        let shape: Vec<u64> = e["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(shape.iter().product::<u64>() * 4, size as u64);
        let users = e["users"].as_array().unwrap();
        assert!(!users.is_empty(), "{e}");
    }
}

fn text_of(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The program's delegates against the oracle: payload size and sha256
/// (`processed.bin`) and compile specs.
fn check_delegates(v: &View, oracle: &Json) {
    for plan in oracle["execution_plan"].as_array().unwrap() {
        let name = plan["name"].as_str().unwrap();
        for d in plan["delegates"].as_array().unwrap() {
            assert_eq!(d["id"], BACKEND);
            let dir = format!("methods/{name}/delegates/{}-{BACKEND}", d["index"]);
            let payload = read(v, &format!("{dir}/processed.bin"));
            assert_eq!(payload.len() as u64, d["payload_len"].as_u64().unwrap());
            assert_eq!(sha256(&payload), d["payload_sha256"].as_str().unwrap());
            let first = d["payload_first_64_hex"].as_str().unwrap();
            let hex: String = payload
                .iter()
                .take(64)
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(hex, first);
            let specs = json(v, &format!("{dir}/compile_specs.json"));
            let specs = specs.as_array().unwrap();
            let want = d["compile_specs"].as_array().unwrap();
            assert_eq!(specs.len(), want.len());
            for (got, want) in specs.iter().zip(want) {
                assert_eq!(got["key"], want["key"]);
                assert_eq!(got["text"], want["value"]["utf8"]);
                assert_eq!(got["size"], want["value"]["len"]);
            }
        }
    }
}

#[test]
fn the_flattened_directory_of_a_single_method_program_is_served_file_for_file() {
    let o = oracle("coreml_mlp");
    let v = open("coreml_mlp");
    check_delegates(&v, &o);
    let inner = &o["coreml_inner"][0];
    assert_eq!(inner["kind"], "flattened directory");
    check_directory(&v, inner["plan"].as_str().unwrap(), inner);
    let dir = folder("forward");
    let header = json(&v, &format!("{dir}/header.json"));
    let d = &o["execution_plan"][0]["delegates"][0];
    assert_eq!(header["kind"], "flattened directory");
    assert_eq!(header["files_offset"], d["payload_abs_offset"]);
    let end = d["payload_abs_offset"].as_u64().unwrap() + d["payload_len"].as_u64().unwrap();
    assert_eq!(
        header["node_table_offset"].as_u64().unwrap()
            + header["node_table_length"].as_u64().unwrap(),
        end
    );
    assert_eq!(header["nodes"], 11);
    let code = text(&v, &format!("{dir}/code.txt"));
    assert!(code.contains(
        "  004 %aten_linear_default: fp32[1,32] = linear(bias=%p_l1_bias, weight=%p_l1_weight, x=%x)"
    ));
    assert!(code.contains("const(val=blob(\"@model_path/weights/weight.bin\", offset=64))  # weights/main.004-linear.weight"));
    assert!(ls(&v, &format!("{dir}/weights")).contains(&"main.006-linear.weight.npy".to_owned()));
}

#[test]
fn a_multi_method_reference_is_resolved_through_named_data() {
    let o = oracle("coreml_multimethod");
    let v = open("coreml_multimethod");
    check_delegates(&v, &o);
    for n in o["named_data_payloads"].as_array().unwrap() {
        let bytes = read(&v, &format!("named/{}.bin", n["key"].as_str().unwrap()));
        assert_eq!(bytes.len() as u64, n["len"].as_u64().unwrap());
        assert_eq!(sha256(&bytes), n["sha256"].as_str().unwrap());
    }
    let inner = o["coreml_inner"].as_array().unwrap();
    let directory = inner
        .iter()
        .find(|e| e["kind"] == "flattened directory")
        .unwrap();
    for r in inner.iter().filter(|e| e["kind"] == "CMJR json reference") {
        let plan = r["plan"].as_str().unwrap();
        let dir = folder(plan);
        assert_eq!(json(&v, &format!("{dir}/reference.json")), r["json"]);
        assert_eq!(r["json"]["key"], directory["named_data_key"]);
        let header = json(&v, &format!("{dir}/header.json"));
        assert_eq!(header["key"], r["json"]["key"]);
        assert_eq!(header["function_name"], r["json"]["functionName"]);
        check_directory(&v, plan, directory);
        let code = text(&v, &format!("{dir}/code.txt"));
        assert!(code.contains(&format!("# this method runs function \"{plan}\"")));
        // The weights are ranges of the named-data entry, shared by both
        // functions (positional weight sharing).
        let index = json(&v, &format!("{dir}/weights/index.json"));
        let segment =
            &o["segments"][o["named_data"][0]["segment_index"].as_u64().unwrap() as usize];
        let start = segment["abs_offset"].as_u64().unwrap();
        let end = start + segment["size"].as_u64().unwrap();
        for e in index.as_array().unwrap() {
            let at = e["source"]["offset"].as_u64().unwrap();
            assert!(
                at >= start && at + e["nbytes"].as_u64().unwrap() <= end,
                "{e}"
            );
        }
    }
}

#[test]
fn graph_dot_renders() {
    if common::required::tool_or_skip("graph_dot_renders", "dot", "scripts/setup.sh").is_none() {
        return;
    }
    for (name, plan) in [("coreml_mlp", "forward"), ("coreml_multimethod", "prefill")] {
        let v = open(name);
        let dot = read(&v, &format!("{}/graph.dot", folder(plan)));
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path(), "g.dot", &dot);
        let out = std::process::Command::new("dot")
            .arg("-Tsvg")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text_of(&out.stderr));
        assert!(text_of(&out.stdout).contains("linear"));
    }
}

#[test]
fn inspect_reports_the_model_and_diff_names_weights() {
    use ptefs::delegate::{NamedData, decode_program};
    let bytes = std::fs::read(fixture_path("coreml_mlp.pte")).unwrap();
    let p = ptefs::format::ProgramFile::parse(&bytes).unwrap();
    let named = NamedData::of(&p, &[]);
    let all = decode_program(&p, &named);
    let d = all[0].decoded.as_ref().unwrap().as_ref().unwrap();
    let s = d.summary();
    assert_eq!((s.backend.as_str(), s.nodes, s.values), (BACKEND, 7, 8));
    assert_eq!((s.ops["const"], s.ops["linear"], s.ops["relu"]), (4, 2, 1));
    assert_eq!(s.constant_bytes["fp32"], 2048 + 128 + 1024 + 32);
    let names: Vec<String> = d.weights().into_iter().map(|(n, _)| n.name).collect();
    assert_eq!(
        names,
        [
            "main.004-linear.weight",
            "main.004-linear.bias",
            "main.006-linear.weight",
            "main.006-linear.bias"
        ]
    );
    let out = ptefs()
        .arg("inspect")
        .arg(fixture_path("coreml_mlp.pte"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = text_of(&out.stdout);
    assert!(
        text.contains("forward #0 CoreMLBackend: 8842 bytes"),
        "{text}"
    );
    assert!(text.contains("7 nodes, 8 values"), "{text}");
    assert!(text.contains("3232 bytes of fp32"), "{text}");
}

#[test]
fn a_mount_serves_the_package_byte_for_byte() {
    if !mounted::fuse_or_skip("a_mount_serves_the_package_byte_for_byte") {
        return;
    }
    let pte = fixture_path("coreml_mlp.pte");
    let v = view_of(std::slice::from_ref(&pte), &[]);
    let m = mounted::Mounted::new(&[pte.as_os_str()]);
    let mut n = 0;
    for (path, bytes) in files(&v) {
        if path.contains("/coreml/") {
            assert_eq!(std::fs::read(m.path(&path)).unwrap(), bytes, "{path}");
            n += 1;
        }
    }
    // 6 package files; header, code, graph.json, graph.dot; 4 .bin, 4 .npy
    // and index.json.
    assert_eq!(n, 6 + 4 + 9);
    // Copied out, it is a directory tree again.
    let out = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(m.path(&format!("{}/lowered_module", folder("forward"))))
        .arg(out.path())
        .status()
        .unwrap();
    assert!(status.success());
    let model = out
        .path()
        .join("lowered_module/model.mlpackage/Data/com.apple.CoreML/model.mlmodel");
    assert_eq!(std::fs::metadata(model).unwrap().len(), 1620);
}

/// The mlp payload and the multi-method program's named entry, as bytes.
fn mlp_payload() -> Vec<u8> {
    read(
        &open("coreml_mlp"),
        &format!("{}/../processed.bin", folder("forward")),
    )
}

fn specs() -> Vec<(String, Vec<u8>)> {
    vec![("model_type".into(), b"model".to_vec())]
}

fn tree_of(payload: Vec<u8>, named: Vec<(String, Vec<u8>)>) -> (Vec<u8>, Tree) {
    let bytes = writer::payloads::one_delegate(BACKEND, payload, specs(), named);
    let t = Tree::from_bytes("x.pte", &bytes).unwrap();
    (bytes, t)
}

fn error_of(payload: Vec<u8>, named: Vec<(String, Vec<u8>)>) -> String {
    let (bytes, t) = tree_of(payload, named);
    let dir = folder("forward");
    let ino = t
        .resolve(&format!("{dir}/ERROR.txt"))
        .unwrap_or_else(|| panic!("no ERROR.txt"));
    let f = t.file(ino).unwrap();
    let piece = f.content.read(0, f.content.len());
    let tail = piece.tail.map_or(&[][..], |(_, s)| s.bytes(&bytes));
    let mut out = Vec::new();
    piece.assemble(tail, &mut out);
    String::from_utf8(out).unwrap()
}

fn has(t: &Tree, path: &str) -> bool {
    t.resolve(&format!("{}/{path}", folder("forward")))
        .is_some()
}

#[test]
fn hostile_payloads_are_reported_with_offsets() {
    let good = mlp_payload();
    // Not a flattened directory at all.
    let e = error_of(b"hello".to_vec(), Vec::new());
    assert!(e.contains("last byte (offset 4) is not the '{'"), "{e}");
    // A node table that does not parse.
    let mut p = good.clone();
    let n = p.len();
    p[n - 2] = b'#';
    let e = error_of(p, Vec::new());
    assert!(
        e.contains("node table (read backwards from offset 8841) fails near offset"),
        "{e}"
    );
    // A file region past the files: the file is left out, the rest shown.
    let table = String::from_utf8(good[7690..].iter().rev().copied().collect()).unwrap();
    let moved = table.replace(
        r#"{"offset":4201,"size":1620}"#,
        r#"{"offset":9201,"size":1620}"#,
    );
    let mut p = good[..7690].to_vec();
    p.extend(moved.bytes().rev());
    let e = error_of(p.clone(), Vec::new());
    assert!(e.contains("node 4 (lowered_module/model.mlpackage/Data/com.apple.CoreML/model.mlmodel) data region"), "{e}");
    let (_, t) = tree_of(p, Vec::new());
    assert!(has(&t, "lowered_module/metadata.json"));
    assert!(!has(&t, "code.txt"));
    // A damaged model.mlmodel: the directory is still shown.
    let mut p = good.clone();
    p[4201] = 0xff;
    p[4202] = 0xff;
    let e = error_of(p.clone(), Vec::new());
    assert!(e.contains("model.mlmodel: protobuf Model"), "{e}");
    let (_, t) = tree_of(p, Vec::new());
    assert!(has(&t, "lowered_module/model.mlpackage/Manifest.json"));
    // A blob record without its sentinel: that weight says why.
    let mut p = good.clone();
    p[745 + 64] ^= 0xff;
    let (bytes, t) = tree_of(p, Vec::new());
    let index = t
        .resolve(&format!("{}/weights/index.json", folder("forward")))
        .unwrap();
    let f = t.file(index).unwrap();
    let piece = f.content.read(0, f.content.len());
    let mut out = Vec::new();
    piece.assemble(
        piece.tail.map_or(&[][..], |(_, s)| s.bytes(&bytes)),
        &mut out,
    );
    let index = text_of(&out);
    assert!(
        index.contains("offset 64: blob metadata sentinel is 0xdeadbe10, expected 0xdeadbeef"),
        "{index}"
    );
    // A reference whose entry is missing, and one that is not JSON.
    let r = br#"CMJR{"version": 1, "key": "nowhere", "functionName": "forward"}"#.to_vec();
    let e = error_of(r.clone(), Vec::new());
    assert!(
        e.contains(
            "named-data key \"nowhere\" is in neither the program nor an attached data file"
        ),
        "{e}"
    );
    let e = error_of(b"CMJR{\"key\"".to_vec(), Vec::new());
    assert!(
        e.contains("CMJR reference: JSON at payload offset 4"),
        "{e}"
    );
    // A reference to a function the model does not have.
    let r = br#"CMJR{"version": 1, "key": "k", "functionName": "nope"}"#.to_vec();
    let e = error_of(r, vec![("k".into(), good.clone())]);
    assert!(e.contains("names function \"nope\""), "{e}");
}

/// A smaller flattened directory for mutating every byte: the fixture's
/// `metadata.json` and `model.mlmodel`, and a `weight.bin` of one 8-byte
/// blob (whose size then disagrees with the model's type: no `.npy`),
/// under a reversed node table written as ExecuTorch writes it.
fn small_payload() -> Vec<u8> {
    let good = mlp_payload();
    let metadata = &good[..128];
    let model = &good[4201..4201 + 1620];
    let mut weights = vec![0u8; 136];
    weights[0] = 1;
    weights[4] = 2;
    weights[64..68].copy_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    weights[68] = 2;
    weights[72] = 8;
    weights[80] = 128;
    weights[128..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let mut out = Vec::new();
    out.extend_from_slice(metadata);
    out.extend_from_slice(model);
    out.extend_from_slice(&weights);
    let table = serde_json::json!({"nodes": [
        {"children": {}, "dataRegion": {"offset": 0, "size": 128}, "kind": 0, "name": "metadata.json"},
        {"children": {}, "dataRegion": {"offset": 128, "size": 1620}, "kind": 0, "name": "model.mlmodel"},
        {"children": {}, "dataRegion": {"offset": 1748, "size": 136}, "kind": 0, "name": "weight.bin"},
        {"children": {"weight.bin": 2}, "dataRegion": {"offset": 0, "size": 0}, "kind": 1, "name": "weights"},
        {"children": {"model.mlmodel": 1, "weights": 3}, "dataRegion": {"offset": 0, "size": 0}, "kind": 1, "name": "com.apple.CoreML"},
        {"children": {"com.apple.CoreML": 4}, "dataRegion": {"offset": 0, "size": 0}, "kind": 1, "name": "Data"},
        {"children": {"Data": 5}, "dataRegion": {"offset": 0, "size": 0}, "kind": 1, "name": "model.mlpackage"},
        {"children": {"metadata.json": 0, "model.mlpackage": 6}, "dataRegion": {"offset": 0, "size": 0}, "kind": 1, "name": "m"},
    ]});
    out.extend(serde_json::to_vec(&table).unwrap().into_iter().rev());
    out
}

#[test]
fn every_truncation_and_byte_flip_of_a_payload_is_survived() {
    // Every byte of a reduced directory (the fixture's 8842-byte payload
    // would be 17,684 programs; its model.mlmodel and the table's
    // structure are all here).
    let small = small_payload();
    let (_, t) = tree_of(small.clone(), Vec::new());
    assert!(has(
        &t,
        "m/model.mlpackage/Data/com.apple.CoreML/model.mlmodel"
    ));
    assert!(has(&t, "code.txt"));
    assert!(has(&t, "weights/main.004-linear.weight.bin"));
    let errors = writer::payloads::mutate_payload(BACKEND, "coreml", &small, |p| {
        writer::payloads::one_delegate(BACKEND, p, specs(), Vec::new())
    });
    assert!(
        errors >= small.len(),
        "only {errors} damaged payloads were reported"
    );
    // A reference payload, its entry intact.
    let r = br#"CMJR{"version": 1, "key": "k", "functionName": "main"}"#.to_vec();
    let errors = writer::payloads::mutate_payload(BACKEND, "coreml", &r, |p| {
        writer::payloads::one_delegate(BACKEND, p, specs(), vec![("k".into(), small.clone())])
    });
    assert!(errors > 0);
}

#[test]
fn truncations_and_flips_of_a_referenced_entry_are_survived() {
    // The named entry damaged instead of the payload: every 5th
    // truncation, and flips of the node table and of model.mlmodel's
    // first 256 bytes (its structure; the rest is repeated fields).
    let small = small_payload();
    let r = br#"CMJR{"version": 1, "key": "k", "functionName": "main"}"#.to_vec();
    let mut cases: Vec<Vec<u8>> = (0..small.len())
        .step_by(5)
        .map(|n| small[..n].to_vec())
        .collect();
    for at in (128..128 + 256).chain(1884..small.len()) {
        let mut m = small.clone();
        m[at] ^= 0xff;
        cases.push(m);
    }
    for m in cases {
        let bytes =
            writer::payloads::one_delegate(BACKEND, r.clone(), specs(), vec![("k".into(), m)]);
        let t = Tree::from_bytes("x.pte", &bytes).unwrap();
        writer::payloads::read_all(&t, &bytes);
    }
}

#[test]
fn a_reference_is_resolved_from_a_ptd_beside_the_program() {
    // The multi-method layout with the directory moved out of the program
    // into a data file of any name: found by the reference's key.
    let small = small_payload();
    let dir = tempfile::tempdir().unwrap();
    let r = br#"CMJR{"version": 1, "key": "coreml_k", "functionName": "main"}"#.to_vec();
    let pte = write_file(
        dir.path(),
        "m.pte",
        &writer::payloads::one_delegate(BACKEND, r, specs(), Vec::new()),
    );
    let ptd = writer::DataFile {
        entries: vec![("coreml_k".into(), None, writer::Bytes::Owned(small.clone()))],
    };
    write_file(dir.path(), "weights.ptd", &ptd.to_bytes());
    let v = view_of(&[pte], &[]);
    let base = folder("forward");
    let model = read(
        &v,
        &format!("{base}/m/model.mlpackage/Data/com.apple.CoreML/model.mlmodel"),
    );
    assert_eq!(model, &small[128..128 + 1620]);
    let index = json(&v, &format!("{base}/weights/index.json"));
    assert_eq!(index[0]["source"]["file"], "weights.ptd", "{index}");
    let bin = read(&v, &format!("{base}/weights/main.004-linear.weight.bin"));
    assert_eq!(bin, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(text(&v, &format!("{base}/code.txt")).contains("function main(%x: fp32[1,16])"));
}

/// A flattened directory holding only `m/model.mlpackage/Data/
/// com.apple.CoreML/model.mlmodel` with `model`.
fn model_only_payload(model: &[u8]) -> Vec<u8> {
    let dir = |name: &str, child: &str, index: usize| serde_json::json!({"children": {child: index}, "dataRegion": {"offset": 0, "size": 0}, "kind": 1, "name": name});
    let table = serde_json::json!({"nodes": [
        {"children": {}, "dataRegion": {"offset": 0, "size": model.len()}, "kind": 0, "name": "model.mlmodel"},
        dir("com.apple.CoreML", "model.mlmodel", 0),
        dir("Data", "com.apple.CoreML", 1),
        dir("model.mlpackage", "Data", 2),
        dir("m", "model.mlpackage", 3),
    ]});
    let mut out = model.to_vec();
    out.extend(serde_json::to_vec(&table).unwrap().into_iter().rev());
    out
}

/// 2,000 `const` ops all named `%c` (inline floats), each use of `%c` by
/// 2,000 ops: names stay unique in linear time, each weight lists at most
/// 64 users, and the folder is made quickly.
#[test]
fn many_weights_and_uses_do_not_multiply() {
    use prost::Message;
    use ptefs::schema::coreml as pb;
    let n = 2000;
    let f32_type = |dims: &[u64]| pb::ValueType {
        r#type: Some(pb::value_type::Type::TensorType(pb::TensorType {
            data_type: 11,
            rank: dims.len() as i64,
            dimensions: dims
                .iter()
                .map(|&d| pb::Dimension {
                    dimension: Some(pb::dimension::Dimension::Constant(
                        pb::dimension::ConstantDimension { size: d },
                    )),
                })
                .collect(),
            attributes: Default::default(),
        })),
    };
    let mut ops = Vec::new();
    for _ in 0..n {
        let val = pb::Value {
            r#type: Some(f32_type(&[2])),
            value: Some(pb::value::Value::ImmediateValue(
                pb::value::ImmediateValue {
                    value: Some(pb::value::immediate_value::Value::Tensor(pb::TensorValue {
                        value: Some(pb::tensor_value::Value::Floats(
                            pb::tensor_value::RepeatedFloats {
                                values: vec![1.5, -2.0],
                            },
                        )),
                    })),
                },
            )),
            ..Default::default()
        };
        ops.push(pb::Operation {
            r#type: "const".into(),
            outputs: vec![pb::NamedValueType {
                name: "c".into(),
                r#type: Some(f32_type(&[2])),
            }],
            attributes: [("val".to_owned(), val)].into_iter().collect(),
            ..Default::default()
        });
    }
    for k in 0..n {
        let x = pb::Argument {
            arguments: vec![pb::argument::Binding {
                binding: Some(pb::argument::binding::Binding::Name("c".into())),
            }],
        };
        ops.push(pb::Operation {
            r#type: "relu".into(),
            inputs: [("x".to_owned(), x)].into_iter().collect(),
            outputs: vec![pb::NamedValueType {
                name: format!("r{k}"),
                r#type: Some(f32_type(&[2])),
            }],
            ..Default::default()
        });
    }
    let block = pb::Block {
        operations: ops,
        outputs: vec!["r0".into()],
        ..Default::default()
    };
    let function = pb::Function {
        opset: "CoreML7".into(),
        block_specializations: [("CoreML7".to_owned(), block)].into_iter().collect(),
        ..Default::default()
    };
    let model = pb::Model {
        specification_version: 8,
        r#type: Some(pb::model::Type::MlProgram(pb::Program {
            version: 1,
            functions: [("main".to_owned(), function)].into_iter().collect(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let payload = model_only_payload(&model.encode_to_vec());
    let started = std::time::Instant::now();
    let (bytes, t) = tree_of(payload, Vec::new());
    writer::payloads::read_all(&t, &bytes);
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    let dir = format!("{}/weights", folder("forward"));
    let ino = t.resolve(&format!("{dir}/index.json")).unwrap();
    let f = t.file(ino).unwrap();
    let piece = f.content.read(0, f.content.len());
    let mut out = Vec::new();
    piece.assemble(
        piece.tail.map_or(&[][..], |(_, s)| s.bytes(&bytes)),
        &mut out,
    );
    let index: Json = serde_json::from_slice(&out).unwrap();
    let index = index.as_array().unwrap();
    assert_eq!(index.len(), n);
    assert_eq!(index[0]["name"], "main.2000-relu.x.bin");
    assert_eq!(index[1]["name"], "main.2000-relu.x-1.bin");
    assert_eq!(index[0]["users"].as_array().unwrap().len(), 64);
    assert_eq!(index[0]["user_count"], n);
    assert_eq!(index[0]["stored"], "inline");
    assert_eq!(
        index[n - 1]["name"],
        "main.2000-relu.x-1999.bin",
        "{}",
        index[n - 1]
    );
    assert!(
        t.resolve(&format!("{dir}/main.2000-relu.x-1999.npy"))
            .is_some()
    );
}
