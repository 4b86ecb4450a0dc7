//! `ptefs check` against ExecuTorch 1.5.1's own runtime: each fixture of
//! tests/fixtures/check (made by scripts/gen-check-fixtures.py) carries
//! what that runtime did loading it; check must predict it with the same
//! method, operator index, name, log line and error code.

use serde_json::Value;

use crate::common::{fixture, ptefs};

/// The lines of a runtime's log that say why a method did not load.
const WHY: &[&str] = &[
    "Missing operator:",
    "There are ",
    "Backend ",
    "Failed to get metadata for key",
    "external_data_map is null",
    "Sizes mismatch.",
    "Scalar type mismatch.",
    "Dim mismatch.",
    "Failed to get constant data for key",
    "XNNCompiler::compileModel failed",
    "Init failed for backend",
    "XNNPACK Delegate Serialization Format version identifier",
];

fn run(args: &[&str]) -> (i32, String, String) {
    let out = ptefs().arg("check").args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `ptefs check --json` of an oracle's program with exactly its data file.
fn check_as_oracle(oracle: &Value, extra: &[&str]) -> (i32, Value) {
    let dir = fixture("check");
    let program = dir.join(oracle["program"].as_str().unwrap());
    let mut args = vec!["--json".to_owned(), "--no-auto-data".to_owned()];
    if let Some(d) = oracle["data"].as_str() {
        args.push("--data".to_owned());
        args.push(dir.join(d).display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(program.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = run(&args);
    assert!(code == 0 || code == 1, "{err}");
    (code, serde_json::from_str(&out).unwrap())
}

fn oracles() -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = std::fs::read_dir(fixture("check"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".oracle.json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (
                name,
                serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap(),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(v.len() >= 10, "{} oracles", v.len());
    v
}

/// A file `Program::load` refused: one program-level problem with the
/// runtime's error code and exactly its log.
fn program_refusal_matches(name: &str, oracle: &Value, report: &Value) {
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{name}: {report:#}");
    let p = &problems[0];
    assert_eq!(p["kind"], "program_refused", "{name}");
    assert_eq!(p["method"], Value::Null, "{name}");
    let code = oracle["error_code"].as_str().unwrap();
    let ours = p["error"].as_str().unwrap();
    assert!(ours.starts_with(&format!("{code} ")), "{name}: {ours}");
    assert_eq!(p["log"], oracle["log"], "{name}");
    assert_eq!(report["methods"], Value::Array(Vec::new()), "{name}");
}

fn why_lines(log: &Value) -> Vec<String> {
    log.as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|l| WHY.iter().any(|w| l.starts_with(w)))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_oracles_record_methods_the_runtime_ran() {
    let ran: Vec<String> = oracles()
        .into_iter()
        .filter(|(_, o)| !o["ran"].as_array().unwrap().is_empty())
        .map(|(n, _)| n)
        .collect();
    assert!(ran.contains(&"external.oracle.json".to_owned()), "{ran:?}");
    let (code, report) = check_as_oracle(&oracle_named("external.oracle.json"), &[]);
    assert_eq!((code, &report["ok"]), (0, &Value::Bool(true)));
}

fn oracle_named(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture("check").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_refusal_is_predicted_with_the_runtimes_own_words() {
    for (name, oracle) in oracles() {
        let (code, report) = check_as_oracle(&oracle, &[]);
        let refused = oracle["error_code"].is_string() || oracle["signal"].is_number();
        if !refused {
            // Loaded, and run where the oracle's runtime could be given
            // tensors: either way check finds nothing.
            assert_eq!(code, 0, "{name}: the runtime loads it: {report:#}");
            assert_eq!(report["ok"], true, "{name}");
            continue;
        }
        assert_eq!(code, 1, "{name}: the runtime refuses it: {report:#}");
        let program_refused = oracle["message"]
            .as_str()
            .is_some_and(|m| m.contains("Failed to load program"));
        if program_refused {
            program_refusal_matches(&name, &oracle, &report);
            continue;
        }
        let failed = report["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["ok"] == false)
            .unwrap_or_else(|| panic!("{name}: no failing method"));
        assert_eq!(failed["name"], "forward", "{name}");
        if let Some(code) = oracle["error_code"].as_str() {
            let ours = failed["error"].as_str().unwrap_or_default();
            assert!(
                ours.starts_with(&format!("{code} ")),
                "{name}: the runtime returns {code}, check says {ours}"
            );
            let theirs = why_lines(&oracle["log"]);
            assert!(!theirs.is_empty(), "{name}: the oracle logs no reason");
            let ours: Vec<String> = why_lines(&failed["log"]);
            assert_eq!(ours, theirs, "{name}");
        } else {
            // The runtime crashed instead of saying; check names each key.
            assert_eq!(oracle["signal"], 11, "{name}");
            let kinds: Vec<&str> = report["problems"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["kind"].as_str().unwrap())
                .collect();
            assert_eq!(kinds, ["no_data"], "{name}");
        }
    }
}

#[test]
fn missing_operators_name_their_index_and_instructions() {
    let (code, report) = check_as_oracle(
        &serde_json::json!({"program": "missing_ops.pte", "data": null}),
        &[],
    );
    assert_eq!(code, 1);
    let problems = report["problems"].as_array().unwrap();
    let oracle: Value =
        serde_json::from_slice(&std::fs::read(fixture("check/missing_ops.oracle.json")).unwrap())
            .unwrap();
    let missing: Vec<String> = why_lines(&oracle["log"])
        .into_iter()
        .filter(|l| l.starts_with("Missing operator"))
        .collect();
    assert_eq!(problems.len(), missing.len());
    for (p, line) in problems.iter().zip(&missing) {
        assert_eq!(p["kind"], "missing_operator");
        let want = format!(
            "Missing operator: [{}] {}",
            p["operator"].as_u64().unwrap(),
            p["name"].as_str().unwrap()
        );
        assert_eq!(&want, line);
        assert!(!p["instructions"].as_array().unwrap().is_empty());
    }
    // The same program passes with a spec that has its operators.
    let dir = tempfile::tempdir().unwrap();
    let ops: Vec<&str> = problems
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let spec = dir.path().join("mine.json");
    std::fs::write(&spec, serde_json::json!({ "operators": ops }).to_string()).unwrap();
    let spec = spec.display().to_string();
    let (code, report) = check_as_oracle(
        &serde_json::json!({"program": "missing_ops.pte", "data": null}),
        &["--runtime", "executorch-1.5.1", "--runtime", &spec],
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["runtime"]["specs"][1], spec.as_str());
}

#[test]
fn a_selective_build_runs_what_it_was_built_for_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = ptefs()
        .args(["cat", &fixture("mlp.pte").display().to_string(), "ops.yaml"])
        .output()
        .unwrap();
    assert!(yaml.status.success());
    let spec = dir.path().join("selected_operators.yaml");
    std::fs::write(&spec, &yaml.stdout).unwrap();
    let spec = spec.display().to_string();
    let (code, out, err) = run(&[
        "--runtime",
        &spec,
        &fixture("mlp.pte").display().to_string(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("runtime: {spec} (")), "{out}");
    let (code, out, _) = run(&[
        "--runtime",
        &spec,
        &fixture("check/missing_ops.pte").display().to_string(),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("Missing operator: [0] ptefs::twice.out"),
        "{out}"
    );
    // Built for half precision only: addmm's float kernel is missing.
    let half = String::from_utf8(yaml.stdout.clone()).unwrap().replace(
        "\"v1/6;0|6;0,1|6;0,1|6;0,1|6;0,1\"",
        "\"v1/5;0|5;0,1|5;0,1|5;0,1|5;0,1\"",
    );
    assert_ne!(half.as_bytes(), &yaml.stdout[..]);
    let half_spec = dir.path().join("half.yaml");
    std::fs::write(&half_spec, half).unwrap();
    let (code, out, _) = run(&[
        "--json",
        "--runtime",
        &half_spec.display().to_string(),
        &fixture("mlp.pte").display().to_string(),
    ]);
    assert_eq!(code, 1, "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let p = &report["problems"][0];
    assert_eq!(p["kind"], "missing_kernel");
    assert_eq!(p["name"], "aten::addmm.out");
    let why = p["why"].as_str().unwrap();
    assert!(why.contains("v1/6;0|6;0,1|6;0,1|6;0,1|6;0,1"), "{p}");
    assert_eq!(report["problems"].as_array().unwrap().len(), 1);
    assert_eq!(
        report["methods"][0]["log"][0],
        "kernel 'aten::addmm.out' not found."
    );
}

#[test]
fn memory_limits_name_the_arenas_over_them_with_their_sizes() {
    // Each method's planned arenas as ExecuTorch's own deserializer reads
    // them (scripts/gen-check-fixtures.py arenas).
    let text = std::fs::read_to_string(fixture("check/arenas.json")).unwrap();
    let oracle: Value = serde_json::from_str(&text).unwrap();
    for (file, methods) in oracle.as_object().unwrap() {
        let path = fixture(file).display().to_string();
        let sizes: Vec<(String, usize, u64)> = methods
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(m, s)| {
                let s = s.as_array().unwrap().iter().map(|v| v.as_u64().unwrap());
                s.enumerate().skip(1).map(move |(i, n)| (m.clone(), i, n))
            })
            .collect();
        let largest = sizes.iter().map(|s| s.2).max().unwrap();
        // At the largest arena's size, everything fits.
        let (code, out, err) = run(&["--memory-limit", &largest.to_string(), &path]);
        assert_eq!(code, 0, "{file}: {out}{err}");
        // One byte less: exactly the arenas over it, with their sizes.
        let limit = largest - 1;
        let (code, out, _) = run(&["--json", "--memory-limit", &limit.to_string(), &path]);
        assert_eq!(code, 1, "{file}: {out}");
        let report: Value = serde_json::from_str(&out).unwrap();
        let over: Vec<(String, String, u64, u64)> = report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                assert_eq!(p["kind"], "arena_over_limit", "{file}");
                (
                    p["method"].as_str().unwrap().to_owned(),
                    p["name"].as_str().unwrap().to_owned(),
                    p["bytes"].as_u64().unwrap(),
                    p["limit"].as_u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, String, u64, u64)> = sizes
            .iter()
            .filter(|s| s.2 > limit)
            .map(|(m, i, n)| (m.clone(), format!("arena {i}"), *n, limit))
            .collect();
        assert_eq!(over, want, "{file}");
    }
    // Sizes take a binary suffix; the text says both sizes.
    let mv2 = fixture("mv2_xnnpack.pte").display().to_string();
    let (code, out, _) = run(&["--memory-limit", "512K", &mv2]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "  arena over limit: arena 1: planned memory arena 1 is 606176 bytes (606.2 kB), \
             over the limit of 524288 (524.3 kB)"
        ),
        "{out}"
    );
    assert!(out.contains("forward: does not fit"), "{out}");
    let (code, _, _) = run(&["--memory-limit", "1M", &mv2]);
    assert_eq!(code, 0);
    for bad in ["0", "1T", "lots"] {
        let (code, _, err) = run(&["--memory-limit", bad, &mv2]);
        assert_eq!(code, 2, "{bad}");
        assert!(err.contains("give a size in bytes"), "{bad}: {err}");
    }
}

#[test]
fn hostile_runtime_specs_and_inputs_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let program = fixture("add.pte").display().to_string();
    for (bytes, what) in [
        (&b"\x00\xff"[..], "not UTF-8"),
        (b"{\"operators\": [1]}", "invalid type"),
        (b"operators:\n\tx:\n", "line 2"),
    ] {
        let spec = dir.path().join("spec.json");
        std::fs::write(&spec, bytes).unwrap();
        let spec = spec.display().to_string();
        let (code, out, err) = run(&["--runtime", &spec, &program]);
        assert_eq!(code, 2, "{out}");
        assert!(err.contains(&spec) && err.contains(what), "{err}");
    }
    let (code, _, err) = run(&["--runtime", "executorch-0.1", &program]);
    assert_eq!(code, 2);
    assert!(
        err.contains("executorch-0.1") && err.contains("portable"),
        "{err}"
    );
    let bad = dir.path().join("bad.pte");
    std::fs::write(&bad, b"not a program").unwrap();
    let (code, _, err) = run(&[&bad.display().to_string()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.pte"), "{err}");
    let (code, _, err) = run(&[&fixture("mlp_external.ptd").display().to_string()]);
    assert_eq!(code, 2);
    assert!(err.contains("not an ExecuTorch program"), "{err}");
}

#[test]
fn a_refused_program_names_what_is_wrong_where() {
    let (code, out, err) = run(&[&fixture("check/corrupt_root.pte").display().to_string()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("program: does not load: Program::load returns 0x23 InvalidProgram"),
        "{out}"
    );
    assert!(
        out.contains("program flatbuffer (bytes 0..") && out.contains("position 2147483647"),
        "{out}"
    );
    assert!(
        out.contains("    Verification failed; data may be truncated or corrupt"),
        "{out}"
    );
    let (code, out, _) = run(&[&fixture("check/tied.ptn").display().to_string()]);
    assert_eq!(code, 1);
    assert!(out.contains("a .ptn is a native program package"), "{out}");
    assert!(
        out.contains(r"Program identifier '\x14' != expected 'ET12'"),
        "{out}"
    );
}

#[test]
fn delegated_programs_load_where_their_backend_is_registered() {
    let dir = tempfile::tempdir().unwrap();
    // An Ethos-U runtime also links the quantized kernels for the
    // (de)quantizing its program leaves outside the delegate, which the
    // PyPI runtime lacks.
    let quantized = [
        "quantized_decomposed::quantize_per_tensor.out",
        "quantized_decomposed::dequantize_per_tensor.out",
    ];
    for (file, backend, ops) in [
        ("coreml_mlp.pte", "CoreMLBackend", &[][..]),
        ("ethosu55_mlp.pte", "EthosUBackend", &quantized[..]),
    ] {
        let program = fixture("check").join(file).display().to_string();
        let (code, out, _) = run(&[&program]);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains(&format!("Backend {backend} is not registered.")),
            "{out}"
        );
        let spec = dir.path().join(format!("{backend}.json"));
        std::fs::write(
            &spec,
            serde_json::json!({ "backends": [backend], "operators": ops }).to_string(),
        )
        .unwrap();
        let spec = spec.display().to_string();
        let (code, out, err) = run(&[
            "--runtime",
            "executorch-1.5.1",
            "--runtime",
            &spec,
            &program,
        ]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains(&format!("runtime: executorch-1.5.1 + {spec} (")),
            "{out}"
        );
    }
}

#[test]
fn report_shows_the_same_check() {
    // A program, a bundled program and a .ptn, each with the line the
    // runtime logs refusing it (their oracles).
    for (file, oracle) in [
        ("missing_ops.pte", "missing_ops.oracle.json"),
        ("missing_ops.bpte", "missing_ops_bpte.oracle.json"),
        ("tied.ptn", "tied_ptn.oracle.json"),
    ] {
        let program = fixture("check").join(file).display().to_string();
        let (code, out, _) = run(&["--json", &program]);
        assert_eq!(code, 1, "{file}");
        let checked: Value = serde_json::from_str(&out).unwrap();
        let report = ptefs()
            .args(["report", "--json", &program])
            .output()
            .unwrap();
        assert!(report.status.success(), "{file}: {report:?}");
        let report: Value = serde_json::from_slice(&report.stdout).unwrap();
        assert_eq!(report["checks"], Value::Array(vec![checked]), "{file}");
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("r.html");
        let status = ptefs()
            .args(["report", &program, "-o", &page.display().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains("Will it load?"), "{file}");
        let logged = why_lines(&oracle_named(oracle)["log"]);
        let logged = if logged.is_empty() {
            oracle_named(oracle)["log"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap().to_owned())
                .collect()
        } else {
            logged
        };
        assert!(!logged.is_empty(), "{file}");
        for line in logged {
            // As the page escapes it: HTML quotes, control bytes as \xNN.
            let shown = line.replace('\'', "&#39;").replace('\x14', "\\x14");
            assert!(html.contains(&shown), "{file}: {shown} not on the page");
        }
    }
}

#[test]
fn unused_data_keys_are_warnings_and_portable_alone_registers_no_backend() {
    let dir = fixture("check");
    let p = |n: &str| dir.join(n).display().to_string();
    let (code, out, err) = run(&[
        "--json",
        "--no-auto-data",
        "--data",
        &p("xnnpack_ext.ptd"),
        "--data",
        &p("external.ptd"),
        &p("xnnpack_ext.pte"),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let unused: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "unused_data")
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(unused, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
    // The portable library alone registers no backend.
    let (code, out, _) = run(&[
        "--json",
        "--runtime",
        "portable",
        &fixture("mv2_xnnpack.pte").display().to_string(),
    ]);
    assert_eq!(code, 1);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["problems"][0]["kind"], "backend_not_registered");
    assert_eq!(report["problems"][0]["name"], "XnnpackBackend");
    // Programs of portable kernels load on it.
    for f in ["mlp.pte", "dynamic.pte"] {
        let (code, out, _) = run(&["--runtime", "portable", &fixture(f).display().to_string()]);
        assert_eq!(code, 0, "{f}: {out}");
    }
}

#[test]
fn inspect_with_a_runtime_adds_the_same_check() {
    let program = fixture("check/missing_ops.pte").display().to_string();
    let (code, check, err) = run(&["--json", "--runtime", "portable", &program]);
    assert_eq!(code, 1, "{err}");
    let check: Value = serde_json::from_str(&check).unwrap();
    let out = ptefs()
        .args(["inspect", "--json", "--runtime", "portable", &program])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let inspected: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(inspected["check"], check);
    assert_eq!(inspected["kind"], "program");
    let out = ptefs()
        .args(["inspect", "--runtime", "portable", &program])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let (_, section) = text.split_once("\ncheck:\n").expect(&text);
    assert!(
        section.contains("    missing operator: aten::sort.values (operator [1], instruction 1)"),
        "{section}"
    );
    let out = ptefs()
        .args(["inspect", "--runtime", "portable"])
        .arg(fixture("mlp_external.ptd"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an ExecuTorch program"));
}

/// The `unaligned` warnings of a check, as (name, offset, alignment).
fn unaligned_warnings(report: &Value) -> Vec<(String, u64, u64)> {
    report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "unaligned")
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_owned(),
                w["offset"].as_u64().unwrap(),
                w["alignment"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The runtime ran `forward` and got what PyTorch computes.
fn ran_as_pytorch(name: &str, oracle: &Value) {
    assert_eq!(oracle["ran"], serde_json::json!(["forward"]), "{name}");
    let flat = |v: &Value| -> Vec<f64> {
        fn walk(v: &Value, out: &mut Vec<f64>) {
            match v {
                Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                x => out.push(x.as_f64().unwrap()),
            }
        }
        let mut out = Vec::new();
        walk(v, &mut out);
        out
    };
    let got = flat(&oracle["outputs"]["forward"]);
    let want = flat(&oracle["expected"]["forward"]);
    assert_eq!(got.len(), want.len(), "{name}");
    assert!(!got.is_empty(), "{name}");
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-5, "{name}: {got:?} != {want:?}");
    }
}

#[test]
fn constants_the_runtime_reads_unaligned_are_warnings_with_their_offset() {
    let dir = fixture("check");
    // `scale`, [0.5, 2.0, -1.0, 3.0] as float32, stored after 3 + 4 bytes
    // of uint8 constants with no padding.
    let scale: Vec<u8> = [0.5f32, 2.0, -1.0, 3.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    for (case, file, name, holder) in [
        (
            "unaligned",
            "unaligned.pte",
            "constant 5",
            "the program in unaligned.pte",
        ),
        (
            "unaligned_ext",
            "unaligned_ext.ptd",
            "scale",
            "unaligned_ext.ptd",
        ),
    ] {
        let oracle = oracle_named(&format!("{case}.oracle.json"));
        // ExecuTorch 1.5.1 loads and runs it, reading the tensor in place.
        ran_as_pytorch(case, &oracle);
        let (code, report) = check_as_oracle(&oracle, &[]);
        assert_eq!(code, 0, "{case}: {report:#}");
        let warned = unaligned_warnings(&report);
        assert_eq!(warned.len(), 1, "{case}: {report:#}");
        let (warned_name, offset, align) = &warned[0];
        assert_eq!((warned_name.as_str(), *align), (name, 4), "{case}");
        assert_ne!(offset % 4, 0, "{case}");
        let bytes = std::fs::read(dir.join(file)).unwrap();
        // In a bundled program, offsets count from the embedded program,
        // the same bytes as unaligned.pte.
        let base = if file.ends_with(".bpte") {
            let program = std::fs::read(dir.join("unaligned.pte")).unwrap();
            bytes
                .windows(program.len())
                .position(|w| w == program)
                .unwrap()
        } else {
            0
        };
        let at = base + usize::try_from(*offset).unwrap();
        assert_eq!(bytes[at..at + 16], scale[..], "{case}: offset {offset}");
        let w = report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["kind"] == "unaligned")
            .unwrap();
        let why = w["why"].as_str().unwrap();
        assert!(
            why.contains(&format!("offset {offset} of")) && why.contains("no copy"),
            "{why}"
        );
        // Without --json, on its line under "warnings:"; the .ptd is found
        // beside its program.
        let program = dir.join(oracle["program"].as_str().unwrap());
        let (_, text, _) = run(&[&program.display().to_string()]);
        let line = format!("  unaligned: {name}: FLOAT data at offset {offset} of {holder}");
        assert!(text.contains(&line), "{text}");
    }
    // The same program exported with ExecuTorch's default alignments runs
    // the same, with nothing to warn about.
    let oracle = oracle_named("aligned.oracle.json");
    ran_as_pytorch("aligned", &oracle);
    let (code, report) = check_as_oracle(&oracle, &[]);
    assert_eq!(code, 0);
    assert_eq!(unaligned_warnings(&report), [], "{report:#}");
    assert_eq!(report["warnings"], Value::Array(Vec::new()), "{report:#}");
}

#[test]
fn a_ptd_beside_the_program_is_attached_unless_told_not_to() {
    let program = fixture("check/external.pte").display().to_string();
    // external.ptd lies beside it: attached, as the runtime given it loads
    // and runs the program (external.oracle.json).
    assert_eq!(oracle_named("external.oracle.json")["ran"][0], "forward");
    let (code, out, err) = run(&[&program]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("data: external.ptd\n"), "{out}");
    assert!(
        err.contains("attached external.ptd (found beside it)"),
        "{err}"
    );
    // Without it, what the runtime given no data file says
    // (external_no_ptd.oracle.json).
    let oracle = oracle_named("external_no_ptd.oracle.json");
    let (code, out, _) = run(&["--no-auto-data", &program]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("data: none\n"), "{out}");
    assert!(
        out.contains("  no data: forward: it needs 4 external tensors from a data file"),
        "{out}"
    );
    assert_eq!(oracle["error_code"], "0x2");
    assert!(
        out.contains("forward: does not load: load_method returns 0x2 InvalidState"),
        "{out}"
    );
    for line in why_lines(&oracle["log"]) {
        assert!(out.contains(&format!("    {line}\n")), "{line}: {out}");
    }
}

#[test]
fn tensorrt_blobs_whose_header_the_backend_refuses_are_problems() {
    // The vendor fixture's oracle says, per method, whether TensorRT's
    // blob header parser accepts its payload (scripts/make-vendor-fixtures.py).
    let text = std::fs::read_to_string(fixture("vendor/tensorrt.oracle.json")).unwrap();
    let oracle: Value = serde_json::from_str(&text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("trt.json");
    std::fs::write(&spec, r#"{"backends": ["TensorRTBackend"]}"#).unwrap();
    let program = fixture("vendor/tensorrt.pte").display().to_string();
    let spec = spec.display().to_string();
    let args = [
        "--json",
        "--runtime",
        "executorch-1.5.1",
        "--runtime",
        &spec,
        &program,
    ];
    let (code, out, _) = run(&args);
    let report: Value = serde_json::from_str(&out).unwrap();
    let mut refused = 0;
    for (method, w) in oracle["methods"].as_object().unwrap() {
        let accepts = w["extra"]["runtime_accepts"].as_bool().unwrap();
        let verdict = report["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == method.as_str())
            .unwrap();
        assert_eq!(verdict["ok"], accepts, "{method}: {report:#}");
        let problems: Vec<&Value> = report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["method"] == method.as_str())
            .collect();
        if !accepts {
            refused += 1;
            assert_eq!(problems.len(), 1, "{method}");
            assert_eq!(problems[0]["kind"], "delegate_refused");
            assert_eq!(problems[0]["name"], "TensorRTBackend");
            assert_eq!(problems[0]["delegate"], 0);
        }
    }
    assert!(refused > 0);
    assert_eq!(code, 1);
    let (_, text, _) = run(&args[1..]);
    assert!(
        text.contains("misaligned: does not load\n  delegate refused: TensorRTBackend (delegate 0): the backend refuses its blob header: engine offset 312 is not 16-byte aligned"),
        "{text}"
    );
}

#[test]
fn the_documented_one_liners_give_the_built_in_runtime() {
    // my_runtime.json and my_runtime.yaml are what docs/check.md's two
    // one-liners printed from ExecuTorch 1.5.1's Python runtime: each is
    // the built-in spec, and every fixture gets the same verdict with it.
    let dir = fixture("check");
    for spec in ["my_runtime.json", "my_runtime.yaml"] {
        let spec = dir.join(spec).display().to_string();
        for (name, oracle) in oracles() {
            let (code, builtin) = check_as_oracle(&oracle, &[]);
            let (their_code, mut theirs) = check_as_oracle(&oracle, &["--runtime", &spec]);
            assert_eq!(their_code, code, "{name} with {spec}");
            assert_eq!(theirs["runtime"]["operators"], 240, "{spec}");
            assert_eq!(
                theirs["runtime"]["backends"], builtin["runtime"]["backends"],
                "{spec}"
            );
            for key in ["runtime", "problems", "warnings"] {
                if key == "runtime" {
                    theirs[key] = builtin[key].clone();
                    continue;
                }
                // The reasons name the spec.
                for f in theirs[key].as_array_mut().unwrap() {
                    let why = f["why"]
                        .as_str()
                        .unwrap()
                        .replace(&spec, "executorch-1.5.1");
                    f["why"] = why.into();
                }
            }
            assert_eq!(theirs, builtin, "{name} with {spec}");
        }
    }
}

#[test]
fn a_program_given_no_data_file_names_every_key_it_needs() {
    // The keys each fixture's own .ptd holds: what the user must find or
    // make. XNNPACK's are the sha256 of the weights; given none, the 1.5.1
    // runtime dies of SIGSEGV (xnnpack_ext_no_ptd.oracle.json).
    assert_eq!(oracle_named("xnnpack_ext_no_ptd.oracle.json")["signal"], 11);
    for (program, data, why) in [
        (
            "external.pte",
            "external.ptd",
            "the external tensors' keys: ",
        ),
        (
            "xnnpack_ext.pte",
            "xnnpack_ext.ptd",
            "the keys of its XnnpackBackend delegates' named data: ",
        ),
    ] {
        let (_, out, _) = run(&[
            "--no-auto-data",
            &fixture(&format!("check/{program}")).display().to_string(),
        ]);
        let line = (out.lines())
            .find(|l| l.starts_with("  no data: forward: "))
            .unwrap_or_else(|| panic!("{program}: {out}"));
        let v = crate::common::view(&format!("check/{data}"));
        let dir = v.tree.resolve("tensors").unwrap();
        let keys: Vec<String> = (v.tree.entries(dir).unwrap())
            .filter_map(|e| e.name.strip_suffix(".bin").map(str::to_owned))
            .collect();
        assert_eq!(keys.len(), 4, "{keys:?}");
        let listed = line.split_once(why).unwrap_or_else(|| panic!("{line}")).1;
        let mut listed: Vec<&str> = listed.split(", ").collect();
        listed.sort_unstable();
        assert_eq!(listed, keys, "{program}");
    }
}

#[test]
fn a_program_keeping_its_constants_in_constant_buffer_is_refused_in_the_runtimes_words() {
    // What ExecuTorch 1.5.1's runtime did with it (constant_buffer.oracle.json).
    let oracle = oracle_named("constant_buffer.oracle.json");
    assert_eq!(oracle["error_code"], "0x23");
    let program = fixture("check/constant_buffer.pte").display().to_string();
    let (code, out, err) = run(&[&program]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("program: does not load: Program::load returns 0x23 InvalidProgram"),
        "{out}"
    );
    assert!(
        out.contains("deprecated constant_buffer (5 entries)"),
        "{out}"
    );
    for line in why_lines(&oracle["log"]) {
        assert!(out.contains(&format!("    {line}\n")), "{line}: {out}");
    }
    // A runtime built with the flag, as a spec may say, loads it.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("old.json");
    std::fs::write(
        &spec,
        r#"{"operators": ["aten::addmm.out", "aten::permute_copy.out", "aten::relu.out"],
            "deprecated_constant_buffer": true}"#,
    )
    .unwrap();
    let (code, out, err) = run(&["--runtime", &spec.display().to_string(), &program]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("forward: loads"), "{out}");
}
