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

/// A module stack (`{key: [path, class]}`, outermost first) as the
/// innermost module with a path and the innermost class: `path (Class)`.
pub(crate) fn module_label(stack: &Value) -> String {
    let stack = stack.as_object().unwrap();
    let path = (stack.values().map(|v| v[0].as_str().unwrap()))
        .rfind(|p| !p.is_empty())
        .unwrap_or(".");
    let class = stack.values().next_back().unwrap()[1].as_str().unwrap();
    format!("{path} ({class})")
}

/// The frame of a stack trace a user wants, as `file:line`: the innermost
/// outside torch's and ExecuTorch's own files (a path through a `torch` or
/// `executorch` directory), else the innermost.
pub(crate) fn model_frame(trace: &str) -> String {
    let frames: Vec<(String, String)> = trace
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("File \""))
        .map(|rest| {
            let (file, rest) = rest.split_once('"').unwrap();
            let n = rest
                .trim_start_matches(", line ")
                .split(',')
                .next()
                .unwrap();
            (file.to_owned(), n.to_owned())
        })
        .collect();
    let library = |f: &str| {
        let dirs: Vec<&str> = f.split('/').collect();
        dirs[..dirs.len() - 1]
            .iter()
            .any(|d| *d == "torch" || *d == "executorch")
    };
    let (file, n) = (frames.iter().rev())
        .find(|(f, _)| !library(f))
        .or(frames.last())
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
                    .map(model_frame)
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
            let want = model_frame(trace.as_str().unwrap());
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

/// An ETRecord of another program is not joined: its debug-handle map
/// pairs the program's instructions with nodes of other operators, or
/// lists instructions the program lacks. Given, the warning and
/// README.txt say why (and `cat` still succeeds); found beside the
/// program, a note does.
#[test]
fn an_etrecord_of_another_program_is_not_joined() {
    let tiny = fixture("etrecord/tiny_gpt.pte");
    for (other, why) in [
        (
            "etrecord/portable_mlp.etrecord",
            "instruction 0 (aten::embedding.out) with aten.permute_copy.default, aten.addmm.default",
        ),
        (
            "etrecord/delegate_map_demo.etrecord",
            "instruction 0 (aten::embedding.out) with aten.convolution.default",
        ),
    ] {
        let v = ptefs::view::View::open(&ptefs::view::Request {
            inputs: vec![tiny.clone()],
            etrecord: Some(fixture(other)),
            ..Default::default()
        })
        .unwrap();
        let name = other.rsplit('/').next().unwrap();
        assert!(!crate::common::ls(&v, "methods/forward").contains(&"source.tsv".to_owned()));
        let warning = (v.tree.warnings.iter())
            .find(|w| w.contains(name))
            .unwrap_or_else(|| panic!("no warning: {:?}", v.tree.warnings));
        assert!(
            warning.contains("not the ETRecord of tiny_gpt.pte") && warning.contains(why),
            "{warning}"
        );
        let readme = String::from_utf8(crate::common::read(&v, "README.txt")).unwrap();
        assert!(
            readme.contains(&format!("methods/forward/source.tsv: ETRecord {name}")),
            "{readme}"
        );
        // code.txt is not annotated with the other program's modules.
        let code = String::from_utf8(crate::common::read(&v, "methods/forward/code.txt")).unwrap();
        assert!(!code.contains("  # "), "{code}");
    }
    // A larger model's map lists instructions the program lacks.
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("etdump/portable_mlp.pte")],
        etrecord: Some(fixture("etrecord/tiny_gpt.etrecord")),
        ..Default::default()
    })
    .unwrap();
    assert!(
        (v.tree.warnings.iter())
            .any(|w| w
                .contains("lists instruction 104 of method \"forward\", which has 5 instructions")),
        "{:?}",
        v.tree.warnings
    );
    let run = crate::common::ptefs_run([
        "cat".as_ref(),
        tiny.as_os_str(),
        "--etrecord".as_ref(),
        fixture("etrecord/portable_mlp.etrecord").as_os_str(),
        "methods/forward/code.txt".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}", run.err);
    assert!(
        run.err.contains("not the ETRecord of tiny_gpt.pte"),
        "{}",
        run.err
    );
    // Found beside the program: not attached, with a note saying why.
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("attn.pte");
    std::fs::copy(&tiny, &program).unwrap();
    std::fs::copy(
        fixture("etrecord/portable_mlp.etrecord"),
        dir.path().join("etrecord.bin"),
    )
    .unwrap();
    let (req, notes) = ptefs::view::Request {
        inputs: vec![program],
        auto_data: true,
        ..Default::default()
    }
    .with_found_data();
    assert_eq!(req.etrecord, None);
    assert!(
        notes.iter().any(|n| n.contains("not attached")
            && n.contains("etrecord.bin")
            && n.contains("instruction 0 (aten::embedding.out)")),
        "{notes:?}"
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
            model_frame(trace.as_str().unwrap())
        );
        assert_eq!(note, want, "instruction {id}");
        checked += 1;
    }
    assert_eq!(checked, 5);
}

/// `program` shown with its profile and its ETRecord.
pub(crate) fn profiled(program: &str, profile: &str, etrecord: &str) -> ptefs::view::View {
    ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture(program)],
        profile: Some(fixture(profile)),
        etrecord: Some(fixture(etrecord)),
        ..Default::default()
    })
    .unwrap()
}

/// The rows of a TSV file of `v`, by column name.
pub(crate) fn tsv_rows(
    v: &ptefs::view::View,
    path: &str,
) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = String::from_utf8(crate::common::read(v, path)).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').collect();
            assert_eq!(cells.len(), head.len(), "{path}: {l}");
            head.iter()
                .zip(cells)
                .map(|(h, c)| ((*h).to_owned(), c.to_owned()))
                .collect()
        })
        .collect()
}

/// The modules (`path (class)`, the innermost of each stack) and first
/// frames Inspector gives an event, one per node.
fn inspector_sources(e: &Value) -> (Vec<String>, Vec<String>) {
    let mut modules: Vec<String> = (e["module_hierarchy"].as_object().unwrap().values())
        .map(module_label)
        .collect();
    let mut frames: Vec<String> = (e["stack_traces"].as_object().unwrap().values())
        .map(|t| model_frame(t.as_str().unwrap()))
        .collect();
    modules.sort();
    frames.sort();
    (modules, frames)
}

#[test]
fn profile_ops_name_each_events_modules_and_lines_as_inspector_does() {
    let v = profiled(
        "etdump/portable_mlp.pte",
        "etdump/portable_mlp.etdp",
        "etrecord/portable_mlp.etrecord",
    );
    let ops = tsv_rows(&v, "methods/forward/profile/ops.tsv");
    let (_, _, oracle) = open("portable_mlp");
    let mut checked = 0;
    for e in oracle["inspector_events"].as_array().unwrap() {
        // Method-level events (Method::execute) time no instruction.
        if e["block"] != "Execute" || e["name"].as_str().unwrap().starts_with("Method::") {
            continue;
        }
        let id = e["instruction_id"].as_u64().unwrap().to_string();
        let row = ops.iter().find(|r| r["index"] == id).unwrap();
        let mut modules: Vec<String> = row["module_hierarchy"]
            .split(';')
            .map(str::to_owned)
            .collect();
        let mut frames: Vec<String> = row["stack_frame"].split(';').map(str::to_owned).collect();
        modules.sort();
        frames.sort();
        assert_eq!(
            (modules, frames),
            inspector_sources(e),
            "event {}",
            e["name"]
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} events checked");
}

/// Ticks as `by-module.tsv` and `ops.tsv` write them.
fn ticks(row: &std::collections::BTreeMap<String, String>, col: &str) -> u64 {
    row[col].parse().unwrap()
}

#[test]
fn time_per_module_is_the_time_of_the_instructions_inspector_puts_in_it() {
    let v = profiled(
        "etdump/portable_mlp.pte",
        "etdump/portable_mlp.etdp",
        "etrecord/portable_mlp.etrecord",
    );
    let ops = tsv_rows(&v, "methods/forward/profile/ops.tsv");
    let by = tsv_rows(&v, "methods/forward/profile/by-module.tsv");
    let (_, _, oracle) = open("portable_mlp");
    // Each instruction's innermost module, as Inspector's module_hierarchy
    // has it.
    let mut module_of: std::collections::BTreeMap<String, String> = Default::default();
    for e in oracle["inspector_events"].as_array().unwrap() {
        if e["block"] == "Execute" && !e["name"].as_str().unwrap().starts_with("Method::") {
            let (modules, _) = inspector_sources(e);
            let path = modules[0].split(' ').next().unwrap().to_owned();
            assert!(modules.iter().all(|m| m.starts_with(&format!("{path} "))));
            module_of.insert(e["instruction_id"].to_string(), path);
        }
    }
    let runs: std::collections::BTreeSet<&str> = by.iter().map(|r| r["run"].as_str()).collect();
    assert_eq!(runs.len(), 3, "three timed runs");
    for module in [".", "l1", "l2"] {
        let rows: Vec<_> = by.iter().filter(|r| r["module"] == module).collect();
        assert_eq!(rows.len(), 3, "{module}: one row per run");
        let own: u64 = (ops.iter())
            .filter(|r| module_of[&r["index"]] == module)
            .map(|r| ticks(r, "total_ticks"))
            .sum();
        let self_ticks: u64 = rows.iter().map(|r| ticks(r, "self_ticks")).sum();
        assert_eq!(self_ticks, own, "{module}");
        let instructions = (ops.iter())
            .filter(|r| module_of[&r["index"]] == module)
            .count();
        assert!(
            rows.iter()
                .all(|r| r["instructions"] == instructions.to_string())
        );
    }
    // The model holds every instruction: its total is all of each run.
    for run in runs {
        let in_run: Vec<_> = by.iter().filter(|r| r["run"] == run).collect();
        let all: u64 = in_run.iter().map(|r| ticks(r, "self_ticks")).sum();
        let root = in_run.iter().find(|r| r["module"] == ".").unwrap();
        assert_eq!(ticks(root, "total_ticks"), all, "run {run}");
        assert_eq!(root["class"], "__main__.MLP");
        for r in &in_run {
            if r["module"] != "." {
                assert_eq!(r["self_ticks"], r["total_ticks"], "a leaf module");
            }
        }
    }
    let total: u64 = ops.iter().map(|r| ticks(r, "total_ticks")).sum();
    let roots: u64 = (by.iter().filter(|r| r["module"] == "."))
        .map(|r| ticks(r, "total_ticks"))
        .sum();
    assert_eq!(roots, total);
}

#[test]
fn folded_stacks_sum_the_instructions_and_render_as_a_flame_graph() {
    let v = profiled(
        "etdump/portable_mlp.pte",
        "etdump/portable_mlp.etdp",
        "etrecord/portable_mlp.etrecord",
    );
    let ops = tsv_rows(&v, "methods/forward/profile/ops.tsv");
    let folded = crate::common::read(&v, "methods/forward/profile/modules.folded");
    let text = String::from_utf8(folded.clone()).unwrap();
    let mut sums: std::collections::BTreeMap<String, u64> = Default::default();
    for line in text.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let frames: Vec<&str> = stack.split(';').collect();
        assert_eq!(frames[..2], ["forward", "MLP"], "{line}");
        *sums.entry(frames.last().unwrap().to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    assert!(text.contains("forward;MLP;l1 (Linear);aten::addmm.out "));
    assert!(text.contains("forward;MLP;aten::relu.out "));
    let mut by_op: std::collections::BTreeMap<String, u64> = Default::default();
    for r in &ops {
        *by_op.entry(r["operator"].clone()).or_default() += ticks(r, "total_ticks");
    }
    assert_eq!(sums, by_op);

    let test = "folded_stacks_sum_the_instructions_and_render_as_a_flame_graph";
    let Some(flamegraph) = crate::common::required::tool_or_skip(
        test,
        "inferno-flamegraph",
        "scripts/setup.sh (cargo install inferno)",
    ) else {
        return;
    };
    use std::io::Write;
    let mut child = std::process::Command::new(flamegraph)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&folded).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(svg.starts_with("<?xml"), "{}", &svg[..svg.len().min(200)]);
    for frame in ["MLP", "l1 (Linear)", "l2 (Linear)", "aten::addmm.out"] {
        assert!(
            svg.contains(&format!("<title>{frame} (")),
            "{frame} not drawn"
        );
    }
}

#[test]
fn trace_events_carry_the_modules_and_lines_inspector_gives_them() {
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("etdump/portable_mlp.etdp")],
        etrecord: Some(fixture("etrecord/portable_mlp.etrecord")),
        ..Default::default()
    })
    .unwrap();
    let trace: Value = serde_json::from_slice(&crate::common::read(&v, "trace.json")).unwrap();
    let (_, _, oracle) = open("portable_mlp");
    let inspector = oracle["inspector_events"].as_array().unwrap();
    let mut checked = 0;
    for e in trace["traceEvents"].as_array().unwrap() {
        if e["ph"] != "X" || e["args"]["chain_index"].as_i64().unwrap() < 0 {
            assert!(e["args"].get("module_hierarchy").is_none(), "{e}");
            continue;
        }
        let want = (inspector.iter())
            .find(|i| i["name"] == e["name"] && i["instruction_id"] == e["args"]["instruction_id"])
            .unwrap_or_else(|| panic!("Inspector has no event like {e}"));
        let split = |col: &str| {
            let mut v: Vec<String> = (e["args"][col].as_str().unwrap().split(';'))
                .map(str::to_owned)
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            (split("module_hierarchy"), split("stack_frame")),
            inspector_sources(want),
            "{e}"
        );
        checked += 1;
    }
    assert_eq!(checked, 30, "ten events in each of three runs");
}

/// The one row of `v`'s `compare.tsv`, by column.
fn compare_row(v: &ptefs::view::View) -> std::collections::BTreeMap<String, String> {
    let rows = tsv_rows(v, "methods/forward/profile/outputs/compare.tsv");
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows.into_iter().next().unwrap()
}

fn figure(row: &std::collections::BTreeMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|e| panic!("{col} {:?}: {e}", row[col]))
}

/// Whether `a` and `b` agree within 1e-6, relative to their size where it
/// is above 1 (an SNR of 140 dB), and both infinite alike.
fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-6 * a.abs().max(1.0)
}

#[test]
fn compare_tsv_gives_each_output_the_gaps_inspector_computes() {
    // The portable MLP's debug run, and the XNNPACK net's: the figures of
    // Inspector's comparators on the same two tensors, and, for MSE, L1
    // and SNR, the gap calculate_numeric_gap gives the operator whose
    // output the method's is (the last addmm; the delegate call).
    for (name, profile, op) in [
        (
            "portable_mlp",
            "etrecord/portable_mlp_debug.etdp",
            "linear_1",
        ),
        (
            "xnnpack_mobilenetish",
            "etdump/xnnpack_mobilenetish_debug.etdp",
            "linear",
        ),
    ] {
        let (_, _, oracle) = open(name);
        let v = profiled(
            &format!("etdump/{name}.pte"),
            profile,
            &format!("etrecord/{name}.etrecord"),
        );
        let row = compare_row(&v);
        let want = &oracle["output_gaps"][0];
        assert_eq!(row["run"], want["run"].to_string(), "{name}");
        assert_eq!(row["output"], want["output"].to_string(), "{name}");
        assert_eq!(row["reference"], "reference_outputs/forward/0/0.npy");
        assert_eq!(row["problem"], "");
        for (col, key) in [
            ("max_abs_error", "max_abs"),
            ("max_rel_error", "max_rel"),
            ("mse", "MSE"),
            ("l1", "L1"),
            ("snr_db", "SNR"),
        ] {
            let (got, want) = (figure(&row, col), want[key].as_f64().unwrap());
            assert!(close(got, want), "{name} {col}: {got} vs {want}");
        }
        for (col, metric) in [("mse", "MSE"), ("l1", "L1"), ("snr_db", "SNR")] {
            let gaps = oracle["numeric_gaps"][metric].as_array().unwrap();
            let at_op = gaps
                .iter()
                .find(|g| g["aot_ops"].as_array().unwrap().iter().any(|o| o == op))
                .unwrap_or_else(|| panic!("{name}: Inspector has no {metric} gap for {op}"));
            let want = at_op["gap"][0].as_f64().unwrap();
            let got = figure(&row, col);
            assert!(
                close(got, want),
                "{name} {metric}: {got} vs Inspector's {want}"
            );
        }
        // The run's output is not the reference's bit for bit: the figures
        // are not the trivial ones.
        assert!(figure(&row, "mse") > 0.0 && figure(&row, "snr_db").is_finite());
    }
}

#[test]
fn compare_tsv_follows_a_changed_output() {
    // The portable debug run with the logged output's first element made
    // 0.5 larger: the gap grows by what was added.
    let d = tempfile::tempdir().unwrap();
    let etdp = std::fs::read(fixture("etrecord/portable_mlp_debug.etdp")).unwrap();
    let mut buffer = std::fs::read(fixture("etrecord/portable_mlp_debug.debug.bin")).unwrap();
    let before = profiled(
        "etdump/portable_mlp.pte",
        "etrecord/portable_mlp_debug.etdp",
        "etrecord/portable_mlp.etrecord",
    );
    let base = compare_row(&before);
    let npy = crate::common::read(&before, "methods/forward/profile/outputs/1/output.0.npy");
    let logged = npy_payload(&npy).to_vec();
    // The method's output is the last value the run logged.
    let at = (0..=buffer.len() - logged.len())
        .rev()
        .find(|&i| buffer[i..i + logged.len()] == logged[..])
        .unwrap();
    let first = f32::from_le_bytes(buffer[at..at + 4].try_into().unwrap());
    buffer[at..at + 4].copy_from_slice(&(first + 0.5).to_le_bytes());
    std::fs::write(d.path().join("run.etdp"), &etdp).unwrap();
    std::fs::write(d.path().join("run.debug.bin"), &buffer).unwrap();
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("etdump/portable_mlp.pte")],
        profile: Some(d.path().join("run.etdp")),
        etrecord: Some(fixture("etrecord/portable_mlp.etrecord")),
        ..Default::default()
    })
    .unwrap();
    let row = compare_row(&v);
    let added = f64::from(first + 0.5) - f64::from(first);
    assert!(close(figure(&row, "max_abs_error"), added), "{row:?}");
    assert!(
        (figure(&row, "l1") - figure(&base, "l1") - added).abs() < 1e-6,
        "{row:?}"
    );
    assert!(
        (figure(&row, "mse") - added * added / 8.0).abs() < 1e-6,
        "{row:?}"
    );
    assert!(
        figure(&row, "snr_db") < figure(&base, "snr_db") - 100.0,
        "{row:?}"
    );
}

/// Names of a JSON list of objects, sorted.
fn names_of(v: &Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> = (v.as_array().unwrap().iter())
        .map(|x| x[key].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

fn strings(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = (v.as_array().unwrap().iter())
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn diff_of_two_etrecords_names_what_the_generator_changed() {
    // The grown MLP: l2.bias[0] made 0.25 larger and a layer l3 added; the
    // oracle's node and tensor changes are read from both ETRecords by
    // parse_etrecord.
    let oracle: Value = serde_json::from_slice(
        &std::fs::read(fixture("etrecord/portable_mlp_grown.oracle.json")).unwrap(),
    )
    .unwrap();
    let (a, b) = (
        fixture("etrecord/portable_mlp.etrecord"),
        fixture("etrecord/portable_mlp_grown.etrecord"),
    );
    let run = crate::common::ptefs_run([
        "diff".as_ref(),
        "--json".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert_eq!(run.code, 1, "{}", run.err);
    let report: Value = serde_json::from_str(&run.out).unwrap();
    assert_eq!(report["differ"], true);
    assert_eq!(report["graphs_added"], serde_json::json!([]));
    assert_eq!(report["graphs_removed"], serde_json::json!([]));
    assert_eq!(report["problems"], serde_json::json!([]));
    let graphs = report["graphs"].as_array().unwrap();
    let want_graphs = oracle["nodes"].as_object().unwrap();
    assert_eq!(graphs.len(), want_graphs.len());
    for g in graphs {
        let name = g["name"].as_str().unwrap();
        let nodes = &oracle["nodes"][name];
        assert_eq!(
            names_of(&g["nodes_added"], "name"),
            strings(&nodes["added"]),
            "{name}"
        );
        assert_eq!(
            names_of(&g["nodes_removed"], "name"),
            strings(&nodes["removed"]),
            "{name}"
        );
        let changed: std::collections::BTreeMap<String, Vec<String>> =
            (g["nodes_changed"].as_array().unwrap().iter())
                .map(|c| {
                    let fields = (c["fields"].as_array().unwrap().iter())
                        .map(|f| f["field"].as_str().unwrap().to_owned())
                        .collect();
                    (c["name"].as_str().unwrap().to_owned(), fields)
                })
                .collect();
        let want: std::collections::BTreeMap<String, Vec<String>> =
            serde_json::from_value(nodes["changed"].clone()).unwrap();
        assert_eq!(changed, want, "{name}");
        // Tensors: named `state_dict/<fqn>` (or `constants/<fqn>`).
        let t = &g["tensors"];
        let mut want_added = Vec::new();
        let mut want_changed = Vec::new();
        for part in ["state_dict", "constants"] {
            let w = &oracle["tensors"][name][part];
            want_added.extend(
                strings(&w["added"])
                    .into_iter()
                    .map(|k| format!("{part}/{k}")),
            );
            assert_eq!(strings(&w["removed"]), Vec::<String>::new());
            for (k, c) in w["changed"].as_object().unwrap() {
                want_changed.push((format!("{part}/{k}"), c.clone()));
            }
        }
        want_added.sort();
        let added: Vec<String> = (t["added"].as_array().unwrap().iter())
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(added, want_added, "{name}");
        assert_eq!(t["removed"], serde_json::json!([]), "{name}");
        assert_eq!(t["moved"], serde_json::json!([]), "{name}");
        let got = t["changed"].as_array().unwrap();
        assert_eq!(got.len(), want_changed.len(), "{name}");
        for (c, (k, w)) in got.iter().zip(&want_changed) {
            assert_eq!(c["a"]["name"], k.as_str());
            let e = &c["elements"];
            assert_eq!(e["differing"], w["differing"], "{name} {k}");
            assert_eq!(e["elements"], w["elements"], "{name} {k}");
            let max_abs = e["max_abs"].as_f64().unwrap();
            assert!(
                (max_abs - w["max_abs"].as_f64().unwrap()).abs() < 1e-6,
                "{name} {k}"
            );
        }
        // Every other tensor of A is unchanged.
        let (_, _, a_oracle) = open("portable_mlp");
        let a_tensors = a_oracle["graphs"][name]["state_dict"]
            .as_array()
            .unwrap()
            .len()
            + a_oracle["graphs"][name]["constants"]
                .as_array()
                .unwrap()
                .len();
        assert_eq!(t["unchanged"], a_tensors - want_changed.len(), "{name}");
    }
    // Text: a line per change, and the same ETRecord against itself has none.
    let text = crate::common::ptefs_run(["diff".as_ref(), a.as_os_str(), b.as_os_str()]);
    assert_eq!(text.code, 1);
    assert!(
        text.out.contains(
            "graph exported_program: tensor changed: graphs/exported_program/state_dict/l2.bias.npy: 1 of 8 elements differ; max abs diff 0.25 at [0]"
        ),
        "{}",
        text.out
    );
    assert!(
        text.out
            .contains("graph exported_program: node changed: %output: args %linear_1 -> %linear_2")
    );
    // --stat: a line of counts per graph, as the oracle has them.
    let stat = crate::common::ptefs_run([
        "diff".as_ref(),
        "--stat".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert_eq!(stat.code, 1);
    for (name, nodes) in oracle["nodes"].as_object().unwrap() {
        let t = &oracle["tensors"][name]["state_dict"];
        let line = format!(
            "graph {name}: nodes {} added, {} removed, {} changed; tensors {} changed, {} added, {} removed, 0 moved\n",
            nodes["added"].as_array().unwrap().len(),
            nodes["removed"].as_array().unwrap().len(),
            nodes["changed"].as_object().unwrap().len(),
            t["changed"].as_object().unwrap().len(),
            t["added"].as_array().unwrap().len(),
            t["removed"].as_array().unwrap().len(),
        );
        assert!(stat.out.contains(&line), "{line}not in\n{}", stat.out);
    }
    let same = crate::common::ptefs_run(["diff".as_ref(), a.as_os_str(), a.as_os_str()]);
    assert_eq!(
        (same.code, same.out.ends_with("no differences\n")),
        (0, true),
        "{}",
        same.out
    );
}

#[test]
fn source_tsv_names_each_delegate_operators_nodes_as_the_delegate_map_does() {
    // The delegate-mapping demo backend's map names its four operators'
    // nodes; XNNPACK's map is empty, so its delegate call has only its
    // instruction row.
    let oracle: Value = serde_json::from_slice(
        &std::fs::read(fixture("etrecord/delegate_map_demo.oracle.json")).unwrap(),
    )
    .unwrap();
    let rows = source_tsv(
        "etrecord/delegate_map_demo.pte",
        "etrecord/delegate_map_demo.etrecord",
    );
    let delegates: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == "delegate").collect();
    let want = oracle["delegate_operators"].as_array().unwrap();
    assert_eq!(delegates.len(), want.len());
    assert!(want.len() >= 4);
    for (row, op) in delegates.iter().zip(want) {
        let id = format!(
            "{}:{}",
            op["instruction"].as_str().unwrap(),
            op["debug_id"].as_str().unwrap()
        );
        assert_eq!(row[1], id);
        let handles: Vec<String> = (op["debug_handles"].as_array().unwrap().iter())
            .map(Value::to_string)
            .collect();
        assert_eq!(row[2], handles.join(","), "{id}");
        let nodes = op["nodes"].as_array().unwrap();
        let names: Vec<&str> = nodes.iter().map(|n| n["name"].as_str().unwrap()).collect();
        assert_eq!(row[3], names.join(";"), "{id}");
        let modules: Vec<String> = nodes
            .iter()
            .map(|n| module_label(&n["nn_module_stack"]))
            .collect();
        assert_eq!(row[4], modules.join(";"), "{id}");
        let frames: Vec<String> = (nodes.iter())
            .map(|n| model_frame(n["stack_trace"].as_str().unwrap()))
            .collect();
        assert_eq!(row[5], frames.join(";"), "{id}");
    }
    let (_, _, xnn) = open("xnnpack_mobilenetish");
    assert_eq!(
        xnn["delegate_map"]["forward"]["0"]["delegate_map"],
        serde_json::json!({})
    );
    let rows = source_tsv(
        "etdump/xnnpack_mobilenetish.pte",
        "etrecord/xnnpack_mobilenetish.etrecord",
    );
    let kinds: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(kinds, ["instruction"]);
}

#[test]
fn diff_with_a_hostile_etrecord_names_what_it_could_not_compare() {
    // A hostile copy of the portable MLP's ETRecord: what cannot be read is
    // named and compared on neither side (not reported as removed); the
    // exit status is 2, as nothing was found to differ in the rest.
    let a = fixture("etrecord/portable_mlp.etrecord");
    for (name, says) in [
        (
            "os_system",
            "global posix.system is not one torch.save archives use",
        ),
        (
            "short_storage",
            "state_dict/l1.weight: storage 0 claims 2048 bytes",
        ),
    ] {
        let b = fixture(&format!("etrecord/hostile/{name}.etrecord"));
        let run = crate::common::ptefs_run(["diff".as_ref(), a.as_os_str(), b.as_os_str()]);
        assert_eq!(run.code, 2, "{name}: {}{}", run.out, run.err);
        assert!(
            run.out.contains("not compared: ") && run.out.contains(says),
            "{name}: {}",
            run.out
        );
        assert!(!run.out.contains("tensor removed"), "{name}: {}", run.out);
        assert!(
            run.out.ends_with("no differences in what could be read\n"),
            "{name}: {}",
            run.out
        );
    }
    let b = fixture("etrecord/hostile/truncated.etrecord");
    let run = crate::common::ptefs_run(["diff".as_ref(), a.as_os_str(), b.as_os_str()]);
    assert_eq!(run.code, 2);
    assert!(
        run.err.contains("truncated.etrecord") && run.err.contains("zip"),
        "{}",
        run.err
    );
}

#[test]
fn compare_tsv_names_a_reference_of_another_shape_and_is_absent_without_references() {
    // The portable run held against the XNNPACK net's ETRecord: its output
    // is [1, 8], the reference [1, 4]; the row says so and has no figures.
    let v = profiled(
        "etdump/portable_mlp.pte",
        "etrecord/portable_mlp_debug.etdp",
        "etrecord/xnnpack_mobilenetish.etrecord",
    );
    let row = compare_row(&v);
    assert_eq!(row["max_abs_error"], "");
    assert_eq!(row["snr_db"], "");
    assert_eq!(
        row["problem"],
        "the run logged shape [1, 8], the reference forward/0/0 has [1, 4]"
    );
    // An ETRecord made without reference outputs gives no compare.tsv.
    let v = profiled(
        "etdump/portable_mlp.pte",
        "etrecord/portable_mlp_debug.etdp",
        "etrecord/portable_mlp_grown.etrecord",
    );
    let outputs = "methods/forward/profile/outputs";
    assert!(v.tree.resolve(&format!("{outputs}/index.json")).is_some());
    assert!(v.tree.resolve(&format!("{outputs}/compare.tsv")).is_none());
}

#[test]
fn diff_of_an_etrecord_with_another_kind_of_file_names_both() {
    // The sections of a program say nothing about an ETRecord: the pair is
    // refused whichever side the ETRecord is on, and a damaged ETRecord
    // is named for what is wrong with it rather than as a mismatch.
    let etrecord = fixture("etrecord/portable_mlp.etrecord");
    for (other, kind) in [
        ("etdump/portable_mlp.pte", "a program"),
        ("mlp_external.ptd", "a data file"),
        ("etdump/portable_mlp.etdp", "an ETDump"),
    ] {
        let other = fixture(other);
        for (a, b, ka, kb) in [
            (&etrecord, &other, "an ETRecord", kind),
            (&other, &etrecord, kind, "an ETRecord"),
        ] {
            let run = crate::common::ptefs_run(["diff".as_ref(), a.as_os_str(), b.as_os_str()]);
            assert_eq!(
                (run.code, run.out.as_str(), run.err),
                (
                    2,
                    "",
                    format!(
                        "ptefs: {} is {ka} and {} is {kb}: an ETRecord is compared only with another ETRecord\n",
                        a.display(),
                        b.display()
                    )
                )
            );
        }
    }
    let run = crate::common::ptefs_run([
        "diff".as_ref(),
        fixture("etrecord/hostile/truncated.etrecord").as_os_str(),
        fixture("etdump/portable_mlp.pte").as_os_str(),
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.err.contains("truncated.etrecord: package: no zip end"),
        "{}",
        run.err
    );
}
