//! XNNPACK payloads the writer makes: layouts no fixture has (weights in
//! the payload's constant data, old `constant_buffer` weights without a
//! header, inline scales, 4-bit group quantization) and hostile bytes,
//! which must leave the rest of the tree intact and say what is wrong.

use crate::common;
use crate::writer;

use common::in_memory::{cat, json_at, tree};
use common::{damaged, reads_within};
use serde_json::Value as Json;
use writer::xnnpack::{Graph, Node, Quant, Value};

const DIR: &str = "methods/forward/delegates/0-XnnpackBackend";
const FP32: i16 = 1;
const QCINT8: i16 = 6;
const QBINT4: i16 = 10;

/// A program whose one method has one delegate with `payload`.
fn program(backend: &str, payload: Vec<u8>, named: Vec<(&str, Vec<u8>)>) -> Vec<u8> {
    let named = named.into_iter().map(|(k, b)| (k.to_owned(), b)).collect();
    writer::payloads::one_delegate(backend, payload, Vec::new(), named)
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A fully connected layer: input %0 [1,4], filter %1 [2,4], bias %2 [2],
/// output %3 [1,2]; filter and bias are constants 1 and 2.
fn fc_graph() -> Graph {
    Graph {
        nodes: vec![(
            Node::FullyConnected {
                input: 0,
                filter: 1,
                bias: 2,
                output: 3,
            },
            Some((f32::NEG_INFINITY, f32::INFINITY)),
        )],
        values: vec![
            Value::new(0, FP32, &[1, 4], 0),
            Value::new(1, FP32, &[2, 4], 1),
            Value::new(2, FP32, &[2], 2),
            Value::new(3, FP32, &[1, 2], 0),
        ],
        inputs: vec![0],
        outputs: vec![3],
        ..Graph::default()
    }
}

#[test]
fn weights_in_the_payloads_constant_data() {
    let filter = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let bias = f32s(&[0.5, -0.5]);
    let mut constants = filter.clone();
    constants.extend_from_slice(&bias);
    let mut g = fc_graph();
    g.constant_data = vec![
        (0, 0, String::new()),
        (0, 32, String::new()),
        (32, 8, String::new()),
    ];
    let bytes = program("XnnpackBackend", g.payload(true, &constants), vec![]);
    let t = tree(&bytes);
    let w = format!("{DIR}/xnnpack/weights");
    assert_eq!(
        cat(&t, &bytes, &format!("{w}/000-fully_connected.filter.bin")),
        filter
    );
    assert_eq!(
        cat(&t, &bytes, &format!("{w}/000-fully_connected.bias.bin")),
        bias
    );
    let npy = cat(&t, &bytes, &format!("{w}/000-fully_connected.filter.npy"));
    assert!(
        String::from_utf8_lossy(&npy)
            .contains("'descr': '<f4', 'fortran_order': False, 'shape': (2, 4)")
    );
    assert!(npy.ends_with(&filter));
    // Offsets in index.json are file offsets of the bytes served.
    let index = json_at(&t, &bytes, &format!("{w}/index.json"));
    let h = json_at(&t, &bytes, &format!("{DIR}/xnnpack/header.json"));
    let cd = h["constant_data_file_offset"].as_u64().unwrap();
    assert_eq!(index[0]["source"]["offset"].as_u64().unwrap(), cd);
    assert_eq!(index[1]["source"]["offset"].as_u64().unwrap(), cd + 32);
    assert_eq!(&bytes[cd as usize..cd as usize + 32], &filter[..]);
    // Unclamped bounds are strings in graph.json and words in code.txt.
    let g = json_at(&t, &bytes, &format!("{DIR}/xnnpack/graph.json"));
    assert_eq!(g["xnodes"][0]["output_min_max"]["output_min"], "-inf");
    let code = String::from_utf8(cat(&t, &bytes, &format!("{DIR}/xnnpack/code.txt"))).unwrap();
    assert!(code.ends_with("0: fully_connected %0:fp32[1,4] filter=%1:fp32[2,4] bias=%2:fp32[2] -> %3:fp32[1,2] min=-inf max=inf\n"), "{code}");
}

#[test]
fn old_payloads_keep_weights_in_the_flatbuffer() {
    let filter = f32s(&[1.0; 8]);
    let bias = f32s(&[2.0; 2]);
    let mut g = fc_graph();
    g.identifier = *b"XN00";
    g.constant_buffer = vec![Vec::new(), filter.clone(), bias.clone()];
    let payload = g.payload(false, &[]);
    let bytes = program("XnnpackBackend", payload, vec![]);
    let t = tree(&bytes);
    let h = json_at(&t, &bytes, &format!("{DIR}/xnnpack/header.json"));
    assert_eq!(h["magic"], Json::Null);
    assert_eq!(h["identifier"], "XN00");
    let w = format!("{DIR}/xnnpack/weights");
    assert_eq!(
        cat(&t, &bytes, &format!("{w}/000-fully_connected.filter.bin")),
        filter
    );
    assert_eq!(
        cat(&t, &bytes, &format!("{w}/000-fully_connected.bias.bin")),
        bias
    );
}

#[test]
fn inline_scales_and_packed_4bit_weights() {
    // %1: qcint8 [2,4] with two inline scales; %2: qbint4 [4,8] with 8
    // bf16 scales in named data.
    let packed: Vec<u8> = (0..16).collect();
    let bf16: Vec<u8> = (0..16).map(|i| 0x3f + i).collect();
    let g = Graph {
        nodes: vec![
            (
                Node::FullyConnected {
                    input: 0,
                    filter: 1,
                    bias: u32::MAX,
                    output: 3,
                },
                None,
            ),
            (
                Node::FullyConnected {
                    input: 3,
                    filter: 2,
                    bias: u32::MAX,
                    output: 4,
                },
                None,
            ),
        ],
        values: vec![
            Value::new(0, FP32, &[1, 4], 0),
            Value::new(1, QCINT8, &[2, 4], 1).quant(Quant::PerChannel {
                scale: vec![0.5, 0.25],
                channel_dim: 0,
                buffer: 0,
                num_scales: 0,
            }),
            Value::new(2, QBINT4, &[4, 8], 2).quant(Quant::Group {
                scale: vec![],
                channel_dim: 0,
                group_size: 4,
                scale_bf16: vec![],
                buffer: 3,
                num_scales: 8,
            }),
            Value::new(3, FP32, &[1, 2], 0),
            Value::new(4, FP32, &[1, 4], 0),
        ],
        inputs: vec![0],
        outputs: vec![4],
        constant_data: vec![
            (0, 0, String::new()),
            (u64::MAX, 8, "q8".into()),
            (u64::MAX, 16, "q4".into()),
            (u64::MAX, 16, "s4".into()),
        ],
        ..Graph::default()
    };
    let q8 = vec![1u8, 2, 3, 4, 5, 6, 7, 8];
    let bytes = program(
        "XnnpackBackend",
        g.payload(true, &[]),
        vec![
            ("q8", q8.clone()),
            ("q4", packed.clone()),
            ("s4", bf16.clone()),
        ],
    );
    let t = tree(&bytes);
    let w = format!("{DIR}/xnnpack/weights");
    assert_eq!(
        cat(&t, &bytes, &format!("{w}/000-fully_connected.filter.bin")),
        q8
    );
    assert_eq!(
        cat(
            &t,
            &bytes,
            &format!("{w}/000-fully_connected.filter.scale.bin")
        ),
        f32s(&[0.5, 0.25])
    );
    assert_eq!(
        cat(&t, &bytes, &format!("{w}/001-fully_connected.filter.bin")),
        packed
    );
    assert_eq!(
        cat(
            &t,
            &bytes,
            &format!("{w}/001-fully_connected.filter.scale.bin")
        ),
        bf16
    );
    let npy = String::from_utf8_lossy(&cat(
        &t,
        &bytes,
        &format!("{w}/001-fully_connected.filter.npy"),
    ))
    .into_owned();
    assert!(
        npy.contains("'descr': '|u1', 'fortran_order': False, 'shape': (4, 4)"),
        "{npy}"
    );
    let snpy = String::from_utf8_lossy(&cat(
        &t,
        &bytes,
        &format!("{w}/001-fully_connected.filter.scale.npy"),
    ))
    .into_owned();
    assert!(
        snpy.contains("'descr': '<f4', 'fortran_order': False, 'shape': (8,)"),
        "{snpy}"
    );
    let index = json_at(&t, &bytes, &format!("{w}/index.json"));
    let (e8, e4) = (&index[0], &index[1]);
    assert_eq!(e8["scales"]["buffer_index"], Json::Null);
    assert_eq!(e8["quantization"]["num_scales"], 2);
    assert_eq!(e4["raw_bits"], true);
    assert!(e4["packed"].as_str().unwrap().contains("low nibble"));
    assert_eq!(e4["quantization"]["group_size"], 4);
    assert_eq!(e4["scales"]["stored_dtype"], "bfloat16");
    assert_eq!(e4["scales"]["widened"], true);
    assert_eq!(e4["scales"]["key"], "s4");
}

#[test]
fn other_backends_stay_opaque() {
    let bytes = program("SomeOtherBackend", fc_graph().payload(true, &[]), vec![]);
    let t = tree(&bytes);
    let dir = "methods/forward/delegates/0-SomeOtherBackend";
    assert!(t.resolve(&format!("{dir}/processed.bin")).is_some());
    assert!(t.resolve(&format!("{dir}/xnnpack")).is_none());
}

/// The error the tree reports for `payload`, after checking the rest of
/// the tree is intact.
fn error_of(payload: Vec<u8>) -> String {
    let bytes = program("XnnpackBackend", payload.clone(), vec![("k", vec![7; 4])]);
    let t = tree(&bytes);
    assert_eq!(cat(&t, &bytes, &format!("{DIR}/processed.bin")), payload);
    assert_eq!(cat(&t, &bytes, "named/k.bin"), vec![7; 4]);
    assert!(t.resolve("methods/forward/plan.json").is_some());
    String::from_utf8(cat(&t, &bytes, &format!("{DIR}/xnnpack/ERROR.txt"))).unwrap()
}

#[test]
fn hostile_headers_and_graphs_are_reported_with_offsets() {
    let good = fc_graph().payload(true, &[]);
    let mut far = good.clone();
    far[14..18].copy_from_slice(&100_000u32.to_le_bytes());
    let e = error_of(far);
    assert!(
        e.contains("flatbuffer: bytes 32..100032 extend past the end"),
        "{e}"
    );

    let mut short = good.clone();
    short[8..10].copy_from_slice(&3u16.to_le_bytes());
    assert!(error_of(short).contains("offset 8: header length 3"));

    let mut id = good.clone();
    id[36..40].copy_from_slice(b"ZZZZ");
    assert!(error_of(id).contains("payload offset 36: flatbuffer identifier is \"ZZZZ\""));

    let mut cd = good.clone();
    cd[22..30].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(error_of(cd).contains("constant data: offset"));

    let mut root = good.clone();
    root[32..36].copy_from_slice(&0xfff0u32.to_le_bytes());
    assert!(error_of(root).contains("XNNGraph flatbuffer at payload offset 32"));

    assert!(error_of(vec![1, 2, 3]).contains("too short"));
}

#[test]
fn constants_that_cannot_be_found_are_listed_with_the_reason() {
    let mut g = fc_graph();
    g.values[1].constant = 9;
    g.constant_data = vec![
        (0, 0, String::new()),
        (0, 1000, String::new()),
        (u64::MAX, 8, "nokey".into()),
    ];
    let bytes = program("XnnpackBackend", g.payload(true, &[0; 16]), vec![]);
    let t = tree(&bytes);
    let index = json_at(&t, &bytes, &format!("{DIR}/xnnpack/weights/index.json"));
    assert!(
        index[0]["missing"]
            .as_str()
            .unwrap()
            .contains("constant index 9 is out of range (3 constant_data entries)"),
        "{index}"
    );
    assert!(
        index[1]["missing"]
            .as_str()
            .unwrap()
            .contains("\"nokey\" is in neither"),
        "{index}"
    );
    assert!(
        t.warnings.iter().any(|w| w.contains("constant index 9")),
        "{:?}",
        t.warnings
    );

    // An entry reaching past the payload's constant data.
    let mut g = fc_graph();
    g.constant_data = vec![
        (0, 0, String::new()),
        (0, 1000, String::new()),
        (8, 8, String::new()),
    ];
    let bytes = program("XnnpackBackend", g.payload(true, &[0; 16]), vec![]);
    let t = tree(&bytes);
    let index = json_at(&t, &bytes, &format!("{DIR}/xnnpack/weights/index.json"));
    assert!(index[0]["missing"].as_str().unwrap().contains("constant_data[1] in the payload's constant data: bytes 0..1000 extend past the end at 16"), "{index}");
    assert_eq!(index[1]["nbytes"], 8);
}

#[test]
fn unknown_node_types_still_show() {
    let mut g = fc_graph();
    g.nodes.push((
        Node::Tagged {
            tag: 200,
            input: 3,
            output: 0,
        },
        None,
    ));
    let bytes = program("XnnpackBackend", g.payload(true, &[]), vec![]);
    let t = tree(&bytes);
    let code = String::from_utf8(cat(&t, &bytes, &format!("{DIR}/xnnpack/code.txt"))).unwrap();
    assert!(code.contains("\n1: op200 ->\n"), "{code}");
    let graph = json_at(&t, &bytes, &format!("{DIR}/xnnpack/graph.json"));
    assert_eq!(graph["xnodes"][1]["xnode_union_type"], 200);
}

#[test]
fn every_truncation_and_byte_flip_of_a_payload_is_survived() {
    let mut g = fc_graph();
    g.values[1] = g.values[1].clone().quant(Quant::PerChannel {
        scale: vec![1.0, 2.0],
        channel_dim: 0,
        buffer: 3,
        num_scales: 2,
    });
    g.constant_data = vec![
        (0, 0, String::new()),
        (0, 32, String::new()),
        (u64::MAX, 8, "b".into()),
        (32, 8, String::new()),
    ];
    let good = g.payload(true, &[0x11; 48]);
    let mut errors = 0;
    let mut check = |payload: Vec<u8>| {
        let bytes = program("XnnpackBackend", payload.clone(), vec![("b", vec![3; 8])]);
        let t = tree(&bytes);
        assert_eq!(cat(&t, &bytes, &format!("{DIR}/processed.bin")), payload);
        assert_eq!(cat(&t, &bytes, "named/b.bin"), vec![3; 8]);
        reads_within(&t, &bytes);
        if t.resolve(&format!("{DIR}/xnnpack/ERROR.txt")).is_some() {
            errors += 1;
        }
    };
    for p in damaged(&good) {
        check(p);
    }
    assert!(
        errors > good.len(),
        "only {errors} of the damaged payloads were reported"
    );
}

/// Every byte of the real fixtures' payloads flipped (all of them for the
/// small fixtures, a deterministic sample of MobileNetV2's): the tree
/// builds, the delegate keeps `processed.bin`, and damage the decoder sees
/// is reported in `ERROR.txt` or `index.json`.
#[test]
fn flipped_bytes_in_the_fixtures_payloads_are_survived() {
    for (name, stride) in [
        ("quant_xnnpack.pte", 1),
        ("xnnpack_external.pte", 1),
        ("mv2_xnnpack.pte", 263),
    ] {
        let mut bytes = std::fs::read(common::fixture(name)).unwrap();
        let t = tree(&bytes);
        let h = json_at(&t, &bytes, &format!("{DIR}/xnnpack/header.json"));
        let start = h["payload_file_offset"].as_u64().unwrap() as usize;
        let len = h["payload_size"].as_u64().unwrap() as usize;
        let mut reported = 0;
        for at in (start..start + len).step_by(stride) {
            for flip in [0xff, 0x01] {
                bytes[at] ^= flip;
                let t = tree(&bytes);
                assert_eq!(
                    cat(&t, &bytes, &format!("{DIR}/processed.bin")),
                    &bytes[start..start + len]
                );
                if t.resolve(&format!("{DIR}/xnnpack/ERROR.txt")).is_some() {
                    reported += 1;
                }
                bytes[at] ^= flip;
            }
        }
        assert!(reported > 0, "{name}: no flip was reported");
    }
}

/// A program exercising most of the decoder (payload constant data,
/// inline and bf16 scale blobs, 4-bit weights, unclamped bounds), small
/// enough for the fuzzer's length limit: `tests/fuzz-seeds/xnnpack.pte`.
fn fuzz_seed() -> Vec<u8> {
    let mut g = fc_graph();
    g.values
        .push(Value::new(5, QBINT4, &[2, 4], 3).quant(Quant::Group {
            scale: vec![],
            channel_dim: 0,
            group_size: 2,
            scale_bf16: vec![],
            buffer: 4,
            num_scales: 4,
        }));
    g.values
        .push(Value::new(6, QCINT8, &[2, 4], 1).quant(Quant::PerChannel {
            scale: vec![0.5, 0.25],
            channel_dim: 0,
            buffer: 0,
            num_scales: 0,
        }));
    g.nodes.push((
        Node::FullyConnected {
            input: 3,
            filter: 5,
            bias: u32::MAX,
            output: 0,
        },
        None,
    ));
    g.nodes.push((
        Node::Add {
            a: 6,
            b: 3,
            output: 0,
        },
        Some((0.0, 6.0)),
    ));
    g.constant_data = vec![
        (0, 0, String::new()),
        (0, 32, String::new()),
        (32, 8, String::new()),
        (u64::MAX, 4, "w4".into()),
        (u64::MAX, 8, "s4".into()),
    ];
    let payload = g.payload(true, &[0x3c; 48]);
    program(
        "XnnpackBackend",
        payload,
        vec![("w4", vec![0x98; 4]), ("s4", vec![0x3f; 8])],
    )
}

#[test]
fn the_fuzz_seed_is_current_and_decodes() {
    let seed = fuzz_seed();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-seeds/xnnpack.pte");
    if std::env::var_os("PTEFS_WRITE_SEEDS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &seed).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        seed,
        "run with PTEFS_WRITE_SEEDS=1 to rewrite {}",
        path.display()
    );
    let t = tree(&seed);
    let index = json_at(&t, &seed, &format!("{DIR}/xnnpack/weights/index.json"));
    let names: Vec<&str> = index
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "000-fully_connected.filter.bin",
            "000-fully_connected.bias.bin",
            "001-fully_connected.filter.bin",
            "002-add.input1.bin"
        ]
    );
    assert!(seed.len() < 65536);
}

/// A value of rank 1,000 named by 2,000 node inputs: `code.txt` shows 16
/// dims per use, so it grows with the uses, not with uses × rank.
#[test]
fn code_txt_does_not_multiply_rank_by_uses() {
    let mut g = fc_graph();
    g.values[0].dims = vec![1; 1000];
    g.nodes = (0..1000)
        .map(|_| {
            (
                Node::Add {
                    a: 0,
                    b: 0,
                    output: 3,
                },
                None,
            )
        })
        .collect();
    let bytes = program("XnnpackBackend", g.payload(true, &[]), vec![]);
    let t = tree(&bytes);
    let code = cat(&t, &bytes, &format!("{DIR}/xnnpack/code.txt"));
    let text = String::from_utf8(code).unwrap();
    assert_eq!(text.lines().count(), 1001);
    assert!(
        text.contains("%0:fp32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,… 1000 dims]"),
        "{}",
        &text[..400]
    );
    assert!(text.len() < 1000 * 200, "{} bytes", text.len());
}
