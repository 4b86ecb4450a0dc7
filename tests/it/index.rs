//! `ptefs index`: the catalog's rows say what `inspect --json`,
//! `check --json` and the tree's `ops.yaml` say of each file; a file that
//! fails is a row; shards together hold the rows of one run; a re-run
//! redoes only what changed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};

use crate::common::{fixture, ptefs_json, ptefs_run, ptefs_stdout};

/// Every row of `table` under the catalog `dir`, each a JSON object, in
/// a stable order (sorted by their text).
pub fn rows(dir: &Path, table: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir.join(table))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    for p in parts {
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("part-") && name.ends_with(".parquet"),
            "{} holds {name}, which is not a finished part",
            dir.display()
        );
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&p).unwrap())
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            out.extend(batch_rows(&batch.unwrap()));
        }
    }
    out.sort_by_key(|v| v.to_string());
    out
}

fn batch_rows(b: &RecordBatch) -> Vec<Value> {
    (0..b.num_rows())
        .map(|i| {
            let mut row = serde_json::Map::new();
            for (f, col) in b.schema().fields().iter().zip(b.columns()) {
                row.insert(f.name().clone(), value(col.as_ref(), i));
            }
            Value::Object(row)
        })
        .collect()
}

fn value(a: &dyn Array, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    match a.data_type() {
        DataType::Utf8 => json!(a.as_string::<i32>().value(i)),
        DataType::UInt64 => json!(a.as_primitive::<UInt64Type>().value(i)),
        DataType::Int64 => json!(a.as_primitive::<Int64Type>().value(i)),
        DataType::Boolean => json!(a.as_boolean().value(i)),
        DataType::Timestamp(..) => json!(a.as_primitive::<TimestampMicrosecondType>().value(i)),
        DataType::List(_) => {
            let items = a.as_list::<i32>().value(i);
            Value::Array((0..items.len()).map(|j| value(items.as_ref(), j)).collect())
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let mut row = serde_json::Map::new();
            for (f, col) in fields.iter().zip(s.columns()) {
                row.insert(f.name().clone(), value(col.as_ref(), i));
            }
            Value::Object(row)
        }
        t => panic!("a column of type {t}"),
    }
}

/// The rows of `table` whose source is `source`.
fn of<'a>(rows: &'a [Value], source: &str) -> Vec<&'a Value> {
    rows.iter().filter(|r| r["source"] == source).collect()
}

/// A folder of fixtures: plain programs, one per delegate backend, data
/// files, a package, a bundle, a profile, an ETRecord, and a damaged
/// program.
fn fleet(dir: &Path) -> Vec<String> {
    let files = [
        "mlp.pte",
        "dtypes.pte",
        "multi_method.pte",
        "mlp_external.pte",
        "mlp_external.ptd",
        "quant_xnnpack.pte",
        "mv2_xnnpack.pte",
        "xnnpack_external.pte",
        "xnnpack_external.ptd",
        "tied.ptn",
        "backends/coreml_mlp.pte",
        "backends/vgf_fp_mlp.pte",
        "check/missing_ops.bpte",
        "check/cut_segments.pte",
    ];
    for f in files {
        let to = dir.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture(f), &to).unwrap();
    }
    files
        .iter()
        .map(|f| dir.join(f).display().to_string())
        .collect()
}

fn index(args: &[&str]) -> crate::common::Run {
    let mut all = vec!["index"];
    all.extend(args);
    ptefs_run(all)
}

#[test]
fn the_catalog_says_what_inspect_check_and_ops_yaml_say() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    let sources = fleet(&models);
    let cat = tmp.path().join("catalog");
    let r = index(&[
        models.to_str().unwrap(),
        "-o",
        cat.to_str().unwrap(),
        "--runtime",
        "executorch-1.5.1",
        "--runtime",
        "portable",
        "--hash",
    ]);
    // The damaged program is a row, and the exit status says so.
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(
        r.err
            .contains("14 files listed, 14 indexed (1 could not be read)"),
        "{}",
        r.err
    );
    let files = rows(&cat, "files");
    let tensors = rows(&cat, "tensors");
    let operators = rows(&cat, "operators");
    let delegates = rows(&cat, "delegates");
    let checks = rows(&cat, "checks");
    assert_eq!(files.len(), sources.len());
    for source in &sources {
        let f = of(&files, source);
        assert_eq!(f.len(), 1, "{source}");
        let f = f[0];
        let bytes = std::fs::read(source).unwrap();
        assert_eq!(f["size"], json!(bytes.len()), "{source}");
        if source.ends_with("cut_segments.pte") {
            let want = ptefs_run(["inspect", source.as_str()]).err;
            let error = f["error"].as_str().unwrap();
            assert!(want.contains(error), "{error} vs {want}");
            assert!(of(&tensors, source).is_empty());
            // The runtime refuses it: a verdict all the same.
            let c = of(&checks, source);
            assert_eq!(c.len(), 2, "{source}");
            assert!(c.iter().all(|c| c["loads"] == false));
            continue;
        }
        assert_eq!(f["error"], Value::Null, "{source}");
        assert_eq!(f["sha256"], json!(crate::common::sha256(&bytes)));
        let inspect = ptefs_json(["inspect", "--json", source.as_str()]);
        let kind = inspect["kind"].as_str().unwrap();
        assert_eq!(f["kind"], kind, "{source}");
        assert_eq!(f["identifier"], inspect["identifier"], "{source}");
        assert_eq!(f["version"], inspect["version"], "{source}");
        if let Some(p) = inspect.get("program").filter(|p| !p.is_null()) {
            let methods: Vec<&Value> = p["methods"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| &m["name"])
                .collect();
            assert_eq!(
                f["methods"].as_array().unwrap().iter().collect::<Vec<_>>(),
                methods
            );
            let ds: Vec<(Value, Value, Value, Value)> = p["delegates"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    (
                        d["method"].clone(),
                        d["index"].clone(),
                        d["id"].clone(),
                        d["bytes"].clone(),
                    )
                })
                .collect();
            let mut got: Vec<(Value, Value, Value, Value)> = of(&delegates, source)
                .iter()
                .map(|d| {
                    (
                        d["method"].clone(),
                        d["index"].clone(),
                        d["backend"].clone(),
                        d["payload_bytes"].clone(),
                    )
                })
                .collect();
            got.sort_by_key(|t| format!("{t:?}"));
            let mut ds = ds;
            ds.sort_by_key(|t| format!("{t:?}"));
            assert_eq!(got, ds, "{source}");
            // Kernel calls per method, as inspect counts them.
            for m in p["methods"].as_array().unwrap() {
                let want: BTreeMap<String, u64> = m["calls"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                    // Delegate calls are the delegates table's.
                    .filter(|(k, n)| *n > 0 && !k.starts_with('<'))
                    .collect();
                let got: BTreeMap<String, u64> = of(&operators, source)
                    .iter()
                    .filter(|o| o["method"] == m["name"] && o["runs_in"] == "kernel library")
                    .filter(|o| o["calls"].as_u64().unwrap() > 0)
                    .map(|o| {
                        (
                            o["operator"].as_str().unwrap().to_owned(),
                            o["calls"].as_u64().unwrap(),
                        )
                    })
                    .collect();
                assert_eq!(got, want, "{source} {}", m["name"]);
            }
        }
        if matches!(kind, "program" | "bundled_program") {
            // The operators and kernel keys are the tree's ops.yaml.
            let at = if kind == "program" {
                "ops.yaml"
            } else {
                "program/ops.yaml"
            };
            let yaml = ptefs_stdout(["cat", source.as_str(), at]);
            let mut ops = BTreeSet::new();
            let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for o in of(&operators, source) {
                if o["runs_in"] == "kernel library" {
                    let op = o["operator"].as_str().unwrap().to_owned();
                    for k in o["kernel_keys"].as_array().unwrap() {
                        keys.entry(op.clone())
                            .or_default()
                            .insert(k.as_str().unwrap().to_owned());
                    }
                    ops.insert(op);
                }
            }
            let mut want_ops = BTreeSet::new();
            let mut want_keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            let mut section = "";
            let mut current = String::new();
            for line in yaml.lines() {
                if !line.starts_with(' ') {
                    section = line.split(':').next().unwrap();
                } else if section == "operators" && line.starts_with("  \"") {
                    want_ops.insert(
                        serde_json::from_str::<String>(line.trim().trim_end_matches(':')).unwrap(),
                    );
                } else if section == "et_kernel_metadata" {
                    if let Some(k) = line.strip_prefix("  - ") {
                        want_keys
                            .entry(current.clone())
                            .or_default()
                            .insert(serde_json::from_str(k).unwrap());
                    } else {
                        current = serde_json::from_str(line.trim().trim_end_matches(':')).unwrap();
                    }
                }
            }
            assert_eq!(ops, want_ops, "{source}");
            assert_eq!(keys, want_keys, "{source}");
        }
        // Each check row is `check --json` against that spec alone.
        if matches!(kind, "program" | "bundled_program" | "package") {
            for spec in ["executorch-1.5.1", "portable"] {
                let c = of(&checks, source);
                let row = c
                    .iter()
                    .find(|c| c["runtime"] == spec)
                    .unwrap_or_else(|| panic!("{source} {spec}"));
                let r = ptefs_run(["check", "--json", "--runtime", spec, source.as_str()]);
                let want: Value = serde_json::from_str(&r.out).unwrap();
                let got: Value = serde_json::from_str(row["result"].as_str().unwrap()).unwrap();
                assert_eq!(got, want, "{source} {spec}");
                assert_eq!(row["loads"], want["ok"]);
                assert_eq!(row["loads"], json!(r.code == 0));
                assert_eq!(
                    row["problems"],
                    json!(want["problems"].as_array().unwrap().len())
                );
            }
        } else {
            assert!(of(&checks, source).is_empty(), "{source}");
        }
        // Tensors: every one of the tree's stored tensors, with its bytes.
        let ts = of(&tensors, source);
        assert_eq!(
            f["tensors"],
            json!(ts.iter().filter(|t| !t["dtype"].is_null()).count())
        );
        for (i, t) in ts.iter().enumerate() {
            let held = std::fs::read(t["file"].as_str().unwrap()).unwrap();
            let (o, n) = (
                t["offset"].as_u64().unwrap() as usize,
                t["nbytes"].as_u64().unwrap() as usize,
            );
            assert_eq!(
                t["sha256"],
                json!(crate::common::sha256(&held[o..o + n])),
                "{source} {}",
                t["path"]
            );
            // The tree serves those bytes at that path (a few per file:
            // each is a run of ptefs).
            if i >= 8 {
                continue;
            }
            let tree = crate::common::ptefs()
                .args(["cat", source.as_str(), t["path"].as_str().unwrap()])
                .output()
                .unwrap();
            assert!(tree.status.success(), "{source} {}", t["path"]);
            assert!(
                tree.stdout == held[o..o + n],
                "{source} {}: the tree's bytes",
                t["path"]
            );
        }
    }
    // The external tensors of mlp_external.pte are in its .ptd.
    let ext = models.join("mlp_external.pte").display().to_string();
    let in_ptd: Vec<_> = of(&tensors, &ext)
        .into_iter()
        .filter(|t| t["file"] == models.join("mlp_external.ptd").to_str().unwrap())
        .collect();
    assert_eq!(in_ptd.len(), 4);
    assert!(in_ptd.iter().any(|t| t["name"] == "fc1.weight"));
    let f = of(&files, &ext)[0];
    assert_eq!(f["data_files"], json!(["mlp_external.ptd"]));
}

#[test]
fn four_shards_hold_exactly_the_rows_of_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    fleet(&models);
    let one = tmp.path().join("one");
    let four = tmp.path().join("four");
    let m = models.to_str().unwrap();
    assert_eq!(index(&[m, "-o", one.to_str().unwrap()]).code, 1);
    for i in 0..4 {
        let shard = format!("{i}/4");
        let r = index(&[
            m,
            "-o",
            four.to_str().unwrap(),
            "--shard",
            &shard,
            "--jobs",
            "1",
        ]);
        assert!(r.code <= 1, "{}", r.err);
    }
    for table in ["files", "tensors", "operators", "delegates", "checks"] {
        let parts = std::fs::read_dir(four.join(table)).unwrap().count();
        assert!(parts >= 2, "{table}: {parts} parts");
        let mut a = rows(&one, table);
        let mut b = rows(&four, table);
        // The times files were seen at are the same files' times.
        a.sort_by_key(Value::to_string);
        b.sort_by_key(Value::to_string);
        assert_eq!(a.len(), b.len(), "{table}");
        assert!(a == b, "{table}: the shards' rows differ from one run's");
    }
}

#[test]
fn a_rerun_indexes_only_new_or_changed_files_and_force_redoes_all() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for f in ["mlp.pte", "dtypes.pte"] {
        std::fs::copy(fixture(f), models.join(f)).unwrap();
    }
    let cat = tmp.path().join("c");
    let (m, c) = (models.to_str().unwrap(), cat.to_str().unwrap());
    let r = index(&[m, "-o", c]);
    assert_eq!(r.code, 0, "{}", r.err);
    let first = rows(&cat, "tensors");
    let r = index(&[m, "-o", c]);
    assert!(
        r.err
            .contains("2 files listed, 0 indexed (0 could not be read), 2 unchanged"),
        "{}",
        r.err
    );
    assert_eq!(rows(&cat, "tensors"), first);
    // A new file is added; a changed one replaces its rows.
    std::fs::copy(fixture("add.pte"), models.join("add.pte")).unwrap();
    std::fs::copy(fixture("multi_method.pte"), models.join("mlp.pte")).unwrap();
    let r = index(&[m, "-o", c]);
    assert!(r.err.contains("3 files listed, 2 indexed"), "{}", r.err);
    let files = rows(&cat, "files");
    assert_eq!(files.len(), 3);
    let mlp = models.join("mlp.pte").display().to_string();
    let f = of(&files, &mlp);
    assert_eq!(f.len(), 1);
    let want = ptefs_json(["inspect", "--json", mlp.as_str()]);
    assert_eq!(f[0]["size"], want["file_size"]);
    let methods = ptefs_json([
        "inspect",
        "--json",
        fixture("multi_method.pte").to_str().unwrap(),
    ]);
    assert_eq!(
        f[0]["methods"].as_array().unwrap().len(),
        methods["program"]["methods"].as_array().unwrap().len()
    );
    let before = rows(&cat, "operators");
    let r = index(&[m, "-o", c, "--force"]);
    assert!(r.err.contains("3 files listed, 3 indexed"), "{}", r.err);
    assert_eq!(rows(&cat, "operators"), before);
    assert_eq!(rows(&cat, "files").len(), 3);
}

#[test]
fn a_file_reached_by_several_paths_has_its_rows_once() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(fixture("mlp.pte"), models.join("mlp.pte")).unwrap();
    std::os::unix::fs::symlink("mlp.pte", models.join("latest.pte")).unwrap();
    let cat = tmp.path().join("c");
    let m = models.display().to_string();
    let spelled = format!("{m}/./mlp.pte");
    let r = index(&[&m, &spelled, "-o", cat.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.err);
    let (latest, mlp) = (format!("{m}/latest.pte"), format!("{m}/mlp.pte"));
    assert!(
        r.err.contains(&format!(
            "ptefs: {latest}: the same file as {mlp}, indexed once, as {mlp}"
        )),
        "{}",
        r.err
    );
    assert!(r.err.contains("1 files listed, 1 indexed"), "{}", r.err);
    let files = rows(&cat, "files");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["source"], mlp.as_str());
    // The rows of the file named once.
    let alone = tmp.path().join("alone");
    let r = index(&[&mlp, "-o", alone.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.err);
    for table in ["tensors", "operators", "checks"] {
        let got = rows(&cat, table);
        assert!(!got.is_empty(), "{table}");
        assert_eq!(got, rows(&alone, table), "{table}");
    }
}

#[test]
fn trouble_with_the_run_itself_is_exit_2_and_leaves_no_part() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let mlp = fixture("mlp.pte");
    let m = mlp.to_str().unwrap();
    let o = out.to_str().unwrap();
    for (args, want) in [
        (
            vec!["/nonexistent/models", "-o", o],
            "/nonexistent/models: No such file",
        ),
        (vec![m, "-o", o, "--runtime", "nosuch.yaml"], "nosuch.yaml"),
        (vec![m, "-o", o, "--shard", "4/4"], "--shard"),
        (vec!["/nonexistent/*.pte", "-o", o], "no file matches"),
        (vec![m, "-o", "/proc/version/c"], "/proc/version"),
    ] {
        let r = index(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(r.err.contains(want), "{args:?}: {}", r.err);
    }
    assert!(
        !out.join("files").exists()
            || std::fs::read_dir(out.join("files"))
                .unwrap()
                .next()
                .is_none()
    );
    // A file a list names that is gone is a row with its error.
    let list = tmp.path().join("list.txt");
    std::fs::write(&list, format!("# fleet\n{m}\n\n/nonexistent/gone.pte\n")).unwrap();
    let listed = tmp.path().join("listed");
    let r = index(&[
        &format!("@{}", list.display()),
        "-o",
        listed.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{}", r.err);
    let files = rows(&listed, "files");
    assert_eq!(files.len(), 2);
    let gone = of(&files, "/nonexistent/gone.pte");
    assert!(
        gone[0]["error"].as_str().unwrap().contains("No such file"),
        "{gone:?}"
    );
    assert_eq!(of(&files, m)[0]["error"], Value::Null);
    // A spec of two added up is one verdict.
    let spec = tmp.path().join("extra.json");
    std::fs::write(&spec, r#"{"operators": ["aten::linear.out"]}"#).unwrap();
    let both = format!("portable+{}", spec.display());
    let r = index(&[m, "-o", o, "--runtime", &both, "--runtime", "portable"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let checks = rows(&out, "checks");
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().any(|c| c["runtime"] == both.as_str()));
}

/// docs/index.md lists every table's columns, in order, with the types
/// DuckDB shows for them.
#[test]
fn the_docs_list_every_column_with_its_type() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/index.md")).unwrap();
    for table in ptefs::index::schema::TABLES {
        let start = page
            .find(&format!("\n### {}\n", table.name))
            .unwrap_or_else(|| panic!("docs/index.md has no section for {}", table.name));
        let documented: Vec<(String, String)> = page[start..]
            .lines()
            .skip_while(|l| !l.starts_with("| `"))
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (cells[1].trim_matches('`').to_owned(), cells[2].to_owned())
            })
            .collect();
        let actual: Vec<(String, String)> = table
            .columns
            .iter()
            .map(|c| (c.name.to_owned(), c.ty.sql().to_owned()))
            .collect();
        assert_eq!(documented, actual, "docs/index.md, table {}", table.name);
    }
}

/// The models folder `dir` with `files` copied in from the fixtures.
fn models_with(dir: &Path, files: &[&str]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    for f in files {
        let to = dir.join(Path::new(f).file_name().unwrap());
        std::fs::copy(fixture(f), to).unwrap();
    }
    dir.display().to_string()
}

/// Sets the modification time of `path` to `secs` after the epoch.
fn set_mtime(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .unwrap();
}

#[test]
fn a_rerun_redoes_a_program_whose_data_files_went_changed_or_appeared() {
    let tmp = tempfile::tempdir().unwrap();
    let m = models_with(
        &tmp.path().join("models"),
        &["mlp_external.pte", "mlp_external.ptd", "mlp.pte"],
    );
    let cat = tmp.path().join("c");
    let c = cat.to_str().unwrap();
    let (pte, ptd) = (
        format!("{m}/mlp_external.pte"),
        format!("{m}/mlp_external.ptd"),
    );
    let in_ptd = |cat: &Path| {
        of(&rows(cat, "tensors"), &pte)
            .iter()
            .filter(|t| t["file"] == ptd.as_str())
            .count()
    };
    assert_eq!(index(&[&m, "-o", c]).code, 0);
    assert_eq!(in_ptd(&cat), 4);
    // The data file goes: the program is indexed again, without it.
    std::fs::remove_file(&ptd).unwrap();
    let r = index(&[&m, "-o", c]);
    assert!(
        r.err.contains(
            "2 files listed, 1 indexed (0 could not be read), 1 unchanged since the last run, 1 gone since the last run"
        ),
        "{}",
        r.err
    );
    let f = rows(&cat, "files");
    assert_eq!(of(&f, &pte)[0]["data_files"], json!([]));
    assert!(of(&f, &ptd).is_empty());
    assert_eq!(in_ptd(&cat), 0);
    // It comes back beside it: the program is indexed again, with it.
    std::fs::copy(fixture("mlp_external.ptd"), &ptd).unwrap();
    let r = index(&[&m, "-o", c]);
    assert!(r.err.contains("3 files listed, 2 indexed"), "{}", r.err);
    assert_eq!(
        of(&rows(&cat, "files"), &pte)[0]["data_files"],
        json!(["mlp_external.ptd"])
    );
    assert_eq!(in_ptd(&cat), 4);
    // It changes, same size: the program's rows are made again.
    let r = index(&[&m, "-o", c]);
    assert!(r.err.contains("0 indexed"), "{}", r.err);
    set_mtime(Path::new(&ptd), 1_000_000_000);
    let r = index(&[&pte, "-o", c]);
    assert!(r.err.contains("1 files listed, 1 indexed"), "{}", r.err);
    let f = rows(&cat, "files");
    let stamps = of(&f, &pte)[0]["data_stamps"].as_array().unwrap().clone();
    let s = stamps.iter().find(|s| s["path"] == ptd.as_str()).unwrap();
    assert_eq!(s["mtime"], json!(1_000_000_000_000_000i64));
}

#[test]
fn a_rerun_indexes_again_what_lacks_a_runtime_or_a_hash_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let m = models_with(&tmp.path().join("models"), &["mlp.pte", "mlp_external.ptd"]);
    let cat = tmp.path().join("c");
    let c = cat.to_str().unwrap();
    assert_eq!(index(&[&m, "-o", c]).code, 0);
    let r = index(&[&m, "-o", c, "--runtime", "portable"]);
    assert!(
        r.err.contains("2 files listed, 1 indexed"),
        "the program lacks a portable verdict: {}",
        r.err
    );
    let checks = rows(&cat, "checks");
    assert!(
        checks.iter().any(|c| c["runtime"] == "portable"),
        "{checks:?}"
    );
    let r = index(&[&m, "-o", c, "--runtime", "portable"]);
    assert!(r.err.contains("0 indexed"), "{}", r.err);
    let r = index(&[&m, "-o", c, "--runtime", "portable", "--hash"]);
    assert!(r.err.contains("2 files listed, 2 indexed"), "{}", r.err);
    let files = rows(&cat, "files");
    assert!(files.iter().all(|f| f["sha256"].is_string()), "{files:?}");
    let r = index(&[&m, "-o", c, "--runtime", "portable", "--hash"]);
    assert!(r.err.contains("0 indexed"), "{}", r.err);
}

#[test]
fn rows_of_files_gone_from_a_listed_folder_go_and_others_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let m = models_with(
        &tmp.path().join("models"),
        &["mlp.pte", "dtypes.pte", "add.pte", "multi_method.pte"],
    );
    let other = fixture("conv.ptn").display().to_string();
    let cat = tmp.path().join("c");
    let c = cat.to_str().unwrap();
    assert_eq!(index(&[&m, &other, "-o", c]).code, 0);
    // Each shard removes the rows of its own files only.
    let names = ["mlp.pte", "dtypes.pte", "add.pte", "multi_method.pte"];
    for n in names {
        std::fs::remove_file(format!("{m}/{n}")).unwrap();
    }
    let shard: ptefs::index::listing::Shard = "0/2".parse().unwrap();
    let mine = names
        .iter()
        .filter(|n| shard.takes(&format!("{m}/{n}")))
        .count();
    let r = index(&[&m, "-o", c, "--shard", "0/2"]);
    assert_eq!(r.code, 0, "{}", r.err);
    if mine > 0 {
        assert!(
            r.err.contains(&format!("{mine} gone since the last run")),
            "{}",
            r.err
        );
    }
    assert_eq!(rows(&cat, "files").len(), 1 + names.len() - mine);
    let r = index(&[&m, "-o", c, "--shard", "1/2"]);
    assert_eq!(r.code, 0, "{}", r.err);
    // The file given alone is not under the folder: its rows stay.
    let files = rows(&cat, "files");
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0]["source"], other.as_str());
    assert!(!rows(&cat, "tensors").is_empty());
    assert!(
        rows(&cat, "tensors")
            .iter()
            .all(|t| t["source"] == other.as_str())
    );
}

#[test]
fn a_program_without_its_data_file_has_the_warnings_the_tree_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let m = models_with(&tmp.path().join("models"), &["mlp_external.pte"]);
    let pte = format!("{m}/mlp_external.pte");
    let cat = tmp.path().join("c");
    assert_eq!(index(&[&pte, "-o", cat.to_str().unwrap()]).code, 0);
    let f = rows(&cat, "files");
    let got: Vec<&str> = f[0]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let tree = ptefs_run(["ls", pte.as_str()]);
    let want: Vec<&str> = tree
        .err
        .lines()
        .filter_map(|l| l.strip_prefix("ptefs: warning: "))
        .collect();
    assert!(!want.is_empty(), "{}", tree.err);
    assert!(want.iter().any(|w| w.contains("external tensor")));
    assert_eq!(got, want);
}

#[test]
fn an_empty_constant_is_one_typed_row() {
    let tmp = tempfile::tempdir().unwrap();
    let zero = fixture("index/zero_constant.pte").display().to_string();
    let cat = tmp.path().join("c");
    assert_eq!(index(&[&zero, "-o", cat.to_str().unwrap()]).code, 0);
    let t = rows(&cat, "tensors");
    let mut ranges = BTreeSet::new();
    for row in &t {
        assert!(
            ranges.insert((
                row["file"].to_string(),
                row["offset"].to_string(),
                row["nbytes"].to_string()
            )),
            "a range twice: {t:?}"
        );
    }
    let empty: Vec<&Value> = t.iter().filter(|r| r["nbytes"] == 0).collect();
    assert_eq!(empty.len(), 1, "{t:?}");
    assert_eq!(empty[0]["dtype"], "FLOAT");
    assert_eq!(empty[0]["shape"], json!([0, 4]));
}

#[test]
fn a_rerun_keeping_rows_of_an_unreadable_file_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let m = models_with(
        &tmp.path().join("models"),
        &["mlp.pte", "check/cut_segments.pte"],
    );
    let cat = tmp.path().join("c");
    let c = cat.to_str().unwrap();
    assert_eq!(index(&[&m, "-o", c]).code, 1);
    let r = index(&[&m, "-o", c]);
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(
        r.err.contains(
            "2 files listed, 0 indexed (0 could not be read), 2 unchanged since the last run (1 of them could not be read)"
        ),
        "{}",
        r.err
    );
}

#[test]
fn an_empty_catalog_has_a_part_of_no_rows_in_each_table() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let cat = tmp.path().join("c");
    let r = index(&[empty.to_str().unwrap(), "-o", cat.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.err);
    for table in ptefs::index::schema::TABLES {
        let parts: Vec<PathBuf> = std::fs::read_dir(cat.join(table.name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(parts.len(), 1, "{}", table.name);
        let reader =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&parts[0]).unwrap())
                .unwrap();
        let names: Vec<&str> = reader
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        let want: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
        assert_eq!(names, want, "{}", table.name);
        assert!(rows(&cat, table.name).is_empty());
    }
}

#[test]
fn weights_name_is_the_tensors_name_in_weights_safetensors() {
    let tmp = tempfile::tempdir().unwrap();
    let m = models_with(
        &tmp.path().join("models"),
        &[
            "mv2_xnnpack.pte",
            "xnnpack_external.pte",
            "xnnpack_external.ptd",
            "mlp.pte",
        ],
    );
    let cat = tmp.path().join("c");
    assert_eq!(index(&[&m, "-o", cat.to_str().unwrap()]).code, 0);
    let tensors = rows(&cat, "tensors");
    let mut named = 0;
    for source in ["mv2_xnnpack.pte", "xnnpack_external.pte", "mlp.pte"] {
        let source = format!("{m}/{source}");
        let st = crate::common::ptefs()
            .args(["cat", source.as_str(), "weights.safetensors"])
            .output()
            .unwrap()
            .stdout;
        let hlen = u64::from_le_bytes(st[..8].try_into().unwrap()) as usize;
        let header: BTreeMap<String, Value> = serde_json::from_slice(&st[8..8 + hlen]).unwrap();
        let data = &st[8 + hlen..];
        for t in of(&tensors, &source) {
            let Some(w) = t["weights_name"].as_str() else {
                continue;
            };
            named += 1;
            let e = &header[w];
            let (a, b) = (
                e["data_offsets"][0].as_u64().unwrap() as usize,
                e["data_offsets"][1].as_u64().unwrap() as usize,
            );
            let held = std::fs::read(t["file"].as_str().unwrap()).unwrap();
            let o = t["offset"].as_u64().unwrap() as usize;
            let n = t["nbytes"].as_u64().unwrap() as usize;
            assert_eq!(b - a, n, "{source} {w}");
            assert!(data[a..b] == held[o..o + n], "{source} {w}: other bytes");
        }
        // Every tensor of the file is some row's.
        let rows_named: BTreeSet<&str> = of(&tensors, &source)
            .iter()
            .filter_map(|t| t["weights_name"].as_str())
            .collect();
        let in_file: BTreeSet<&str> = header
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "__metadata__")
            .collect();
        assert_eq!(rows_named, in_file, "{source}");
    }
    assert!(named > 50, "{named}");
    // XNNPACK's weights are named by the report one way, by the file
    // another: the column joins them.
    assert!(tensors.iter().any(|t| t["backend"] == "XnnpackBackend"
        && t["weights_name"].is_string()
        && t["weights_name"] != t["name"]));
}

/// Reads a catalog with PySpark and with DuckDB and prints what differs,
/// or `same` and the rows compared.
const SPARK_AND_DUCKDB: &str = r#"
import sys, duckdb
from pyspark.sql import SparkSession
cat = sys.argv[1]
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
rows = 0
for table in ["files", "tensors", "operators", "delegates", "checks"]:
    n_spark = spark.read.parquet(f"{cat}/{table}").count()
    n_duck = duckdb.sql(f"select count(*) from '{cat}/{table}/*.parquet'").fetchall()[0][0]
    assert n_spark == n_duck, (table, n_spark, n_duck)
    rows += n_spark
by_spark = sorted(
    (r["backend"] or "", r["bytes"])
    for r in spark.read.parquet(f"{cat}/tensors").groupBy("backend").agg({"nbytes": "sum"}).withColumnRenamed("sum(nbytes)", "bytes").collect()
)
by_duck = sorted(duckdb.sql(f"select coalesce(backend, ''), sum(nbytes)::bigint from '{cat}/tensors/*.parquet' group by all").fetchall())
assert by_spark == by_duck, (by_spark, by_duck)
fails_spark = sorted(r["source"] for r in spark.read.parquet(f"{cat}/checks").where("not loads").select("source").collect())
fails_duck = sorted(r[0] for r in duckdb.sql(f"select source from '{cat}/checks/*.parquet' where not loads").fetchall())
assert fails_spark == fails_duck, (fails_spark, fails_duck)
print("same", rows, "rows,", len(by_spark), "backends,", len(fails_spark), "files that fail")
"#;

#[test]
fn pyspark_reads_the_catalog_as_duckdb_does() {
    let test = "pyspark_reads_the_catalog_as_duckdb_does";
    if !crate::common::required::slow_or_skip(test) {
        return;
    }
    let has = std::process::Command::new("python3")
        .args(["-c", "import pyspark, duckdb"])
        .status()
        .is_ok_and(|s| s.success());
    let java = crate::common::mounted::which("java").is_some();
    if !crate::common::required::skip_unless(
        test,
        (!has || !java)
            .then_some("needs PySpark and a Java runtime (scripts/setup.sh installs them)"),
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    fleet(&models);
    let cat = tmp.path().join("catalog");
    let r = index(&[models.to_str().unwrap(), "-o", cat.to_str().unwrap()]);
    assert_eq!(r.code, 1, "one fixture is cut short: {}", r.err);
    let out = std::process::Command::new("python3")
        .args(["-c", SPARK_AND_DUCKDB, cat.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.starts_with("same "),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{test}: {}", said.trim());
}

#[test]
fn runs_into_one_folder_at_once_keep_each_others_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for (dir, files) in [
        (&a, ["mlp.pte", "add.pte"]),
        (&b, ["dtypes.pte", "multi_method.pte"]),
    ] {
        std::fs::create_dir(dir).unwrap();
        for f in files {
            std::fs::copy(fixture(f), dir.join(f)).unwrap();
        }
    }
    let cat = tmp.path().join("c");
    let c = cat.to_str().unwrap();
    // Each round both runs index their folder anew at the same time;
    // without the folder's lock one run's part rewrite lost the other's
    // rows, or failed on a part renamed away under it.
    for round in 0..6 {
        let runs: Vec<_> = [&a, &b]
            .iter()
            .map(|d| {
                crate::common::ptefs()
                    .args([
                        "index",
                        d.to_str().unwrap(),
                        "-o",
                        c,
                        "--force",
                        "--jobs",
                        "1",
                    ])
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for r in runs {
            let out = r.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let files = rows(&cat, "files");
        assert_eq!(files.len(), 4, "round {round}: {files:?}");
    }
}

#[test]
fn runs_adding_nothing_to_a_table_leave_it_one_empty_part() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = tmp.path().join("c");
    let mlp = fixture("mlp.pte");
    for _ in 0..3 {
        let r = index(&[
            mlp.to_str().unwrap(),
            "-o",
            cat.to_str().unwrap(),
            "--force",
        ]);
        assert_eq!(r.code, 0, "{}", r.err);
    }
    // mlp.pte delegates nothing: one part of no rows, for queries to find.
    let parts: Vec<_> = std::fs::read_dir(cat.join("delegates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".parquet") && !n.starts_with('.'))
        .collect();
    assert_eq!(parts.len(), 1, "{parts:?}");
    assert!(rows(&cat, "delegates").is_empty());
    assert_eq!(rows(&cat, "files").len(), 1);
}
