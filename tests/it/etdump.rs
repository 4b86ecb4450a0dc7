//! ETDump profiles (`.etdp`) as trees, against what ExecuTorch's own
//! readers make of the same files (tests/fixtures/etdump/README.md).

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;

use common::mounted::{Mounted, fuse_or_skip};
use common::*;
use ptefs::format::{self, Parsed};
use ptefs::report::inspect::inspect;
use ptefs::tree::{ROOT, Tree};
use serde_json::Value;

const FIXTURES: [&str; 2] = ["portable_mlp", "xnnpack_mobilenetish_debug"];

fn etdp(name: &str) -> std::path::PathBuf {
    fixture(&format!("etdump/{name}.etdp"))
}

fn oracle(name: &str) -> Value {
    let text = std::fs::read(fixture(&format!("etdump/{name}.oracle.json"))).unwrap();
    serde_json::from_slice(&text).unwrap()
}

/// The oracle writes -1 for "no integer delegate id"; events.json null.
fn delegate_int(v: &Value) -> Value {
    if v == &Value::from(-1) {
        Value::Null
    } else {
        v.clone()
    }
}

#[test]
fn every_event_equals_the_oracle() {
    for name in FIXTURES {
        let o = oracle(name);
        let v = view_of(&[etdp(name)], &[]);
        let runs = o["run_data"].as_array().unwrap();
        assert_eq!(ls(&v, "runs").len(), runs.len(), "{name}: run blocks");
        let header = json(&v, "header.json");
        assert_eq!(header["version"], o["etdump_version"], "{name}");
        assert_eq!(
            header["size_prefix"].as_u64().unwrap() + 4,
            o["size"].as_u64().unwrap()
        );
        for (r, want) in runs.iter().enumerate() {
            let got = json(&v, &format!("runs/{r}/events.json"));
            assert_eq!(got["name"], want["name"], "{name} run {r}");
            assert_eq!(got["bundled_input_index"], want["bundled_input_index"]);
            let (got, want) = (
                got["events"].as_array().unwrap(),
                want["events"].as_array().unwrap(),
            );
            assert_eq!(got.len(), want.len(), "{name} run {r}: events");
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                let at = format!("{name} run {r} event {i}");
                assert_eq!(g["kind"], w["kind"], "{at}");
                assert_eq!(g["name"], w["name"], "{at}");
                assert_eq!(g["chain_index"], w["chain_index"], "{at}");
                assert_eq!(g["instruction_id"], w["instruction_id"], "{at}");
                assert_eq!(
                    g["delegate_debug_id_int"],
                    delegate_int(&w["delegate_debug_id_int"]),
                    "{at}"
                );
                assert_eq!(
                    g["delegate_debug_id_str"], w["delegate_debug_id_str"],
                    "{at}"
                );
                if w["kind"] == "profile" {
                    assert_eq!(g["start_ticks"], w["start_time"], "{at}");
                    assert_eq!(g["end_ticks"], w["end_time"], "{at}");
                    assert_eq!(g["duration_ticks"], w["duration"], "{at}");
                } else {
                    let (gt, wt) = (&g["value"]["tensor"], &w["debug_entry"]["tensor"]);
                    assert_eq!(g["value"]["type"], w["debug_entry"]["val"], "{at}");
                    assert_eq!(gt["sizes"], wt["sizes"], "{at}");
                    assert_eq!(gt["strides"], wt["strides"], "{at}");
                    assert_eq!(gt["offset"], wt["offset"], "{at}");
                    assert_eq!(gt["scalar_type"], "FLOAT", "{at}");
                    assert_eq!(wt["scalar_type"], 6, "{at}");
                    let out = w["debug_entry"]["output"]["bool_val"].as_bool();
                    assert_eq!(g["output"].as_bool(), out, "{at}");
                }
            }
        }
    }
}

/// Per block and event (name and instruction), the durations over the
/// runs as Inspector gives them in ms (a tick taken as 1 ns).
#[test]
fn durations_equal_inspectors() {
    for name in FIXTURES {
        let o = oracle(name);
        let bytes = std::fs::read(etdp(name)).unwrap();
        let parsed = format::parse(&bytes).unwrap();
        let report = serde_json::to_value(inspect(name, &parsed, &[])).unwrap();
        let events = report["profile"]["events"].as_array().unwrap();
        let mut got = BTreeMap::new();
        for e in events {
            let key = (
                e["block"].as_str().unwrap().to_owned(),
                e["name"].as_str().unwrap().to_owned(),
                e["instruction_id"].as_i64().unwrap(),
            );
            assert!(got.insert(key, e.clone()).is_none(), "{name}: {e} twice");
        }
        let mut seen = 0;
        for block in o["inspector_event_blocks"].as_array().unwrap() {
            let bname = block["name"].as_str().unwrap();
            for w in block["events"].as_array().unwrap() {
                let key = (
                    bname.to_owned(),
                    w["name"].as_str().unwrap().to_owned(),
                    w["instruction_id"].as_i64().unwrap(),
                );
                let g = got
                    .get(&key)
                    .unwrap_or_else(|| panic!("{name}: no {key:?}"));
                let raw: Vec<f64> = w["raw_durations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect();
                let min = raw.iter().copied().fold(f64::INFINITY, f64::min);
                let max = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let mean = raw.iter().sum::<f64>() / raw.len() as f64;
                let close = |a: &Value, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-9;
                assert_eq!(g["count"].as_u64().unwrap() as usize, raw.len(), "{key:?}");
                assert!(close(&g["min_ms"], min), "{name} {key:?}: min {g}");
                assert!(close(&g["max_ms"], max), "{name} {key:?}: max {g}");
                assert!(close(&g["mean_ms"], mean), "{name} {key:?}: mean {g}");
                assert_eq!(
                    g["delegated"], w["is_delegated_op"],
                    "{name} {key:?}: delegated"
                );
                seen += 1;
            }
        }
        assert_eq!(seen, got.len(), "{name}: events Inspector does not list");
        // The slowest instruction of the portable MLP is the first addmm.
        if name == "portable_mlp" {
            let top = &report["profile"]["top_instructions"][0];
            assert_eq!(top["instruction_id"], 1);
            assert_eq!(top["name"], "native_call_addmm.out");
        }
    }
}

/// trace.json follows Chrome's trace-event format as Perfetto and
/// chrome://tracing load it.
#[test]
fn trace_follows_the_trace_event_format() {
    for name in FIXTURES {
        let v = view_of(&[etdp(name)], &[]);
        let t = json(&v, "trace.json");
        let events = t["traceEvents"].as_array().expect("traceEvents");
        let o = oracle(name);
        let profile_events: usize = o["run_data"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["events"].as_array().unwrap())
            .filter(|e| e["kind"] == "profile")
            .count();
        let complete: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(complete.len(), profile_events, "{name}");
        for e in events {
            assert!(e["name"].is_string(), "{e}");
            assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
            let ph = e["ph"].as_str().unwrap();
            assert!(ph == "X" || ph == "M", "{e}");
            if ph == "X" {
                assert!(e["ts"].as_f64().unwrap() >= 0.0, "{e}");
                assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
                // Microseconds: ticks (ns) / 1000.
                let ticks = e["args"]["end_ticks"].as_u64().unwrap()
                    - e["args"]["start_ticks"].as_u64().unwrap();
                assert!((e["dur"].as_f64().unwrap() - ticks as f64 / 1e3).abs() < 1e-6);
            } else {
                assert!(e["args"]["name"].is_string() || e["args"]["sort_index"].is_u64());
            }
        }
        // A delegate's events nest within its instruction's span, on the
        // same track.
        let mut nested = 0;
        for d in complete.iter().filter(|e| e["cat"] == "delegate") {
            let outer = complete
                .iter()
                .find(|e| {
                    e["cat"] == "runtime"
                        && e["pid"] == d["pid"]
                        && e["tid"] == d["tid"]
                        && e["args"]["instruction_id"] == d["args"]["instruction_id"]
                })
                .unwrap_or_else(|| panic!("{name}: {d} has no instruction span"));
            let (ts, dur) = (
                outer["ts"].as_f64().unwrap(),
                outer["dur"].as_f64().unwrap(),
            );
            let (dts, ddur) = (d["ts"].as_f64().unwrap(), d["dur"].as_f64().unwrap());
            assert!(ts <= dts && dts + ddur <= ts + dur, "{d} outside {outer}");
            nested += 1;
        }
        if name.starts_with("xnnpack") {
            assert_eq!(nested, 8, "{name}: XNNPACK's events");
        }
    }
}

#[test]
fn inspect_prints_runs_events_and_top_instructions() {
    let out = ptefs()
        .arg("inspect")
        .arg(etdp("portable_mlp"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "ETDump",
        "run data blocks: 4",
        "Method::execute",
        "top instructions by time:",
        "native_call_addmm.out",
    ] {
        assert!(text.contains(want), "{want} missing from:\n{text}");
    }
    let j = ptefs_json([
        OsStr::new("inspect"),
        "--json".as_ref(),
        etdp("portable_mlp").as_os_str(),
    ]);
    assert_eq!(j["kind"], "profile");
    assert_eq!(j["profile"]["runs"].as_array().unwrap().len(), 4);
}

#[test]
fn a_mount_serves_the_offline_tree() {
    if !fuse_or_skip("a_mount_serves_the_offline_tree") {
        return;
    }
    for name in FIXTURES {
        let path = etdp(name);
        let v = view_of(std::slice::from_ref(&path), &[]);
        let want = files(&v);
        let m = Mounted::new(&[path.as_os_str()]);
        let mut got = BTreeMap::new();
        walk(&m.dir, "", &mut got);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        );
        for (k, bytes) in &want {
            assert!(got[k] == *bytes, "{name}: {k} differs");
        }
    }
}

fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = format!("{prefix}{}", e.file_name().to_str().unwrap());
        if e.file_type().unwrap().is_dir() {
            walk(&e.path(), &format!("{name}/"), out);
        } else {
            out.insert(name, std::fs::read(e.path()).unwrap());
        }
    }
}

/// Opens `bytes` as the mount would and reads every file; an error must
/// be one line.
fn exercise(bytes: &[u8]) -> bool {
    match Tree::from_bytes("run.etdp", bytes) {
        Ok(tree) => {
            for (_, ino) in tree.walk(ROOT) {
                if let Some(f) = tree.file(ino) {
                    let len = f.content.len();
                    let mut at = 0;
                    while at < len {
                        let n = f.content.read(at, len - at).len();
                        assert!(n > 0, "nothing at {at} of {len}");
                        at += n;
                    }
                }
            }
            true
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
            false
        }
    }
}

#[test]
fn every_truncation_and_byte_flip_opens_or_fails_in_one_line() {
    let mut bytes = std::fs::read(etdp("portable_mlp")).unwrap();
    let (mut opened, mut refused) = (0, 0);
    for n in 0..bytes.len() {
        if exercise(&bytes[..n]) {
            opened += 1;
        } else {
            refused += 1;
        }
    }
    for at in 0..bytes.len() {
        for mask in [0xffu8, 0x01, 0x80] {
            bytes[at] ^= mask;
            if exercise(&bytes) {
                opened += 1;
            } else {
                refused += 1;
            }
            bytes[at] ^= mask;
        }
    }
    assert!(
        opened > 0 && refused > 0,
        "{opened} opened, {refused} refused"
    );
}

#[test]
fn a_wrong_size_prefix_is_named() {
    let mut bytes = std::fs::read(etdp("portable_mlp")).unwrap();
    let len = bytes.len() as u32;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    let e = format::parse(&bytes).unwrap_err().to_string();
    assert!(
        e.contains("size prefix") && e.contains("past the end"),
        "{e}"
    );
    // Shorter than the file: what follows is left unread, and said so.
    bytes[..4].copy_from_slice(&(len - 4).to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    match format::parse(&bytes).unwrap() {
        Parsed::Profile(p) => assert!(p.warnings.iter().any(|w| w.contains("not read"))),
        other => panic!("{other:?}"),
    }
}

/// An ETDump built here, with what a hostile or broken writer might put
/// in it.
fn hostile() -> Vec<u8> {
    use ptefs::schema::etdump as fb;
    let mut b = flatbuffers::FlatBufferBuilder::new();
    let name = b.create_string("OPERATOR_CALL");
    // Chain far past any a program has, ending before it starts.
    let p = fb::ProfileEvent::create(
        &mut b,
        &fb::ProfileEventArgs {
            name: Some(name),
            chain_index: i32::MAX,
            instruction_id: 1 << 30,
            start_time: 100,
            end_time: 10,
            ..Default::default()
        },
    );
    let e1 = fb::Event::create(
        &mut b,
        &fb::EventArgs {
            profile_event: Some(p),
            ..Default::default()
        },
    );
    // A tensor claiming more bytes than any buffer holds.
    let sizes = b.create_vector(&[i64::MAX, 2]);
    let strides = b.create_vector(&[2i64, 1]);
    let t = fb::Tensor::create(
        &mut b,
        &fb::TensorArgs {
            scalar_type: ptefs::schema::ScalarType::FLOAT,
            sizes: Some(sizes),
            strides: Some(strides),
            offset: -8,
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
            chain_index: u64::MAX,
            debug_entry: Some(val),
            ..Default::default()
        },
    );
    let e2 = fb::Event::create(
        &mut b,
        &fb::EventArgs {
            debug_event: Some(d),
            ..Default::default()
        },
    );
    // An allocation from an allocator that is not there, and an empty event.
    let a = fb::AllocationEvent::create(
        &mut b,
        &fb::AllocationEventArgs {
            allocator_id: 7,
            allocation_size: 64,
        },
    );
    let e3 = fb::Event::create(
        &mut b,
        &fb::EventArgs {
            allocation_event: Some(a),
            ..Default::default()
        },
    );
    let e4 = fb::Event::create(&mut b, &fb::EventArgs::default());
    finish_etdump(b, &[e1, e2, e3, e4])
}

#[test]
fn hostile_events_are_shown_with_warnings() {
    let bytes = hostile();
    let Parsed::Profile(p) = format::parse(&bytes).unwrap() else {
        panic!("not a profile")
    };
    let w = p.warnings.join("\n");
    for want in [
        "ends (tick 10) before it starts",
        "allocator 7 is out of range",
        "sets 0 of",
    ] {
        assert!(w.contains(want), "{want} missing from {w}");
    }
    let d = tempfile::tempdir().unwrap();
    let v = view_of(&[write_file(d.path(), "bad.etdp", &bytes)], &[]);
    let events = json(&v, "runs/0/events.json");
    let e = &events["events"];
    assert_eq!(e[0]["duration_ticks"], Value::Null);
    assert_eq!(e[0]["chain_index"], i32::MAX);
    let t = &e[1]["value"]["tensor"];
    assert!(t["problem"].as_str().unwrap().contains("offset -8"), "{t}");
    assert_eq!(e[3]["kind"], "empty");
    let alloc = json(&v, "runs/0/allocations.json");
    assert_eq!(alloc["allocations"][0]["allocator_id"], 7);
    // The span that ends before it starts is left out of the trace.
    let trace = json(&v, "trace.json");
    assert!(
        !trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["ph"] == "X")
    );
    exercise(&bytes);
    // Every truncation and flip of it too.
    let mut bytes = bytes;
    for n in 0..bytes.len() {
        exercise(&bytes[..n]);
    }
    for at in 0..bytes.len() {
        bytes[at] ^= 0xff;
        exercise(&bytes);
        bytes[at] ^= 0xff;
    }
}

/// Each intermediate output's `.npy` holds the debug buffer's bytes that
/// Inspector reads for it.
#[test]
fn debug_tensors_are_the_debug_buffers_bytes() {
    let name = "xnnpack_mobilenetish_debug";
    let o = oracle(name);
    let v = view_of(&[etdp(name)], &[]);
    let header = json(&v, "header.json");
    assert_eq!(header["debug_buffer"]["size"], 65536);
    // Inspector's debug data, in event order over the blocks.
    let want: Vec<&Value> = o["inspector_event_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["events"].as_array().unwrap())
        .flat_map(|e| e["debug_data"].as_array().unwrap())
        .collect();
    assert_eq!(want.len(), 2);
    let events = json(&v, "runs/1/events.json");
    let tensors: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "debug")
        .map(|e| &e["value"]["tensor"])
        .collect();
    assert_eq!(tensors.len(), 3);
    // Inspector lists the two intermediate outputs (the third, the
    // method's output, is not an instruction's).
    for (t, w) in tensors.iter().zip(&want) {
        let npy = read(&v, &format!("runs/1/{}", t["npy"].as_str().unwrap()));
        assert_eq!(t["sizes"], w["tensor"]["shape"]);
        assert_eq!(sha256(npy_payload(&npy)), w["tensor"]["sha256_f32"]);
    }
}

#[test]
fn without_the_debug_buffer_debug_events_are_listed_without_files() {
    let name = "xnnpack_mobilenetish_debug";
    let d = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(etdp(name)).unwrap();
    let v = view_of(&[write_file(d.path(), "alone.etdp", &bytes)], &[]);
    assert_eq!(json(&v, "header.json")["debug_buffer"], Value::Null);
    assert!(!ls(&v, "runs/1").iter().any(|n| n.starts_with("debug")));
    let events = json(&v, "runs/1/events.json");
    let t = &events["events"][8]["value"]["tensor"];
    assert_eq!(t["npy"], Value::Null);
    assert!(t["npy_missing"].as_str().unwrap().contains("not there"));
    // A buffer cut short: the tensors past its end get an ERROR.txt, the
    // one within it its .npy.
    let buffer = std::fs::read(fixture(&format!("etdump/{name}.debug.bin"))).unwrap();
    write_file(d.path(), "alone.debug.bin", &buffer[..12300]);
    let v = view_of(&[d.path().join("alone.etdp")], &[]);
    let listed = ls(&v, "runs/1/debug");
    assert_eq!(
        listed,
        ["0.npy", "1.ERROR.txt", "2.ERROR.txt"],
        "{listed:?}"
    );
    let why = String::from_utf8(read(&v, "runs/1/debug/1.ERROR.txt")).unwrap();
    assert!(
        why.contains("extend past the debug buffer's 12300 bytes"),
        "{why}"
    );
}

/// `--debug-buffer FILE` names the buffer wherever it is and whatever its
/// name.
#[test]
fn the_debug_buffer_can_be_given() {
    let name = "xnnpack_mobilenetish_debug";
    let d = tempfile::tempdir().unwrap();
    let profile = write_file(d.path(), "run.etdp", &std::fs::read(etdp(name)).unwrap());
    let buffer = fixture(&format!("etdump/{name}.debug.bin"));
    let stdout = |args: &[&std::ffi::OsStr]| {
        let out = ptefs().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let given = [
        "--debug-buffer".as_ref(),
        buffer.as_os_str(),
        profile.as_os_str(),
    ];
    let listing = String::from_utf8(stdout(
        &[&["ls".as_ref(), "-R".as_ref()], &given[..]].concat(),
    ))
    .unwrap();
    assert!(listing.contains("runs/1/debug/2.npy"), "{listing}");
    let npy = stdout(
        &[
            &["cat".as_ref()],
            &given[..],
            &["runs/1/debug/0.npy".as_ref()],
        ]
        .concat(),
    );
    let want = view_of(&[etdp(name)], &[]);
    assert_eq!(npy, read(&want, "runs/1/debug/0.npy"));
    let header = stdout(&[&["cat".as_ref()], &given[..], &["header.json".as_ref()]].concat());
    let header: Value = serde_json::from_slice(&header).unwrap();
    assert_eq!(header["debug_buffer"]["name"], format!("{name}.debug.bin"));
}
