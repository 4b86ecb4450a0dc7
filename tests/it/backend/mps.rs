//! MPS delegates decoded, on payloads the writer makes (no MPS export runs
//! on Linux): `mps/`'s header, graph (against flatc's own rendering), code,
//! graph.dot and weights (bytes from the payload's constant data and from
//! an older writer's inline buffers), through a mount, in `inspect`, and
//! on hostile payloads, which leave the rest of the tree intact and say
//! what is wrong.

use crate::common;
use crate::writer;

use std::path::Path;

use common::flatc::*;
use common::*;
use ptefs::schema::mps::MPSDataType as Dt;
use ptefs::view::View;
use serde_json::Value as Json;
use writer::mps::{Graph, Node, Op, Tensor};

const DIR: &str = "methods/forward/delegates/0-MPSBackend";
const MPS: &str = "methods/forward/delegates/0-MPSBackend/mps";

fn f32s(xs: impl IntoIterator<Item = f32>) -> Vec<u8> {
    xs.into_iter().flat_map(f32::to_le_bytes).collect()
}

fn weight_bytes() -> Vec<u8> {
    f32s((0..2 * 3 * 3 * 3).map(|i| i as f32 * 0.25 - 3.0))
}

fn bias_bytes() -> Vec<u8> {
    f32s([0.5, -1.5])
}

const HALF: [u8; 8] = [0x00, 0x3c, 0x00, 0x40, 0x00, 0xc0, 0x00, 0x00];

fn unused_bytes() -> Vec<u8> {
    f32s([7.0, 8.0])
}

/// A convolution, relu, add, hardtanh, cat and cast over every kind of
/// constant: %1 (weight) in the constant data, %2 (bias) inline in the
/// flatbuffer as older writers kept it, %5 fp16 in the constant data, %8
/// in the constant data but not in `constant_ids` and read by no node.
fn graph() -> Graph {
    let plain = Tensor::plain;
    Graph {
        version: "0".into(),
        nodes: vec![
            Node::from(Op::Conv2D {
                ids: [0, 1, 2, 3],
                stride: [1, 2],
                padding: [0, 1, 0, 1],
                groups: 1,
            }),
            Op::ReLU(3, 4).into(),
            Op::Add(4, 5, 6, 0.5).into(),
            Node {
                op: Op::HardTanh(6, 7, f32::NEG_INFINITY, 6.0),
                min_max: Some((0.0, f32::INFINITY)),
            },
            Op::Cat(vec![7, 4], 9, 1).into(),
            Op::Cast(9, 10, 8).into(),
        ],
        values: vec![
            plain(Dt::mps_data_type_float32, &[1, 3, 4, 4]),
            Tensor::at(Dt::mps_data_type_float32, &[2, 3, 3, 3], 0, 216),
            Tensor::inline(Dt::mps_data_type_float32, &[2], bias_bytes()),
            plain(Dt::mps_data_type_float32, &[1, 2, 2, 2]),
            plain(Dt::mps_data_type_float32, &[1, 2, 2, 2]),
            Tensor::at(Dt::mps_data_type_float16, &[4], 224, 8),
            plain(Dt::mps_data_type_float32, &[1, 2, 2, 2]),
            plain(Dt::mps_data_type_float32, &[1, 2, 2, 2]),
            Tensor::at(Dt::mps_data_type_float32, &[2], 232, 8),
            plain(Dt::mps_data_type_float32, &[1, 4, 2, 2]),
            plain(Dt::mps_data_type_int32, &[1, 4, 2, 2]),
        ],
        inputs: vec![0],
        outputs: vec![10],
        constants: vec![1, 2, 5],
        graph_type: 0,
    }
}

fn constant_data() -> Vec<u8> {
    let mut c = weight_bytes();
    c.resize(224, 0);
    c.extend_from_slice(&HALF);
    c.extend_from_slice(&unused_bytes());
    c
}

fn payload() -> Vec<u8> {
    graph().payload(&constant_data())
}

fn program(payload: Vec<u8>) -> Vec<u8> {
    writer::payloads::one_delegate("MPSBackend", payload, Vec::new(), Vec::new())
}

fn open(payload: Vec<u8>) -> (tempfile::TempDir, View) {
    view_bytes("m.pte", &program(payload))
}

fn text(v: &View, path: &str) -> String {
    String::from_utf8(read(v, path)).unwrap()
}

#[test]
fn header_gives_every_field_with_file_offsets() {
    let p = payload();
    let (_d, v) = open(p.clone());
    assert_eq!(
        ls(&v, MPS),
        [
            "code.txt",
            "graph.dot",
            "graph.json",
            "header.json",
            "weights"
        ]
    );
    let h = json(&v, &format!("{MPS}/header.json"));
    let at = h["payload_file_offset"].as_u64().unwrap();
    let fb_len = graph().flatbuffer().len() as u64;
    let data_off = (24 + fb_len).div_ceil(16) * 16;
    assert_eq!(h["magic"], "MP00");
    assert_eq!(h["header_length"], 24);
    assert_eq!(h["leading_bytes"], 0);
    assert_eq!(h["payload_size"], p.len());
    assert_eq!(h["flatbuffer_offset"], 24);
    assert_eq!(h["flatbuffer_size"], data_off - 24);
    assert_eq!(h["flatbuffer_file_offset"], at + 24);
    assert_eq!(h["constant_data_offset"], data_off);
    assert_eq!(h["constant_data_size"], 240);
    assert_eq!(h["constant_data_file_offset"], at + data_off);
    // The offsets are where the bytes are in the file.
    let file = program(p.clone());
    let at = at as usize;
    assert_eq!(&file[at..at + p.len()], &p[..]);
    assert_eq!(&file[at + 4..at + 8], b"MP00");
    assert_eq!(&file[at + 28..at + 32], b"MP00", "the graph's identifier");
    let d = at + data_off as usize;
    assert_eq!(&file[d..d + 216], &weight_bytes()[..]);
}

#[test]
fn graph_json_is_what_flatc_prints_of_the_payload() {
    let Some(flatc) = common::required::tool_or_skip(
        "graph_json_is_what_flatc_prints_of_the_payload",
        "flatc",
        "scripts/gen-schema.sh",
    ) else {
        return;
    };
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/mps.fbs");
    let (_d, v) = open(payload());
    let mut got = json(&v, &format!("{MPS}/graph.json"));
    assert_eq!(
        got["mps_values"][1]["ptefs_path"],
        format!("{MPS}/weights/000-MPSConv2D.input2.bin")
    );
    assert_eq!(
        got["mps_values"][8]["ptefs_path"],
        format!("{MPS}/weights/unused.8.bin")
    );
    assert_eq!(got["mps_nodes"][3]["mpsnode_union"]["min_value"], "-inf");
    assert_eq!(got["mps_nodes"][3]["min_max"]["max_value"], "inf");
    assert_eq!(
        got["mps_nodes"][5]["mpsnode_union"]["dtype"],
        "mps_data_type_int32"
    );
    strip_ptefs_paths(&mut got);
    let want = flatc_print(&flatc, &schema, &graph().flatbuffer());
    same(&got, &want, "graph.json");
}

#[test]
fn code_txt_has_a_line_per_node() {
    let (_d, v) = open(payload());
    let code = text(&v, &format!("{MPS}/code.txt"));
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(
        lines,
        [
            "# MPSGraph 0 (mps_graph): 6 nodes, 11 values, inputs %0, outputs %10, 4 constants",
            "0: MPSConv2D %0:float32[1,3,4,4] input2=%1:float32[2,3,3,3] input3=%2:float32[2] -> %3:float32[1,2,2,2] stride_x=1 stride_y=2 dilation_x=1 dilation_y=1 groups=1 padding_left=0 padding_right=1 padding_top=0 padding_bottom=1",
            "1: MPSReLU %3:float32[1,2,2,2] -> %4:float32[1,2,2,2] input2_id=0",
            "2: MPSAdd %4:float32[1,2,2,2] input2=%5:float16[4] -> %6:float32[1,2,2,2] alpha=0.5",
            "3: MPSHardTanh %6:float32[1,2,2,2] -> %7:float32[1,2,2,2] min_value=\"-inf\" max_value=6.0 min=0.0 max=\"inf\"",
            "4: MPSCat %7:float32[1,2,2,2] %4:float32[1,2,2,2] -> %9:float32[1,4,2,2] dim=1",
            "5: MPSCast %9:float32[1,4,2,2] -> %10:int32[1,4,2,2] dtype=\"mps_data_type_int32\"",
        ]
    );
}

#[test]
fn graph_dot_draws_nodes_values_and_constants() {
    let (_d, v) = open(payload());
    let dot = read(&v, &format!("{MPS}/graph.dot"));
    let s = String::from_utf8(dot.clone()).unwrap();
    assert!(s.starts_with("digraph \"MPSGraph\" {"), "{s}");
    assert!(
        s.contains("v0 [shape=invhouse, label=\"%0 float32[1,3,4,4]\"]"),
        "{s}"
    );
    assert!(
        s.contains("v1 [shape=note, label=\"%1 float32[2,3,3,3]\"]"),
        "{s}"
    );
    assert!(
        s.contains("v2 [shape=note, label=\"%2 float32[2]\"]"),
        "{s}"
    );
    assert!(
        s.contains("v5 [shape=note, label=\"%5 float16[4]\"]"),
        "{s}"
    );
    assert!(
        s.contains("n0 [shape=ellipse, label=\"0: MPSConv2D\"]"),
        "{s}"
    );
    assert!(
        s.contains("n1 -> n4 [label=\"%4 float32[1,2,2,2]\"]"),
        "{s}"
    );
    assert!(s.contains("n5 -> outputs"), "{s}");
    assert!(!s.contains("v-1"), "{s}");
    let svg = common::dot_svg("graph.dot", &dot);
    assert!(svg.contains("0: MPSConv2D"), "{svg}");
}

#[test]
fn weights_are_the_stored_bytes_wherever_they_are() {
    let (_d, v) = open(payload());
    let w = format!("{MPS}/weights");
    assert_eq!(
        ls(&v, &w),
        [
            "000-MPSConv2D.input2.bin",
            "000-MPSConv2D.input2.npy",
            "000-MPSConv2D.input3.bin",
            "000-MPSConv2D.input3.npy",
            "002-MPSAdd.input2.bin",
            "002-MPSAdd.input2.npy",
            "index.json",
            "unused.8.bin",
            "unused.8.npy",
        ]
    );
    assert_eq!(
        read(&v, &format!("{w}/000-MPSConv2D.input2.bin")),
        weight_bytes()
    );
    assert_eq!(
        read(&v, &format!("{w}/000-MPSConv2D.input3.bin")),
        bias_bytes()
    );
    assert_eq!(read(&v, &format!("{w}/002-MPSAdd.input2.bin")), HALF);
    assert_eq!(read(&v, &format!("{w}/unused.8.bin")), unused_bytes());
    let npy = read(&v, &format!("{w}/000-MPSConv2D.input2.npy"));
    assert!(npy.starts_with(b"\x93NUMPY"));
    assert!(npy.ends_with(&weight_bytes()));
    let header = String::from_utf8_lossy(&npy[..128]);
    assert!(header.contains("'descr': '<f4'"), "{header}");
    assert!(header.contains("'shape': (2, 3, 3, 3)"), "{header}");
    let half = read(&v, &format!("{w}/002-MPSAdd.input2.npy"));
    assert!(String::from_utf8_lossy(&half[..128]).contains("'<f2'"));
    let index = json(&v, &format!("{w}/index.json"));
    let e: Vec<&Json> = index.as_array().unwrap().iter().collect();
    assert_eq!(e.len(), 4);
    assert_eq!(e[0]["name"], "000-MPSConv2D.input2.bin");
    assert_eq!(e[0]["value_id"], 1);
    assert_eq!(e[0]["dtype"], "float32");
    assert_eq!(e[0]["dims"], serde_json::json!([2, 3, 3, 3]));
    assert_eq!(e[0]["stored_in"], "constant_data");
    assert_eq!(e[0]["key"], Json::Null);
    assert_eq!(
        e[0]["users"],
        serde_json::json!([{"node": 0, "op": "MPSConv2D", "role": "input2"}])
    );
    let h = json(&v, &format!("{MPS}/header.json"));
    assert_eq!(e[0]["payload_offset"], h["constant_data_offset"]);
    assert_eq!(e[0]["source"]["offset"], h["constant_data_file_offset"]);
    assert_eq!(e[1]["stored_in"], "flatbuffer");
    assert_eq!(e[2]["segment_offset"], 224);
    assert_eq!(e[2]["numpy_dtype"], "<f2");
    assert_eq!(e[3]["name"], "unused.8.bin");
    assert_eq!(e[3]["listed"], false);
    assert_eq!(e[3]["users"], serde_json::json!([]));
}

#[test]
fn inspect_shows_ops_and_constant_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "m.pte", &program(payload()));
    let out = ptefs().arg("inspect").arg(&p).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(text.contains("MPSBackend"), "{text}");
    assert!(text.contains("6 nodes, 11 values"), "{text}");
    assert!(text.contains("1  MPSConv2D"), "{text}");
    assert!(text.contains("1  MPSCast"), "{text}");
    assert!(text.contains("232 bytes of float32"), "{text}");
    assert!(text.contains("8 bytes of float16"), "{text}");
}

#[test]
fn weight_names_for_reports() {
    use ptefs::delegate::{NamedData, decode_program};
    let bytes = program(payload());
    let p = ptefs::format::ProgramFile::parse(&bytes).unwrap();
    let named = NamedData::of(&p, &[]);
    let all = decode_program(&p, &named);
    let d = all[0].decoded.as_ref().unwrap().as_ref().unwrap();
    let s = d.summary();
    assert_eq!(
        (s.backend.as_str(), s.nodes, s.values),
        ("MPSBackend", 6, 11)
    );
    assert_eq!(s.constant_bytes["float32"], 216 + 8 + 8);
    assert_eq!(s.constant_bytes["float16"], 8);
    let names: Vec<(String, Option<String>, String)> = d
        .weights()
        .into_iter()
        .map(|(n, _)| (n.name, n.layer, n.role))
        .collect();
    let l = |s: &str| Some(s.to_owned());
    assert_eq!(
        names,
        [
            (
                "000-MPSConv2D.input2".into(),
                l("000-MPSConv2D"),
                "input2".into()
            ),
            (
                "000-MPSConv2D.input3".into(),
                l("000-MPSConv2D"),
                "input3".into()
            ),
            ("002-MPSAdd.input2".into(), l("002-MPSAdd"), "input2".into()),
            ("unused.8".into(), None, "unused".into()),
        ]
    );
}

#[test]
fn a_mount_serves_the_folder_byte_for_byte() {
    if !common::mounted::fuse_or_skip("a_mount_serves_the_folder_byte_for_byte") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "m.pte", &program(payload()));
    let v = view_of(std::slice::from_ref(&p), &[]);
    let m = common::mounted::Mounted::new(&[p.as_os_str()]);
    let mut n = 0;
    for (path, bytes) in files(&v) {
        if path.contains("/mps/") {
            assert_eq!(std::fs::read(m.path(&path)).unwrap(), bytes, "{path}");
            n += 1;
        }
    }
    assert_eq!(
        n,
        4 + 9,
        "header, graph, code, dot; 4 weights with .npy, index.json"
    );
}

#[test]
fn a_remote_source_builds_the_same_folder_from_its_plan() {
    let bytes = program(payload());
    let image = common::fetched::same_from_plan(&bytes, MPS);
    // The header and graph are fetched, the constant data is not.
    let (_d, v) = open(payload());
    let h = json(&v, &format!("{MPS}/header.json"));
    let at = |k: &str| h[k].as_u64().unwrap() as usize;
    let fb = at("flatbuffer_file_offset")..at("constant_data_file_offset");
    assert_eq!(
        image[at("payload_file_offset")..fb.end],
        bytes[at("payload_file_offset")..fb.end]
    );
    let data = at("constant_data_file_offset")..at("constant_data_file_offset") + 240;
    assert_ne!(bytes[data.clone()], [0u8; 240]);
    assert_eq!(image[data], [0u8; 240]);
}

#[test]
fn bfloat16_constants_are_widened_in_their_npy() {
    let mut g = graph();
    // %8 as three bfloat16 values (1.0, -2.0, 0.5), read by the cast.
    g.values[8] = Tensor::at(Dt::mps_data_type_bfloat16, &[3], 232, 6);
    g.nodes[5] = Op::Cast(8, 10, 8).into();
    let mut data = constant_data();
    data[232..238].copy_from_slice(&[0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f]);
    let (_d, v) = open(g.payload(&data));
    let w = format!("{MPS}/weights/005-MPSCast.input1");
    assert_eq!(
        read(&v, &format!("{w}.bin")),
        [0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f]
    );
    let npy = read(&v, &format!("{w}.npy"));
    assert!(String::from_utf8_lossy(&npy[..128]).contains("'descr': '<f4'"));
    assert!(npy.ends_with(&f32s([1.0, -2.0, 0.5])));
}

#[test]
fn every_truncation_and_byte_flip_of_the_payload_is_survived() {
    let p = payload();
    let errors = writer::payloads::mutate_payload("MPSBackend", "mps", &p, program);
    assert!(errors >= p.len() / 2, "only {errors} reported");
}

fn error_of(payload: Vec<u8>) -> String {
    let (_d, v) = open(payload);
    text(&v, &format!("{MPS}/ERROR.txt"))
}

#[test]
fn hostile_payloads_are_reported_with_offsets() {
    let p = payload();
    let mut m = p.clone();
    m[5] = b'X';
    let e = error_of(m);
    assert!(e.contains("MPS header at offset 4: magic \"MX00\""), "{e}");
    let e = error_of(p[..20].to_vec());
    assert!(
        e.contains("MPS header: payload is 20 bytes, the header needs 24"),
        "{e}"
    );
    let mut m = p.clone();
    m[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let e = error_of(m);
    assert!(
        e.contains("MPS header (offsets 8..24): constant data"),
        "{e}"
    );
    let mut m = p.clone();
    m[8..16].copy_from_slice(&28u64.to_le_bytes());
    let e = error_of(m);
    assert!(e.contains("constant data offset 28 leaves no room"), "{e}");
    let e = error_of(p[..p.len() - 1].to_vec());
    assert!(
        e.contains("MPS header (offsets 8..24): constant data"),
        "{e}"
    );
    // The graph's identifier.
    let mut m = p.clone();
    m[28] = b'Z';
    let e = error_of(m);
    assert!(
        e.contains("MPSGraph flatbuffer at payload offset 28: identifier \"ZP00\", not \"MP00\""),
        "{e}"
    );
    // The graph's root offset pointing past the flatbuffer.
    let mut m = p.clone();
    m[24..28].copy_from_slice(&0xfff0u32.to_le_bytes());
    let e = error_of(m);
    assert!(
        e.contains("MPSGraph flatbuffer at payload offset 24"),
        "{e}"
    );
    // A bare graph without the header: its identifier sits where the
    // magic would, so what follows is read as offsets, and is wrong.
    let e = error_of(graph().flatbuffer());
    assert!(
        e.contains("MPS header (offsets 8..24): constant data"),
        "{e}"
    );
    assert!(
        e.contains("(bytes 0..4 are not zero: an MPSGraph flatbuffer without the MP00 header?)"),
        "{e}"
    );
    // A header readable, the rest not: header.json is still there.
    let (_d, v) = open({
        let mut m = p.clone();
        m[24..28].copy_from_slice(&0xfff0u32.to_le_bytes());
        m
    });
    assert!(v.tree.resolve(&format!("{MPS}/header.json")).is_some());
    assert!(v.tree.resolve(&format!("{DIR}/processed.bin")).is_some());
}

#[test]
fn damaged_parts_of_a_graph_are_named_while_the_rest_shows() {
    let mut g = graph();
    // A constant past the constant data, one of no bytes, an id naming no
    // value, an unknown op tag, a known one (MPSNeg), a dtype without a name.
    g.values[5] = Tensor::at(Dt::mps_data_type_float16, &[4], 1000, 8);
    g.values[8].size = 0;
    g.constants.push(99);
    g.nodes.push(Op::Tagged(250, 9, 10).into());
    g.nodes.push(Op::Tagged(25, 9, 10).into());
    g.nodes.push(Op::Cast(9, 10, 77).into());
    let (_d, v) = open(g.payload(&constant_data()));
    let err = text(&v, &format!("{MPS}/ERROR.txt"));
    assert!(
        err.contains("constant_ids[3]: value 99 is not among the 11 values"),
        "{err}"
    );
    let index = json(&v, &format!("{MPS}/weights/index.json"));
    let missing: Vec<&str> = index
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["missing"].as_str())
        .collect();
    assert_eq!(missing.len(), 1, "{index}");
    assert!(
        missing[0].contains(
            "constant %5: segment_offset 1000 + constant_buffer_size 8 is past the constant data's 240 bytes"
        ),
        "{index}"
    );
    assert_eq!(
        index.as_array().unwrap().len(),
        3,
        "%8 has no bytes: not a constant"
    );
    let code = text(&v, &format!("{MPS}/code.txt"));
    assert!(code.contains("\n6: op250 (not decoded)\n"), "{code}");
    assert!(
        code.contains("\n7: MPSNeg %9:float32[1,4,2,2] -> %10:int32[1,4,2,2]\n"),
        "{code}"
    );
    assert!(code.contains("\n8: MPSCast (not decoded)\n"), "{code}");
    let g = json(&v, &format!("{MPS}/graph.json"));
    assert_eq!(
        g["mps_nodes"][6],
        serde_json::json!({"mpsnode_union_type": 250})
    );
    assert_eq!(
        g["mps_nodes"][8],
        serde_json::json!({"mpsnode_union_type": "MPSCast"})
    );
    common::dot_svg("graph.dot", &read(&v, &format!("{MPS}/graph.dot")));
}

/// docs/backends/mps.md shows `tests/fixtures/backends/mps.pte`, which is
/// this program (`PTEFS_DOCS_WRITE=1` writes it again).
#[test]
fn the_documented_fixture_is_this_program() {
    let path = fixture("backends/mps.pte");
    let bytes = program(payload());
    if std::env::var("PTEFS_DOCS_WRITE").as_deref() == Ok("1") {
        std::fs::write(&path, &bytes).unwrap();
    }
    assert!(
        std::fs::read(&path).unwrap() == bytes,
        "{} is not the program these tests build",
        path.display()
    );
}
