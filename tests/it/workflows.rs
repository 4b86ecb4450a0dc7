//! The workflows users came for: programs with their data, several files in
//! one tree, diffs of two exports, bundled programs, mount(8).

use crate::common;
use crate::writer;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use common::mounted::*;
use common::*;
use ptefs::schema::ScalarType;
use serde_json::Value;
use writer::{
    Bundled, Chain, Data, DataFile, Layout, Method, Program, Tensor, TestValue, Value as V,
};

fn state_dict(model: &str) -> Vec<(String, String, Vec<i64>)> {
    let sd: Value =
        serde_json::from_slice(&std::fs::read(fixture("state_dicts.json")).unwrap()).unwrap();
    sd[model]["state"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| {
            let dtype = match t["dtype"].as_str().unwrap() {
                "float32" => "FLOAT",
                other => panic!("{other}"),
            };
            let shape = t["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            (
                t["sha256"].as_str().unwrap().to_owned(),
                dtype.to_owned(),
                shape,
            )
        })
        .collect()
}

/// `(sha256, scalar type, sizes)` of the `.bin` files listed in `dir/index.json`.
fn listed(v: &ptefs::view::View, dir: &str) -> Vec<(String, String, Vec<i64>)> {
    let index = json(v, &format!("{dir}/index.json"));
    index
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let name = e["name"].as_str()?;
            let sizes = e["sizes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            Some((
                sha256(&read(v, &format!("{dir}/{name}"))),
                e["scalar_type"].as_str().unwrap().to_owned(),
                sizes,
            ))
        })
        .collect()
}

#[test]
fn external_tensors_come_from_the_attached_ptd() {
    let want = state_dict("mlp_external");
    let v = view_of(
        &[fixture("mlp_external.pte")],
        &[fixture("mlp_external.ptd")],
    );
    let got = listed(&v, "methods/forward/tensors");
    for t in &want {
        assert!(got.contains(t), "{t:?} not in {got:?}");
    }
    let index = json(&v, "methods/forward/tensors/index.json");
    for e in index.as_array().unwrap() {
        assert_eq!(e["source"]["file"], "mlp_external.ptd");
        assert_eq!(e["location"], "external");
    }
    assert!(v.tree.warnings.is_empty(), "{:?}", v.tree.warnings);

    // Without the .ptd (not even the one beside it): listed as missing,
    // warned about, not fatal.
    let Run { code, out, err } = ptefs_run([
        OsStr::new("cat"),
        OsStr::new("--no-auto-data"),
        fixture("mlp_external.pte").as_os_str(),
        OsStr::new("methods/forward/tensors/index.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    let index: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(index.as_array().unwrap().len(), 4);
    assert!(
        index
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["missing"] == true && e.get("name").is_none())
    );
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("is missing: no data file is attached"))
            .count(),
        4,
        "{err}"
    );
}

#[test]
fn a_ptd_lacking_a_key_warns_once_and_shows_the_rest() {
    let full = std::fs::read(fixture("mlp_external.ptd")).unwrap();
    let Ok(ptefs::format::Parsed::Data(d)) = ptefs::format::parse(&full) else {
        panic!()
    };
    let partial = DataFile {
        entries: d
            .entries
            .iter()
            .filter(|e| e.key != "fc2.bias")
            .map(|e| {
                let l = e.layout.as_ref().unwrap();
                let layout = Layout {
                    scalar_type: l.scalar_type,
                    sizes: l.sizes.iter().map(|&s| s as i32).collect(),
                    dim_order: l.dim_order.to_vec(),
                };
                (
                    e.key.to_string(),
                    Some(layout),
                    e.span.bytes(&full).to_vec().into(),
                )
            })
            .collect(),
    };
    let dir = tempfile::tempdir().unwrap();
    let ptd = write_file(dir.path(), "partial.ptd", &partial.to_bytes());
    let Run { code, out, err } = ptefs_run([
        OsStr::new("ls"),
        OsStr::new("--no-auto-data"),
        fixture("mlp_external.pte").as_os_str(),
        OsStr::new("--data"),
        ptd.as_os_str(),
        OsStr::new("methods/forward/tensors"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "external tensor \"fc2.bias\" (value 3) is missing: no attached data file has that key"
        ),
        "{err}"
    );
    assert_eq!(
        out.lines().filter(|l| l.ends_with(".bin")).count(),
        3,
        "{out}"
    );
}

#[test]
fn named_blobs_of_the_attached_ptd_are_under_named() {
    let v = view_of(
        &[fixture("xnnpack_external.pte")],
        &[fixture("xnnpack_external.ptd")],
    );
    let index = json(&v, "named/index.json");
    let text = std::fs::read_to_string(fixture("xnnpack_external.ptd.oracle.jsonl")).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let rec: Value = serde_json::from_str(line).unwrap();
        let Some(key) = rec["named"].as_str() else {
            continue;
        };
        let e = index
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .unwrap_or_else(|| panic!("{key} not in named/"));
        assert_eq!(e["source"]["file"], "xnnpack_external.ptd");
        let bytes = read(&v, &format!("named/{}", e["name"].as_str().unwrap()));
        assert_eq!(sha256(&bytes), rec["sha256"].as_str().unwrap());
        n += 1;
    }
    assert!(n >= 4, "{n}");
}

/// Two exports of one module that differ in one element of one weight.
fn two_exports() -> (Vec<u8>, Vec<u8>) {
    (
        export(&[1.0, 2.0, -4.0, 0.5]),
        export(&[1.0, 2.5, -4.0, 0.25]),
    )
}

/// An export of one small module whose weight `w1` holds `w1`.
fn export(w1: &[f32]) -> Vec<u8> {
    let floats = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    {
        let values = vec![
            V::Tensor(
                Tensor::new(
                    ScalarType::FLOAT,
                    &[2, 2],
                    Data::Constant(floats(&[0.1, 0.2, 0.3, 0.4]).into()),
                )
                .named("w0"),
            ),
            V::Tensor(
                Tensor::new(ScalarType::FLOAT, &[4], Data::Constant(floats(w1).into())).named("w1"),
            ),
            V::Tensor(
                Tensor::new(
                    ScalarType::FLOAT,
                    &[3],
                    Data::Constant(floats(&[7.0, 8.0, 9.0]).into()),
                )
                .named("w2"),
            ),
            V::Tensor(Tensor::new(ScalarType::FLOAT, &[4], Data::None)),
            V::Int(1),
        ];
        let mut m = Method {
            name: "forward".into(),
            values,
            chains: vec![Chain::default()],
            ..Method::default()
        };
        m.operators = vec![("aten::add".into(), "out".into())];
        m.chains[0].instructions = vec![writer::Instr::Kernel {
            op: 0,
            args: vec![1, 2, 4, 3, 3],
        }];
        Program {
            methods: vec![m],
            ..Program::default()
        }
        .to_bytes()
    }
}

#[test]
fn diff_r_of_two_exports_reports_only_the_changed_bytes() {
    if !fuse_or_skip("diff_r_of_two_exports_reports_only_the_changed_bytes") {
        return;
    }
    let (a, b) = two_exports();
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (
        write_file(dir.path(), "a.pte", &a),
        write_file(dir.path(), "b.pte", &b),
    );
    let m = Mounted::new(&[pa.as_os_str(), pb.as_os_str()]);
    let mut names: Vec<String> = std::fs::read_dir(&m.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a.pte", "b.pte"]);
    let out = Command::new("diff")
        .arg("-rq")
        .arg(m.path("a.pte"))
        .arg(m.path("b.pte"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("{}/", m.path("a.pte").display());
    let mut differ: Vec<&str> = text
        .lines()
        .map(|l| {
            l.strip_prefix("Files ")
                .unwrap()
                .split(" and ")
                .next()
                .unwrap()
                .strip_prefix(&prefix)
                .unwrap()
        })
        .collect();
    differ.sort();
    assert_eq!(
        differ,
        [
            "constants/2.bin",
            "methods/forward/tensors/1.w1.bin",
            "methods/forward/tensors/1.w1.npy",
            "methods/forward/values/1",
            // The report names its file (a.pte, b.pte) in coverage.json,
            // size.json and the treemap, and w1's statistics changed.
            "report/coverage.json",
            "report/size.json",
            "report/stats.tsv",
            "report/treemap.svg",
            "segments/0.bin",
            // w1's bytes, and the source's name in the metadata.
            "weights.safetensors"
        ],
        "{text}"
    );
}

#[test]
fn a_directory_shows_each_model_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["mlp.pte", "add.pte", "mlp_external.ptd"] {
        std::fs::copy(fixture(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(dir.path().join("notes.txt"), "not a model").unwrap();
    // A model-looking file that does not parse is skipped too.
    let mut broken = std::fs::read(fixture("mlp.pte")).unwrap();
    broken.truncate(100);
    std::fs::write(dir.path().join("broken.pte"), broken).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::copy(fixture("dtypes.pte"), dir.path().join("sub/dtypes.pte")).unwrap();
    let Run { code, out, err } = ptefs_run([OsStr::new("ls"), dir.path().as_os_str()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "add.pte/\nmlp.pte/\nmlp_external.ptd/\n");
    assert!(
        err.contains("note: skipped") && err.contains("notes.txt"),
        "{err}"
    );
    assert!(
        err.contains("broken.pte: extended header: program size"),
        "{err}"
    );
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![dir.path().to_owned()],
        data: vec![],
        recursive: true,
        names: None,
        auto_data: false,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    })
    .unwrap();
    // A model found in a subdirectory is named by its relative path.
    assert_eq!(
        ls(&v, ""),
        ["add.pte", "mlp.pte", "mlp_external.ptd", "sub"]
    );
    assert_eq!(ls(&v, "sub"), ["dtypes.pte"]);
    assert_eq!(
        read(&v, "mlp.pte/segments/0.bin"),
        read(&view("mlp.pte"), "segments/0.bin")
    );
    // Two inputs with one base name are refused.
    let other = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("add.pte"), other.path().join("mlp.pte")).unwrap();
    let Run { code, err, .. } = ptefs_run([
        OsStr::new("mount"),
        fixture("mlp.pte").as_os_str(),
        other.path().join("mlp.pte").as_os_str(),
        other.path().as_os_str(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("has the same base name as"), "{err}");
}

fn bundled() -> (Vec<u8>, Vec<u8>) {
    let program = std::fs::read(fixture("mlp.pte")).unwrap();
    let input: Vec<u8> = (0..16)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    let output: Vec<u8> = (0..8)
        .flat_map(|i| (i as f32 - 3.0).to_le_bytes())
        .collect();
    let b = Bundled {
        program: program.clone(),
        suites: vec![(
            "forward".into(),
            vec![
                (
                    vec![
                        TestValue::Tensor {
                            scalar_type: ScalarType::FLOAT,
                            sizes: vec![1, 16],
                            data: input.clone(),
                        },
                        TestValue::Int(3),
                    ],
                    vec![TestValue::Tensor {
                        scalar_type: ScalarType::FLOAT,
                        sizes: vec![1, 8],
                        data: output.clone(),
                    }],
                ),
                (vec![TestValue::Bool(true), TestValue::Double(0.25)], vec![]),
            ],
        )],
    };
    (b.to_bytes(), input)
}

#[test]
fn a_bundled_program_shows_its_program_and_test_sets() {
    let (bytes, input) = bundled();
    let (_d, v) = view_bytes("m.bpte", &bytes);
    assert_eq!(
        ls(&v, ""),
        ["README.txt", "header.json", "program", "report", "testsets"]
    );
    // The embedded program's tree is the program's tree.
    let inner = view("mlp.pte");
    for (path, want) in files(&inner) {
        if path.ends_with("index.json") || path == "header.json" || path == "program.json" {
            continue; // they state offsets, which move
        }
        if path == "weights.safetensors" {
            continue; // its metadata names the file it is of (m.bpte, mlp.pte)
        }
        if path.starts_with("report/") {
            continue; // a bundle's report/ is at its root, of the whole bundle
        }
        assert!(
            read(&v, &format!("program/{path}")) == want,
            "program/{path}"
        );
    }
    assert_eq!(ls(&v, "testsets/forward"), ["0", "1"]);
    assert_eq!(read(&v, "testsets/forward/0/input_0.bin"), input);
    let index = json(&v, "testsets/forward/0/index.json");
    assert_eq!(index[0]["sizes"], serde_json::json!([1, 16]));
    assert_eq!(index[1]["type"], "Int");
    assert_eq!(index[1]["value"], 3);
    assert_eq!(index[2]["role"], "expected");
    assert_eq!(index[2]["name"], "expected_0.bin");
    let index = json(&v, "testsets/forward/1/index.json");
    assert_eq!(index[0]["value"], true);
    assert_eq!(index[1]["value"], 0.25);
    let header = json(&v, "header.json");
    assert_eq!(header["identifier"], "BP08");
    let dir = tempfile::tempdir().unwrap();
    extract(&v, dir.path());
    let out = python(NUMPY_CHECK, &[dir.path()]);
    assert!(out.contains("input_0.npy float32 (1, 16)"), "{out}");
}

#[test]
fn mount_t_fuse_ptefs() {
    if !root_fuse_or_skip("mount_t_fuse_ptefs") {
        return;
    }
    assert!(
        which("mount.fuse3").is_some() || Path::new("/sbin/mount.fuse3").exists(),
        "mount -t fuse.ptefs needs mount.fuse3 (apt-get install fuse3)"
    );
    // The install step: mount.fuse3 finds helpers on a fixed PATH that
    // includes /usr/local/bin.
    let link = Path::new("/usr/local/bin/ptefs");
    let ours = link.read_link().ok().as_deref() == Some(Path::new(ptefs_bin()));
    let made = if link.exists() && !ours {
        eprintln!(
            "!!!!!!!! mount_t_fuse_ptefs: {} is another ptefs; using it",
            link.display()
        );
        false
    } else {
        let _ = std::fs::remove_file(link);
        std::os::unix::fs::symlink(ptefs_bin(), link).unwrap();
        true
    };
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("mount")
        .args(["-t", "fuse.ptefs"])
        .arg(fixture("mlp.pte"))
        .arg(dir.path())
        .args(["-o", "ro"])
        .output()
        .unwrap();
    let ok = out.status.success();
    let listing = std::fs::read_dir(dir.path())
        .map(|d| d.count())
        .unwrap_or(0);
    let seg = std::fs::read(dir.path().join("segments/0.bin")).unwrap_or_default();
    let _ = Command::new("umount").arg(dir.path()).status();
    if made {
        let _ = std::fs::remove_file(link);
    }
    assert!(
        ok,
        "mount -t fuse.ptefs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // README.txt, header.json, program.json, ops.txt, ops.yaml, methods,
    // constants, named, segments, report and weights.safetensors.
    assert_eq!(listing, 11);
    assert_eq!(
        sha256(&seg),
        "123e96c44be97de09bbf094da890b28c84f22ffa7f1227f1aa67c9d7ada954cb"
    );
    assert!(!is_mounted(dir.path()));
}

#[test]
fn each_program_of_a_directory_takes_the_data_files_beside_it_it_needs() {
    if !fuse_or_skip("each_program_of_a_directory_takes_the_data_files_beside_it_it_needs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "mlp_external.pte",
        "mlp_external.ptd",
        "xnnpack_external.pte",
        "xnnpack_external.ptd",
        "mlp.pte",
    ] {
        std::fs::copy(fixture(f), dir.path().join(f)).unwrap();
    }
    let m = Mounted::new(&[dir.path().as_os_str()]);
    // The external tensors resolve, byte for byte as with the file named.
    let alone = Mounted::new(&[fixture("mlp_external.pte").as_os_str()]);
    for t in ["0.fc1.weight.bin", "3.fc2.bias.bin"] {
        let got = std::fs::read(m.path(&format!("mlp_external.pte/methods/forward/tensors/{t}")));
        let want = std::fs::read(alone.path(&format!("methods/forward/tensors/{t}")));
        assert_eq!(got.unwrap(), want.unwrap(), "{t}");
    }
    let names = |p: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(m.path(p))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    // Each program gets only what it asked for: the XNNPACK program its
    // four blobs, not the other data file's tensors; the plain program
    // nothing.
    assert_eq!(
        names("xnnpack_external.pte/named").len(),
        5,
        "4 blobs and index.json"
    );
    assert_eq!(names("mlp.pte/named"), ["index.json"]);
    // Without auto-attach, nothing is found.
    let off = Mounted::new(&[OsStr::new("--no-auto-data"), dir.path().as_os_str()]);
    let t = off.path("mlp_external.pte/methods/forward/tensors/0.fc1.weight.bin");
    assert!(std::fs::read(t).is_err());
}

#[test]
fn the_same_data_serves_every_program_in_a_mount() {
    if !fuse_or_skip("the_same_data_serves_every_program_in_a_mount") {
        return;
    }
    // Options may stand between the sources.
    let m = Mounted::new(&[
        fixture("mlp_external.pte").as_os_str(),
        OsStr::new("--data"),
        fixture("mlp_external.ptd").as_os_str(),
        fixture("xnnpack_external.pte").as_os_str(),
    ]);
    let tensors = std::fs::read_dir(m.path("mlp_external.pte/methods/forward/tensors"))
        .unwrap()
        .count();
    assert_eq!(tensors, 9, "4 .bin, 4 .npy and index.json");
    let mut named: Vec<String> = std::fs::read_dir(m.path("xnnpack_external.pte/named"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    named.sort();
    assert_eq!(
        named.len(),
        9,
        "the --data file's 4 tensors as blobs, the 4 blobs of the .ptd found beside it, \
         and index.json: {named:?}"
    );
    for blob in ["fc1.weight.bin", "fc2.bias.bin"] {
        assert!(named.iter().any(|n| n == blob), "{named:?}");
    }
}
