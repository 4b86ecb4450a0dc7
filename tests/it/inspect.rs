//! `inspect` as a library report and as a command, against the fixtures'
//! own facts (flatc's JSON of each file, the constant oracles) and a
//! bundled program the writer makes.

use crate::common;
use crate::writer;

use std::collections::BTreeMap;
use std::ffi::OsStr;

use common::*;
use ptefs::format::{self, Parsed};
use ptefs::report::inspect::{Inspection, inspect};
use serde_json::Value;
use writer::{Bundled, Bytes, TestValue};

fn report_of(name: &str, bytes: &[u8]) -> Inspection {
    let parsed = format::parse(bytes).unwrap();
    inspect(name, &parsed, &[])
}

fn flatc(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(&format!("flatc-json/{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn oracle(name: &str) -> Vec<Value> {
    std::fs::read_to_string(fixture(&format!("{name}.oracle.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The composition accounts for every byte once.
fn check_composition(r: &Inspection) {
    let total: u64 = r.composition.iter().map(|s| s.bytes).sum();
    assert_eq!(total, r.file_size, "{}: {:?}", r.file, r.composition);
}

#[test]
fn programs_match_flatc_and_the_oracles() {
    for name in [
        "add.pte",
        "mlp.pte",
        "multi_method.pte",
        "mv2_xnnpack.pte",
        "dtypes.pte",
    ] {
        let bytes = std::fs::read(fixture(name)).unwrap();
        let r = report_of(name, &bytes);
        let fj = flatc(name);
        assert_eq!(r.kind, "program");
        assert_eq!(r.identifier.as_bytes(), &bytes[4..8]);
        assert_eq!(r.file_size, bytes.len() as u64);
        let p = r.program.as_ref().unwrap();
        let plans = fj["execution_plan"].as_array().unwrap();
        assert_eq!(p.methods.len(), plans.len(), "{name}");
        for (m, plan) in p.methods.iter().zip(plans) {
            assert_eq!(m.name, plan["name"].as_str().unwrap());
            assert_eq!(m.values, plan["values"].as_array().unwrap().len());
            assert_eq!(m.operators, plan["operators"].as_array().unwrap().len());
            // Kernel calls per operator, counted from flatc's JSON.
            let ops = plan["operators"].as_array().unwrap();
            let mut want: BTreeMap<String, u64> = BTreeMap::new();
            let mut instructions = 0;
            for chain in plan["chains"].as_array().unwrap() {
                for ins in chain["instructions"].as_array().unwrap() {
                    instructions += 1;
                    let key = match ins["instr_args_type"].as_str().unwrap() {
                        "KernelCall" => {
                            let op = &ops[ins["instr_args"]["op_index"].as_u64().unwrap() as usize];
                            match op["overload"].as_str().unwrap_or("") {
                                "" => op["name"].as_str().unwrap().to_owned(),
                                o => format!("{}.{o}", op["name"].as_str().unwrap()),
                            }
                        }
                        "DelegateCall" => "<delegate call>".to_owned(),
                        other => format!("<{}>", other.to_lowercase()),
                    };
                    *want.entry(key).or_default() += 1;
                }
            }
            assert_eq!(m.calls, want, "{name} {}", m.name);
            assert_eq!(m.instructions, instructions);
            assert_eq!(m.delegates, plan["delegates"].as_array().unwrap().len());
            // Tensors with bytes: the oracle lists every constant tensor.
            let mine: Vec<Value> = oracle(name)
                .into_iter()
                .filter(|o| o["plan"] == m.name.as_str())
                .collect();
            assert_eq!(m.tensors, mine.len(), "{name} {}", m.name);
            let bytes: u64 = mine.iter().map(|o| o["nbytes"].as_u64().unwrap()).sum();
            assert_eq!(m.tensor_bytes, bytes, "{name} {}", m.name);
        }
        assert_eq!(
            p.segments.count,
            fj["segments"].as_array().map_or(0, Vec::len),
            "{name}"
        );
        check_composition(&r);
    }
}

#[test]
fn a_data_file() {
    let name = "mlp_external.ptd";
    let bytes = std::fs::read(fixture(name)).unwrap();
    let r = report_of(name, &bytes);
    let fj = flatc(name);
    assert_eq!((r.kind, r.identifier.as_str()), ("data", "FT01"));
    let d = r.data.as_ref().unwrap();
    let named = fj["named_data"].as_array().unwrap();
    assert_eq!(d.named_data, named.len());
    let with_layout = named
        .iter()
        .filter(|n| n.get("tensor_layout").is_some())
        .count();
    assert_eq!(
        d.tensors.iter().map(|t| t.count).sum::<u64>(),
        with_layout as u64
    );
    assert_eq!(d.opaque_blobs.count, named.len() - with_layout);
    let oracle_bytes: u64 = oracle(name)
        .iter()
        .filter(|o| o.get("named").is_some())
        .filter_map(|o| o["nbytes"].as_u64())
        .sum();
    assert_eq!(d.tensors.iter().map(|t| t.bytes).sum::<u64>(), oracle_bytes);
    check_composition(&r);
    assert!(r.program.is_none() && r.bundle.is_none());
}

#[test]
fn external_tensors_found_or_missing() {
    let pte = std::fs::read(fixture("mlp_external.pte")).unwrap();
    let ptd = std::fs::read(fixture("mlp_external.ptd")).unwrap();
    let parsed = format::parse(&pte).unwrap();
    let Parsed::Data(data) = format::parse(&ptd).unwrap() else {
        panic!("a data file")
    };
    let alone = inspect("mlp_external.pte", &parsed, &[]);
    let m = &alone.program.as_ref().unwrap().methods[0];
    assert_eq!((m.external_tensors, m.external_missing), (4, 4));
    let with = inspect("mlp_external.pte", &parsed, &[&data]);
    let m = &with.program.as_ref().unwrap().methods[0];
    assert_eq!((m.external_tensors, m.external_missing), (4, 0));
}

fn bundle() -> (Vec<u8>, Vec<u8>) {
    let program = std::fs::read(fixture("mlp.pte")).unwrap();
    let tensor = TestValue::Tensor {
        scalar_type: ptefs::schema::ScalarType::FLOAT,
        sizes: vec![1, 16],
        data: Bytes::Pattern { len: 64, seed: 3 }.to_vec(),
    };
    let b = Bundled {
        program: program.clone(),
        suites: vec![(
            "forward".into(),
            vec![
                (vec![tensor.clone()], vec![tensor]),
                (vec![TestValue::Int(1)], vec![]),
            ],
        )],
    };
    (b.to_bytes(), program)
}

#[test]
fn a_bundled_program_shows_its_own_identifier_then_its_program() {
    let (bytes, program) = bundle();
    let r = report_of("m.bpte", &bytes);
    assert_eq!(r.kind, "bundled_program");
    assert_eq!(r.identifier, "BP08");
    assert_eq!(&bytes[4..8], b"BP08");
    let b = r.bundle.as_ref().unwrap();
    let at = b.embedded_program;
    assert_eq!(
        &bytes[at.offset as usize..(at.offset + at.size) as usize],
        &program[..]
    );
    assert_eq!(b.test_suites.len(), 1);
    assert_eq!(
        (b.test_suites[0].method.as_str(), b.test_suites[0].cases),
        ("forward", 2)
    );
    // The embedded program is reported as the program alone is.
    let alone = report_of("mlp.pte", &program);
    let (p, q) = (r.program.as_ref().unwrap(), alone.program.as_ref().unwrap());
    assert_eq!(p.identifier, "ET12");
    assert_eq!(
        serde_json::to_value(p).unwrap(),
        serde_json::to_value(q).unwrap()
    );
    check_composition(&r);
    let test_data = r
        .composition
        .iter()
        .find(|s| s.category == "test inputs and outputs")
        .unwrap();
    assert_eq!(test_data.bytes, 128);
}

#[test]
fn the_command_prints_the_report_as_json_and_text() {
    let (bytes, _) = bundle();
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "m.bpte", &bytes);
    let run = |json: bool| {
        let mut c = ptefs();
        c.arg("inspect");
        if json {
            c.arg("--json");
        }
        let out = c.arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&run(true)).unwrap();
    let want = serde_json::to_value(report_of("m.bpte", &bytes)).unwrap();
    assert_eq!(json, want);
    assert_eq!(json["identifier"], "BP08");
    let text = run(false);
    assert!(
        text.starts_with("m.bpte: ExecuTorch bundled program, identifier BP08"),
        "{text}"
    );
    assert!(text.contains("identifier ET12"), "{text}");
    assert!(text.contains("  forward: 2 cases"), "{text}");
}

#[test]
fn top_lists_the_largest_byte_ranges_once_each() {
    let model = fixture("mv2_xnnpack.pte");
    let r = ptefs_json([
        OsStr::new("inspect"),
        "--json".as_ref(),
        "--top".as_ref(),
        "5".as_ref(),
        model.as_os_str(),
    ]);
    let top = r["largest"].as_array().unwrap();
    assert_eq!(top.len(), 5);
    // The oracle's five largest named blobs, by size.
    let mut named: Vec<(u64, String)> = oracle("mv2_xnnpack.pte")
        .iter()
        .filter_map(|o| Some((o["nbytes"].as_u64()?, o.get("named")?.as_str()?.to_owned())))
        .collect();
    named.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let v = view("mv2_xnnpack.pte");
    for (got, (bytes, _)) in top.iter().zip(&named) {
        assert_eq!(got["bytes"].as_u64(), Some(*bytes), "{got}");
        let path = got["path"].as_str().unwrap();
        let ino = v
            .tree
            .resolve(path)
            .unwrap_or_else(|| panic!("{path} not in the tree"));
        assert_eq!(read(&v, path).len() as u64, *bytes);
        let all: Vec<&str> = std::iter::once(path)
            .chain(
                got["aliases"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| a.as_str().unwrap()),
            )
            .collect();
        // Blobs of equal size may come in either order (paths decide).
        let same_size: Vec<String> = named
            .iter()
            .filter(|(n, _)| n == bytes)
            .map(|(_, k)| format!("named/{k}.bin"))
            .collect();
        assert!(
            all.iter().any(|a| same_size.iter().any(|k| k == a)),
            "{all:?}"
        );
        for a in all {
            assert_eq!(v.tree.resolve(a), Some(ino), "{a}");
        }
        assert_eq!(got["source"], "mv2_xnnpack.pte");
    }
    // Sizes never grow down the list.
    let sizes: Vec<u64> = top.iter().map(|t| t["bytes"].as_u64().unwrap()).collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
}

#[test]
fn delegates_show_what_their_payload_holds() {
    for (model, data) in [
        ("mv2_xnnpack.pte", None),
        ("quant_xnnpack.pte", None),
        ("xnnpack_external.pte", Some("xnnpack_external.ptd")),
    ] {
        let mut args = vec![
            "inspect".into(),
            "--json".into(),
            fixture(model).into_os_string(),
        ];
        if let Some(d) = data {
            args.extend(["--data".into(), fixture(d).into_os_string()]);
        }
        let r = ptefs_json(args);
        let oracle =
            std::fs::read_to_string(fixture(&format!("{model}.xnnpack.oracle.jsonl"))).unwrap();
        let delegates: Vec<Value> = oracle
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|o| o.get("xnodes").is_some())
            .collect();
        assert!(!delegates.is_empty(), "{model}");
        for want in delegates {
            let got = r["program"]["delegates"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["method"] == want["method"] && d["index"] == want["delegate"])
                .unwrap_or_else(|| panic!("{model}: {want}"));
            let s = &got["decoded"];
            assert_eq!(s["backend"], want["backend"], "{model}");
            assert_eq!(s["nodes"], want["xnodes"], "{model}");
            assert_eq!(s["values"], want["xvalues"], "{model}");
            assert_eq!(s["ops"], want["ops"], "{model}");
        }
    }
    let out = ptefs()
        .args(["inspect"])
        .arg(fixture("mv2_xnnpack.pte"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("    67 nodes, 174 values\n        35  XNNConv2d\n"),
        "{text}"
    );
}

#[test]
fn names_reports_the_checkpoint_keys_found_and_missing() {
    // A JSON map of name to sha256, from the module mlp.pte came from, plus
    // one key whose bytes no tensor holds.
    let sd: Value =
        serde_json::from_slice(&std::fs::read(fixture("state_dicts.json")).unwrap()).unwrap();
    let mut map: serde_json::Map<String, Value> = sd["mlp"]["state"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["sha256"].clone()))
        .collect();
    map.insert("extra.weight".into(), Value::from("0".repeat(64)));
    let dir = tempfile::tempdir().unwrap();
    let names = write_file(dir.path(), "names.json", &serde_json::to_vec(&map).unwrap());
    let run = |json: bool| {
        let mut c = ptefs();
        c.arg("inspect");
        if json {
            c.arg("--json");
        }
        let out = c
            .arg(fixture("mlp.pte"))
            .arg("--names")
            .arg(&names)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let r: Value = serde_json::from_str(&run(true)).unwrap();
    assert_eq!(r["checkpoint"]["keys"], 5);
    assert_eq!(r["checkpoint"]["matched"], 4);
    assert_eq!(
        r["checkpoint"]["unmatched"],
        serde_json::json!(["extra.weight"])
    );
    let text = run(false);
    assert!(
        text.contains("checkpoint: 4 of 5 keys found\n  not found: extra.weight\n"),
        "{text}"
    );
}

/// A program warranting a warning per tensor: `ls` and `inspect` each show
/// the first twenty and how many more, not one line per tensor.
#[test]
fn warnings_are_capped_alike_by_ls_and_inspect() {
    use ptefs::schema::ScalarType;
    let values = (0..50)
        .map(|i| {
            let t = writer::Tensor::new(
                ScalarType(99),
                &[4],
                writer::Data::Constant(Bytes::Pattern { len: 16, seed: i }),
            );
            writer::Value::Tensor(t)
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(
        dir.path(),
        "unknown.pte",
        &writer::Program::forward(values).to_bytes(),
    );
    for command in ["ls", "inspect"] {
        let out = ptefs().arg(command).arg(&file).output().unwrap();
        assert!(out.status.success(), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
        assert_eq!(warnings.len(), 21, "{command}: {err}");
        assert!(
            warnings[0].contains("scalar type 99 is unknown"),
            "{command}: {err}"
        );
        assert!(warnings[20].ends_with("and 30 more"), "{command}: {err}");
    }
}
