//! Packages the project's writer makes: every safetensors dtype, graph
//! features no fixture has (subgraphs, list outputs, quantization, user
//! input mutation), zip64, packages past 4 GiB, and constants without
//! bytes. Hostile packages are in `package_hostile.rs`.

use crate::common;
use crate::writer;

use std::process::Command;

use common::packages::{pattern, small, st};
use common::*;
use ptefs::schema::native_graph as ng;
use serde_json::Value;
use writer::package::*;

#[test]
fn every_safetensors_dtype_is_served_and_loads_in_numpy() {
    let dtypes: [(&str, usize, &str, bool); 16] = [
        ("BOOL", 1, "|b1", false),
        ("U8", 1, "|u1", false),
        ("I8", 1, "|i1", false),
        ("I16", 2, "<i2", false),
        ("U16", 2, "<u2", false),
        ("I32", 4, "<i4", false),
        ("U32", 4, "<u4", false),
        ("I64", 8, "<i8", false),
        ("U64", 8, "<u8", false),
        ("F16", 2, "<f2", false),
        ("BF16", 2, "<u2", true),
        ("F32", 4, "<f4", false),
        ("F64", 8, "<f8", false),
        ("C64", 8, "<c8", false),
        ("F8_E5M2", 1, "|u1", true),
        ("F8_E4M3", 1, "|u1", true),
    ];
    let mut tensors: Vec<StTensor> = dtypes
        .iter()
        .enumerate()
        .map(|(i, (d, size, _, _))| {
            // Small values keep floats finite and bools 0 or 1.
            let data = (0..6 * size).map(|j| ((i + j) % 2) as u8).collect();
            st(&format!("t_{d}"), d, &[2, 3], data)
        })
        .collect();
    tensors.push(st("t_F4", "F4", &[4], vec![0x21, 0x43]));
    let zip = package(&[constants_method(&[])], &tensors, &[]);
    let (_d, v) = view_bytes("dtypes.ptn", &zip.to_bytes());
    let idx = json(&v, "tensors/index.json");
    for (d, _, descr, raw) in dtypes {
        let e = idx
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == format!("t_{d}"))
            .unwrap();
        assert_eq!(e["dtype"], d);
        assert_eq!(e["numpy_dtype"], descr, "{d}");
        assert_eq!(e["raw_bits"], raw, "{d}");
        assert_eq!(e["npy_shape"], serde_json::json!([2, 3]), "{d}");
    }
    let f4 = idx
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "t_F4")
        .unwrap();
    assert_eq!(f4["npy"], Value::Null, "NumPy has no 4-bit float");
    assert_eq!(read(&v, "tensors/t_F4.bin"), [0x21, 0x43]);
    let dir = tempfile::tempdir().unwrap();
    extract(&v, dir.path());
    let out = python(NUMPY_CHECK, &[dir.path()]);
    assert!(out.contains("checked 16"), "{out}");
    for np in ["complex64", "bool", "uint64", "float16"] {
        assert!(out.contains(&format!(" {np} (2, 3)")), "{np}: {out}");
    }
}

/// A method with a subgraph call, a list output, an optional tensor list,
/// a quantized weight and a user input the graph writes.
fn featured() -> MethodSpec {
    let t = |s: &str| Arg::Tensor(s.into());
    let mut sub = GraphSpec {
        inputs: vec!["a".into()],
        outputs: vec!["neg".into()],
        ..GraphSpec::default()
    };
    sub.nodes = vec![
        NodeSpec::placeholder("a"),
        NodeSpec::call(
            "neg",
            "torch.ops.aten.neg.default",
            vec![("self", t("a"), false)],
        ),
        NodeSpec::output(&["neg"]),
    ];
    let mut split = NodeSpec::call(
        "split",
        "torch.ops.aten.split_copy.Tensor",
        vec![("self", t("x"), false), ("split_size", Arg::Int(2), false)],
    );
    split.outputs = vec![Out::List(vec!["part0".into(), "part1".into()])];
    let mut copy = NodeSpec::call(
        "copy_",
        "torch.ops.aten.copy_.default",
        vec![("self", t("x"), true), ("src", t("part0"), false)],
    );
    copy.outputs = vec![Out::Tensor {
        name: "copy_".into(),
        alias_of: Some("x".into()),
    }];
    let g = GraphSpec {
        nodes: vec![
            NodeSpec::placeholder("p_w"),
            NodeSpec::placeholder("x"),
            split,
            NodeSpec::call(
                "cond",
                "torch.ops.higher_order.cond",
                vec![
                    ("pred", Arg::Bool(true), false),
                    (
                        "true_fn",
                        Arg::Graph("true_graph_0".into(), Box::new(sub)),
                        false,
                    ),
                    ("operands", Arg::Tensors(vec!["part1".into()]), false),
                ],
            ),
            NodeSpec::call(
                "index",
                "torch.ops.aten.index.Tensor",
                vec![
                    ("self", t("cond"), false),
                    (
                        "indices",
                        Arg::OptionalTensors(vec![None, Some("p_w".into())]),
                        false,
                    ),
                    ("note", Arg::Str("a \"quoted\" string".into()), false),
                    ("dtype", Arg::Dtype(ng::ScalarType::BFLOAT16), false),
                    ("scale", Arg::Float(0.5), false),
                    (
                        "shape",
                        Arg::Ints(vec![0, -1], vec!["s0".into(), String::new()]),
                        false,
                    ),
                    ("none", Arg::None, false),
                ],
            ),
            copy,
            NodeSpec::output(&["index", "copy_"]),
        ],
        inputs: vec!["x".into()],
        outputs: vec!["index".into(), "copy_".into()],
        values: vec![
            ("x".into(), ng::ScalarType::FLOAT, vec![4, 8]),
            ("part0".into(), ng::ScalarType::FLOAT, vec![2, 8]),
            ("index".into(), ng::ScalarType::FLOAT, vec![2]),
        ],
    };
    MethodSpec {
        name: "forward".into(),
        graph: g,
        constants: vec![ConstSpec {
            name: "p_w".into(),
            data_key: "w/q".into(),
            dtype: ng::ScalarType::BYTE,
            sizes: vec![4, 4],
            kind: ng::InputKind::PARAMETER,
            mutated: false,
            quant: Some(("w.scale".into(), -8, 7, 0)),
        }],
        output_specs: vec![
            ("index".into(), ng::OutputKind::USER_OUTPUT, None),
            (
                "copy_".into(),
                ng::OutputKind::USER_INPUT_MUTATION,
                Some("x".into()),
            ),
        ],
        mutable_buffers: Vec::new(),
    }
}

#[test]
fn graph_features_show_in_code_dot_and_json() {
    // 4x4 int4 values packed two to a byte: 8 stored bytes.
    let tensors = [
        st("w.scale", "F32", &[4], pattern(16, 3)),
        st("w/q", "U8", &[8], pattern(8, 4)),
    ];
    let zip = package(&[featured()], &tensors, &[]);
    let bytes = zip.to_bytes();
    let (dir, v) = view_bytes("f.ptn", &bytes);
    let code = String::from_utf8(read(&v, "methods/forward/code.txt")).unwrap();
    for want in [
        "[%part0: FLOAT[2, 8], %part1] = torch.ops.aten.split_copy.Tensor(self=%x, split_size=2)  # node split",
        "true_fn=graph true_graph_0",
        "    # subgraph true_graph_0 of %cond, inputs %a",
        "    %neg = torch.ops.aten.neg.default(self=%a)",
        "indices=[None, %p_w]",
        "note=\"a \\\"quoted\\\" string\"",
        "dtype=BFLOAT16",
        "shape=[%s0, -1]",
        "none=None",
        "%copy_ (alias_of %x) = torch.ops.aten.copy_.default(self=%x mutated, src=%part0)",
        "input %p_w: BYTE[4, 4] affine-quantized = PARAMETER w/q",
        "input %x: FLOAT[4, 8] (mutated)",
        "%copy_ (USER_INPUT_MUTATION x)",
    ] {
        assert!(code.contains(want), "{want} not in\n{code}");
    }
    // The quantized weight: logical shape from the graph, stored from safetensors.
    let idx = json(&v, "tensors/index.json");
    let w = idx
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "w/q")
        .unwrap();
    assert_eq!(w["name"], "w%2Fq.bin");
    assert_eq!(w["sizes"], serde_json::json!([8]));
    assert_eq!(w["logical_sizes"], serde_json::json!([4, 4]));
    assert_eq!(w["quant"], "AffineGroup");
    assert_eq!(read(&v, "tensors/w%2Fq.bin"), pattern(8, 4));
    let scale = idx
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "w.scale")
        .unwrap();
    assert_eq!(scale["kind"], "UNUSED");
    // program.json is what flatc prints for the same bytes.
    let ptg = dir.path().join("program.ptg");
    std::fs::write(&ptg, program(&[featured()])).unwrap();
    let out = Command::new("flatc")
        .args([
            "--json",
            "--strict-json",
            "--defaults-json",
            "--raw-binary",
            "-o",
        ])
        .arg(dir.path())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schema/native_graph.fbs"
        ))
        .arg("--")
        .arg(&ptg)
        .output()
        .expect("flatc is installed (scripts/gen-schema.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let flatc: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("program.json")).unwrap()).unwrap();
    assert_eq!(json(&v, "program.json"), flatc);
    let dot = String::from_utf8(read(&v, "methods/forward/graph.dot")).unwrap();
    assert!(dot.contains("subgraph \"cluster_1\""), "{dot}");
    assert!(dot.contains("\"cond/true_graph_0/neg\""), "{dot}");
}

#[test]
fn zip64_records_read_the_same_members() {
    let plain = small();
    let mut wide = small();
    wide.zip64 = true;
    let (_a, a) = view_bytes("a.ptn", &plain.to_bytes());
    let (_b, b) = view_bytes("b.ptn", &wide.to_bytes());
    assert_eq!(read(&a, "tensors/a.w.bin"), pattern(16, 1));
    assert_eq!(read(&b, "tensors/a.w.bin"), pattern(16, 1));
    let npy = read(&b, "tensors/b.npy");
    assert!(npy.len() % 64 == 16 && npy.ends_with(&pattern(16, 2)));
    assert_eq!(json(&a, "program.json"), json(&b, "program.json"));
}

#[test]
fn a_package_past_4_gib_serves_tensors_beyond_it() {
    // A 4.5 GiB zero tensor (a hole on disk) and a small one after it.
    let big = (9u64 << 29) - 64;
    let tensors = [
        StTensor {
            key: "big".into(),
            dtype: "F32",
            shape: vec![big / 4],
            data: Chunk::Zeros(big),
        },
        st("tail", "I64", &[2], pattern(16, 9)),
    ];
    let m = constants_method(&[
        ("big", ng::ScalarType::FLOAT, &[(big / 4) as i64]),
        ("tail", ng::ScalarType::LONG, &[2]),
    ]);
    let mut zip = package(&[m], &tensors, &[]);
    zip.zip64 = true;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.ptn");
    let mut f = std::fs::File::create(&path).unwrap();
    zip.write(&mut f).unwrap();
    drop(f);
    let v = view_of(&[path], &[]);
    assert_eq!(read(&v, "tensors/tail.bin"), pattern(16, 9));
    let idx = json(&v, "tensors/index.json");
    let tail = idx
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "tail")
        .unwrap();
    assert!(
        tail["source"]["offset"].as_u64().unwrap() > 1 << 32,
        "{tail}"
    );
    let ino = v.tree.resolve("tensors/big.bin").unwrap();
    assert_eq!(v.content(ino).unwrap().len(), big);
    assert_eq!(read_range(&v, ino, big - 8, 8), [0; 8]);
}

#[test]
fn a_constant_without_bytes_is_listed_as_missing() {
    let m = constants_method(&[
        ("a.w", ng::ScalarType::FLOAT, &[4]),
        ("gone", ng::ScalarType::HALF, &[3]),
    ]);
    let zip = package(&[m], &[st("a.w", "F32", &[4], pattern(16, 1))], &[]);
    let (_d, v) = view_bytes("gone.ptn", &zip.to_bytes());
    let idx = json(&v, "tensors/index.json");
    let gone = idx
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "gone")
        .unwrap();
    assert_eq!(gone["missing"], true);
    assert_eq!(gone["location"], "none");
    assert_eq!(gone["scalar_type"], "HALF");
    assert_eq!(gone["used_by"], serde_json::json!([["forward", "b_gone"]]));
    assert!(gone.get("name").is_none());
    assert_eq!(ls(&v, "tensors"), ["a.w.bin", "a.w.npy", "index.json"]);
}
