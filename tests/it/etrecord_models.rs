//! The ETRecord join on models with attention, nested modules and a
//! `ModuleList` (tests/fixtures/etrecord/tiny_gpt.*), and on a ResNet-style
//! conv net lowered to XNNPACK (xnnpack_resnetish.*), each run by
//! ExecuTorch 1.5.1's runtime, against Inspector's events with their
//! module hierarchies and whole stack traces.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::fixture;
use crate::etrecord::{model_frame, module_label, profiled, tsv_rows};

fn oracle(name: &str) -> Value {
    let path = fixture(&format!("etrecord/{name}.oracle.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `name`'s program with its ETDump and ETRecord.
fn view(name: &str) -> ptefs::view::View {
    profiled(
        &format!("etrecord/{name}.pte"),
        &format!("etrecord/{name}.etdp"),
        &format!("etrecord/{name}.etrecord"),
    )
}

/// The modules (`path (class)`) and model lines Inspector gives an event,
/// one per node, sorted; the oracle keeps each hierarchy and trace once.
fn inspector_sources(o: &Value, e: &Value) -> (Vec<String>, Vec<String>) {
    let mut modules: Vec<String> = (e["module_hierarchy"].as_object().unwrap().values())
        .map(|i| module_label(&o["hierarchies"][i.as_u64().unwrap() as usize]))
        .collect();
    let mut lines: Vec<String> = (e["stack_traces"].as_object().unwrap().values())
        .map(|i| model_frame(o["traces"][i.as_u64().unwrap() as usize].as_str().unwrap()))
        .collect();
    modules.sort();
    lines.sort();
    (modules, lines)
}

fn sorted(cell: &str) -> Vec<String> {
    let mut v: Vec<String> = cell.split(';').map(str::to_owned).collect();
    v.sort();
    v
}

/// Inspector's events that time an instruction of the portable program.
fn instruction_events(o: &Value) -> impl Iterator<Item = &Value> {
    (o["inspector_events"].as_array().unwrap().iter())
        .filter(|e| e["block"] == "Execute" && !e["name"].as_str().unwrap().starts_with("Method::"))
}

#[test]
fn every_event_of_an_attention_model_has_inspectors_modules_and_model_line() {
    let o = oracle("tiny_gpt");
    let v = view("tiny_gpt");
    let source = tsv_rows(&v, "methods/forward/source.tsv");
    let ops = tsv_rows(&v, "methods/forward/profile/ops.tsv");
    let mut checked = 0;
    let mut lines = std::collections::BTreeSet::new();
    for e in instruction_events(&o) {
        let id = e["instruction_id"].as_u64().unwrap().to_string();
        let want = inspector_sources(&o, e);
        let row = (source.iter())
            .find(|r| r["kind"] == "instruction" && r["id"] == id)
            .unwrap_or_else(|| panic!("source.tsv has no instruction {id}"));
        assert_eq!(
            (
                sorted(&row["module_hierarchy"]),
                sorted(&row["stack_frame"])
            ),
            want,
            "source.tsv, instruction {id} ({})",
            e["name"]
        );
        let op = ops.iter().find(|r| r["index"] == id).unwrap();
        assert_eq!(
            (sorted(&op["module_hierarchy"]), sorted(&op["stack_frame"])),
            want,
            "ops.tsv, instruction {id}"
        );
        lines.extend(want.1);
        checked += 1;
    }
    assert!(checked >= 200, "only {checked} events checked");
    // The model's own lines, not the top forward's `x = block(x)` (105).
    assert!(lines.len() >= 15, "{lines:?}");
    for line in ["/src/model.py:61", "/src/model.py:62", "/src/model.py:75"] {
        assert!(lines.contains(line), "{line} not among {lines:?}");
    }
    // nn.MultiheadAttention is all torch's: its nodes take the model's
    // line that called it.
    assert!(lines.contains("/src/model.py:106"), "{lines:?}");
}

#[test]
fn trace_json_events_of_an_attention_model_have_inspectors_modules_and_lines() {
    let o = oracle("tiny_gpt");
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("etrecord/tiny_gpt.etdp")],
        etrecord: Some(fixture("etrecord/tiny_gpt.etrecord")),
        ..Default::default()
    })
    .unwrap();
    let trace: Value = serde_json::from_slice(&crate::common::read(&v, "trace.json")).unwrap();
    let want: BTreeMap<String, (Vec<String>, Vec<String>)> = instruction_events(&o)
        .map(|e| (e["instruction_id"].to_string(), inspector_sources(&o, e)))
        .collect();
    let mut checked = 0;
    for e in trace["traceEvents"].as_array().unwrap() {
        if e["ph"] != "X" || e["args"]["chain_index"].as_i64().unwrap() < 0 {
            continue;
        }
        let got = (
            sorted(e["args"]["module_hierarchy"].as_str().unwrap()),
            sorted(e["args"]["stack_frame"].as_str().unwrap()),
        );
        assert_eq!(got, want[&e["args"]["instruction_id"].to_string()], "{e}");
        checked += 1;
    }
    assert!(checked >= 200, "only {checked} events checked");
}

#[test]
fn the_edge_graph_shows_minus_infinity_and_each_nodes_model_line() {
    let o = oracle("tiny_gpt");
    let v = crate::common::view("etrecord/tiny_gpt.etrecord");
    let dir = "graphs/edge_dialect_exported_program/forward";
    let text = String::from_utf8(crate::common::read(&v, &format!("{dir}/graph.txt"))).unwrap();
    assert!(
        text.contains("%scalar_tensor = aten.scalar_tensor.default(-inf, "),
        "{text}"
    );
    let nodes = tsv_rows(&v, &format!("{dir}/nodes.tsv"));
    let stacks = String::from_utf8(crate::common::read(&v, &format!("{dir}/stacks.txt"))).unwrap();
    let mut checked = 0;
    for n in o["edge_nodes"].as_array().unwrap() {
        let Some(t) = n["stack_trace"].as_u64() else {
            continue;
        };
        let trace = o["traces"][t as usize].as_str().unwrap();
        let name = n["name"].as_str().unwrap();
        let row = nodes.iter().find(|r| r["node"] == name).unwrap();
        let line = model_frame(trace);
        assert_eq!(row["stack_frame"], line, "{name}");
        // stacks.txt: the whole trace, innermost last, the line marked.
        let (file, n) = line.rsplit_once(':').unwrap();
        let at = stacks.find(&format!("%{name}:\n")).unwrap();
        let block = stacks[at..].split("\n%").next().unwrap();
        assert!(
            block.contains(&format!("> File \"{file}\", line {n}, in ")),
            "{block}"
        );
        let frames = trace.matches("File \"").count();
        assert_eq!(block.matches(" File \"").count(), frames, "{block}");
        checked += 1;
    }
    assert!(checked >= 150, "only {checked} nodes checked");
}

#[test]
fn an_unreadable_program_json_fails_its_files_and_is_named_not_joined() {
    let v = crate::common::view("etrecord/hostile/bad_program_json.etrecord");
    let fs = ptefs::fs::Fs::new(v);
    for file in ["graph.txt", "nodes.tsv", "stacks.txt"] {
        let path = format!("graphs/edge_dialect_exported_program/forward/{file}");
        let ino = fs.view().tree.resolve(&path).unwrap();
        let e = fs.open(ino, false).unwrap_err();
        assert_eq!(e.errno(), libc::EIO, "{path}: {e}");
        assert!(
            e.to_string().contains("program JSON: EOF while parsing"),
            "{e}"
        );
        assert!(fs.read(ino, 0, 4096).is_err(), "{path}");
    }
    // The exported program's JSON is whole: its graph.txt is made.
    assert!(
        fs.view()
            .tree
            .resolve("graphs/exported_program/graph.txt")
            .is_some()
    );

    let v = profiled(
        "etdump/portable_mlp.pte",
        "etdump/portable_mlp.etdp",
        "etrecord/hostile/bad_program_json.etrecord",
    );
    for absent in [
        "methods/forward/source.tsv",
        "methods/forward/profile/by-module.tsv",
        "methods/forward/profile/modules.folded",
    ] {
        assert!(v.tree.resolve(absent).is_none(), "{absent}");
    }
    let readme = String::from_utf8(crate::common::read(&v, "README.txt")).unwrap();
    let why =
        "ETRecord bad_program_json.etrecord: method \"forward\": program JSON: EOF while parsing";
    assert!(
        readme.contains(&format!(
            "Not made:\n  methods/forward/source.tsv, methods/forward/profile/by-module.tsv, \
             methods/forward/profile/modules.folded: {why}"
        )),
        "{readme}"
    );
    assert!(
        v.tree
            .warnings
            .iter()
            .any(|w| w.starts_with("portable_mlp.pte: ") && w.contains(why)),
        "{:?}",
        v.tree.warnings
    );
}

/// Links `from` (a fixture) as `dir/name`.
fn link(from: &str, dir: &std::path::Path, name: &str) {
    std::os::unix::fs::symlink(fixture(from), dir.join(name)).unwrap();
}

#[test]
fn files_found_beside_a_program_are_joined_through_symlinks_and_default_names() {
    // As a build leaves them: the program and ETRecord linked from where
    // they were made, the profile and debug buffer under the names
    // ExecuTorch's runners write by default.
    let dir = tempfile::tempdir().unwrap();
    link("etrecord/tiny_gpt.pte", dir.path(), "model.pte");
    link("etrecord/tiny_gpt.etrecord", dir.path(), "etrecord.bin");
    link("etrecord/tiny_gpt.etdp", dir.path(), "etdump_output.etdp");
    link(
        "etrecord/tiny_gpt.debug.bin",
        dir.path(),
        "debug_output.bin",
    );
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![dir.path().join("model.pte")],
        auto_data: true,
        ..Default::default()
    })
    .unwrap();
    for note in ["as its ETRecord", "as its profile"] {
        assert!(v.notes.iter().any(|n| n.contains(note)), "{:?}", v.notes);
    }
    for file in [
        "methods/forward/source.tsv",
        "methods/forward/profile/by-module.tsv",
        "methods/forward/profile/modules.folded",
        "methods/forward/profile/outputs/compare.tsv",
    ] {
        assert!(v.tree.resolve(file).is_some(), "{file} not made");
    }
    let ops = tsv_rows(&v, "methods/forward/profile/ops.tsv");
    assert!(
        ops.iter().all(|r| !r["module_hierarchy"].is_empty()),
        "{ops:?}"
    );
}

#[test]
fn files_found_beside_a_program_and_not_attached_are_named_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    link("etrecord/tiny_gpt.pte", dir.path(), "model.pte");
    link(
        "etrecord/xnnpack_resnetish.pte",
        dir.path(),
        "model.etrecord",
    );
    link("etrecord/tiny_gpt.etdp", dir.path(), "a.etdp");
    link("etrecord/xnnpack_resnetish.etdp", dir.path(), "b.etdp");
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![dir.path().join("model.pte")],
        auto_data: true,
        ..Default::default()
    })
    .unwrap();
    let said = |s: &str| v.notes.iter().any(|n| n.contains(s));
    assert!(
        said("not attached ") && said("model.etrecord as its ETRecord: it is not an ETRecord"),
        "{:?}",
        v.notes
    );
    // Several ETDumps: none is the one found, and none is attached.
    assert!(!said(".etdp as its profile"), "{:?}", v.notes);
    assert!(v.tree.resolve("methods/forward/profile").is_none());

    // One ETDump of another program: its events name what this one lacks.
    std::fs::remove_file(dir.path().join("a.etdp")).unwrap();
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![dir.path().join("model.pte")],
        auto_data: true,
        ..Default::default()
    })
    .unwrap();
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("not attached b.etdp as its profile: ")),
        "{:?}",
        v.notes
    );
}

#[test]
fn a_profile_whose_debug_buffer_is_not_there_says_what_is_not_made() {
    let dir = tempfile::tempdir().unwrap();
    link("etrecord/tiny_gpt.etdp", dir.path(), "run.etdp");
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("etrecord/tiny_gpt.pte")],
        profile: Some(dir.path().join("run.etdp")),
        etrecord: Some(fixture("etrecord/tiny_gpt.etrecord")),
        ..Default::default()
    })
    .unwrap();
    assert!(
        v.tree
            .resolve("methods/forward/profile/outputs/compare.tsv")
            .is_none()
    );
    let why = "profile run.etdp: its runs logged ";
    assert!(
        v.tree
            .warnings
            .iter()
            .any(|w| w.starts_with(why) && w.contains("no compare.tsv")),
        "{:?}",
        v.tree.warnings
    );
    let readme = String::from_utf8(crate::common::read(&v, "README.txt")).unwrap();
    assert!(
        readme.contains(
            "  methods/forward/profile/outputs/<run>/*.npy, compare.tsv: profile run.etdp"
        ),
        "{readme}"
    );
}

#[test]
fn a_module_list_has_a_row_holding_its_blocks_and_a_frame_above_them() {
    let v = view("tiny_gpt");
    let by = tsv_rows(&v, "methods/forward/profile/by-module.tsv");
    let ticks = |r: &BTreeMap<String, String>, c: &str| r[c].parse::<u64>().unwrap();
    let runs: Vec<&str> = (by.iter().filter(|r| r["module"] == "."))
        .map(|r| r["run"].as_str())
        .collect();
    assert!(!runs.is_empty());
    for run in runs {
        let row = |m: &str| {
            (by.iter())
                .find(|r| r["run"] == run && r["module"] == m)
                .unwrap_or_else(|| panic!("run {run}: no row for {m}"))
        };
        let blocks = row("blocks");
        // Never called itself, its class unrecorded: no time of its own.
        assert_eq!(
            (blocks["class"].as_str(), ticks(blocks, "self_ticks")),
            ("", 0)
        );
        assert_eq!(
            ticks(blocks, "total_ticks"),
            ticks(row("blocks.0"), "total_ticks") + ticks(row("blocks.1"), "total_ticks"),
            "run {run}"
        );
        assert_eq!(row("blocks.1")["class"], "__main__.Block");
    }
    let folded = String::from_utf8(crate::common::read(
        &v,
        "methods/forward/profile/modules.folded",
    ))
    .unwrap();
    assert!(
        folded.contains("forward;TinyGPT;blocks;blocks.1 (Block);blocks.1.attn (Attention);"),
        "{folded}"
    );
    assert!(
        folded
            .lines()
            .all(|l| !l.contains(";blocks.0 (Block)") || l.contains(";blocks;blocks.0 (Block)"))
    );
}

#[test]
fn xnnpack_events_are_placed_on_nodes_get_only_what_is_known_and_fold_under_their_call() {
    let o = oracle("xnnpack_resnetish");
    let v = view("xnnpack_resnetish");
    let nodes = tsv_rows(
        &v,
        "methods/forward/profile/delegates/0-XnnpackBackend/nodes.tsv",
    );
    let events: Vec<&Value> = (o["inspector_events"].as_array().unwrap().iter())
        .filter(|e| e["delegate_debug_identifier"].is_string())
        .collect();
    assert_eq!(nodes.len(), events.len());
    for (row, e) in nodes.iter().zip(&events) {
        assert_eq!(row["debug_id"], e["name"].as_str().unwrap());
        assert!(!row["node"].is_empty(), "not placed: {row:?}");
        // Inspector gives XNNPACK's events no module: 1.5.1 writes an
        // empty delegate map.
        assert_eq!(e["module_hierarchy"], serde_json::json!({}), "{e}");
    }
    let placed = |prefix: &str, op: &str| {
        (nodes.iter())
            .filter(|r| r["debug_id"].starts_with(prefix))
            .all(|r| r["node_op"] == op)
    };
    assert!(placed("Convolution", "conv2d") && placed("Clamp", "add"));
    assert!(placed("Fully Connected", "fully_connected"));

    let v2 = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("etrecord/xnnpack_resnetish.etdp")],
        etrecord: Some(fixture("etrecord/xnnpack_resnetish.etrecord")),
        ..Default::default()
    })
    .unwrap();
    let trace: Value = serde_json::from_slice(&crate::common::read(&v2, "trace.json")).unwrap();
    let mut delegated = 0;
    for e in trace["traceEvents"].as_array().unwrap() {
        if e["ph"] != "X" || e["args"]["chain_index"].as_i64().unwrap() < 0 {
            continue;
        }
        if e["cat"] == "delegate" {
            assert!(e["args"].get("module_hierarchy").is_none(), "{e}");
            delegated += 1;
        } else {
            assert!(e["args"]["module_hierarchy"].is_string(), "{e}");
        }
    }
    assert_eq!(delegated, events.len());

    // modules.folded: the call's events under it, the call keeping the rest.
    let ops = tsv_rows(&v, "methods/forward/profile/ops.tsv");
    let call: u64 = ops
        .iter()
        .map(|r| r["total_ticks"].parse::<u64>().unwrap())
        .sum();
    let folded = String::from_utf8(crate::common::read(
        &v,
        "methods/forward/profile/modules.folded",
    ))
    .unwrap();
    let mut sum = 0;
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        assert!(
            stack.starts_with("forward;ResNetish;delegate 0 XnnpackBackend"),
            "{line}"
        );
        sum += n.parse::<u64>().unwrap();
    }
    assert_eq!(sum, call);
    assert!(
        folded.contains("delegate 0 XnnpackBackend;Convolution (NHWC, F32) IGEMM #1 "),
        "{folded}"
    );
}
