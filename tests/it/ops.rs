//! `ptefs ops`: the operator union of many programs, as one
//! `selected_operators.yaml` that `ptefs check --runtime` takes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{fixture, ptefs_json, ptefs_run};

/// Every program fixture: the plain ones, one per delegate backend, and
/// a bundle whose operators no built-in runtime has.
fn programs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in ["", "backends"] {
        for e in std::fs::read_dir(fixture(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "pte") {
                v.push(p);
            }
        }
    }
    v.push(fixture("check/missing_ops.bpte"));
    v.sort();
    v
}

/// The backends `file` delegates to, as `inspect --json` names them.
fn backends(file: &Path) -> BTreeSet<String> {
    let j = ptefs_json(["inspect".as_ref(), "--json".as_ref(), file.as_os_str()]);
    j["program"]["delegates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `ptefs check F --runtime union` (with F's backends registered).
fn check(file: &Path, union: &Path, tmp: &Path) -> crate::common::Run {
    let b = backends(file);
    let mut args = vec![
        "check".into(),
        file.display().to_string(),
        "--runtime".into(),
        union.display().to_string(),
    ];
    if !b.is_empty() {
        let spec = tmp.join("backends.json");
        std::fs::write(&spec, serde_json::json!({ "backends": b }).to_string()).unwrap();
        args.extend(["--runtime".into(), spec.display().to_string()]);
    }
    ptefs_run(&args)
}

#[test]
fn every_program_passes_check_against_the_union() {
    let tmp = tempfile::tempdir().unwrap();
    let union = tmp.path().join("selected_operators.yaml");
    let files = programs();
    let mut args = vec!["ops".into(), "-o".into(), union.display().to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let r = ptefs_run(&args);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.is_empty(), "{}", r.out);
    assert!(
        r.err.contains("also delegate to CoreMLBackend"),
        "{}",
        r.err
    );
    for f in &files {
        let r = check(f, &union, tmp.path());
        assert_eq!(r.code, 0, "{}: {}{}", f.display(), r.out, r.err);
        // And against its own union: for a program whose every call is
        // delegated, a YAML naming no operator.
        let own = tmp.path().join("own.yaml");
        let made = ptefs_run([
            "ops".as_ref(),
            f.as_os_str(),
            "-o".as_ref(),
            own.as_os_str(),
        ]);
        assert_eq!(made.code, 0, "{}", made.err);
        let r = check(f, &own, tmp.path());
        assert_eq!(r.code, 0, "{}: {}{}", f.display(), r.out, r.err);
    }
    // Without the bundle, its custom operator is missing from the union.
    let bundle = fixture("check/missing_ops.bpte");
    let rest: Vec<String> = files
        .iter()
        .filter(|f| **f != bundle)
        .map(|f| f.display().to_string())
        .collect();
    let partial = tmp.path().join("partial.yaml");
    let mut args = vec!["ops".into(), "-o".into(), partial.display().to_string()];
    args.extend(rest);
    assert_eq!(ptefs_run(&args).code, 0);
    let r = check(&bundle, &partial, tmp.path());
    assert_eq!(r.code, 1, "{}", r.out);
    assert!(r.out.contains("ptefs::twice.out"), "{}", r.out);
}

#[test]
fn the_union_of_one_program_is_its_ops_yaml() {
    let f = fixture("dtypes.pte");
    let ops = ptefs_run(["ops".as_ref(), f.as_os_str()]);
    assert_eq!(ops.code, 0, "{}", ops.err);
    let tree = ptefs_run(["cat".as_ref(), f.as_os_str(), "ops.yaml".as_ref()]);
    assert_eq!(ops.out, tree.out);
}

#[test]
fn a_directory_gives_the_union_of_its_programs_and_no_other_file() {
    // backends/ holds programs and data files beside them.
    let dir = fixture("backends");
    let ops = ptefs_run(["ops".as_ref(), dir.as_os_str()]);
    assert_eq!(ops.code, 0, "{}", ops.err);
    let each: Vec<PathBuf> = programs()
        .into_iter()
        .filter(|p| p.parent() == Some(dir.as_path()))
        .collect();
    assert!(each.len() > 3, "{each:?}");
    let mut args = vec!["ops".as_ref()];
    args.extend(each.iter().map(|p| p.as_os_str()));
    let listed = ptefs_run(args);
    assert_eq!(listed.code, 0, "{}", listed.err);
    assert_eq!(ops.out, listed.out);
    let empty = tempfile::tempdir().unwrap();
    let none = ptefs_run(["ops".as_ref(), empty.path().as_os_str()]);
    assert_eq!(none.code, 2);
    assert!(
        none.err.contains("no program (.pte, .bpte) in it"),
        "{}",
        none.err
    );
}

#[test]
fn a_file_without_a_program_is_refused_by_name() {
    for (name, why) in [
        ("mlp_external.ptd", "a data file (.ptd) holds no operators"),
        ("tied.ptn", "a .ptn (native program package)"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("u.yaml");
        let r = ptefs_run([
            "ops".as_ref(),
            fixture("mlp.pte").as_os_str(),
            fixture(name).as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        assert_eq!(r.code, 2, "{}", r.err);
        assert!(r.err.contains(&format!("{name}: {why}")), "{}", r.err);
        assert!(!out.exists(), "nothing is written when a file is refused");
    }
}

#[test]
fn the_union_file_is_as_open_as_the_umask_allows() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    for (umask, mode) in [("022", 0o644), ("077", 0o600)] {
        let out = tmp.path().join(format!("u{umask}.yaml"));
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask} && exec \"$0\" ops \"$1\" -o \"$2\""))
            .arg(crate::common::ptefs_bin())
            .arg(fixture("mlp.pte"))
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success());
        let got = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, mode, "umask {umask}: {got:o}");
    }
}

#[test]
fn specs_joined_by_a_plus_add_up_as_repeated_runtimes_do() {
    let tmp = tempfile::tempdir().unwrap();
    let union = tmp.path().join("union.yaml");
    let f = fixture("check/missing_ops.bpte");
    let made = ptefs_run([
        "ops".as_ref(),
        f.as_os_str(),
        "-o".as_ref(),
        union.as_os_str(),
    ]);
    assert_eq!(made.code, 0, "{}", made.err);
    let u = union.display().to_string();
    let joined = ptefs_run([
        "check",
        f.to_str().unwrap(),
        "--runtime",
        &format!("portable+{u}"),
    ]);
    let repeated = ptefs_run([
        "check",
        f.to_str().unwrap(),
        "--runtime",
        "portable",
        "--runtime",
        &u,
    ]);
    assert_eq!(joined.code, 0, "{}{}", joined.out, joined.err);
    assert_eq!((joined.out, joined.err), (repeated.out, repeated.err));
    let alone = ptefs_run(["check", f.to_str().unwrap(), "--runtime", "portable"]);
    assert_eq!(
        alone.code, 1,
        "the bundle's custom operator is missing from portable alone"
    );
}
