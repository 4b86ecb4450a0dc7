//! Arm TOSA delegates decoded (`tosa/`): the exported fixture served as
//! its oracle (written by ExecuTorch's and tosa-tools' own readers) says,
//! `graph.json` equal to what tosa-tools' flatc prints, `graph.dot`
//! rendering, `inspect`'s summary, a real mount, and hostile payloads that
//! leave the rest of the program intact and say what is wrong.

use crate::common;
use crate::writer;

use std::ffi::OsStr;
use std::path::PathBuf;

use common::flatc::same;
use common::in_memory::{bytes_at, text_at, tree};
use common::*;
use ptefs::schema::tosa as fb;
use serde_json::Value;

const DIR: &str = "methods/forward/delegates/0-TOSABackend";
const FIXTURE: &str = "backends/tosa_fp_mlp.pte";

fn oracle() -> Value {
    let text = std::fs::read_to_string(fixture("backends/tosa_fp_mlp.oracle.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// tosa-tools' flatc rendering of the payload (`--strict-json
/// --defaults-json`, with tosa-tools' own `tosa.fbs`).
fn flatc_dump() -> Value {
    let text =
        std::fs::read_to_string(fixture("backends/tosa_fp_mlp.forward.d0.tosa.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn payload_of(file: &[u8], delegate: &Value) -> Vec<u8> {
    let at = delegate["payload_abs_offset"].as_u64().unwrap() as usize;
    let len = delegate["payload_len"].as_u64().unwrap() as usize;
    file[at..at + len].to_vec()
}

#[test]
fn the_fixture_is_served_as_its_oracle_says() {
    let o = oracle();
    let v = view(FIXTURE);
    let file = std::fs::read(fixture(FIXTURE)).unwrap();
    assert_eq!(sha256(&file), o["sha256"].as_str().unwrap());
    assert_eq!(file.len() as u64, o["size"].as_u64().unwrap());
    let d = &o["execution_plan"][0]["delegates"][0];
    assert_eq!(d["id"], "TOSABackend");
    let processed = read(&v, &format!("{DIR}/processed.bin"));
    assert_eq!(sha256(&processed), d["payload_sha256"].as_str().unwrap());
    assert_eq!(processed.len() as u64, d["payload_len"].as_u64().unwrap());
    assert_eq!(
        hex(&processed[..64]),
        d["payload_first_64_hex"].as_str().unwrap()
    );
    let specs = json(&v, &format!("{DIR}/compile_specs.json"));
    for (got, want) in specs
        .as_array()
        .unwrap()
        .iter()
        .zip(d["compile_specs"].as_array().unwrap())
    {
        assert_eq!(got["key"], want["key"]);
        assert_eq!(got["text"], want["value"]["utf8"]);
    }

    // header.json: where the payload and its root table are, and the
    // versions the graph states.
    let inner = &o["arm_inner"][0]["tosa"];
    let h = json(&v, &format!("{DIR}/tosa/header.json"));
    assert_eq!(h["payload_file_offset"], d["payload_abs_offset"]);
    assert_eq!(h["payload_size"], d["payload_len"]);
    assert_eq!(h["identifier"], inner["file_identifier"]);
    let root = u64::from(u32::from_le_bytes(processed[..4].try_into().unwrap()));
    assert_eq!(h["root_table_offset"], root);
    assert_eq!(
        h["root_table_file_offset"],
        d["payload_abs_offset"].as_u64().unwrap() + root
    );
    let tv = &h["tosa_version"];
    assert_eq!(
        [&tv["major"], &tv["minor"], &tv["patch"], &tv["draft"]],
        [
            &inner["version"][0],
            &inner["version"][1],
            &inner["version"][2],
            &inner["version"][3]
        ]
    );
    let sw = &flatc_dump()["software_version"];
    assert_eq!(h["software_version"]["major"], sw["_major"]);
    assert_eq!(h["software_version"]["minor"], sw["_minor"]);
    assert_eq!(h["software_version"]["micro"], sw["_micro"]);

    // Every block, operator and tensor the oracle lists, in order.
    let region = &inner["regions"][0];
    let block = &region["blocks"][0];
    assert_eq!(inner["regions"].as_array().unwrap().len(), 1);
    let code = String::from_utf8(read(&v, &format!("{DIR}/tosa/code.txt"))).unwrap();
    let mut lines = code.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("# TOSA 1.0.0 (software 2026.5.0): 1 block, 15 operators")
    );
    let head = lines.next().unwrap();
    let block_path = format!(
        "{}/{}",
        region["name"].as_str().unwrap(),
        block["name"].as_str().unwrap()
    );
    assert!(
        head.starts_with(&format!("## {block_path}: inputs %x:f32[1,16]")),
        "{head}"
    );
    let ops: Vec<&str> = lines.map(|l| l.split(' ').nth(1).unwrap()).collect();
    let want_ops: Vec<&str> = block["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert_eq!(ops, want_ops);

    let g = json(&v, &format!("{DIR}/tosa/graph.json"));
    let gb = &g["regions"][0]["blocks"][0];
    assert_eq!(gb["inputs"], block["inputs"]);
    assert_eq!(gb["outputs"], block["outputs"]);
    let dump_tensors = flatc_dump()["regions"][0]["blocks"][0]["tensors"].clone();
    let index = json(&v, &format!("{DIR}/tosa/weights/index.json"));
    let mut constants = 0;
    for (i, t) in block["tensors"].as_array().unwrap().iter().enumerate() {
        let got = &gb["tensors"][i];
        assert_eq!(got["name"], t["name"]);
        assert_eq!(got["shape"], t["shape"]);
        assert_eq!(got["type"], t["type"]);
        let name = t["name"].as_str().unwrap();
        let len = t["data_len"].as_u64().unwrap();
        if len == 0 {
            assert!(got.get("ptefs_path").is_none(), "{name}");
            continue;
        }
        constants += 1;
        // The bytes: exactly the tensor's data, at the documented path.
        let bin = format!("{DIR}/tosa/weights/{name}.bin");
        assert_eq!(got["ptefs_path"], bin);
        let bytes = read(&v, &bin);
        assert_eq!(bytes.len() as u64, len, "{name}");
        let want: Vec<u8> = dump_tensors[i]["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() as u8)
            .collect();
        assert_eq!(sha256(&bytes), sha256(&want), "{name}");
        // The .npy is a NumPy header and the same bytes.
        let npy = read(&v, &format!("{DIR}/tosa/weights/{name}.npy"));
        assert!(npy.starts_with(b"\x93NUMPY"), "{name}");
        assert!(npy.ends_with(&bytes), "{name}");
        let shape: Vec<String> = t["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.to_string())
            .collect();
        let header = String::from_utf8_lossy(&npy[..npy.len() - bytes.len()]).into_owned();
        assert!(header.contains("'descr': '<f4'"), "{header}");
        assert!(
            header.contains(&format!("'shape': ({}", shape.join(", "))),
            "{header}"
        );
        // index.json: dtype, shape, offset and users.
        let e = index
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["tensor"] == t["name"])
            .unwrap_or_else(|| panic!("{name} not in index.json"));
        assert_eq!(e["dtype"], t["type"]);
        assert_eq!(e["shape"], t["shape"]);
        assert_eq!(e["nbytes"], len);
        let at = e["payload_offset"].as_u64().unwrap() as usize;
        assert_eq!(&processed[at..at + len as usize], &bytes[..], "{name}");
        assert_eq!(
            e["source"]["offset"].as_u64().unwrap(),
            d["payload_abs_offset"].as_u64().unwrap() + at as u64
        );
        let users = e["users"].as_array().unwrap();
        let ops = &gb["operators"];
        for u in users {
            let op = &ops[u["operator"].as_u64().unwrap() as usize];
            assert_eq!(op["op"], u["op"]);
            assert_eq!(
                op["inputs"][u["input"].as_u64().unwrap() as usize],
                t["name"]
            );
        }
    }
    assert_eq!(constants, 8);
    // The two CONST_SHAPE values, as int64 vectors.
    for s in flatc_dump()["regions"][0]["blocks"][0]["shapes"]
        .as_array()
        .unwrap()
    {
        let name = s["name"].as_str().unwrap();
        let bytes = read(&v, &format!("{DIR}/tosa/weights/{name}.bin"));
        let want: Vec<u8> = s["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() as u8)
            .collect();
        assert_eq!(bytes, want, "{name}");
        assert_eq!(bytes.len() as u64, 8 * s["rank"].as_u64().unwrap());
    }
    assert_eq!(index.as_array().unwrap().len(), 10);
    assert!(v.tree.resolve(&format!("{DIR}/tosa/ERROR.txt")).is_none());
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn graph_json_is_what_tosa_tools_flatc_prints() {
    let v = view(FIXTURE);
    let mut got = json(&v, &format!("{DIR}/tosa/graph.json"));
    strip_ptefs_paths(&mut got);
    let want = flatc_dump();
    same(&got, &want, "graph.json");
    assert_eq!(got, want);
}

#[test]
fn graph_json_is_what_this_schemas_flatc_prints() {
    // The project's own schema, through the flatc the project pins, prints
    // the same as tosa-tools' schema did.
    let Some(flatc) = common::required::tool_or_skip(
        "graph_json_is_what_this_schemas_flatc_prints",
        "flatc",
        "scripts/gen-schema.sh",
    ) else {
        return;
    };
    let schema = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/tosa.fbs");
    let file = std::fs::read(fixture(FIXTURE)).unwrap();
    let payload = payload_of(&file, &oracle()["execution_plan"][0]["delegates"][0]);
    let printed = common::flatc::flatc_print(&flatc, &schema, &payload);
    assert_eq!(printed, flatc_dump());
}

#[test]
fn graph_dot_renders() {
    let v = view(FIXTURE);
    let dot = read(&v, &format!("{DIR}/tosa/graph.dot"));
    let text = String::from_utf8(dot.clone()).unwrap();
    assert_eq!(text.matches("shape=box").count(), 15, "{text}");
    let svg = common::dot_svg("graph.dot", &dot);
    assert!(svg.contains("<svg"), "no SVG");
    assert!(svg.contains("CONV2D"));
}

#[test]
fn names_with_quotes_and_line_breaks_still_render() {
    let file = std::fs::read(fixture(FIXTURE)).unwrap();
    let mut p = payload_of(&file, &oracle()["execution_plan"][0]["delegates"][0]);
    // Every copy of the name, so that operators still find the tensor.
    let name = b"p_l1_bias";
    let mut at = 0;
    while let Some(i) = p[at..].windows(name.len()).position(|w| w == name) {
        let i = at + i;
        p[i..i + 4].copy_from_slice(b"a\"\\\n");
        at = i + name.len();
    }
    let bytes = program(p);
    let t = tree(&bytes);
    assert!(t.resolve(&format!("{DIR}/tosa/ERROR.txt")).is_none());
    let dot = text_at(&t, &bytes, &format!("{DIR}/tosa/graph.dot")).unwrap();
    assert!(dot.contains("a\\\"\\\\\\n_bias"), "{dot}");
    assert!(common::dot_svg("graph.dot", dot.as_bytes()).contains("<svg"));
    let code = text_at(&t, &bytes, &format!("{DIR}/tosa/code.txt")).unwrap();
    assert!(
        code.contains("%\"a\\\"\\\\\\n_bias\":f32[32](128 bytes)"),
        "{code}"
    );
    assert_eq!(code.lines().count(), 2 + 15);
    // The file name keeps what a name may hold.
    assert!(
        t.resolve(&format!("{DIR}/tosa/weights/a____bias.bin"))
            .is_some()
    );
}

#[test]
fn inspect_shows_the_graph_summary() {
    let r = ptefs_json([
        OsStr::new("inspect"),
        OsStr::new("--json"),
        fixture(FIXTURE).as_os_str(),
    ]);
    let s = &r["program"]["delegates"][0]["decoded"];
    assert_eq!(s["backend"], "TOSABackend");
    assert_eq!(s["nodes"], 15);
    assert_eq!(s["values"], 14 + 2, "14 tensors and 2 shapes");
    let mut ops = std::collections::BTreeMap::new();
    for o in oracle()["arm_inner"][0]["tosa"]["regions"][0]["blocks"][0]["operators"]
        .as_array()
        .unwrap()
    {
        *ops.entry(o.as_str().unwrap().to_owned()).or_insert(0u64) += 1;
    }
    assert_eq!(s["ops"], serde_json::to_value(&ops).unwrap());
    assert_eq!(s["constant_bytes"]["FP32"], 2048 + 128 + 1024 + 32 + 4 * 4);
    assert_eq!(s["constant_bytes"]["SHAPE"], 32 + 16);
    let text = ptefs()
        .arg("inspect")
        .arg(fixture(FIXTURE))
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("forward #0 TOSABackend: 6976 bytes"),
        "{text}"
    );
    assert!(text.contains("15 nodes, 16 values"), "{text}");
    assert!(text.contains("3248 bytes of FP32"), "{text}");
}

#[test]
fn weights_have_stable_names_for_diff() {
    use ptefs::delegate::{NamedData, decode_program};
    let bytes = std::fs::read(fixture(FIXTURE)).unwrap();
    let p = ptefs::format::ProgramFile::parse(&bytes).unwrap();
    let named = NamedData::of(&p, &[]);
    let all = decode_program(&p, &named);
    let weights = all[0].weights_with_bytes(&named);
    let names: Vec<(&str, Option<&str>, &str)> = weights
        .iter()
        .map(|(n, _)| (n.name.as_str(), n.layer.as_deref(), n.role.as_str()))
        .collect();
    assert_eq!(
        names[0],
        (
            "aten_convolution_default_weight_ohwi",
            Some("008-CONV2D"),
            "input1"
        )
    );
    assert_eq!(names[1], ("p_l1_bias", Some("008-CONV2D"), "input2"));
    assert_eq!(
        names[8],
        ("tosa_const_shape_default", Some("005-RESHAPE"), "input1")
    );
    assert!(weights.iter().all(|(_, b)| b.is_some()));
}

#[test]
fn a_mount_serves_the_tosa_folder_byte_for_byte() {
    if !common::mounted::fuse_or_skip("a_mount_serves_the_tosa_folder_byte_for_byte") {
        return;
    }
    let path = fixture(FIXTURE);
    let v = view_of(std::slice::from_ref(&path), &[]);
    let m = common::mounted::Mounted::new(&[path.as_os_str()]);
    let mut n = 0;
    for (p, bytes) in files(&v) {
        if p.contains("/tosa/") {
            assert_eq!(std::fs::read(m.path(&p)).unwrap(), bytes, "{p}");
            n += 1;
        }
    }
    assert_eq!(
        n,
        4 + 2 * 10 + 1,
        "header, graph, code, dot; 10 .bin and .npy; index.json"
    );
}

// ---- hostile payloads ----

/// A one-block graph: `x` through a CONV2D with weight `w` (data `w_data`,
/// or stored at `w_at` = (offset, size) outside the flatbuffer), with
/// `dup` naming a second tensor `w` too.
fn graph(w_data: Option<&[u8]>, w_at: (u64, u64), dup: bool) -> Vec<u8> {
    let mut b = flatbuffers::FlatBufferBuilder::new();
    let mut tensors = Vec::new();
    for (n, shape, data, at) in [
        ("x", vec![1, 4], None, (0, 0)),
        ("w", vec![2, 1, 1, 4], w_data, w_at),
        ("y", vec![1, 2], None, (0, 0)),
    ]
    .into_iter()
    .chain(dup.then_some(("w", vec![1], Some(&[1u8, 2, 3, 4][..]), (0, 0))))
    {
        let nm = name(&mut b, n);
        let shape = b.create_vector(&shape);
        let data = data.map(|d| b.create_vector(d));
        tensors.push(fb::TosaTensor::create(
            &mut b,
            &fb::TosaTensorArgs {
                name: Some(nm),
                shape: Some(shape),
                type_: fb::DType::FP32,
                data,
                offset: at.0,
                size: at.1,
                ..Default::default()
            },
        ));
    }
    let tensors = b.create_vector(&tensors);
    let pad = b.create_vector(&[0, 0, 0, 0]);
    let attr = fb::Conv2dAttribute::create(
        &mut b,
        &fb::Conv2dAttributeArgs {
            pad: Some(pad),
            acc_type: fb::DType::FP32,
            ..Default::default()
        },
    );
    let ins = strs(&mut b, &["x", "w"]);
    let outs = strs(&mut b, &["y"]);
    let op = fb::TosaOperator::create(
        &mut b,
        &fb::TosaOperatorArgs {
            op: fb::Op::CONV2D,
            attribute_type: fb::Attribute::Conv2dAttribute,
            attribute: Some(attr.as_union_value()),
            inputs: Some(ins),
            outputs: Some(outs),
            location: None,
        },
    );
    let ops = b.create_vector(&[op]);
    let bins = strs(&mut b, &["x"]);
    let bouts = strs(&mut b, &["y"]);
    let bname = name(&mut b, "main");
    let block = fb::TosaBasicBlock::create(
        &mut b,
        &fb::TosaBasicBlockArgs {
            name: Some(bname),
            operators: Some(ops),
            tensors: Some(tensors),
            inputs: Some(bins),
            outputs: Some(bouts),
            shapes: None,
        },
    );
    let blocks = b.create_vector(&[block]);
    let rname = name(&mut b, "main");
    let region = fb::TosaRegion::create(
        &mut b,
        &fb::TosaRegionArgs {
            name: Some(rname),
            blocks: Some(blocks),
        },
    );
    let regions = b.create_vector(&[region]);
    let version = fb::Version::create(
        &mut b,
        &fb::VersionArgs {
            _major: 1,
            _minor: 0,
            _patch: 0,
            _draft: false,
        },
    );
    let root = fb::TosaGraph::create(
        &mut b,
        &fb::TosaGraphArgs {
            version: Some(version),
            regions: Some(regions),
            software_version: None,
        },
    );
    fb::finish_tosa_graph_buffer(&mut b, root);
    b.finished_data().to_vec()
}

type Builder<'b> = flatbuffers::FlatBufferBuilder<'b>;
type Strings<'b> =
    flatbuffers::WIPOffset<flatbuffers::Vector<'b, flatbuffers::ForwardsUOffset<&'b str>>>;

fn name<'b>(b: &mut Builder<'b>, s: &str) -> flatbuffers::WIPOffset<&'b str> {
    b.create_string(s)
}

fn strs<'b>(b: &mut Builder<'b>, v: &[&str]) -> Strings<'b> {
    let v: Vec<_> = v.iter().map(|s| b.create_string(s)).collect();
    b.create_vector(&v)
}

fn program(payload: Vec<u8>) -> Vec<u8> {
    writer::payloads::one_delegate("TOSABackend", payload, Vec::new(), Vec::new())
}

fn weights_bytes() -> Vec<u8> {
    (0..8).flat_map(|i| (i as f32).to_le_bytes()).collect()
}

#[test]
fn a_written_graph_decodes() {
    let bytes = program(graph(Some(&weights_bytes()), (0, 0), false));
    let t = tree(&bytes);
    let code = text_at(&t, &bytes, &format!("{DIR}/tosa/code.txt")).unwrap();
    assert!(
        code.contains("000: CONV2D %x:f32[1,4] %w:f32[2,1,1,4](32 bytes) -> %y:f32[1,2] pad=[0,0,0,0] stride=none dilation=none local_bound=false acc_type=FP32"),
        "{code}"
    );
    let w = bytes_at(&t, &bytes, &format!("{DIR}/tosa/weights/w.bin")).unwrap();
    assert_eq!(w, weights_bytes());
}

#[test]
fn hostile_payloads_say_what_is_wrong() {
    let error = |payload: Vec<u8>| {
        let bytes = program(payload);
        let t = tree(&bytes);
        writer::payloads::read_all(&t, &bytes);
        (
            text_at(&t, &bytes, &format!("{DIR}/tosa/ERROR.txt")),
            t,
            bytes,
        )
    };
    // Cut short: the verifier says where.
    let good = graph(Some(&weights_bytes()), (0, 0), false);
    let (e, ..) = error(good[..good.len() / 2].to_vec());
    let e = e.unwrap();
    assert!(
        e.contains("TosaGraph flatbuffer at payload offset 0"),
        "{e}"
    );
    // Not even a root offset.
    let (e, ..) = error(vec![1, 2]);
    assert!(e.unwrap().contains("TosaGraph flatbuffer"));
    // Another identifier: said, and the graph still shown.
    let mut other = good.clone();
    other[4..8].copy_from_slice(b"TOSB");
    let (e, t, bytes) = error(other);
    assert!(
        e.unwrap()
            .contains("payload offset 4: flatbuffer identifier is \"TOSB\", expected TOSA")
    );
    assert!(
        text_at(&t, &bytes, &format!("{DIR}/tosa/code.txt"))
            .unwrap()
            .contains("CONV2D")
    );
    // Fewer bytes than the shape needs: the weight says so.
    let (e, t, bytes) = error(graph(Some(&[0; 12]), (0, 0), false));
    assert!(e.is_none());
    let index = text_at(&t, &bytes, &format!("{DIR}/tosa/weights/index.json")).unwrap();
    assert!(
        index.contains("the shape needs 32 bytes, 12 are stored"),
        "{index}"
    );
    assert!(t.resolve(&format!("{DIR}/tosa/weights/w.bin")).is_none());
    // Stored outside the flatbuffer, past the payload's end.
    let (_, t, bytes) = error(graph(None, (1 << 40, 64), false));
    let index = text_at(&t, &bytes, &format!("{DIR}/tosa/weights/index.json")).unwrap();
    assert!(
        index.contains("main/main tensor 1 (\\\"w\\\"): offset and size"),
        "{index}"
    );
    // Stored outside the flatbuffer, inside the payload: served from there.
    let p = graph(None, (16, 32), false);
    let want = p[16..48].to_vec();
    let bytes = program(p);
    let t = tree(&bytes);
    let w = bytes_at(&t, &bytes, &format!("{DIR}/tosa/weights/w.bin")).unwrap();
    assert_eq!(w, want);
    // Two tensors of one name: two files.
    let bytes = program(graph(Some(&weights_bytes()), (0, 0), true));
    let t = tree(&bytes);
    assert!(t.resolve(&format!("{DIR}/tosa/weights/w-2.bin")).is_some());
}

#[test]
fn every_truncation_and_byte_flip_of_the_fixture_payload() {
    let file = std::fs::read(fixture(FIXTURE)).unwrap();
    let payload = payload_of(&file, &oracle()["execution_plan"][0]["delegates"][0]);
    let start = std::time::Instant::now();
    let errors = writer::payloads::mutate_payload("TOSABackend", "tosa", &payload, program);
    eprintln!(
        "{} mutations, {errors} with ERROR.txt, {:?}",
        2 * payload.len(),
        start.elapsed()
    );
    assert!(
        errors > payload.len(),
        "every truncation at least is an error"
    );
}
