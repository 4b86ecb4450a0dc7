//! Files the fixtures do not cover, made with the writer, checked through
//! the tree: bytes, names and `index.json`.

use crate::common;
use crate::writer;

use common::*;
use ptefs::schema::ScalarType;
use ptefs::schema::program::TensorShapeDynamism;
use serde_json::{Value, json};
use writer::{Bytes, Data, DataFile, Delegate, Instr, Layout, Program, Tensor, Value as V};

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn program(values: Vec<V>) -> Program {
    Program::forward(values)
}

fn index(v: &ptefs::view::View, dir: &str) -> Vec<Value> {
    json(v, &format!("{dir}/index.json"))
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn mutable_initial_state_comes_from_mutable_data_segments() {
    let state = bytes(24, 7);
    let p = program(vec![
        V::Tensor(
            Tensor::new(
                ScalarType::FLOAT,
                &[2, 3],
                Data::Mutable(state.clone().into()),
            )
            .named("buf"),
        ),
        V::Tensor(Tensor::new(ScalarType::FLOAT, &[2, 3], Data::None)),
    ]);
    let (_d, v) = view_bytes("m.pte", &p.to_bytes());
    assert_eq!(read(&v, "methods/forward/tensors/0.buf.bin"), state);
    let idx = index(&v, "methods/forward/tensors");
    assert_eq!(idx.len(), 1);
    assert_eq!(idx[0]["location"], "mutable_initial_state");
    assert_eq!(idx[0]["fqn"], "buf");
    assert_eq!(idx[0]["mutable_data_segments_index"], 0);
    let prog = json(&v, "program.json");
    assert_eq!(prog["mutable_data_segments"][0]["offsets"], json!([0, 0]));
}

#[test]
fn legacy_inline_constants_without_extended_header() {
    let (a, b) = (bytes(12, 1), bytes(8, 2));
    let mut p = program(vec![
        V::Tensor(Tensor::new(
            ScalarType::INT,
            &[3],
            Data::Constant(a.clone().into()),
        )),
        V::Tensor(Tensor::new(
            ScalarType::SHORT,
            &[2, 2],
            Data::Constant(b.clone().into()),
        )),
    ]);
    p.legacy_inline_constants = true;
    let file = p.to_bytes();
    assert_ne!(&file[8..10], b"eh");
    let (_d, v) = view_bytes("legacy.pte", &file);
    assert_eq!(json(&v, "header.json")["extended_header"], Value::Null);
    assert_eq!(read(&v, "methods/forward/tensors/0.bin"), a);
    assert_eq!(read(&v, "methods/forward/tensors/1.bin"), b);
    assert_eq!(ls(&v, "constants"), ["1.bin", "2.bin", "index.json"]);
    assert_eq!(read(&v, "constants/2.bin"), b);
    // Inline buffers are their own slots: no padding.
    let index = json(&v, "constants/index.json");
    assert_eq!(index[1]["nbytes"], index[1]["slot_nbytes"]);
    assert_eq!(json(&v, "program.json")["constant_buffer_count"], 3);
}

#[test]
fn delegate_blobs_inline_and_in_segments() {
    let mut p = program(vec![V::Tensor(Tensor::new(
        ScalarType::FLOAT,
        &[1],
        Data::None,
    ))]);
    let m = &mut p.methods[0];
    m.delegates = vec![
        Delegate {
            id: "InlineBackend".into(),
            blob: bytes(100, 3).into(),
            inline: true,
            compile_specs: vec![
                ("level".into(), b"3".to_vec()),
                ("raw".into(), vec![0xff, 0]),
            ],
        },
        Delegate {
            id: "Seg/Backend".into(),
            blob: bytes(300, 4).into(),
            inline: false,
            compile_specs: vec![],
        },
    ];
    m.chains[0].instructions = vec![
        Instr::Delegate {
            index: 0,
            args: vec![0],
        },
        Instr::Delegate {
            index: 1,
            args: vec![0],
        },
    ];
    let (_d, v) = view_bytes("d.pte", &p.to_bytes());
    assert_eq!(
        ls(&v, "methods/forward/delegates"),
        ["0-InlineBackend", "1-Seg%2FBackend"]
    );
    assert_eq!(
        read(
            &v,
            "methods/forward/delegates/0-InlineBackend/processed.bin"
        ),
        bytes(100, 3)
    );
    assert_eq!(
        read(
            &v,
            "methods/forward/delegates/1-Seg%2FBackend/processed.bin"
        ),
        bytes(300, 4)
    );
    let specs = json(
        &v,
        "methods/forward/delegates/0-InlineBackend/compile_specs.json",
    );
    assert_eq!(specs[0], json!({"key": "level", "size": 1, "text": "3"}));
    assert_eq!(specs[1]["text"], Value::Null);
    assert!(specs[1]["hex"].is_string());
    let code = String::from_utf8(read(&v, "methods/forward/code.txt")).unwrap();
    assert!(
        code.contains(
            "0: delegate 0 InlineBackend (delegates/0-InlineBackend) %0:f32[1]\n\
             1: delegate 1 Seg/Backend (delegates/1-Seg%2FBackend) %0:f32[1]\n"
        ),
        "{code}"
    );
    assert_eq!(
        json(&v, "program.json")["backend_delegate_data"][0]["size"],
        100
    );
}

#[test]
fn non_identity_dim_order_is_shown_by_physical_shape() {
    let data = bytes(2 * 3 * 4 * 4, 5);
    let t = Tensor::new(
        ScalarType::FLOAT,
        &[2, 3, 4],
        Data::Constant(data.clone().into()),
    )
    .dim_order(&[0, 2, 1]);
    let (_d, v) = view_bytes("cl.pte", &program(vec![V::Tensor(t)]).to_bytes());
    let e = &index(&v, "methods/forward/tensors")[0];
    assert_eq!(e["sizes"], json!([2, 3, 4]));
    assert_eq!(e["dim_order"], json!([0, 2, 1]));
    assert_eq!(e["npy_shape"], json!([2, 4, 3]));
    let npy = read(&v, "methods/forward/tensors/0.npy");
    let header = String::from_utf8_lossy(&npy[10..128]);
    assert!(header.contains("'shape': (2, 4, 3)"), "{header}");
    assert_eq!(&npy[npy.len() - data.len()..], &data[..]);
}

#[test]
fn types_numpy_lacks_are_raw_bits() {
    let cases = [
        (ScalarType::FLOAT8E5M2, "|u1", true, 1),
        (ScalarType::FLOAT8E4M3FN, "|u1", true, 1),
        (ScalarType::FLOAT8E5M2FNUZ, "|u1", true, 1),
        (ScalarType::FLOAT8E4M3FNUZ, "|u1", true, 1),
        (ScalarType::BITS16, "<u2", true, 2),
        (ScalarType::BFLOAT16, "<u2", true, 2),
        (ScalarType::QUINT4X2, "|u1", true, 1),
        (ScalarType::UINT16, "<u2", false, 2),
        (ScalarType::UINT32, "<u4", false, 4),
        (ScalarType::UINT64, "<u8", false, 8),
    ];
    let values: Vec<V> = cases
        .iter()
        .enumerate()
        .map(|(i, &(t, _, _, size))| {
            V::Tensor(Tensor::new(
                t,
                &[5],
                Data::Constant(bytes(5 * size, i as u8).into()),
            ))
        })
        .collect();
    let (_d, v) = view_bytes("types.pte", &program(values).to_bytes());
    let idx = index(&v, "methods/forward/tensors");
    for (i, (t, descr, raw, size)) in cases.iter().enumerate() {
        let e = &idx[i];
        assert_eq!(e["scalar_type"], t.variant_name().unwrap());
        assert_eq!(e["numpy_dtype"], *descr);
        assert_eq!(e["raw_bits"], *raw);
        assert_eq!(e["nbytes"], 5 * size);
        let name = e["name"].as_str().unwrap();
        assert_eq!(
            read(&v, &format!("methods/forward/tensors/{name}")),
            bytes(5 * size, i as u8)
        );
    }
}

#[test]
fn zero_size_and_shared_segments() {
    let blob = bytes(64, 9);
    let mut p = program(vec![V::Tensor(Tensor::new(
        ScalarType::BYTE,
        &[4],
        Data::Constant(bytes(4, 1).into()),
    ))]);
    p.named = vec![
        ("a".into(), blob.clone().into()),
        ("b".into(), blob.clone().into()),
    ];
    p.extra_segments = vec![
        Bytes::Owned(vec![]),
        Bytes::Owned(vec![]),
        bytes(10, 2).into(),
    ];
    let (_d, v) = view_bytes("s.pte", &p.to_bytes());
    let prog = json(&v, "program.json");
    let segs = prog["segments"].as_array().unwrap();
    assert_eq!(segs.len(), 5, "{prog}");
    // Zero-size segments are empty files and share an offset.
    assert_eq!(segs[2]["size"], 0);
    assert_eq!(segs[3]["size"], 0);
    assert_eq!(segs[2]["offset"], segs[3]["offset"]);
    assert!(read(&v, "segments/2.bin").is_empty());
    assert_eq!(read(&v, "segments/4.bin"), bytes(10, 2));
    // Two keys in one segment.
    let named = index(&v, "named");
    assert_eq!(named[0]["segment_index"], named[1]["segment_index"]);
    assert_eq!(read(&v, "named/a.bin"), blob);
    assert_eq!(read(&v, "named/b.bin"), blob);
}

#[test]
fn names_that_need_encoding() {
    let long = "w".repeat(300);
    let keys = [
        "a/b",
        "..",
        ".hidden",
        "%",
        "~x",
        "",
        "nul\0byte",
        "dup",
        "dup",
        long.as_str(),
    ];
    let mut p = program(vec![
        V::Tensor(
            Tensor::new(ScalarType::BYTE, &[1], Data::Constant(vec![1].into()))
                .named("../../etc/passwd"),
        ),
        V::Tensor(Tensor::new(ScalarType::BYTE, &[1], Data::Constant(vec![2].into())).named(&long)),
    ]);
    p.methods[0].name = "../up".into();
    p.named = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.to_string(), vec![i as u8].into()))
        .collect();
    let (_d, v) = view_bytes("n.pte", &p.to_bytes());
    assert_eq!(ls(&v, "methods"), ["%2E.%2Fup"]);
    let t = ls(&v, "methods/%2E.%2Fup/tensors");
    assert!(
        t.contains(&"0.%2E.%2F..%2Fetc%2Fpasswd.bin".to_owned()),
        "{t:?}"
    );
    for name in t.iter().chain(ls(&v, "named").iter()) {
        assert!(
            name.len() <= 255 && !name.contains('/') && !name.contains('\0'),
            "{name:?}"
        );
        assert!(name != "." && name != ".." && !name.is_empty());
    }
    let named = index(&v, "named");
    let names: Vec<&str> = named.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        &names[..9],
        [
            "a%2Fb.bin",
            "%2E..bin",
            "%2Ehidden.bin",
            "%25.bin",
            "%7Ex.bin",
            "%.bin",
            "nul%00byte.bin",
            "dup.bin",
            "dup~2.bin"
        ]
    );
    assert!(names[9].len() <= 255 && names[9].starts_with("www") && names[9].ends_with(".bin"));
    for (i, e) in named.iter().enumerate() {
        assert_eq!(e["key"], keys[i], "index.json keeps the original");
        assert_eq!(read(&v, &format!("named/{}", names[i])), [i as u8]);
    }
}

#[test]
fn many_tensors_of_given_sizes() {
    let n = 3000;
    let values: Vec<V> = (0..n)
        .map(|i| {
            let len = 4 * (1 + i % 7);
            V::Tensor(Tensor::new(
                ScalarType::FLOAT,
                &[(len / 4) as i32],
                Data::Constant(Bytes::Pattern {
                    len: len as u64,
                    seed: i as u64,
                }),
            ))
        })
        .collect();
    let (_d, v) = view_bytes("big.pte", &program(values).to_bytes());
    let idx = index(&v, "methods/forward/tensors");
    assert_eq!(idx.len(), n);
    assert_eq!(idx[17]["name"], "0017.bin");
    for (i, e) in idx.iter().enumerate().step_by(97) {
        let len = 4 * (1 + i % 7);
        let want = Bytes::Pattern {
            len: len as u64,
            seed: i as u64,
        }
        .to_vec();
        assert_eq!(
            read(
                &v,
                &format!("methods/forward/tensors/{}", e["name"].as_str().unwrap())
            ),
            want
        );
    }
    // A file per buffer, and index.json.
    assert_eq!(ls(&v, "constants").len(), n + 1);
    assert_eq!(
        json(&v, "constants/index.json").as_array().unwrap().len(),
        n
    );
}

#[test]
fn external_tensors_resolve_from_attached_data() {
    let w = bytes(16, 1);
    let p = program(vec![
        V::Tensor(Tensor::new(ScalarType::FLOAT, &[4], Data::External(0)).named("w")),
        V::Tensor(Tensor::new(ScalarType::FLOAT, &[2], Data::External(0)).named("gone")),
    ]);
    let d = DataFile {
        entries: vec![
            (
                "w".into(),
                Some(Layout {
                    scalar_type: ScalarType::FLOAT,
                    sizes: vec![4],
                    dim_order: vec![0],
                }),
                w.clone().into(),
            ),
            ("blob".into(), None, bytes(5, 2).into()),
        ],
    };
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "p.pte", &p.to_bytes());
    let ptd = write_file(dir.path(), "d.ptd", &d.to_bytes());
    let v = view_of(&[pte], &[ptd]);
    assert_eq!(read(&v, "methods/forward/tensors/0.w.bin"), w);
    let idx = index(&v, "methods/forward/tensors");
    assert_eq!(idx[0]["source"]["file"], "d.ptd");
    assert_eq!(idx[0]["location"], "external");
    assert_eq!(idx[1]["missing"], true);
    assert!(idx[1].get("name").is_none());
    assert_eq!(
        ls(&v, "methods/forward/tensors"),
        ["0.w.bin", "0.w.npy", "index.json"]
    );
    assert_eq!(read(&v, "named/blob.bin"), bytes(5, 2));
    assert_eq!(index(&v, "named")[1]["source"]["file"], "d.ptd");
    assert!(
        v.tree.warnings.iter().any(|w| w.contains("\"gone\"")),
        "{:?}",
        v.tree.warnings
    );
}

#[test]
fn writer_keeps_every_plan_field() {
    let mut t = Tensor::new(ScalarType::HALF, &[3], Data::None);
    t.shape_dynamism = TensorShapeDynamism::DYNAMIC_BOUND;
    t.allocation = Some((1, (5u64 << 32) + 7));
    t.requires_grad = true;
    let mut p = program(vec![
        V::Tensor(t),
        V::Str("s\"q".into()),
        V::DoubleList(vec![0.5, -1.0]),
        V::BoolList(vec![true]),
        V::Null,
        V::TensorList(vec![0]),
        V::Int(3),
    ]);
    p.methods[0].chains[0].instructions = vec![
        Instr::Kernel {
            op: 0,
            args: vec![0, 1, 2, 3, 4, 5, 6],
        },
        Instr::Move { from: 0, to: 5 },
        Instr::JumpFalse { cond: 3, dest: 0 },
        Instr::Free { value: 0 },
    ];
    p.methods[0].operators = vec![("my::op".into(), "".into())];
    let (_d, v) = view_bytes("f.pte", &p.to_bytes());
    let plan = json(&v, "methods/forward/plan.json");
    let a = &plan["values"][0]["val"]["allocation_info"];
    assert_eq!(a["memory_offset_high"], 5);
    assert_eq!(plan["values"][0]["val"]["shape_dynamism"], "DYNAMIC_BOUND");
    let code = String::from_utf8(read(&v, "methods/forward/code.txt")).unwrap();
    assert_eq!(
        code,
        "# forward: 7 values, inputs none, outputs none, 1 operators, chain 0\n\
         0: my::op %0:f16[3] \"s\\\"q\" [0.5, -1.0] [true] None %5=[%0] 3\n\
         1: move %0 -> %5\n\
         2: jump_false %3 -> 0\n\
         3: free %0\n"
    );
}
