//! `ptefs report` against independent oracles: sizes against ExecuTorch's
//! deserializer (the fixtures' `*.oracle.jsonl`), statistics and
//! duplicates against NumPy and hashlib reading the files' bytes
//! themselves, and programs written with known duplicates, NaNs and
//! quantizer operators.

use crate::common;
use crate::writer;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use ptefs::schema::ScalarType;
use serde_json::Value;
use writer::{Data, DataFile, Instr, Layout, Program, Tensor, Value as V};

/// `ptefs report --json` of `file` with `args`.
fn report(file: &Path, args: &[&str]) -> Value {
    let mut all = vec![OsStr::new("report"), "--json".as_ref(), file.as_os_str()];
    all.extend(args.iter().map(OsStr::new));
    ptefs_json(all)
}

fn oracle_rows(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture(&format!("{name}.oracle.jsonl"))).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every node of the size tree is the sum of its children.
fn check_sums(n: &Value) {
    let kids = n["children"].as_array().cloned().unwrap_or_default();
    if !kids.is_empty() {
        let sum: u64 = kids.iter().map(|c| c["bytes"].as_u64().unwrap()).sum();
        assert_eq!(sum, n["bytes"].as_u64().unwrap(), "{}", n["name"]);
        kids.iter().for_each(check_sums);
    }
}

#[test]
fn sizes_agree_with_the_deserializer() {
    let cases: [(&str, &[&str]); 11] = [
        ("add.pte", &[]),
        ("dtypes.pte", &[]),
        ("dynamic.pte", &[]),
        ("empty_vectors.pte", &[]),
        ("mlp.pte", &[]),
        ("mlp_stacktrace.pte", &[]),
        ("multi_method.pte", &[]),
        ("mv2_xnnpack.pte", &[]),
        ("quant_xnnpack.pte", &[]),
        ("mlp_external.pte", &["mlp_external.ptd"]),
        ("xnnpack_external.pte", &["xnnpack_external.ptd"]),
    ];
    for (pte, ptds) in cases {
        let mut args = vec!["--no-auto-data"];
        let paths: Vec<PathBuf> = ptds.iter().map(|p| fixture(p)).collect();
        for p in &paths {
            args.push("--data");
            args.push(p.to_str().unwrap());
        }
        let r = report(&fixture(pte), &args);
        // Total: the files' own sizes.
        let mut files = vec![pte.to_owned()];
        files.extend(ptds.iter().map(|p| p.to_string()));
        let total: u64 = files
            .iter()
            .map(|f| std::fs::metadata(fixture(f)).unwrap().len())
            .sum();
        assert_eq!(r["total_bytes"].as_u64(), Some(total), "{pte}");
        assert_eq!(r["size"]["bytes"].as_u64(), Some(total), "{pte}");
        check_sums(&r["size"]);
        // Tensor bytes: each stored range the deserializer reports once
        // (plans' constants and named data; of the .ptd, its entries).
        let mut ranges: BTreeSet<(String, u64, u64)> = BTreeSet::new();
        for f in &files {
            for row in oracle_rows(f) {
                let (Some(off), Some(n)) = (row["file_offset"].as_u64(), row["nbytes"].as_u64())
                else {
                    continue;
                };
                if row.get("plan").is_some() || row.get("named").is_some() {
                    let file = match row["where"].as_str() {
                        Some("external") => continue,
                        _ => f.clone(),
                    };
                    ranges.insert((file, off, n));
                }
            }
        }
        let oracle: u64 = ranges.iter().map(|r| r.2).sum();
        let by_dtype: u64 = r["by_dtype"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["bytes"].as_u64().unwrap())
            .sum();
        let by_layer: u64 = r["by_layer"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(by_dtype, oracle, "{pte}: tensor bytes by dtype");
        assert_eq!(by_layer, oracle, "{pte}: tensor bytes by layer");
        // The deserializer's own duplicates: equal SHA-256 at distinct
        // offsets (of 64 bytes or more, as the report counts them).
        let mut by_sha: BTreeMap<String, BTreeSet<(String, u64)>> = BTreeMap::new();
        for f in &files {
            for row in oracle_rows(f) {
                if let (Some(off), Some(n), Some(sha)) = (
                    row["file_offset"].as_u64(),
                    row["nbytes"].as_u64(),
                    row["sha256"].as_str(),
                ) && n >= 64
                    && (row.get("plan").is_some() || row.get("named").is_some())
                {
                    by_sha
                        .entry(sha.to_owned())
                        .or_default()
                        .insert((f.clone(), off));
                }
            }
        }
        let expected: BTreeSet<String> = by_sha
            .into_iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(k, _)| k)
            .collect();
        let found: BTreeSet<String> = r["duplicates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["sha256"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(found, expected, "{pte}: duplicates");
    }
}

#[test]
fn layers_come_from_checkpoint_names_and_fully_qualified_names() {
    // mlp.pte records no names; the fixtures' state dict names them.
    let dir = tempfile::tempdir().unwrap();
    let states: Value =
        serde_json::from_slice(&std::fs::read(fixture("state_dicts.json")).unwrap()).unwrap();
    let names: BTreeMap<String, String> = states["mlp"]["state"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["sha256"].as_str().unwrap().to_owned()))
        .collect();
    let ckpt = write_file(
        dir.path(),
        "names.json",
        &serde_json::to_vec(&names).unwrap(),
    );
    let r = report(&fixture("mlp.pte"), &["--names", ckpt.to_str().unwrap()]);
    let layers: BTreeMap<String, u64> = r["by_layer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["layer"].as_str().unwrap().to_owned(),
                l["params"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for (k, v) in states["mlp"]["state"].as_object().unwrap() {
        let layer = k.rsplit_once('.').unwrap().0.to_owned();
        let n: u64 = v["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .product();
        *want.entry(layer).or_default() += n;
    }
    assert_eq!(layers, want);
    // mlp_external.pte names its tensors itself.
    let r = report(&fixture("mlp_external.pte"), &[]);
    let layers: BTreeSet<&str> = r["by_layer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect();
    assert_eq!(layers, BTreeSet::from(["fc1", "fc2"]));
}

/// For each tensor of the report, NumPy's statistics of the file's bytes
/// at its offset (finite values; NaN and Inf counted apart), and for a
/// quantized weight the integers times their scales.
const NUMPY_STATS: &str = r#"
import json, sys, os
import numpy as np
report = json.load(open(sys.argv[1]))
root = sys.argv[2]
types = {
    "FLOAT": "<f4", "float32": "<f4", "xnn_datatype_fp32": "<f4", "HALF": "<f2",
    "xnn_datatype_fp16": "<f2", "DOUBLE": "<f8", "CHAR": "i1", "QINT8": "i1",
    "xnn_datatype_qcint8": "i1", "xnn_datatype_qint8": "i1", "BYTE": "u1", "QUINT8": "u1",
    "SHORT": "<i2", "INT": "<i4", "QINT32": "<i4", "xnn_datatype_qcint32": "<i4",
    "xnn_datatype_qint32": "<i4", "LONG": "<i8", "BOOL": "?", "UINT16": "<u2",
    "UINT32": "<u4", "UINT64": "<u8", "BFLOAT16": "bf16",
}
def values(entry):
    t = types[entry["dtype"]]
    data = open(os.path.join(root, entry["file"]), "rb").read()
    n = entry["elements"]
    if t == "bf16":
        raw = np.frombuffer(data, "<u2", n, entry["offset"]).astype("<u4") << 16
        return raw.view("<f4").astype(np.float64)
    return np.frombuffer(data, t, n, entry["offset"]).astype(np.float64)
def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 + 1e-6 * abs(b)
def check(entry, m, x):
    fin = x[np.isfinite(x)]
    want = {"nan": int(np.isnan(x).sum()), "inf": int(np.isinf(x).sum()),
            "zeros": int((x == 0).sum())}
    for k, v in want.items():
        assert m[k] == v, (entry["path"], k, m[k], v)
    if fin.size:
        for k, v in [("min", fin.min()), ("max", fin.max()), ("mean", fin.mean()), ("std", fin.std())]:
            assert close(m[k], float(v)), (entry["path"], k, m[k], float(v))
        assert sum(m["histogram"]) == fin.size, entry["path"]
    else:
        assert m["min"] is None and m["mean"] is None, entry["path"]
checked = dequantized = 0
by_path = {e["path"]: e for e in report["stats"]}
for e in report["stats"]:
    x = values(e)
    check(e, e, x)
    checked += 1
    if "dequantized" in e:
        s = by_path[e["path"][:-4] + ".scale.bin"]
        scales = values(s)
        q = x.reshape(scales.size, -1) * scales[:, None]
        check(e, e["dequantized"], q.ravel())
        dequantized += 1
print(f"checked {checked} dequantized {dequantized}")
"#;

/// Checks every tensor's statistics in the report of `file` against
/// NumPy's; returns NumPy's summary line.
fn numpy_check(file: &Path, args: &[&str]) -> String {
    let r = report(file, args);
    let dir = tempfile::tempdir().unwrap();
    let json = write_file(dir.path(), "r.json", &serde_json::to_vec(&r).unwrap());
    let out = python(NUMPY_STATS, &[&json, file.parent().unwrap()]);
    let n = r["stats"].as_array().unwrap().len();
    assert!(out.contains(&format!("checked {n} ")), "{out}");
    out
}

#[test]
fn statistics_agree_with_numpy() {
    for (model, min) in [
        ("dtypes.pte", 9),
        ("mlp.pte", 4),
        ("mlp_external.pte", 4),
        ("mv2_xnnpack.pte", 60),
        ("xnnpack_external.pte", 4),
    ] {
        let out = numpy_check(&fixture(model), &[]);
        let n: usize = out
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(n >= min, "{model}: {out}");
    }
    let out = numpy_check(&fixture("quant_xnnpack.pte"), &[]);
    assert!(out.contains("dequantized 4"), "{out}");
}

#[test]
fn nan_and_inf_are_counted_apart() {
    let v: Vec<f32> = vec![
        1.0,
        f32::NAN,
        -2.5,
        f32::INFINITY,
        0.0,
        f32::NEG_INFINITY,
        7.0,
        0.5,
    ];
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let p = Program::forward(vec![V::Tensor(Tensor::new(
        ScalarType::FLOAT,
        &[2, 4],
        Data::Constant(bytes.into()),
    ))]);
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "nan.pte", &p.to_bytes());
    let out = numpy_check(&file, &[]);
    assert!(out.contains("checked 1"), "{out}");
    let r = report(&file, &[]);
    let s = &r["stats"][0];
    assert_eq!((s["nan"].as_u64(), s["inf"].as_u64()), (Some(1), Some(2)));
}

#[test]
fn the_same_bytes_in_a_program_and_its_data_file_are_a_duplicate() {
    let weight: Vec<u8> = (0..256u32)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    let p = Program::forward(vec![
        V::Tensor(Tensor::new(
            ScalarType::FLOAT,
            &[16, 16],
            Data::Constant(weight.clone().into()),
        )),
        V::Tensor(Tensor::new(ScalarType::FLOAT, &[16, 16], Data::External(0)).named("w")),
    ]);
    let d = DataFile {
        entries: vec![(
            "w".to_owned(),
            Some(Layout {
                scalar_type: ScalarType::FLOAT,
                sizes: vec![16, 16],
                dim_order: vec![0, 1],
            }),
            weight.clone().into(),
        )],
    };
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "m.pte", &p.to_bytes());
    let ptd = write_file(dir.path(), "m.ptd", &d.to_bytes());
    let r = report(&pte, &["--data", ptd.to_str().unwrap()]);
    let dups = r["duplicates"].as_array().unwrap();
    assert_eq!(dups.len(), 1, "{dups:?}");
    let dup = &dups[0];
    assert_eq!(dup["bytes"].as_u64(), Some(1024));
    assert_eq!(dup["wasted"].as_u64(), Some(1024));
    let copies = dup["copies"].as_array().unwrap();
    let files: BTreeSet<&str> = copies.iter().map(|c| c["file"].as_str().unwrap()).collect();
    assert_eq!(files, BTreeSet::from(["m.pte", "m.ptd"]));
    // hashlib over each copy's bytes gives the reported digest.
    for c in copies {
        let path = dir.path().join(c["file"].as_str().unwrap());
        let script = "import hashlib,sys; d=open(sys.argv[1],'rb').read(); o=int(sys.argv[2]); \
                      print(hashlib.sha256(d[o:o+1024]).hexdigest())";
        let out = Command::new("python3")
            .args(["-c", script])
            .arg(&path)
            .arg(c["offset"].as_u64().unwrap().to_string())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            dup["sha256"].as_str().unwrap()
        );
    }
}

#[test]
fn delegate_float_weights_under_their_own_type_names_are_not_quantized() {
    // Core ML names its types `fp32`, the CUDA backend `float32`,
    // `bfloat16`: floating point all the same.
    for f in ["backends/coreml_mlp.pte", "vendor/aoti.pte"] {
        let r = report(&fixture(f), &[]);
        let q = &r["quantization"];
        let weights = q["weights"].as_array().unwrap();
        assert!(!weights.is_empty(), "{f}");
        for w in weights {
            assert_eq!(w["scheme"], "none", "{f}: {w}");
        }
        assert_eq!(q["all_fp32"], Value::Bool(true), "{f}");
    }
}

#[test]
fn float_weights_with_quantizer_operators_are_called_out() {
    let weight: Vec<u8> = (0..64u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let mut p = Program::forward(vec![
        V::Tensor(Tensor::new(
            ScalarType::FLOAT,
            &[8, 8],
            Data::Constant(weight.into()),
        )),
        V::Tensor(Tensor::new(ScalarType::FLOAT, &[8, 8], Data::None)),
    ]);
    let m = &mut p.methods[0];
    m.operators = vec![(
        "quantized_decomposed::quantize_per_tensor".to_owned(),
        "out".to_owned(),
    )];
    m.chains[0].instructions = vec![Instr::Kernel {
        op: 0,
        args: vec![0, 1],
    }];
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "q.pte", &p.to_bytes());
    let r = report(&file, &[]);
    let q = &r["quantization"];
    assert_eq!(q["all_fp32"], Value::Bool(true));
    assert!(
        q["warning"]
            .as_str()
            .unwrap()
            .contains("quantize_per_tensor")
    );
    let k = &r["coverage"][0]["kernels"][0];
    assert_eq!(
        k["op"].as_str(),
        Some("quantized_decomposed::quantize_per_tensor.out")
    );
    assert_eq!(k["portable"], Value::Bool(false));
    // Without the operator, no call-out.
    p.methods[0].operators.clear();
    p.methods[0].chains[0].instructions.clear();
    let file = write_file(dir.path(), "f.pte", &p.to_bytes());
    assert!(report(&file, &[])["quantization"].get("warning").is_none());
}

#[test]
fn the_page_is_self_contained_and_holds_every_part() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let out = ptefs()
        .args(["report", "-o"])
        .arg(&html)
        .arg(fixture("quant_xnnpack.pte"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    for needle in [
        "<svg class=\"treemap\"",
        "id=\"t-duplicates\"",
        "id=\"t-by_layer\"",
        "id=\"t-by_dtype\"",
        "id=\"t-by_backend\"",
        "id=\"t-coverage-0\"",
        "id=\"t-quantization\"",
        "id=\"t-stats\"",
        "class=\"lifetimes\"",
    ] {
        assert!(page.contains(needle), "{needle} missing");
    }
    // Nothing fetched: no external URLs in src/href attributes.
    for bad in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!page.contains(bad), "{bad}");
    }
}

/// What `scripts/browser-check.py` saw of `page` in headless Chromium, or
/// `None` after skipping `test` loudly when Chromium or websockets is
/// missing (scripts/setup.sh installs both); a run that requires every
/// component fails then. The screenshot is kept as `target/tmp/<shot>`.
fn in_chromium(test: &str, page: &Path, shot: &str) -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/browser-check.py");
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join(shot);
    let out = Command::new("python3")
        .arg(script)
        .arg(page)
        .arg(&png)
        .output()
        .unwrap();
    if out.status.code() == Some(3) {
        let why = String::from_utf8_lossy(&out.stderr);
        common::required::skip_unless(test, Some(why.trim()));
        return None;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shot = std::fs::read(&png).unwrap();
    assert!(shot.starts_with(b"\x89PNG"), "a PNG screenshot");
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// Writes the page of `file` and checks it in Chromium against the JSON
/// report: no console errors, rectangles' areas proportional to their
/// bytes, every table row there. Returns the page's size.
fn check_page(test: &str, file: &Path, shot: &str) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let out = ptefs()
        .arg("report")
        .arg(file)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(out.status.success());
    let size = std::fs::metadata(&html).unwrap().len();
    let r = report(file, &[]);
    let Some(seen) = in_chromium(test, &html, shot) else {
        return size;
    };
    assert_eq!(seen["errors"], serde_json::json!([]), "console errors");
    let area = seen["area"].as_f64().unwrap();
    let total = r["total_bytes"].as_f64().unwrap();
    let rects = seen["rects"].as_array().unwrap();
    assert!(rects.len() > 1);
    let mut checked = 0;
    for rect in rects {
        let want = rect["bytes"].as_f64().unwrap() / total * area;
        let got = rect["area"].as_f64().unwrap();
        // Below one square unit, the three decimals written are the error.
        if want >= 1.0 {
            assert!(
                (got - want).abs() <= 0.01 * want,
                "{}: area {got}, {want} for its bytes",
                rect["title"]
            );
            checked += 1;
        }
    }
    assert!(checked > 1, "{checked} rectangles checked");
    let rows = |id: &str| -> Vec<String> {
        seen["tables"][id]
            .as_array()
            .unwrap_or_else(|| panic!("table {id}"))
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect()
    };
    let names = |key: &str, field: &str, cap: usize| -> Vec<String> {
        let mut v: Vec<String> = r[key]
            .as_array()
            .unwrap()
            .iter()
            .take(cap)
            .map(|x| x[field].as_str().unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(rows("t-by_dtype")),
        names("by_dtype", "dtype", usize::MAX)
    );
    assert_eq!(sorted(rows("t-by_layer")), names("by_layer", "layer", 1000));
    assert_eq!(
        sorted(rows("t-by_backend")),
        names("by_backend", "backend", usize::MAX)
    );
    assert_eq!(sorted(rows("t-files")), names("files", "name", usize::MAX));
    assert_eq!(
        rows("t-duplicates").len(),
        r["duplicates"].as_array().unwrap().len().min(1000)
    );
    let label = |x: &Value| {
        x["name"]
            .as_str()
            .or(x["path"].as_str())
            .unwrap()
            .to_owned()
    };
    let stats = r["stats"].as_array().unwrap();
    let shown: BTreeSet<String> = rows("t-stats").into_iter().collect();
    assert_eq!(shown.len(), stats.len().min(500));
    assert!(shown.iter().all(|s| stats.iter().any(|x| &label(x) == s)));
    let weights = r["quantization"]["weights"].as_array().unwrap();
    assert_eq!(rows("t-quantization").len(), weights.len().min(1000));
    for (i, m) in r["coverage"].as_array().unwrap().iter().enumerate() {
        let ops: usize = m["kernels"].as_array().unwrap().len()
            + m["delegates"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["ops"].as_object().unwrap().len().max(1))
                .sum::<usize>();
        assert_eq!(rows(&format!("t-coverage-{i}")).len(), ops);
    }
    size
}

#[test]
fn the_page_renders_in_chromium() {
    let test = "the_page_renders_in_chromium";
    check_page(test, &fixture("mv2_xnnpack.pte"), "report-mv2_xnnpack.png");
    check_page(
        test,
        &fixture("quant_xnnpack.pte"),
        "report-quant_xnnpack.png",
    );
    check_page(
        test,
        &fixture("mlp_external.pte"),
        "report-mlp_external.png",
    );
}

#[test]
fn a_100k_tensor_page_is_capped_under_2_mb() {
    // 100,000 distinct constants (distinct bytes, so none is shared).
    let values: Vec<V> = (0..100_000u32)
        .map(|i| {
            let bytes: Vec<u8> = [i as f32, (i % 7) as f32]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect();
            V::Tensor(Tensor::new(
                ScalarType::FLOAT,
                &[2],
                Data::Constant(bytes.into()),
            ))
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "big.pte", &Program::forward(values).to_bytes());
    let size = check_page(
        "a_100k_tensor_page_is_capped_under_2_mb",
        &file,
        "report-100k.png",
    );
    assert!(size < 2 << 20, "{size} bytes");
    let html = {
        let out = ptefs()
            .arg("report")
            .arg(&file)
            .arg("-o")
            .arg(dir.path().join("p.html"))
            .output()
            .unwrap();
        assert!(out.status.success());
        std::fs::read_to_string(dir.path().join("p.html")).unwrap()
    };
    assert!(
        html.contains("smaller items"),
        "the treemap says what it merged"
    );
    assert!(html.matches("<rect").count() < 10_000);
}

#[test]
fn packages_report_their_keys_as_layers_against_the_package_oracles() {
    for name in ["mlp", "kv", "tied", "conv"] {
        let file = fixture(&format!("{name}.ptn"));
        let r = report(&file, &[]);
        let rows = oracle_rows(&format!("{name}.ptn"));
        // Each key's bytes once (aliases are other names of them).
        let keys: Vec<&Value> = rows.iter().filter(|x| x.get("key").is_some()).collect();
        let ranges: BTreeSet<(u64, u64)> = keys
            .iter()
            .map(|k| {
                (
                    k["offset_in_file"].as_u64().unwrap(),
                    k["nbytes"].as_u64().unwrap(),
                )
            })
            .collect();
        let stats = r["stats"].as_array().unwrap();
        let seen: BTreeSet<(u64, u64)> = stats
            .iter()
            .filter(|s| s["elements"].as_u64().unwrap() > 0)
            .map(|s| {
                let k = keys
                    .iter()
                    .find(|k| k["offset_in_file"] == s["offset"])
                    .unwrap_or_else(|| panic!("{name}: no key at {}", s["offset"]));
                (s["offset"].as_u64().unwrap(), k["nbytes"].as_u64().unwrap())
            })
            .collect();
        let nonempty: BTreeSet<(u64, u64)> = ranges.iter().copied().filter(|r| r.1 > 0).collect();
        assert_eq!(seen, nonempty, "{name}: one statistics row per stored key");
        // Layers are the keys' module paths.
        let layers: BTreeSet<String> = r["by_layer"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["layer"].as_str().unwrap().to_owned())
            .collect();
        for k in &keys {
            if k["nbytes"].as_u64() == Some(0) {
                continue;
            }
            let key = k["key"].as_str().unwrap();
            let module = key.rsplit_once('.').map_or(key, |(m, _)| m);
            assert!(
                layers.contains(module),
                "{name}: {module} not in {layers:?}"
            );
        }
        numpy_check(&file, &[]);
    }
}

#[test]
fn a_constant_repeated_as_named_data_is_a_duplicate() {
    // As a weight used by a portable operator and by a delegate is stored:
    // in the constant segment, and again as the delegate's named data.
    let weight: Vec<u8> = (0..128u32)
        .flat_map(|i| (i as f32 - 60.0).to_le_bytes())
        .collect();
    let mut p = Program::forward(vec![V::Tensor(Tensor::new(
        ScalarType::FLOAT,
        &[8, 16],
        Data::Constant(weight.clone().into()),
    ))]);
    p.named = vec![("w_for_the_delegate".to_owned(), weight.into())];
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "m.pte", &p.to_bytes());
    let r = report(&file, &[]);
    let dups = r["duplicates"].as_array().unwrap();
    assert_eq!(dups.len(), 1, "{dups:?}");
    let paths: Vec<&str> = dups[0]["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(paths.iter().any(|p| p.starts_with("named/")), "{paths:?}");
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("constants/") || p.contains("/tensors/")),
        "{paths:?}"
    );
    assert_eq!(dups[0]["wasted"].as_u64(), Some(512));
}

#[test]
fn inspect_stats_prints_the_statistics() {
    let model = fixture("mlp.pte");
    let v = ptefs_json([
        OsStr::new("inspect"),
        "--stats".as_ref(),
        "--json".as_ref(),
        model.as_os_str(),
    ]);
    let r = report(&fixture("mlp.pte"), &[]);
    assert_eq!(v["stats"], r["stats"]);
    let out = ptefs()
        .args(["inspect", "--stats"])
        .arg(fixture("mlp.pte"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Statistics:"), "{text}");
    assert_eq!(
        text.lines()
            .skip_while(|l| !l.starts_with("Statistics:"))
            .count(),
        2 + 4,
        "{text}"
    );
}

/// The tree says which delegate, backend and method each delegate's directory is,
/// for every delegate ExecuTorch's deserializer lists (the oracles'
/// `execution_plan`), and of no other directory: the reports take the
/// backend of a weight from there.
#[test]
fn the_tree_names_the_delegate_and_backend_of_each_delegate_directory() {
    for name in [
        "coreml_multimethod",
        "ethosu55_mlp",
        "mlx_mlp",
        "tosa_fp_mlp",
        "vgf_fp_mlp",
    ] {
        let bytes = std::fs::read(fixture(&format!("backends/{name}.pte"))).unwrap();
        let oracle: Value = serde_json::from_slice(
            &std::fs::read(fixture(&format!("backends/{name}.oracle.json"))).unwrap(),
        )
        .unwrap();
        let mut expected = BTreeSet::new();
        for plan in oracle["execution_plan"].as_array().unwrap() {
            let method = plan["name"].as_str().unwrap();
            for d in plan["delegates"].as_array().unwrap() {
                let (index, id) = (d["index"].as_u64().unwrap(), d["id"].as_str().unwrap());
                expected.insert((
                    format!("methods/{method}/delegates/{index}-{id}"),
                    format!("{method}/{index}-{id}"),
                    id.to_owned(),
                    method.to_owned(),
                ));
            }
        }
        assert!(!expected.is_empty(), "{name}: the oracle lists no delegate");
        let tree = common::in_memory::tree(&bytes);
        let found: BTreeSet<(String, String, String, String)> = tree
            .walk(ptefs::tree::ROOT)
            .filter_map(|(path, ino)| {
                let d = tree.delegate_dir(ino)?;
                Some((path, d.label.clone(), d.backend.clone(), d.method.clone()))
            })
            .collect();
        assert_eq!(found, expected, "{name}");
    }
}
