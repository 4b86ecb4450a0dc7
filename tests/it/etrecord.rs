//! ETRecords from ExecuTorch 1.5.1 (tests/fixtures/etrecord) against the
//! oracles torch.load and parse_etrecord wrote, and hostile ones made from
//! them: each gives an error and a partial tree, never a crash.

use crate::common::in_memory::{bytes_at, cat, json_at, text_at};
use crate::common::{fixture, npy_payload, sha256};

use ptefs::tree::Tree;
use serde_json::Value;

const NAMES: [&str; 2] = ["portable_mlp", "xnnpack_mobilenetish"];

fn open(name: &str) -> (Vec<u8>, Tree, Value) {
    let bytes = std::fs::read(fixture(&format!("etrecord/{name}.etrecord"))).unwrap();
    let tree = Tree::from_bytes(&format!("{name}.etrecord"), &bytes).unwrap();
    let oracle: Value = serde_json::from_slice(
        &std::fs::read(fixture(&format!("etrecord/{name}.oracle.json"))).unwrap(),
    )
    .unwrap();
    (bytes, tree, oracle)
}

/// Where the tree shows a torch.save member's tensors.
fn archive_dir(member: &str) -> String {
    for (suffix, dir) in [
        ("_state_dict", "state_dict"),
        ("_constants", "constants"),
        ("_example_inputs", "example_inputs"),
    ] {
        if let Some(graph) = member.strip_suffix(suffix) {
            return format!("graphs/{graph}/{dir}");
        }
    }
    member.to_owned()
}

#[test]
fn every_tensor_equals_torch_load_by_sha256() {
    let mut checked = 0;
    for name in NAMES {
        let (bytes, tree, oracle) = open(name);
        for (member, m) in oracle["members"].as_object().unwrap() {
            let Some(tensors) = m.get("tensors").and_then(Value::as_object) else {
                continue;
            };
            for (path, t) in tensors {
                let file = format!("{}/{path}.npy", archive_dir(member));
                let npy = cat(&tree, &bytes, &file);
                assert_eq!(
                    sha256(npy_payload(&npy)),
                    t["sha256"].as_str().unwrap(),
                    "{name}: {file}"
                );
                let header = String::from_utf8_lossy(&npy[..npy.len().min(128)]).into_owned();
                let shape: Vec<String> = t["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.to_string())
                    .collect();
                let want = match shape.len() {
                    1 => format!("({},)", shape[0]),
                    _ => format!("({})", shape.join(", ")),
                };
                assert!(header.contains(&want), "{file}: {header} lacks {want}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} tensors checked");
}

#[test]
fn maps_and_programs_are_shown_as_stored() {
    for name in NAMES {
        let (bytes, tree, oracle) = open(name);
        assert_eq!(
            json_at(&tree, &bytes, "debug_handle_map.json"),
            oracle["debug_handle_map"]
        );
        assert_eq!(
            json_at(&tree, &bytes, "delegate_map.json"),
            oracle["delegate_map"]
        );
        assert_eq!(
            json_at(&tree, &bytes, "instruction_outs.json"),
            oracle["instruction_id_to_num_outs_map"]
        );
        for graph in oracle["graphs"].as_object().unwrap().keys() {
            let json = json_at(&tree, &bytes, &format!("graphs/{graph}/program.json"));
            assert!(
                json.pointer("/graph_module/graph/nodes").is_some(),
                "{graph}"
            );
        }
    }
}

/// The first frame of a stack trace as `file:line`.
fn first_frame(trace: &str) -> String {
    let line = trace
        .lines()
        .find(|l| l.trim_start().starts_with("File "))
        .unwrap();
    let (file, rest) = line.trim_start()["File \"".len()..]
        .split_once('"')
        .unwrap();
    let n = rest
        .trim_start_matches(", line ")
        .split(',')
        .next()
        .unwrap();
    format!("{file}:{n}")
}

#[test]
fn nodes_tsv_has_each_nodes_handle_module_stack_and_source_line() {
    let mut rows = 0;
    for name in NAMES {
        let (bytes, tree, oracle) = open(name);
        for (graph, g) in oracle["graphs"].as_object().unwrap() {
            let tsv = text_at(&tree, &bytes, &format!("graphs/{graph}/nodes.tsv")).unwrap();
            let text = text_at(&tree, &bytes, &format!("graphs/{graph}/graph.txt")).unwrap();
            let lines: Vec<Vec<&str>> = tsv
                .lines()
                .skip(1)
                .map(|l| l.split('\t').collect())
                .collect();
            for n in g["nodes"].as_array().unwrap() {
                if n["op"] != "call_function" {
                    continue;
                }
                let node = n["name"].as_str().unwrap();
                let row = lines
                    .iter()
                    .find(|r| r[0] == node)
                    .unwrap_or_else(|| panic!("{name} {graph}: no row for {node}"));
                assert_eq!(row[1], "call_function");
                let handle = n["debug_handle"]
                    .as_i64()
                    .map_or(String::new(), |h| h.to_string());
                assert_eq!(row[3], handle, "{node}");
                let hierarchy: Vec<String> = n["nn_module_stack"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|v| format!("{}:{}", v[0].as_str().unwrap(), v[1].as_str().unwrap()))
                    .collect();
                assert_eq!(row[4], hierarchy.join(";"), "{node}");
                let frame = n["stack_trace"]
                    .as_str()
                    .map(first_frame)
                    .unwrap_or_default();
                assert_eq!(row[5], frame, "{node}");
                assert!(
                    text.lines().any(|l| l.starts_with(&format!("%{node} = "))
                        && (frame.is_empty() || l.ends_with(&frame))),
                    "{graph}: graph.txt has no line for {node}"
                );
                rows += 1;
            }
        }
    }
    assert!(rows >= 20, "only {rows} nodes checked");
}

fn hostile(name: &str) -> (Vec<u8>, Tree) {
    let bytes = std::fs::read(fixture(&format!("etrecord/hostile/{name}"))).unwrap();
    let tree = Tree::from_bytes(name, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    (bytes, tree)
}

#[test]
fn refused_globals_leave_an_error_file_and_the_rest_of_the_tree() {
    for (file, archive, global) in [
        (
            "os_system.etrecord",
            "graphs/exported_program/state_dict",
            "posix.system",
        ),
        (
            "builtins_eval.etrecord",
            "graphs/exported_program/constants",
            "builtins.eval",
        ),
    ] {
        let (bytes, tree) = hostile(file);
        let why = text_at(&tree, &bytes, &format!("{archive}.ERROR.txt")).unwrap();
        assert!(
            why.contains(&format!("global {global} is not one")),
            "{why}"
        );
        let header = json_at(&tree, &bytes, "header.json");
        assert!(header["errors"].to_string().contains(global));
        // The other program's tensors are still there, bytes intact.
        let npy = cat(
            &tree,
            &bytes,
            "graphs/edge_dialect_exported_program/forward/state_dict/l1.weight.npy",
        );
        assert_eq!(npy_payload(&npy).len(), 32 * 16 * 4);
    }
}

#[test]
fn a_deep_pickle_is_an_error_not_a_stack_overflow() {
    let (bytes, tree) = hostile("deep.etrecord");
    let why = text_at(&tree, &bytes, "reference_outputs/0_0_0_0.ERROR.txt").unwrap();
    assert!(why.contains("nested deeper than 128 levels"), "{why}");
    assert!(bytes_at(&tree, &bytes, "representative_inputs/0/0.npy").is_some());
}

#[test]
fn a_storage_shorter_than_its_tensor_is_named() {
    let (bytes, tree) = hostile("short_storage.etrecord");
    let why = text_at(
        &tree,
        &bytes,
        "graphs/exported_program/state_dict/l1.weight.ERROR.txt",
    )
    .unwrap();
    assert_eq!(
        why,
        "state_dict/l1.weight: storage 0 claims 2048 bytes (512 elements), but data/0 holds 4\n"
    );
    assert!(
        bytes_at(
            &tree,
            &bytes,
            "graphs/exported_program/state_dict/l1.bias.npy"
        )
        .is_some()
    );
}

#[test]
fn a_truncated_etrecord_is_an_error_naming_the_zip_record() {
    let bytes = std::fs::read(fixture("etrecord/hostile/truncated.etrecord")).unwrap();
    let e = Tree::from_bytes("truncated.etrecord", &bytes)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no zip end of central directory record"), "{e}");
    // Every prefix of a real ETRecord opens or errs, never panics.
    let whole = std::fs::read(fixture("etrecord/portable_mlp.etrecord")).unwrap();
    for len in (0..whole.len()).step_by(97) {
        let _ = Tree::from_bytes("cut.etrecord", &whole[..len]);
    }
}

/// Every file under `root`: relative path → bytes.
fn files_under(root: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn etrecords_mount_to_their_offline_tree() {
    use crate::common::mounted::{Mounted, fuse_or_skip};
    if !fuse_or_skip("etrecords_mount_to_their_offline_tree") {
        return;
    }
    for name in NAMES {
        let file = format!("etrecord/{name}.etrecord");
        let m = Mounted::new(&[fixture(&file).as_os_str()]);
        let got = files_under(&m.dir);
        assert_eq!(
            got,
            crate::common::files(&crate::common::view(&file)),
            "{name}"
        );
        // The mounted tensor's bytes are torch.load's.
        let oracle: Value = serde_json::from_slice(
            &std::fs::read(fixture(&format!("etrecord/{name}.oracle.json"))).unwrap(),
        )
        .unwrap();
        let sd = oracle["members"]["exported_program_state_dict"]["tensors"]
            .as_object()
            .unwrap();
        for (fqn, t) in sd {
            let npy =
                std::fs::read(m.path(&format!("graphs/exported_program/state_dict/{fqn}.npy")))
                    .unwrap();
            assert_eq!(
                sha256(npy_payload(&npy)),
                t["sha256"].as_str().unwrap(),
                "{fqn}"
            );
        }
    }
}

/// `methods/forward/source.tsv` of `program` shown with `etrecord`.
fn source_tsv(program: &str, etrecord: &str) -> Vec<Vec<String>> {
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture(program)],
        etrecord: Some(fixture(etrecord)),
        ..Default::default()
    })
    .unwrap();
    let tsv = String::from_utf8(crate::common::read(&v, "methods/forward/source.tsv")).unwrap();
    let mut lines = tsv.lines();
    assert_eq!(
        lines.next(),
        Some("kind\tid\tdebug_handles\tnodes\tmodule_hierarchy\tstack_frame")
    );
    lines
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

#[test]
fn source_tsv_names_each_instructions_modules_and_lines_as_inspector_does() {
    let rows = source_tsv("etdump/portable_mlp.pte", "etrecord/portable_mlp.etrecord");
    let (_, _, oracle) = open("portable_mlp");
    let mut checked = 0;
    for e in oracle["inspector_events"].as_array().unwrap() {
        let hierarchy = e["module_hierarchy"].as_object().unwrap();
        if hierarchy.is_empty() {
            continue;
        }
        let id = e["instruction_id"].as_i64().unwrap().to_string();
        let row = rows
            .iter()
            .find(|r| r[0] == "instruction" && r[1] == id)
            .unwrap_or_else(|| panic!("no row for instruction {id}"));
        let handles = e["debug_handles"].to_string();
        assert_eq!(row[2], handles, "instruction {id}");
        let modules: Vec<&str> = row[4].split(';').collect();
        for stack in hierarchy.values() {
            let stack = stack.as_object().unwrap();
            let path = stack
                .values()
                .map(|v| v[0].as_str().unwrap())
                .rfind(|p| !p.is_empty())
                .unwrap_or(".");
            let class = stack.values().next_back().unwrap()[1].as_str().unwrap();
            let want = format!("{path} ({class})");
            assert!(
                modules.contains(&want.as_str()),
                "{id}: {want} not in {modules:?}"
            );
        }
        let frames: Vec<&str> = row[5].split(';').collect();
        for trace in e["stack_traces"].as_object().unwrap().values() {
            let want = first_frame(trace.as_str().unwrap());
            assert!(
                frames.contains(&want.as_str()),
                "{id}: {want} not in {frames:?}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} events checked");
}

#[test]
fn an_etrecord_beside_a_program_is_found_by_its_stem() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("model.pte");
    std::fs::copy(fixture("etdump/portable_mlp.pte"), &program).unwrap();
    std::fs::copy(
        fixture("etrecord/portable_mlp.etrecord"),
        dir.path().join("model.etrecord"),
    )
    .unwrap();
    let (req, notes) = ptefs::view::Request {
        inputs: vec![program],
        auto_data: true,
        ..Default::default()
    }
    .with_found_data();
    assert_eq!(req.etrecord, Some(dir.path().join("model.etrecord")));
    assert!(
        notes.iter().any(|n| n.contains("as its ETRecord")),
        "{notes:?}"
    );
    let v = ptefs::view::View::open(&req).unwrap();
    let tsv = String::from_utf8(crate::common::read(&v, "methods/forward/source.tsv")).unwrap();
    assert!(
        tsv.contains("instruction\t2\t2\taten_relu_default\t. (__main__.MLP)\t"),
        "{tsv}"
    );
}

#[test]
fn a_program_given_as_etrecord_is_refused_by_name() {
    let e = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("etdump/portable_mlp.pte")],
        etrecord: Some(fixture("etdump/portable_mlp.pte")),
        ..Default::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("is given with --etrecord but is not an ETRecord"),
        "{e}"
    );
}

#[test]
fn code_txt_lines_end_with_the_module_and_source_line_inspector_gives() {
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("etdump/portable_mlp.pte")],
        etrecord: Some(fixture("etrecord/portable_mlp.etrecord")),
        ..Default::default()
    })
    .unwrap();
    let code = String::from_utf8(crate::common::read(&v, "methods/forward/code.txt")).unwrap();
    let (_, _, oracle) = open("portable_mlp");
    let mut checked = 0;
    for e in oracle["inspector_events"].as_array().unwrap() {
        if e["name"] != "OPERATOR_CALL" {
            continue;
        }
        let id = e["instruction_id"].as_i64().unwrap();
        let line = code
            .lines()
            .find(|l| l.starts_with(&format!("{id}: ")))
            .unwrap();
        let (_, note) = line.split_once("  # ").unwrap();
        let stack = e["module_hierarchy"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap();
        let inner = stack.as_object().unwrap().values().next_back().unwrap();
        let path = inner[0].as_str().unwrap();
        let path = if path.is_empty() { "." } else { path };
        let trace = e["stack_traces"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap();
        let want = format!(
            "{path} ({}) {}",
            inner[1].as_str().unwrap(),
            first_frame(trace.as_str().unwrap())
        );
        assert_eq!(note, want, "instruction {id}");
        checked += 1;
    }
    assert_eq!(checked, 5);
}
