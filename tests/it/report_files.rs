//! The `report/` files of a tree against `ptefs report --json` of the same
//! files: the numbers are computed from the tree the files live in, so
//! they must be the report's, for one file, for a program with its data
//! file attached, and for each file of a directory, whose `report/` sees
//! only that file's part of the tree.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// `report/<file>` of `input`'s tree, at `at` (the root, or a file's
/// directory in the tree of a directory).
fn report_file(input: &Path, at: &str, file: &str) -> String {
    let path = format!("{at}report/{file}");
    ptefs_stdout(["cat".as_ref(), input.as_os_str(), path.as_ref()])
}

/// A table's rows after its header, split into cells.
fn rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .skip(1)
        .map(|l| l.split('\t').collect())
        .collect()
}

/// Every number of `report/` equals what `ptefs report --json` says.
fn agrees_with_the_report(input: &Path) {
    let shown = input.display();
    let r = ptefs_json(["report".as_ref(), "--json".as_ref(), input.as_os_str()]);
    let size: Value = serde_json::from_str(&report_file(input, "", "size.json")).unwrap();
    let want = json!({
        "total_bytes": r["total_bytes"],
        "files": r["files"],
        "by_dtype": r["by_dtype"],
        "by_backend": r["by_backend"],
        "size": r["size"],
    });
    assert_eq!(size, want, "{shown}: size.json");
    let coverage: Value = serde_json::from_str(&report_file(input, "", "coverage.json")).unwrap();
    assert_eq!(coverage, r["coverage"], "{shown}: coverage.json");

    let layers = report_file(input, "", "layers.tsv");
    let layers: Vec<(String, u64)> = rows(&layers)
        .iter()
        .map(|c| (c[0].to_owned(), c[3].parse().unwrap()))
        .collect();
    let want: Vec<(String, u64)> = (r["by_layer"].as_array().unwrap().iter())
        .map(|l| {
            let name = l["layer"].as_str().unwrap().to_owned();
            (name, l["bytes"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(layers, want, "{shown}: layers.tsv");

    let stats = report_file(input, "", "stats.tsv");
    let stats: Vec<(String, u64)> = rows(&stats)
        .iter()
        .map(|c| (c[0].to_owned(), c[4].parse().unwrap()))
        .collect();
    let want: Vec<(String, u64)> = (r["stats"].as_array().unwrap().iter())
        .map(|s| {
            let path = s["path"].as_str().unwrap().to_owned();
            (path, s["elements"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(stats, want, "{shown}: stats.tsv");

    let dups = report_file(input, "", "duplicates.tsv");
    let copies: usize = (r["duplicates"].as_array().unwrap().iter())
        .map(|d| d["copies"].as_array().unwrap().len())
        .sum();
    assert_eq!(rows(&dups).len(), copies, "{shown}: duplicates.tsv");
}

#[test]
fn report_files_are_the_report_of_the_file() {
    for name in [
        "mlp.pte",
        "multi_method.pte",
        "mv2_xnnpack.pte",
        "quant_xnnpack.pte",
        "mlp.ptn",
        "tied.ptn",
    ] {
        agrees_with_the_report(&fixture(name));
    }
}

#[test]
fn report_files_count_the_data_file_found_beside_the_program() {
    let pte = fixture("xnnpack_external.pte");
    agrees_with_the_report(&pte);
    let size: Value = serde_json::from_str(&report_file(&pte, "", "size.json")).unwrap();
    let files: Vec<&str> = (size["files"].as_array().unwrap().iter())
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["xnnpack_external.pte", "xnnpack_external.ptd"]);
}

#[test]
fn each_file_of_a_directory_has_the_report_of_that_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "mlp.pte",
        "multi_method.pte",
        "quant_xnnpack.pte",
        "mlp.ptn",
    ];
    for name in names {
        std::fs::copy(fixture(name), dir.path().join(name)).unwrap();
    }
    for name in names {
        for file in ptefs::report::summary::FILES {
            let alone = report_file(&fixture(name), "", file);
            let among = report_file(dir.path(), &format!("{name}/"), file);
            assert!(!alone.is_empty(), "{name}: {file} is empty");
            assert_eq!(among, alone, "{name}: {file} in the directory's tree");
        }
    }
}

#[test]
fn in_a_directory_each_row_has_the_type_the_tree_shows() {
    // The data file attached to both programs types its blobs through
    // mlp_external.pte's tensors; under mlp.pte they are the same files.
    let dir = tempfile::tempdir().unwrap();
    for name in ["mlp.pte", "mlp_external.pte"] {
        std::fs::copy(fixture(name), dir.path().join(name)).unwrap();
    }
    let ptd = fixture("mlp_external.ptd");
    let args = |path: &str| {
        let mut a = vec![dir.path().as_os_str().to_owned(), path.into()];
        a.extend(["--data".into(), ptd.as_os_str().to_owned()]);
        a
    };
    let stats = ptefs_stdout(
        ["cat".into()]
            .into_iter()
            .chain(args("mlp.pte/report/stats.tsv")),
    );
    let rows = rows(&stats);
    let paths: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert!(paths.contains(&"named/fc1.weight.bin"), "{stats}");
    for r in &rows {
        let shown = ptefs_stdout(
            ["stat".into()]
                .into_iter()
                .chain(args(&format!("mlp.pte/{}", r[0]))),
        );
        let dtype = format!("user.ptefs.dtype=\"{}\"", r[3]);
        assert!(shown.contains(&dtype), "{}: {shown}", r[0]);
    }
}
