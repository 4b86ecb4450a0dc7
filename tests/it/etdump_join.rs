//! ETDump profiles joined with the programs that ran them
//! (`--profile`, or the only `.etdp` beside a program): the per-instruction
//! tables against ExecuTorch's Inspector, the delegate's events against
//! the decoded XNNPACK graph, hostile profiles, `inspect --program` and
//! `diff` of two profiles.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::mounted::{Mounted, fuse_or_skip};
use common::*;
use ptefs::tree::{Input, ROOT};
use ptefs::view::{Request, View};
use serde_json::Value;

/// (program, profile) of each fixture.
const PAIRS: [(&str, &str); 2] = [
    ("portable_mlp", "portable_mlp"),
    ("xnnpack_mobilenetish", "xnnpack_mobilenetish_debug"),
];

fn pte(name: &str) -> PathBuf {
    fixture(&format!("etdump/{name}.pte"))
}

fn etdp(name: &str) -> PathBuf {
    fixture(&format!("etdump/{name}.etdp"))
}

fn oracle(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(&format!("etdump/{name}.oracle.json"))).unwrap())
        .unwrap()
}

fn pte_oracle(name: &str) -> Value {
    serde_json::from_slice(
        &std::fs::read(fixture(&format!("etdump/{name}.pte.oracle.json"))).unwrap(),
    )
    .unwrap()
}

fn joined(program: &Path, profile: &Path) -> View {
    View::open(&Request {
        inputs: vec![program.to_owned()],
        auto_data: true,
        profile: Some(profile.to_owned()),
        ..Request::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A TSV file as rows of column name → field.
fn tsv(v: &View, path: &str) -> Vec<BTreeMap<String, String>> {
    let text = String::from_utf8(read(v, path)).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split('\t')
        .map(str::to_owned)
        .collect();
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            assert_eq!(fields.len(), header.len(), "{path}: {l}");
            header
                .iter()
                .cloned()
                .zip(fields.iter().map(|f| (*f).to_owned()))
                .collect()
        })
        .collect()
}

fn num(row: &BTreeMap<String, String>, k: &str) -> f64 {
    row[k].parse().unwrap_or_else(|_| panic!("{k} in {row:?}"))
}

/// Inspector's raw durations (ms) per (event name, instruction id) of the
/// `Execute` blocks.
fn inspector(name: &str) -> BTreeMap<(String, i64), Vec<f64>> {
    let o = oracle(name);
    let mut out = BTreeMap::new();
    for b in o["inspector_event_blocks"].as_array().unwrap() {
        if b["name"] != "Execute" {
            continue;
        }
        for e in b["events"].as_array().unwrap() {
            let raw: Vec<f64> = e["raw_durations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            out.insert(
                (
                    e["name"].as_str().unwrap().to_owned(),
                    e["instruction_id"].as_i64().unwrap(),
                ),
                raw,
            );
        }
    }
    out
}

/// NumPy's `percentile` with linear interpolation.
fn percentile(raw: &[f64], q: f64) -> f64 {
    let mut d = raw.to_vec();
    d.sort_by(f64::total_cmp);
    let rank = q * (d.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    d[lo] + (d[hi] - d[lo]) * (rank - lo as f64)
}

/// Within the rounding of a value printed to 6 decimals (Inspector's
/// table prints ms to 6; ours too).
fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 5e-7 + 1e-12
}

#[test]
fn per_instruction_times_equal_inspectors() {
    for (program, profile) in PAIRS {
        let v = joined(&pte(program), &etdp(profile));
        let want = inspector(profile);
        let rows = tsv(&v, "methods/forward/profile/ops.tsv");
        // Every instruction of the program, as ExecuTorch's deserializer
        // lists them.
        let plan = &pte_oracle(program)["execution_plan"][0];
        let kinds = plan["instructions_chain0"].as_array().unwrap();
        assert_eq!(rows.len(), kinds.len(), "{program}");
        let mut checked = 0;
        for (row, kind) in rows.iter().zip(kinds) {
            let op = &row["operator"];
            match kind.as_str().unwrap() {
                "KernelCall" => {
                    let ops = plan["operators"].as_array().unwrap();
                    assert!(ops.iter().any(|o| o == op.as_str()), "{op}");
                    // The runtime's own kernel event names the same op.
                    let kernel = row["kernel_event"].strip_prefix("native_call_").unwrap();
                    assert_eq!(op.strip_prefix("aten::").unwrap(), kernel, "{row:?}");
                }
                "DelegateCall" => assert!(op.starts_with("delegate 0 "), "{op}"),
                k => panic!("{k}"),
            }
            let key = (row["event"].clone(), row["index"].parse::<i64>().unwrap());
            let raw = want
                .get(&key)
                .unwrap_or_else(|| panic!("{profile}: Inspector has no {key:?}"));
            assert_eq!(num(row, "calls") as usize, raw.len(), "{key:?}");
            let mean = raw.iter().sum::<f64>() / raw.len() as f64;
            let min = raw.iter().copied().fold(f64::INFINITY, f64::min);
            let max = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for (col, w) in [
                ("mean_ms", mean),
                ("min_ms", min),
                ("max_ms", max),
                ("p50_ms", percentile(raw, 0.5)),
                ("p90_ms", percentile(raw, 0.9)),
                ("total_ms", raw.iter().sum()),
            ] {
                assert!(
                    close(num(row, col), w),
                    "{profile} {key:?} {col}: {row:?} vs {w}"
                );
            }
            checked += 1;
        }
        assert_eq!(checked, kinds.len());
        // Shares are of Method::execute, summed the same way.
        let execute: f64 = want[&("Method::execute".to_owned(), 0)].iter().sum();
        for row in &rows {
            let share = num(row, "total_ms") / execute * 100.0;
            assert!((num(row, "share_pct") - share).abs() < 0.01, "{row:?}");
        }
        let summary = json(&v, "methods/forward/profile/summary.json");
        assert_eq!(summary["unmatched_events"], 0, "{profile}");
        assert!(tsv(&v, "methods/forward/profile/unmatched.tsv").is_empty());
    }
}

#[test]
fn by_operator_sums_the_instructions() {
    let v = joined(&pte("portable_mlp"), &etdp("portable_mlp"));
    let ops = tsv(&v, "methods/forward/profile/ops.tsv");
    let by = tsv(&v, "methods/forward/profile/by-operator.tsv");
    assert_eq!(by.len(), 3);
    for row in &by {
        let mine: Vec<_> = ops
            .iter()
            .filter(|r| r["operator"] == row["operator"])
            .collect();
        assert_eq!(num(row, "instructions") as usize, mine.len());
        let calls: f64 = mine.iter().map(|r| num(r, "calls")).sum();
        let ticks: f64 = mine.iter().map(|r| num(r, "total_ticks")).sum();
        assert_eq!(num(row, "calls"), calls);
        assert_eq!(num(row, "total_ticks"), ticks);
    }
    // Longest first.
    assert_eq!(by[0]["operator"], "aten::addmm.out");
}

/// XNNPACK's events by their string ids, each matched to the node of the
/// decoded graph it timed, with Inspector's durations.
#[test]
fn delegate_events_are_named_and_matched_to_xnnpack_nodes() {
    let (program, profile) = PAIRS[1];
    let v = joined(&pte(program), &etdp(profile));
    let rows = tsv(
        &v,
        "methods/forward/profile/delegates/0-XnnpackBackend/nodes.tsv",
    );
    let want = inspector(profile);
    let o = oracle(profile);
    let delegated: Vec<&Value> = o["inspector_event_blocks"][1]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["is_delegated_op"] == true)
        .collect();
    assert_eq!(rows.len(), delegated.len());
    assert_eq!(rows.len(), 8);
    // The delegate's code.txt: `k: op ...` per node.
    let code = String::from_utf8(read(
        &v,
        "methods/forward/delegates/0-XnnpackBackend/xnnpack/code.txt",
    ))
    .unwrap();
    let node_ops: Vec<&str> = code
        .lines()
        .filter_map(|l| l.split_once(": "))
        .filter(|(k, _)| k.parse::<usize>().is_ok())
        .map(|(_, rest)| rest.split(' ').next().unwrap())
        .collect();
    for (row, w) in rows.iter().zip(&delegated) {
        let id = w["delegate_debug_identifier"].as_str().unwrap();
        assert_eq!(row["debug_id"], id);
        let raw = &want[&(id.to_owned(), 0)];
        assert!(close(num(row, "mean_ms"), raw[0]), "{row:?}");
        let node: usize = row["node"].parse().unwrap();
        assert_eq!(row["node_op"], node_ops[node], "{row:?}");
        assert!(row["matched_by"].starts_with("position"), "{row:?}");
    }
    // The events' kinds against the nodes they are matched to: XNNPACK
    // runs the 1×1 convolution (node 3) as a fully connected operator.
    let by_id: BTreeMap<&str, &str> = rows
        .iter()
        .map(|r| (r["debug_id"].as_str(), r["node_op"].as_str()))
        .collect();
    assert_eq!(by_id["Convolution (NHWC, F32) IGEMM #1"], "conv2d");
    assert_eq!(
        by_id["Convolution (NHWC, F32) DWConv #1"],
        "depthwise_conv2d"
    );
    assert_eq!(by_id["Fully Connected (NC, F32) GEMM #1"], "conv2d");
    assert_eq!(
        by_id["Fully Connected (NC, F32) GEMM #2"],
        "fully_connected"
    );
    assert_eq!(by_id["Mean (ND) Reduce2 #1"], "global_avg_pooling2d");
}

/// The annotated code.txt is the method's code.txt, each instruction
/// line ending with its mean and share from ops.tsv.
#[test]
fn annotated_code_is_the_code_with_times() {
    for (program, profile) in PAIRS {
        let v = joined(&pte(program), &etdp(profile));
        let plain = String::from_utf8(read(&v, "methods/forward/code.txt")).unwrap();
        let annotated = String::from_utf8(read(&v, "methods/forward/profile/code.txt")).unwrap();
        let ops = tsv(&v, "methods/forward/profile/ops.tsv");
        // The tensors each instruction logged, by (chain, instruction).
        let mut logged: BTreeMap<(u64, u64), usize> = BTreeMap::new();
        if ls(&v, "methods/forward/profile").contains(&"outputs".to_owned()) {
            for e in json(&v, "methods/forward/profile/outputs/index.json")
                .as_array()
                .unwrap()
            {
                if let (Some(c), Some(i)) = (e["chain"].as_u64(), e["instruction"].as_u64()) {
                    *logged.entry((c, i)).or_default() += 1;
                }
            }
        }
        assert_eq!(plain.lines().count(), annotated.lines().count());
        let mut n = 0;
        for (p, a) in plain.lines().zip(annotated.lines()) {
            if p.starts_with('#') || p.starts_with(' ') {
                assert_eq!(p, a);
                continue;
            }
            let row = &ops[n];
            n += 1;
            let at: (u64, u64) = (row["chain"].parse().unwrap(), row["index"].parse().unwrap());
            let tail = match logged.get(&at) {
                Some(k) => format!("; {k} tensors logged (outputs/)"),
                None => String::new(),
            };
            assert_eq!(
                a,
                format!(
                    "{p}  # {} ms mean over {} calls, {}% of the method{tail}",
                    row["mean_ms"], row["calls"], row["share_pct"]
                )
            );
        }
        assert_eq!(n, ops.len());
    }
}

/// Found by itself when it is the only .etdp beside the program and its
/// events name the program's instructions, with a note.
#[test]
fn the_only_matching_profile_beside_a_program_is_found() {
    let d = tempfile::tempdir().unwrap();
    let copy = |from: &Path, name: &str| write_file(d.path(), name, &std::fs::read(from).unwrap());
    let program = copy(&pte("portable_mlp"), "m.pte");
    copy(&etdp("portable_mlp"), "run.etdp");
    let v = View::open(&Request {
        inputs: vec![program.clone()],
        auto_data: true,
        ..Request::default()
    })
    .unwrap();
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("run.etdp") && n.contains("profile")),
        "{:?}",
        v.notes
    );
    assert!(ls(&v, "methods/forward/profile").contains(&"ops.tsv".to_owned()));
    // Not with --no-auto-data.
    let v = View::open(&Request {
        inputs: vec![program.clone()],
        ..Request::default()
    })
    .unwrap();
    assert!(!ls(&v, "methods/forward").contains(&"profile".to_owned()));
    // A profile of another program is not taken: its delegate's events
    // name an instruction that calls no delegate here.
    std::fs::remove_file(d.path().join("run.etdp")).unwrap();
    copy(&etdp("xnnpack_mobilenetish_debug"), "other.etdp");
    let v = View::open(&Request {
        inputs: vec![program.clone()],
        auto_data: true,
        ..Request::default()
    })
    .unwrap();
    assert!(!ls(&v, "methods/forward").contains(&"profile".to_owned()));
    // Two .etdp files: neither is taken.
    copy(&etdp("portable_mlp"), "run.etdp");
    let v = View::open(&Request {
        inputs: vec![program],
        auto_data: true,
        ..Request::default()
    })
    .unwrap();
    assert!(!ls(&v, "methods/forward").contains(&"profile".to_owned()));
}

#[test]
fn a_profile_that_is_no_etdump_is_refused() {
    let e = View::open(&Request {
        inputs: vec![pte("portable_mlp")],
        profile: Some(pte("xnnpack_mobilenetish")),
        ..Request::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("--profile") && e.contains("not an ETDump"),
        "{e}"
    );
}

/// An ETDump whose events point past the program's chains and
/// instructions, at a kernel as if it were a delegate, or end before they
/// start, and whose debug tensor claims more bytes than there are.
fn hostile() -> Vec<u8> {
    use ptefs::schema::etdump as fb;
    let mut b = flatbuffers::FlatBufferBuilder::new();
    let mut events = Vec::new();
    let cases: [(&str, i32, i32, Option<&str>, u64); 5] = [
        ("OPERATOR_CALL", 7, 0, None, 50),
        ("OPERATOR_CALL", 0, 99, None, 50),
        ("OPERATOR_CALL", 0, 1, None, 0),
        ("OPERATOR_CALL", -5, 0, None, 50),
        ("", 0, 0, Some("Convolution (NHWC, F32) IGEMM #1"), 50),
    ];
    for (name, chain, instr, id, end) in cases {
        let name = (!name.is_empty()).then(|| b.create_string(name));
        let id = id.map(|s| b.create_string(s));
        let p = fb::ProfileEvent::create(
            &mut b,
            &fb::ProfileEventArgs {
                name,
                chain_index: chain,
                instruction_id: instr,
                delegate_debug_id_int: -1,
                delegate_debug_id_str: id,
                start_time: 10,
                end_time: end,
                ..Default::default()
            },
        );
        events.push(fb::Event::create(
            &mut b,
            &fb::EventArgs {
                profile_event: Some(p),
                ..Default::default()
            },
        ));
    }
    let sizes = b.create_vector(&[1i64 << 40]);
    let strides = b.create_vector(&[1i64]);
    let t = fb::Tensor::create(
        &mut b,
        &fb::TensorArgs {
            scalar_type: ptefs::schema::ScalarType::FLOAT,
            sizes: Some(sizes),
            strides: Some(strides),
            offset: 0,
        },
    );
    let val = fb::Value::create(
        &mut b,
        &fb::ValueArgs {
            val: fb::ValueType::Tensor,
            tensor: Some(t),
            ..Default::default()
        },
    );
    let d = fb::DebugEvent::create(
        &mut b,
        &fb::DebugEventArgs {
            chain_index: 3,
            instruction_id: 0,
            delegate_debug_id_int: -1,
            debug_entry: Some(val),
            ..Default::default()
        },
    );
    events.push(fb::Event::create(
        &mut b,
        &fb::EventArgs {
            debug_event: Some(d),
            ..Default::default()
        },
    ));
    finish_etdump(b, &events)
}

#[test]
fn events_naming_no_instruction_are_listed_and_warned_about() {
    let d = tempfile::tempdir().unwrap();
    let bad = write_file(d.path(), "bad.etdp", &hostile());
    let buffer = write_file(d.path(), "bad.debug.bin", &[0u8; 64]);
    let v = joined(&pte("portable_mlp"), &bad);
    let rows = tsv(&v, "methods/forward/profile/unmatched.tsv");
    let why: Vec<&str> = rows.iter().map(|r| r["why"].as_str()).collect();
    assert_eq!(rows.len(), 6, "{why:?}");
    assert!(why[0].contains("chain 7 is not in method"), "{why:?}");
    assert!(
        why[1].contains("instruction 99 is not in chain 0"),
        "{why:?}"
    );
    assert!(why[2].contains("before it starts"), "{why:?}");
    assert!(why[3].contains("chain -5"), "{why:?}");
    assert!(why[4].contains("calls no delegate"), "{why:?}");
    assert_eq!(
        rows[4]["delegate_debug_id"],
        "Convolution (NHWC, F32) IGEMM #1"
    );
    assert_eq!(rows[5]["kind"], "debug");
    assert!(
        v.tree
            .warnings
            .iter()
            .any(|w| w.contains("6 events match no instruction")),
        "{:?}",
        v.tree.warnings
    );
    // Nothing timed lands on an instruction.
    let ops = tsv(&v, "methods/forward/profile/ops.tsv");
    assert!(ops.iter().all(|r| r["calls"] == "0"));
    // Shown alone, its debug tensor's claimed size is past its buffer.
    let alone = View::open(&Request {
        inputs: vec![bad.clone()],
        debug_buffer: Some(buffer),
        ..Request::default()
    })
    .unwrap();
    let why = String::from_utf8(read(&alone, "runs/0/debug/0.ERROR.txt")).unwrap();
    assert!(why.contains("past the debug buffer"), "{why}");
}

/// Builds the tree of `program` joined with `profile` bytes and reads
/// every file: never a panic.
fn exercise(program: &[u8], profile: &[u8]) {
    let (Ok(p), parsed) = (ptefs::format::parse(program), ptefs::format::parse(profile)) else {
        panic!("the program parses");
    };
    let Ok(parsed) = parsed else { return };
    let inputs = [Input {
        name: "m.pte".into(),
        source: 0,
        bytes: Arc::new(program.to_vec()),
        parsed: p,
    }];
    let prof = Input {
        name: "run.etdp".into(),
        source: 1,
        bytes: Arc::new(profile.to_vec()),
        parsed,
    };
    // The debug fixture's buffer, for whatever the damaged profile logs.
    let buffer = std::fs::read(fixture("etdump/xnnpack_mobilenetish_debug.debug.bin")).unwrap();
    let debug = [ptefs::tree::DebugBuffer {
        of: 1,
        source: 2,
        bytes: Arc::new(buffer.clone()),
        name: "run.debug.bin".into(),
    }];
    let options = ptefs::tree::Options {
        profile: Some(&prof),
        debug: &debug,
        ..Default::default()
    };
    let tree = ptefs::tree::build_with(&inputs, &[], &options);
    let sources = [program, profile, &buffer];
    for (path, ino) in tree.walk(ROOT) {
        if let Some(f) = tree.file(ino) {
            let len = f.content.len();
            let mut at = 0;
            while at < len {
                let piece = f.content.read(at, len - at);
                assert!(!piece.is_empty(), "{path}: nothing at {at} of {len}");
                at += piece.len();
                if let Some((source, span)) = piece.tail {
                    assert!(span.end() <= sources[source].len() as u64, "{path}");
                }
            }
        }
    }
}

#[test]
fn every_truncation_and_byte_flip_of_a_profile_joins_without_a_crash() {
    for (program, profile) in PAIRS {
        let program = std::fs::read(pte(program)).unwrap();
        let mut bytes = std::fs::read(etdp(profile)).unwrap();
        for n in (0..bytes.len()).step_by(7) {
            exercise(&program, &bytes[..n]);
        }
        for at in 0..bytes.len() {
            for mask in [0xffu8, 0x01, 0x80] {
                bytes[at] ^= mask;
                exercise(&program, &bytes);
                bytes[at] ^= mask;
            }
        }
    }
    let program = std::fs::read(pte("portable_mlp")).unwrap();
    let mut bytes = hostile();
    for at in 0..bytes.len() {
        bytes[at] ^= 0xff;
        exercise(&program, &bytes);
        bytes[at] ^= 0xff;
    }
}

#[test]
fn inspect_with_the_program_names_instructions_by_operator() {
    let Run { code, out, err } = ptefs_run([
        "inspect".as_ref(),
        "--json".as_ref(),
        etdp("portable_mlp").as_os_str(),
        "--program".as_ref(),
        pte("portable_mlp").as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let top = &j["profile"]["top_instructions"];
    for t in top.as_array().unwrap() {
        let op = t["operator"].as_str().unwrap();
        let kernel = t["name"].as_str().unwrap();
        assert_eq!(
            kernel.strip_prefix("native_call_"),
            op.strip_prefix("aten::")
        );
    }
    assert_eq!(top[0]["operator"], "aten::addmm.out");
    assert_eq!(j["profile"]["program"]["unmatched_events"], 0);
    assert_eq!(
        j["profile"]["program"]["top_operators"][0]["operator"],
        "aten::addmm.out"
    );
    let Run { code, out, .. } = ptefs_run([
        "inspect".as_ref(),
        pte("xnnpack_mobilenetish").as_os_str(),
        "--profile".as_ref(),
        etdp("xnnpack_mobilenetish_debug").as_os_str(),
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("delegate 0 XnnpackBackend (DELEGATE_CALL)"),
        "{out}"
    );
}

/// `portable_mlp.etdp` with the first addmm's OPERATOR_CALL in its first
/// execution made `extra` ticks longer.
fn slowed(extra: u64) -> Vec<u8> {
    let o = oracle("portable_mlp");
    let e = o["run_data"][1]["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "OPERATOR_CALL" && e["instruction_id"] == 1)
        .unwrap()
        .clone();
    let end = e["end_time"].as_u64().unwrap();
    let mut bytes = std::fs::read(etdp("portable_mlp")).unwrap();
    let needle = end.to_le_bytes();
    let at: Vec<usize> = (0..bytes.len() - 8)
        .filter(|&i| bytes[i..i + 8] == needle)
        .collect();
    assert_eq!(at.len(), 1, "the end tick is stored once");
    bytes[at[0]..at[0] + 8].copy_from_slice(&(end + extra).to_le_bytes());
    bytes
}

#[test]
fn diff_of_two_profiles_reports_slowdowns() {
    let d = tempfile::tempdir().unwrap();
    let a = etdp("portable_mlp");
    // Three runs' mean for instruction 1 is 0.078153 ms: 0.3 ms more in
    // one run is a rise of 0.1 ms in the mean, +128 %.
    let b = write_file(d.path(), "slow.etdp", &slowed(300_000));
    let program = pte("portable_mlp");
    let Run { code, out, err } = ptefs_run([
        "diff".as_ref(),
        "--json".as_ref(),
        "--program".as_ref(),
        program.as_os_str(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert_eq!(code, 1, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["exceeded"], true);
    let rows = j["instructions"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    let slow: Vec<&Value> = rows.iter().filter(|r| r["exceeds"] == true).collect();
    assert_eq!(slow.len(), 1, "{rows:?}");
    assert_eq!(slow[0]["key"], "0:1");
    assert_eq!(slow[0]["name"], "aten::addmm.out");
    assert!((slow[0]["delta_ms"].as_f64().unwrap() - 0.1).abs() < 1e-9);
    let ratio = slow[0]["ratio"].as_f64().unwrap();
    let want = (0.234458 + 0.3) / 0.234458;
    assert!((ratio - want).abs() < 1e-6, "{ratio} vs {want}");
    let op = j["operators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "aten::addmm.out")
        .unwrap();
    assert_eq!(op["exceeds"], true);
    // A threshold above the rise: exit 0. The same file: exit 0.
    let Run { code, out, .. } = ptefs_run([
        "diff".as_ref(),
        "--threshold".as_ref(),
        "1000".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("native_call_addmm.out"), "{out}");
    let Run { code, out, .. } = ptefs_run(["diff".as_ref(), a.as_os_str(), a.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 row(s) slower"), "{out}");
}

#[test]
fn diff_of_two_profiles_names_a_wrong_program_or_threshold() {
    // The program names operators only for two ETDumps; it must be a
    // program; the threshold is a percentage at or above 0.
    let (a, b) = (etdp("portable_mlp"), etdp("xnnpack_mobilenetish_debug"));
    let (program, data) = (pte("portable_mlp"), fixture("mlp_external.ptd"));
    let run = |args: &[&std::ffi::OsStr]| {
        let r = ptefs_run(std::iter::once("diff".as_ref()).chain(args.iter().copied()));
        (r.code, r.out, r.err)
    };
    assert_eq!(
        run(&[
            "--program".as_ref(),
            data.as_os_str(),
            a.as_os_str(),
            b.as_os_str()
        ]),
        (
            2,
            String::new(),
            format!("ptefs: {}: is not a program (.pte)\n", data.display())
        )
    );
    assert_eq!(
        run(&[
            "--program".as_ref(),
            program.as_os_str(),
            a.as_os_str(),
            program.as_os_str()
        ]),
        (
            2,
            String::new(),
            "ptefs: --program is for comparing two ETDumps (.etdp)\n".to_owned()
        )
    );
    assert_eq!(
        run(&["--threshold=-1".as_ref(), a.as_os_str(), b.as_os_str()]),
        (
            2,
            String::new(),
            "ptefs: --threshold must be a number at or above 0\n".to_owned()
        )
    );
}

/// The tensors the runtime logged, under `profile/outputs/` of the
/// program they ran: Inspector's intermediate outputs of the delegate call
/// (its two arguments, in order) and the method's output, each the value
/// of the plan it is.
#[test]
fn logged_tensors_are_shown_beside_their_instructions() {
    let name = "xnnpack_mobilenetish_debug";
    let v = joined(&pte("xnnpack_mobilenetish"), &etdp(name));
    let index = json(&v, "methods/forward/profile/outputs/index.json");
    let index = index.as_array().unwrap();
    assert_eq!(index.len(), 3);
    assert_eq!(
        json(&v, "methods/forward/profile/summary.json")["logged_tensors"],
        3
    );
    // Inspector's debug data: the delegate call's.
    let o = oracle(name);
    let inspector: Vec<&Value> = o["inspector_event_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["events"].as_array().unwrap())
        .filter(|e| e["name"] == "DELEGATE_CALL")
        .flat_map(|e| e["debug_data"].as_array().unwrap())
        .collect();
    assert_eq!(inspector.len(), 2);
    // The plan: the delegate call's arguments and the method's outputs,
    // read from the program's own JSON.
    let plan = json(&v, "methods/forward/plan.json");
    let call = &plan["chains"][0]["instructions"][0]["instr_args"];
    let args: Vec<&Value> = call["args"].as_array().unwrap().iter().collect();
    assert_eq!(args.len(), 2, "{call}");
    let outputs = plan["outputs"].as_array().unwrap();
    for (k, e) in index[..2].iter().enumerate() {
        assert_eq!((e["run"].clone(), e["chain"].clone()), (1.into(), 0.into()));
        assert_eq!(e["instruction"], 0);
        assert_eq!(e["operator"], "delegate 0 XnnpackBackend");
        assert_eq!(e["position"], k);
        assert_eq!(&e["value"], args[k]);
        assert_eq!(e["sizes"], inspector[k]["tensor"]["shape"]);
        let path = format!(
            "methods/forward/profile/outputs/{}",
            e["file"].as_str().unwrap()
        );
        let npy = read(&v, &path);
        assert_eq!(
            sha256(npy_payload(&npy)),
            inspector[k]["tensor"]["sha256_f32"]
        );
    }
    // The method's output: the bytes the debug buffer holds where the
    // ETDump says.
    let out = &index[2];
    assert_eq!(
        (out["chain"].clone(), out["instruction"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(&out["value"], &outputs[0]);
    let stored = o["run_data"][1]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "debug")
        .nth(2)
        .unwrap()["debug_entry"]["tensor"]
        .clone();
    let at = stored["offset"].as_u64().unwrap() as usize;
    let buffer = std::fs::read(fixture(&format!("etdump/{name}.debug.bin"))).unwrap();
    let npy = read(
        &v,
        &format!(
            "methods/forward/profile/outputs/{}",
            out["file"].as_str().unwrap()
        ),
    );
    assert_eq!(npy_payload(&npy), &buffer[at..at + 16]);
    // A program whose profile logged nothing has no outputs/.
    let v = joined(&pte("portable_mlp"), &etdp("portable_mlp"));
    assert!(!ls(&v, "methods/forward/profile").contains(&"outputs".to_owned()));
}

/// Without its debug buffer the logged tensors are listed, each saying
/// why it has no file; given with `--debug-buffer`, the buffer is used
/// wherever the profile is.
#[test]
fn logged_tensors_without_their_buffer_are_listed_and_a_given_one_is_used() {
    let name = "xnnpack_mobilenetish_debug";
    let d = tempfile::tempdir().unwrap();
    let profile = write_file(d.path(), "run.etdp", &std::fs::read(etdp(name)).unwrap());
    let program = pte("xnnpack_mobilenetish");
    let v = joined(&program, &profile);
    assert_eq!(ls(&v, "methods/forward/profile/outputs"), ["index.json"]);
    let index = json(&v, "methods/forward/profile/outputs/index.json");
    for e in index.as_array().unwrap() {
        assert_eq!(e["file"], Value::Null);
        assert!(e["missing"].as_str().unwrap().contains("not there"), "{e}");
    }
    let given = View::open(&Request {
        inputs: vec![program.clone()],
        profile: Some(profile),
        debug_buffer: Some(fixture(&format!("etdump/{name}.debug.bin"))),
        ..Request::default()
    })
    .unwrap();
    let beside = joined(&program, &etdp(name));
    let outputs = |v: &View| -> BTreeMap<String, Vec<u8>> {
        files(v)
            .into_iter()
            .filter(|(p, _)| p.starts_with("methods/forward/profile/outputs/"))
            .collect()
    };
    assert_eq!(outputs(&given).len(), 4);
    assert_eq!(outputs(&given), outputs(&beside));
}

/// A debug event of `value` (made in `b`) at `chain`/`instruction`, with
/// a delegate's integer debug id or -1.
fn debug_event<'b>(
    b: &mut flatbuffers::FlatBufferBuilder<'b>,
    (chain, instruction, delegate): (u64, i32, i32),
    value: flatbuffers::WIPOffset<ptefs::schema::etdump::Value<'b>>,
) -> flatbuffers::WIPOffset<ptefs::schema::etdump::Event<'b>> {
    use ptefs::schema::etdump as fb;
    let d = fb::DebugEvent::create(
        b,
        &fb::DebugEventArgs {
            chain_index: chain,
            instruction_id: instruction,
            delegate_debug_id_int: delegate,
            debug_entry: Some(value),
            ..Default::default()
        },
    );
    fb::Event::create(
        b,
        &fb::EventArgs {
            debug_event: Some(d),
            ..Default::default()
        },
    )
}

/// A float tensor of `sizes` at `offset` of the debug buffer.
fn debug_tensor<'b>(
    b: &mut flatbuffers::FlatBufferBuilder<'b>,
    sizes: &[i64],
    offset: i64,
) -> flatbuffers::WIPOffset<ptefs::schema::etdump::Tensor<'b>> {
    use ptefs::schema::etdump as fb;
    let sizes = b.create_vector(sizes);
    fb::Tensor::create(
        b,
        &fb::TensorArgs {
            scalar_type: ptefs::schema::ScalarType::FLOAT,
            sizes: Some(sizes),
            offset,
            ..Default::default()
        },
    )
}

/// A debug event's value holding tensor `t`.
fn tensor_value<'b>(
    b: &mut flatbuffers::FlatBufferBuilder<'b>,
    t: flatbuffers::WIPOffset<ptefs::schema::etdump::Tensor<'b>>,
) -> flatbuffers::WIPOffset<ptefs::schema::etdump::Value<'b>> {
    use ptefs::schema::etdump as fb;
    fb::Value::create(
        b,
        &fb::ValueArgs {
            val: fb::ValueType::Tensor,
            tensor: Some(t),
            ..Default::default()
        },
    )
}

/// What takes a position among an instruction's logged values: every
/// value, a tensor or not, but not what a delegate logged itself; a
/// kernel's values are its last arguments; a list's tensors share their
/// value's position.
#[test]
fn logged_values_take_positions_as_the_runtime_logs_them() {
    use ptefs::schema::etdump as fb;
    let mut b = flatbuffers::FlatBufferBuilder::new();
    let mut events = Vec::new();
    // Instruction 1 (`aten::addmm.out`, out=%9): a value its delegate
    // debug id 7 logged, an integer, then the output.
    let t = debug_tensor(&mut b, &[1, 32], 0);
    let v = tensor_value(&mut b, t);
    events.push(debug_event(&mut b, (0, 1, 7), v));
    let i = fb::Int::create(&mut b, &fb::IntArgs { int_val: 3 });
    let v = fb::Value::create(
        &mut b,
        &fb::ValueArgs {
            val: fb::ValueType::Int,
            int_value: Some(i),
            ..Default::default()
        },
    );
    events.push(debug_event(&mut b, (0, 1, -1), v));
    let t = debug_tensor(&mut b, &[1, 32], 128);
    let v = tensor_value(&mut b, t);
    events.push(debug_event(&mut b, (0, 1, -1), v));
    // The method's output (%17): as a list of two tensors, which it is not.
    let (t1, t2) = (
        debug_tensor(&mut b, &[1, 8], 256),
        debug_tensor(&mut b, &[1, 8], 288),
    );
    let ts = b.create_vector(&[t1, t2]);
    let l = fb::TensorList::create(&mut b, &fb::TensorListArgs { tensors: Some(ts) });
    let v = fb::Value::create(
        &mut b,
        &fb::ValueArgs {
            val: fb::ValueType::TensorList,
            tensor_list: Some(l),
            ..Default::default()
        },
    );
    events.push(debug_event(&mut b, (u64::MAX, 0, -1), v));
    let profile = finish_etdump(b, &events);
    let d = tempfile::tempdir().unwrap();
    let buffer: Vec<u8> = (0..512u32).map(|i| (i * 7) as u8).collect();
    write_file(d.path(), "run.debug.bin", &buffer);
    let profile = write_file(d.path(), "run.etdp", &profile);
    let v = joined(&pte("portable_mlp"), &profile);
    let index = json(&v, "methods/forward/profile/outputs/index.json");
    let rows: Vec<(Value, Value, Value, Value, Value)> = index
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["delegate_debug_id"].clone(),
                e["position"].clone(),
                e["item"].clone(),
                e["value"].clone(),
                e["file"].clone(),
            )
        })
        .collect();
    let n = Value::Null;
    assert_eq!(
        rows,
        [
            (
                7.into(),
                0.into(),
                n.clone(),
                n.clone(),
                "0/1-aten::addmm.out.7.0.npy".into()
            ),
            (
                n.clone(),
                1.into(),
                n.clone(),
                9.into(),
                "0/1-aten::addmm.out.1.npy".into()
            ),
            (
                n.clone(),
                0.into(),
                0.into(),
                n.clone(),
                "0/output.0.0.npy".into()
            ),
            (
                n.clone(),
                0.into(),
                1.into(),
                n.clone(),
                "0/output.0.1.npy".into()
            ),
        ]
    );
    for (e, at) in index
        .as_array()
        .unwrap()
        .iter()
        .zip([0usize, 128, 256, 288])
    {
        let npy = read(
            &v,
            &format!(
                "methods/forward/profile/outputs/{}",
                e["file"].as_str().unwrap()
            ),
        );
        let body = npy_payload(&npy);
        assert_eq!(body, &buffer[at..at + body.len()], "{e}");
    }
}

#[test]
fn a_mount_with_a_profile_serves_the_offline_tree() {
    if !fuse_or_skip("a_mount_with_a_profile_serves_the_offline_tree") {
        return;
    }
    for (program, profile) in PAIRS {
        let (p, e) = (pte(program), etdp(profile));
        let v = joined(&p, &e);
        let m = Mounted::new(&[p.as_os_str(), "--profile".as_ref(), e.as_os_str()]);
        // Every file of the joined profile: the tables, the annotated
        // code and the logged tensors.
        let offline: Vec<(String, Vec<u8>)> = files(&v)
            .into_iter()
            .filter(|(p, _)| p.starts_with("methods/forward/profile/"))
            .collect();
        assert!(offline.len() >= 5, "{offline:?}");
        for (rel, bytes) in offline {
            assert_eq!(std::fs::read(m.path(&rel)).unwrap(), bytes, "{rel}");
        }
    }
}

/// Perfetto's trace processor is a binary its PyPI package downloads,
/// which is not reachable offline; so Chrome's trace-event rule that
/// Perfetto enforces on complete events is checked here: on one track
/// (pid, tid), any two `X` events are disjoint or one holds the other.
#[test]
fn trace_slices_nest_on_each_track() {
    for (_, profile) in PAIRS {
        let v = view_of(&[etdp(profile)], &[]);
        let t = json(&v, "trace.json");
        let mut tracks: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
        for e in t["traceEvents"].as_array().unwrap() {
            if e["ph"] == "X" {
                let ts = e["ts"].as_f64().unwrap();
                let end = ts + e["dur"].as_f64().unwrap();
                let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                tracks.entry(key).or_default().push((ts, end));
            }
        }
        assert!(!tracks.is_empty());
        for (track, spans) in tracks {
            for (i, a) in spans.iter().enumerate() {
                for b in &spans[i + 1..] {
                    let disjoint = a.1 <= b.0 || b.1 <= a.0;
                    let holds = |x: &(f64, f64), y: &(f64, f64)| x.0 <= y.0 && y.1 <= x.1;
                    assert!(
                        disjoint || holds(a, b) || holds(b, a),
                        "{profile} {track:?}: {a:?} and {b:?} overlap"
                    );
                }
            }
        }
    }
}

/// docs/profiles.md diffs `tests/fixtures/etdump/slowed/slow.etdp`, which
/// is `portable_mlp.etdp` with 0.3 ms added as above
/// (`PTEFS_DOCS_WRITE=1` writes it again).
#[test]
fn the_documented_slow_profile_is_the_slowed_fixture() {
    let path = fixture("etdump/slowed/slow.etdp");
    let bytes = slowed(300_000);
    if std::env::var("PTEFS_DOCS_WRITE").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
    }
    assert!(
        std::fs::read(&path).unwrap() == bytes,
        "{} is not portable_mlp.etdp slowed by 0.3 ms",
        path.display()
    );
}

/// A profile of another program is not joined, though every event it
/// times names an instruction the program has: its kernels' events name
/// other operators than those instructions call. Given, the warning and
/// README.txt say why (and `ls` still succeeds); found beside the
/// program, a note does.
#[test]
fn a_profile_of_another_program_is_not_joined() {
    let tiny = fixture("etrecord/tiny_gpt.pte");
    let v = joined(&tiny, &etdp("portable_mlp"));
    assert!(!ls(&v, "methods/forward").contains(&"profile".to_owned()));
    let warning = (v.tree.warnings.iter())
        .find(|w| w.contains("portable_mlp.etdp"))
        .unwrap_or_else(|| panic!("no warning: {:?}", v.tree.warnings));
    for said in [
        "tiny_gpt.pte",
        "not a profile of",
        "instruction 0 of chain 0 calls aten::embedding.out",
        "native_call_permute_copy.out",
    ] {
        assert!(warning.contains(said), "{said:?} not in {warning}");
    }
    let readme = String::from_utf8(read(&v, "README.txt")).unwrap();
    assert!(
        readme.contains("Not made:\n")
            && readme.contains("methods/forward/profile/: profile portable_mlp.etdp: not joined"),
        "{readme}"
    );
    // Its own program joins it as before.
    let v = joined(&pte("portable_mlp"), &etdp("portable_mlp"));
    assert!(v.tree.warnings.is_empty(), "{:?}", v.tree.warnings);
    assert!(ls(&v, "methods/forward/profile").contains(&"ops.tsv".to_owned()));
    let run = ptefs_run([
        "ls".as_ref(),
        tiny.as_os_str(),
        "--profile".as_ref(),
        etdp("portable_mlp").as_os_str(),
        "methods/forward".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}", run.err);
    assert!(
        run.err.contains("not a profile of tiny_gpt.pte"),
        "{}",
        run.err
    );
    assert!(!run.out.contains("profile/"), "{}", run.out);
    // Found beside the program: not attached, with a note saying why.
    let d = tempfile::tempdir().unwrap();
    let copy = |from: &Path, name: &str| write_file(d.path(), name, &std::fs::read(from).unwrap());
    let attn = copy(&tiny, "attn.pte");
    copy(&etdp("portable_mlp"), "etdump_output.etdp");
    let v = View::open(&Request {
        inputs: vec![attn],
        auto_data: true,
        ..Request::default()
    })
    .unwrap();
    assert!(!ls(&v, "methods/forward").contains(&"profile".to_owned()));
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("not attached etdump_output.etdp")
                && n.contains("calls aten::embedding.out")),
        "{:?}",
        v.notes
    );
}
