//! Native program packages (`.ptn`) against their oracles
//! (`tests/fixtures/*.ptn.oracle.jsonl`, written by a reader independent
//! of ptefs) and against flatc's own JSON of each `program.ptg`.

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;

use common::*;
use ptefs::format::{self, Parsed};
use ptefs::view::View;
use serde_json::{Value, json};

const PACKAGES: [&str; 4] = ["conv", "kv", "mlp", "tied"];

fn oracle(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture(&format!("{name}.ptn.oracle.jsonl"))).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn lines<'a>(o: &'a [Value], field: &str) -> Vec<&'a Value> {
    o.iter().filter(|l| l.get(field).is_some()).collect()
}

/// The index entries of `tensors/index.json` by key.
fn index(v: &View) -> BTreeMap<String, Value> {
    let Value::Array(entries) = json(v, "tensors/index.json") else {
        panic!("index.json is not a list")
    };
    entries
        .into_iter()
        .map(|e| (e["key"].as_str().unwrap().to_owned(), e))
        .collect()
}

#[test]
fn members_match_the_oracle() {
    for name in PACKAGES {
        let v = view(&format!("{name}.ptn"));
        let o = oracle(name);
        let pkg = json(&v, "package.json");
        let members = pkg["members"].as_array().unwrap();
        let want = lines(&o, "member");
        assert_eq!(members.len(), want.len(), "{name}");
        let file = std::fs::read(fixture(&format!("{name}.ptn"))).unwrap();
        for (m, w) in members.iter().zip(want) {
            assert_eq!(m["name"], w["member"], "{name}");
            assert_eq!(m["data_offset"], w["data_offset"], "{name}");
            assert_eq!(m["size"], w["size"], "{name}");
            assert_eq!(m["compression"], w["compression"], "{name}");
            let (at, len) = (
                w["data_offset"].as_u64().unwrap() as usize,
                w["size"].as_u64().unwrap() as usize,
            );
            let path = format!("members/{}", w["member"].as_str().unwrap());
            assert_eq!(read(&v, &path), &file[at..at + len], "{name} {path}");
        }
        assert_eq!(pkg["graph"]["file_identifier"], "NPTG");
        assert_eq!(pkg["errors"], json!([]));
        assert!(v.tree.resolve("ERROR.txt").is_none(), "{name}");
    }
}

#[test]
fn every_key_has_the_oracle_bytes_type_and_uses() {
    for name in PACKAGES {
        let v = view(&format!("{name}.ptn"));
        let idx = index(&v);
        let o = oracle(name);
        let keys = lines(&o, "key");
        for w in &keys {
            let key = w["key"].as_str().unwrap();
            let e = &idx[key];
            let bin = read(&v, &format!("tensors/{}", e["name"].as_str().unwrap()));
            assert_eq!(sha256(&bin), w["sha256"], "{name} {key}");
            assert_eq!(bin.len() as u64, w["nbytes"].as_u64().unwrap());
            assert_eq!(e["nbytes"], w["nbytes"], "{name} {key}");
            assert_eq!(e["dtype"], w["dtype"], "{name} {key}");
            assert_eq!(e["sizes"], w["shape"], "{name} {key}");
            assert_eq!(e["npy_shape"], w["shape"], "{name} {key}");
            assert_eq!(e["source"]["offset"], w["offset_in_file"], "{name} {key}");
            assert_eq!(e["kind"], w["kind"], "{name} {key}");
            assert_eq!(e["mutated"], w["mutated"], "{name} {key}");
            assert_eq!(e["used_by"], w["used_by"], "{name} {key}");
            assert_eq!(e["location"], "safetensors");
            let raw = w["dtype"] == "BF16";
            assert_eq!(e["raw_bits"], raw, "{name} {key}");
            let npy = read(&v, &format!("tensors/{}", e["npy"].as_str().unwrap()));
            assert!(
                npy.ends_with(&bin) && npy.starts_with(b"\x93NUMPY"),
                "{name} {key}"
            );
            assert_eq!((npy.len() - bin.len()) % 64, 0, "{name} {key}");
        }
        let aliases = lines(&o, "alias");
        let buffers = lines(&o, "mutable_buffer");
        assert_eq!(
            idx.len(),
            keys.len() + aliases.len() + buffers.len(),
            "{name}"
        );
        for w in aliases {
            let key = w["alias"].as_str().unwrap();
            let e = &idx[key];
            assert_eq!(e["alias_of"], w["owner"], "{name} {key}");
            assert_eq!(e["location"], "alias");
            let owner = &idx[w["owner"].as_str().unwrap()];
            assert_eq!(e["source"], owner["source"], "{name} {key}");
            let bin = read(&v, &format!("tensors/{}", e["name"].as_str().unwrap()));
            assert_eq!(sha256(&bin), w["sha256"], "{name} {key}");
            assert!(!e["used_by"].as_array().unwrap().is_empty(), "{name} {key}");
        }
        for w in buffers {
            let key = w["mutable_buffer"].as_str().unwrap();
            let e = &idx[key];
            assert_eq!(e["location"], "none", "{name} {key}");
            assert!(e.get("name").is_none(), "{name} {key}: a file for no bytes");
            assert_eq!(e["scalar_type"], w["scalar_type"], "{name} {key}");
            assert_eq!(e["sizes"], w["sizes"], "{name} {key}");
            assert_eq!(e["kind"], "MUTABLE_BUFFER");
            assert_eq!(e["mutated"], true, "{name} {key}");
            let methods: Vec<&Value> = (e["used_by"].as_array().unwrap().iter())
                .map(|u| &u[0])
                .collect();
            let want: Vec<&Value> = w["methods"].as_array().unwrap().iter().collect();
            assert_eq!(methods, want, "{name} {key}");
        }
    }
}

#[test]
fn methods_match_the_oracle() {
    for name in PACKAGES {
        let v = view(&format!("{name}.ptn"));
        let bytes = std::fs::read(fixture(&format!("{name}.ptn"))).unwrap();
        let Ok(Parsed::Package(p)) = format::parse(&bytes) else {
            panic!("{name} does not parse as a package")
        };
        let summary = p.summary();
        let o = oracle(name);
        let want = lines(&o, "method");
        assert_eq!(summary.methods.len(), want.len(), "{name}");
        for (m, w) in summary.methods.iter().zip(want) {
            let c = serde_json::to_value(&m.counts).unwrap();
            assert_eq!(m.name, w["method"].as_str().unwrap());
            for field in [
                "nodes",
                "placeholders",
                "calls",
                "outputs",
                "constants",
                "mutable_buffers",
                "user_inputs",
                "targets",
            ] {
                assert_eq!(c[field], w[field], "{name} {} {field}", m.name);
            }
            let code =
                String::from_utf8(read(&v, &format!("methods/{}/code.txt", m.name))).unwrap();
            let body: Vec<&str> = code.lines().filter(|l| !l.starts_with('#')).collect();
            assert_eq!(body.len() as u64, m.counts.nodes, "{name} {}", m.name);
            let calls = body.iter().filter(|l| l.starts_with('%')).count();
            assert_eq!(calls as u64, m.counts.calls, "{name} {}", m.name);
            for (target, n) in w["targets"].as_object().unwrap() {
                let found = body
                    .iter()
                    .filter(|l| l.contains(&format!(" = {target}(")))
                    .count();
                assert_eq!(found as u64, n.as_u64().unwrap(), "{name} {target}");
            }
            let io = json(&v, &format!("methods/{}/io.json", m.name));
            let inputs: Vec<&Value> = io["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| &i["name"])
                .collect();
            let want_inputs: Vec<&Value> = w["user_inputs"].as_array().unwrap().iter().collect();
            assert_eq!(inputs, want_inputs, "{name} {}", m.name);
            assert_eq!(
                io["constants"].as_array().unwrap().len() as u64,
                w["constants"].as_u64().unwrap()
            );
        }
    }
}

#[test]
fn every_node_is_in_code_txt() {
    for name in PACKAGES {
        let v = view(&format!("{name}.ptn"));
        let program = json(&v, "program.json");
        for m in program["methods"].as_array().unwrap() {
            let code = String::from_utf8(read(
                &v,
                &format!("methods/{}/code.txt", m["name"].as_str().unwrap()),
            ))
            .unwrap();
            let nodes = m["graph"]["nodes"].as_array().unwrap();
            let lines: Vec<&str> = code.lines().skip(1).collect();
            assert_eq!(lines.len(), nodes.len(), "{name}");
            for (n, line) in nodes.iter().zip(&lines) {
                let node = n["name"].as_str().unwrap();
                match n["op_kind"].as_str().unwrap() {
                    "PLACEHOLDER" => assert!(line.starts_with(&format!("input %{node}")), "{line}"),
                    "OUTPUT" => assert!(line.starts_with("output %"), "{line}"),
                    _ => {
                        let named = line.starts_with(&format!("%{node}"))
                            || line.ends_with(&format!("  # node {node}"));
                        assert!(named, "{line}");
                        for o in n["outputs"].as_array().unwrap() {
                            let out = o["name"].as_str().unwrap();
                            assert!(line.contains(&format!("%{out}")), "{out} in {line}");
                        }
                        for a in n["inputs"].as_array().unwrap() {
                            let arg = a["name"].as_str().unwrap();
                            assert!(line.contains(&format!("{arg}=")), "{arg} in {line}");
                        }
                        if let Some(alias) = n["outputs"][0]["alias_of"].as_str() {
                            assert!(line.contains(&format!("(alias_of %{alias})")), "{line}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn mutated_marks_come_from_every_place_the_format_records_them() {
    let v = view("kv.ptn");
    let code = String::from_utf8(read(&v, "methods/decode/code.txt")).unwrap();
    // The argument flag: index_put_ writes the caches in place.
    assert!(code.contains("self=%b_k_cache mutated"), "{code}");
    // The output specs: steps is updated through BUFFER_MUTATION only.
    assert!(
        code.contains("input %b_steps: FLOAT[1] = BUFFER steps (mutated)"),
        "{code}"
    );
    assert!(
        code.contains("%aten_add_tensor (BUFFER_MUTATION steps)"),
        "{code}"
    );
    assert!(
        code.contains("= mutable buffer k_cache (mutated)"),
        "{code}"
    );
    assert!(!code.contains("BUFFER floor (mutated)"), "{code}");
}

#[test]
fn program_and_graph_json_are_what_flatc_prints() {
    for name in PACKAGES {
        let v = view(&format!("{name}.ptn"));
        let flatc: Value = serde_json::from_slice(
            &std::fs::read(fixture(&format!("flatc-json/{name}.ptg.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(json(&v, "program.json"), flatc, "{name}");
        for m in flatc["methods"].as_array().unwrap() {
            let path = format!("methods/{}/graph.json", m["name"].as_str().unwrap());
            assert_eq!(&json(&v, &path), m, "{name} {path}");
        }
    }
}

#[test]
fn readme_and_io_json_describe_the_package() {
    let v = view("kv.ptn");
    let readme = String::from_utf8(read(&v, "README.txt")).unwrap();
    for part in [
        "package.json",
        "program.json",
        "tensors/",
        "code.txt",
        "graph.dot",
        "io.json",
    ] {
        assert!(readme.contains(part), "{part}");
    }
    let io = json(&v, "methods/prefill/io.json");
    let outputs = io["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 4);
    assert_eq!(outputs[2]["kind"], "BUFFER_MUTATION");
    assert_eq!(outputs[2]["target"], "steps");
    assert_eq!(outputs[3]["kind"], "USER_OUTPUT");
    let buffers = io["mutable_buffers"].as_array().unwrap();
    assert_eq!(buffers[0]["fqn"], "k_cache");
    assert_eq!(buffers[0]["sizes"], json!([16, 8]));
    let c = &io["constants"].as_array().unwrap()[0];
    let path = c["path"].as_str().unwrap();
    assert!(v.tree.resolve(path).is_some(), "{path}");
}

#[test]
fn graph_dot_names_every_call_and_renders() {
    for name in PACKAGES {
        let v = view(&format!("{name}.ptn"));
        let program = json(&v, "program.json");
        for m in program["methods"].as_array().unwrap() {
            let mname = m["name"].as_str().unwrap();
            let dot = String::from_utf8(read(&v, &format!("methods/{mname}/graph.dot"))).unwrap();
            assert!(dot.starts_with("digraph ") && dot.ends_with("}\n"), "{dot}");
            for n in m["graph"]["nodes"].as_array().unwrap() {
                let id = format!("\"{}\" [", n["name"].as_str().unwrap());
                assert!(dot.contains(&id), "{name} {mname}: {id}");
            }
            let edges: Vec<&str> = dot.lines().filter(|l| l.contains(" -> ")).collect();
            assert!(!edges.is_empty(), "{name} {mname}");
            // Every tensor edge is labelled with its name, dtype and shape.
            for e in edges {
                let label = e.split("label=\"").nth(1).unwrap();
                let (_, ty) = label.split_once("\\n").unwrap_or_else(|| panic!("{e}"));
                assert!(
                    ty.contains('[') && ty.chars().next().unwrap().is_ascii_uppercase(),
                    "{e}"
                );
            }
            render_with_graphviz(&dot);
        }
    }
}

/// `dot -Tsvg` must accept the text (when Graphviz is installed, which
/// the setup script does; the test is skipped loudly otherwise, or fails
/// when the run requires every component).
fn render_with_graphviz(dot: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let Some(dot_bin) = common::required::tool_or_skip(
        "graph_dot_names_every_call_and_renders",
        "dot",
        "scripts/setup.sh",
    ) else {
        return;
    };
    let mut child = Command::new(dot_bin)
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dot.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "dot -Tsvg failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
}

#[test]
fn every_fixture_tensor_loads_in_numpy() {
    for name in PACKAGES {
        let dir = tempfile::tempdir().unwrap();
        extract(&view(&format!("{name}.ptn")), dir.path());
        let out = python(NUMPY_CHECK, &[dir.path()]);
        let n = index(&view(&format!("{name}.ptn")))
            .values()
            .filter(|e| e["npy"].is_string())
            .count();
        assert!(out.contains(&format!("checked {n}")), "{name}: {out}");
    }
}

#[test]
fn a_directory_source_picks_up_packages() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["mlp.ptn", "tied.ptn", "mlp.pte"] {
        std::fs::copy(fixture(f), dir.path().join(f)).unwrap();
    }
    let v = view_of(&[dir.path().to_owned()], &[]);
    assert!(v.skipped.is_empty(), "{:?}", v.skipped);
    let mlp = read(&v, "mlp.ptn/tensors/fc1.weight.bin");
    assert_eq!(mlp, read(&view("mlp.ptn"), "tensors/fc1.weight.bin"));
    assert!(
        v.tree
            .resolve("tied.ptn/methods/forward/code.txt")
            .is_some()
    );
    assert!(v.tree.resolve("mlp.pte/methods/forward/code.txt").is_some());
}

#[test]
fn inspect_reports_the_package() {
    let r = ptefs_json([
        OsStr::new("inspect"),
        OsStr::new("--json"),
        fixture("kv.ptn").as_os_str(),
    ]);
    assert_eq!(r["kind"], "package");
    assert_eq!(r["identifier"], "NPTG");
    let p = &r["package"];
    assert_eq!(p["stored_tensors"], 6);
    assert_eq!(p["stored_bytes"], 304);
    let o = oracle("kv");
    for (m, w) in p["methods"]
        .as_array()
        .unwrap()
        .iter()
        .zip(lines(&o, "method"))
    {
        assert_eq!(m["name"], w["method"]);
        for field in ["nodes", "placeholders", "calls", "targets", "user_inputs"] {
            assert_eq!(m[field], w[field], "{field}");
        }
        // 15 graph values (14 FLOAT, 1 LONG) and 6 FLOAT constants.
        assert_eq!(
            m["tensors_by_dtype"],
            json!([
                {"dtype": "FLOAT", "count": 20, "bytes": 304},
                {"dtype": "LONG", "count": 1, "bytes": 0}
            ])
        );
    }
    let shares: u64 = (r["composition"].as_array().unwrap().iter())
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(shares, 16114);
    let text = ptefs()
        .arg("inspect")
        .arg(fixture("kv.ptn"))
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with("kv.ptn: ExecuTorch native program package, identifier NPTG"),
        "{text}"
    );
    assert!(
        text.contains("prefill: 22 nodes (10 placeholders, 11 calls, 1 outputs)"),
        "{text}"
    );
}
