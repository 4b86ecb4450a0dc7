//! VGF delegates decoded (`vgf/`): the exported `vgf_fp_mlp.pte` and Arm's
//! standalone `vww4.vgf` (wrapped into a program) served as their oracles
//! say — the header as Arm's `vgfpy` reads it, every field Arm's
//! `vgf_dump` prints, each module's SPIR-V and each constant's bytes as
//! `vgf_dump --dump-spirv/--dump-constant` writes them — plus `graph.dot`
//! rendering, `inspect`'s summary, the fetch plan, a real mount, and
//! hostile payloads that leave the rest intact and say what is wrong.

use std::ffi::OsStr;

use crate::common;
use crate::writer;

use common::in_memory::{text_at, tree};
use common::*;
use ptefs::tree::Tree;
use serde_json::Value;

const DIR: &str = "methods/forward/delegates/0-VgfBackend";
const MLP: &str = "backends/vgf_fp_mlp.pte";

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(&format!("backends/{name}"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn mlp_payload() -> Vec<u8> {
    let d = &load("vgf_fp_mlp.oracle.json")["execution_plan"][0]["delegates"][0];
    let file = std::fs::read(fixture(MLP)).unwrap();
    let at = d["payload_abs_offset"].as_u64().unwrap() as usize;
    file[at..at + d["payload_len"].as_u64().unwrap() as usize].to_vec()
}

fn vww4() -> Vec<u8> {
    std::fs::read(fixture("backends/vww4.vgf")).unwrap()
}

fn program(payload: Vec<u8>) -> Vec<u8> {
    writer::payloads::one_delegate("VgfBackend", payload, Vec::new(), Vec::new())
}

/// Every field of `want` (a vgf_dump object) is in `got` with its value.
fn fields_of(want: &Value, got: &Value, at: &str) -> usize {
    match want {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| {
                let g = got
                    .get(k)
                    .unwrap_or_else(|| panic!("{at}.{k}: missing in graph.json"));
                fields_of(v, g, &format!("{at}.{k}"))
            })
            .sum(),
        Value::Array(a) => {
            let g = got.as_array().unwrap_or_else(|| panic!("{at}: not a list"));
            assert_eq!(a.len(), g.len(), "{at}: length");
            a.iter()
                .zip(g)
                .enumerate()
                .map(|(i, (w, g))| fields_of(w, g, &format!("{at}[{i}]")))
                .sum()
        }
        _ => {
            assert_eq!(got, want, "{at}");
            1
        }
    }
}

/// The checks both fixtures share: graph.json against vgf_dump, the
/// sections, modules and constants against the payload and the parts
/// oracle, `index.json` and the `.npy` files. `view`'s delegate payload is
/// `payload`, at file offset `at`.
fn check_against_vgf_dump(
    v: &ptefs::view::View,
    payload: &[u8],
    at: u64,
    dump: &Value,
    parts: &Value,
) {
    let g = json(v, &format!("{DIR}/vgf/graph.json"));
    let n = fields_of(dump, &g, "graph.json");
    assert!(n > 20, "{n} fields compared");
    // Each part file is its part of graph.json.
    for (file, key) in [
        ("modules.json", "modules"),
        ("model_sequence.json", "model_sequence"),
        ("resources.json", "resources"),
        ("constants.json", "constants"),
    ] {
        let mut part = g[key].clone();
        strip_ptefs_paths(&mut part);
        assert_eq!(json(v, &format!("{DIR}/vgf/{file}")), part, "{file}");
    }
    // Sections: the byte ranges the header gives.
    let h = json(v, &format!("{DIR}/vgf/header.json"));
    for name in [
        "module_table",
        "model_sequence_table",
        "model_resource_table",
        "constants",
    ] {
        let s = &h["sections"][name];
        let (o, n) = (
            s["offset"].as_u64().unwrap() as usize,
            s["size"].as_u64().unwrap() as usize,
        );
        assert_eq!(s["file_offset"].as_u64().unwrap(), at + o as u64);
        let got = read(v, &format!("{DIR}/vgf/sections/{name}.bin"));
        assert_eq!(got, &payload[o..o + n], "{name}");
    }
    // Modules: the code vgf_dump writes.
    for m in parts["modules"].as_array().unwrap() {
        let i = m["index"].as_u64().unwrap() as usize;
        let name = dump["modules"][i]["name"].as_str().unwrap();
        let spv = read(v, &format!("{DIR}/vgf/modules/{i}-{name}.spv"));
        assert_eq!(spv.len() as u64, m["size"].as_u64().unwrap());
        assert_eq!(sha256(&spv), m["sha256"].as_str().unwrap());
        assert_eq!(&spv[..4], &0x0723_0203u32.to_le_bytes(), "SPIR-V magic");
        assert_eq!(g["modules"][i]["code_size"], m["size"]);
    }
    // Constants: the bytes vgf_dump writes, with index.json saying what
    // they are and where.
    let index = json(v, &format!("{DIR}/vgf/weights/index.json"));
    let index = index.as_array().unwrap();
    let constants = parts["constants"].as_array().unwrap();
    assert_eq!(index.len(), constants.len());
    for (c, e) in constants.iter().zip(index) {
        let i = c["index"].as_u64().unwrap() as usize;
        let stem = format!("constant_{i:03}");
        let bin = read(v, &format!("{DIR}/vgf/weights/{stem}.bin"));
        assert_eq!(bin.len() as u64, c["size"].as_u64().unwrap(), "{stem}");
        assert_eq!(sha256(&bin), c["sha256"].as_str().unwrap(), "{stem}");
        let off = e["payload_offset"].as_u64().unwrap() as usize;
        assert_eq!(&payload[off..off + bin.len()], &bin[..], "{stem}");
        assert_eq!(e["source"]["offset"].as_u64().unwrap(), at + off as u64);
        assert_eq!(e["nbytes"], c["size"]);
        let mrt = dump["constants"][i]["mrt_index"].as_u64().unwrap() as usize;
        assert_eq!(e["mrt_index"], mrt);
        let r = &dump["resources"][mrt];
        assert_eq!(e["vk_format"], r["vk_format"], "{stem}");
        assert_eq!(e["shape"], r["shape"], "{stem}");
        assert_eq!(
            g["constants"][i]["ptefs_path"],
            format!("{DIR}/vgf/weights/{stem}.bin")
        );
        // The .npy: a header for the resource's format and shape, then
        // the same bytes.
        let npy = read(v, &format!("{DIR}/vgf/weights/{stem}.npy"));
        assert!(
            npy.starts_with(b"\x93NUMPY") && npy.ends_with(&bin),
            "{stem}"
        );
        let descr = match r["vk_format"].as_str().unwrap() {
            "VK_FORMAT_R32_SFLOAT" => "<f4",
            "VK_FORMAT_R32_SINT" => "<i4",
            "VK_FORMAT_R8_SINT" => "|i1",
            f => panic!("{f}"),
        };
        let head = String::from_utf8_lossy(&npy[..npy.len() - bin.len()]).into_owned();
        assert!(head.contains(&format!("'descr': '{descr}'")), "{head}");
    }
    assert!(v.tree.resolve(&format!("{DIR}/vgf/ERROR.txt")).is_none());
}

#[test]
fn the_exported_program_is_served_as_its_oracles_say() {
    let o = load("vgf_fp_mlp.oracle.json");
    let d = &o["execution_plan"][0]["delegates"][0];
    let v = view(MLP);
    let payload = mlp_payload();
    assert_eq!(read(&v, &format!("{DIR}/processed.bin")), payload);
    assert_eq!(sha256(&payload), d["payload_sha256"].as_str().unwrap());
    // header.json: every field vgfpy's header decoder gives.
    let want = &o["arm_inner"][0]["vgf_header"];
    let h = json(&v, &format!("{DIR}/vgf/header.json"));
    assert_eq!(h["magic"], want["magic_ascii"]);
    assert_eq!(want["IsValid"], true);
    assert_eq!(want["CheckVersion"], true);
    assert_eq!(h["version"]["major"], want["GetMajor"]);
    assert_eq!(h["version"]["minor"], want["GetMinor"]);
    assert_eq!(h["version"]["patch"], want["GetPatch"]);
    assert_eq!(
        h["vk_header_version"],
        want["GetEncoderVulkanHeadersVersion"]
    );
    assert_eq!(h["header_size"], want["HeaderSize"]);
    for (name, key) in [
        ("module_table", "ModuleTable"),
        ("model_sequence_table", "ModelSequenceTable"),
        ("model_resource_table", "ModelResourceTable"),
        ("constants", "Constants"),
    ] {
        assert_eq!(
            h["sections"][name]["offset"],
            want[format!("Get{key}Offset")],
            "{name}"
        );
        assert_eq!(
            h["sections"][name]["size"],
            want[format!("Get{key}Size")],
            "{name}"
        );
    }
    assert_eq!(h["payload_file_offset"], d["payload_abs_offset"]);
    assert_eq!(h["payload_size"], d["payload_len"]);
    let at = d["payload_abs_offset"].as_u64().unwrap();
    check_against_vgf_dump(
        &v,
        &payload,
        at,
        &load("vgf_fp_mlp.forward.d0.vgf_dump.json"),
        &load("vgf_fp_mlp.forward.d0.vgf_parts.json"),
    );
    let g = json(&v, &format!("{DIR}/vgf/graph.json"));
    assert_eq!(g["constants"][0]["layout"], "CONST00");
    assert_eq!(
        g["model_sequence"]["segments"][0]["constant_bindings_written"],
        true
    );
    let code = String::from_utf8(read(&v, &format!("{DIR}/vgf/code.txt"))).unwrap();
    assert!(code.starts_with("# VGF 0.5.0 (Vulkan headers 0): 1 module, 1 segment, 5 resources, 3 constants (CONST00)\n"), "{code}");
    assert!(code.contains("segment 0: GRAPH \"graph_segment_0\" module 0 inputs %3:f32[1,16]@0.0 -> outputs %4:f32[1,8]@0.1 constants %0:f32[32,1,1,16] %1:f32[32] %2:f32[8,1,1,32]"), "{code}");
}

#[test]
fn arms_standalone_vgf_wrapped_in_a_program() {
    let payload = vww4();
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "vww4.pte", &program(payload.clone()));
    let v = view_of(std::slice::from_ref(&pte), &[]);
    let bytes = std::fs::read(&pte).unwrap();
    // Where the payload landed in the program the writer made.
    let at = bytes
        .windows(payload.len())
        .position(|w| w == payload)
        .unwrap() as u64;
    let h = json(&v, &format!("{DIR}/vgf/header.json"));
    assert_eq!(h["payload_file_offset"], at);
    assert_eq!(
        h["version"],
        serde_json::json!({"major": 0, "minor": 3, "patch": 0})
    );
    let dump = load("vww4.vgf_dump.json");
    check_against_vgf_dump(&v, &payload, at, &dump, &load("vww4.vgf_parts.json"));
    // Before format 0.4: a ConstantSection flatbuffer, no explicit set
    // indexes, no constant bindings (shown as vgf_dump shows them).
    let g = json(&v, &format!("{DIR}/vgf/graph.json"));
    assert_eq!(g["constants"][0]["layout"], "ConstantSection");
    assert_eq!(
        g["model_sequence"]["segments"][0]["constant_bindings_written"],
        false
    );
    assert_eq!(g["constants"].as_array().unwrap().len(), 95);
    let code = String::from_utf8(read(&v, &format!("{DIR}/vgf/code.txt"))).unwrap();
    assert!(code.contains("constants %0:i8[3,3,96,1]"), "{code}");
    assert!(code.contains("… 95 in all"), "{code}");
}

#[test]
fn graph_dot_renders() {
    for bytes in [std::fs::read(fixture(MLP)).unwrap(), program(vww4())] {
        let (_dir, v) = view_bytes("g.pte", &bytes);
        let dot = read(&v, &format!("{DIR}/vgf/graph.dot"));
        let text = String::from_utf8(dot.clone()).unwrap();
        assert!(text.contains("segment 0 GRAPH"), "{text}");
        let svg = common::dot_svg("graph.dot", &dot);
        assert!(svg.contains("<svg") && svg.contains("graph_segment_0"));
    }
}

#[test]
fn names_with_quotes_and_line_breaks_still_render() {
    let mut p = mlp_payload();
    for name in [&b"graph_segment_0"[..], b"graph_partition_0"] {
        let mut at = 0;
        while let Some(i) = p[at..].windows(name.len()).position(|w| w == name) {
            let i = at + i;
            p[i..i + 4].copy_from_slice(b"a\"\\\n");
            at = i + name.len();
        }
    }
    let (e, t, bytes) = decoded(p);
    assert!(e.is_none(), "{e:?}");
    let dot = text_at(&t, &bytes, &format!("{DIR}/vgf/graph.dot")).unwrap();
    assert!(dot.contains("a\\\"\\\\\\nh_segment_0"), "{dot}");
    assert!(common::dot_svg("graph.dot", dot.as_bytes()).contains("<svg"));
    let code = text_at(&t, &bytes, &format!("{DIR}/vgf/code.txt")).unwrap();
    assert!(
        code.contains("segment 0: GRAPH \"a\\\"\\\\\\nh_segment_0\""),
        "{code}"
    );
    assert!(
        t.resolve(&format!("{DIR}/vgf/modules/0-a___h_partition_0.spv"))
            .is_some()
    );
}

#[test]
fn inspect_shows_the_summary() {
    let r = ptefs_json([
        OsStr::new("inspect"),
        OsStr::new("--json"),
        fixture(MLP).as_os_str(),
    ]);
    let s = &r["program"]["delegates"][0]["decoded"];
    assert_eq!(s["backend"], "VgfBackend");
    assert_eq!(s["nodes"], 1, "segments");
    assert_eq!(s["values"], 5, "resources");
    assert_eq!(s["ops"], serde_json::json!({"GRAPH": 1}));
    assert_eq!(
        s["constant_bytes"],
        serde_json::json!({"VK_FORMAT_R32_SFLOAT": 2048 + 128 + 1024})
    );
    let text = ptefs().arg("inspect").arg(fixture(MLP)).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("forward #0 VgfBackend: 6040 bytes"), "{text}");
    assert!(text.contains("1 nodes, 5 values"), "{text}");
    assert!(
        text.contains("3200 bytes of VK_FORMAT_R32_SFLOAT"),
        "{text}"
    );
}

#[test]
fn weights_have_stable_names_for_diff() {
    use ptefs::delegate::{NamedData, decode_program};
    let bytes = program(vww4());
    let p = ptefs::format::ProgramFile::parse(&bytes).unwrap();
    let named = NamedData::of(&p, &[]);
    let all = decode_program(&p, &named);
    let weights = all[0].weights_with_bytes(&named);
    assert_eq!(weights.len(), 95);
    let (n, b) = &weights[0];
    assert_eq!(n.name, "constant_000");
    assert_eq!(n.layer.as_deref(), Some("000-graph_segment_0"));
    assert_eq!(n.datatype, "VK_FORMAT_R8_SINT");
    assert_eq!(n.dims, [3, 3, 96, 1]);
    assert_eq!(b.unwrap().len(), 864);
}

#[test]
fn the_fetch_plan_leaves_out_the_constant_data() {
    let b = ptefs::delegate::backend("VgfBackend").unwrap();
    for (payload, data_from) in [(mlp_payload(), 2752 + 16 + 3 * 24), (vww4(), u64::MAX)] {
        let all = |_: &std::ops::Range<u64>| true;
        let ranges = b.fetch(&payload, &all);
        let first = b.fetch(&payload, &|_| false);
        assert_eq!(
            first,
            std::iter::once(0..128).collect::<Vec<_>>(),
            "the header first"
        );
        assert!(ranges.contains(&(128..128 + 1868)) || ranges.iter().any(|r| r.start == 128));
        for r in &ranges {
            assert!(r.end <= payload.len() as u64);
            assert!(r.end <= data_from, "{r:?} reads constant data");
        }
    }
}

#[test]
fn a_mount_serves_the_vgf_folder_byte_for_byte() {
    if !common::mounted::fuse_or_skip("a_mount_serves_the_vgf_folder_byte_for_byte") {
        return;
    }
    let path = fixture(MLP);
    let v = view_of(std::slice::from_ref(&path), &[]);
    let m = common::mounted::Mounted::new(&[path.as_os_str()]);
    let mut n = 0;
    for (p, bytes) in files(&v) {
        if p.contains("/vgf/") {
            assert_eq!(std::fs::read(m.path(&p)).unwrap(), bytes, "{p}");
            n += 1;
        }
    }
    assert_eq!(
        n,
        8 + 4 + 1 + 6 + 1,
        "8 files, 4 sections, a module, 3 .bin and .npy, index.json"
    );
}

// ---- hostile payloads ----

/// The tree of `payload` in a program, every file read; its `ERROR.txt`.
fn decoded(payload: Vec<u8>) -> (Option<String>, Tree, Vec<u8>) {
    let bytes = program(payload);
    let t = tree(&bytes);
    writer::payloads::read_all(&t, &bytes);
    (
        text_at(&t, &bytes, &format!("{DIR}/vgf/ERROR.txt")),
        t,
        bytes,
    )
}

#[test]
fn hostile_payloads_say_what_is_wrong() {
    let good = mlp_payload();
    let set = |p: &mut Vec<u8>, at: usize, v: u64| p[at..at + 8].copy_from_slice(&v.to_le_bytes());
    // Too short for a header; another magic.
    let (e, ..) = decoded(good[..100].to_vec());
    assert!(
        e.unwrap()
            .contains("payload is 100 bytes, the VGF header needs 128")
    );
    let mut p = good.clone();
    p[..4].copy_from_slice(b"VGF9");
    let (e, ..) = decoded(p);
    assert!(
        e.unwrap()
            .contains("payload offset 0: magic is \"VGF9\", expected VGF1")
    );
    // A section past the end: named, and the other sections still shown.
    let mut p = good.clone();
    set(&mut p, 40, 1 << 40);
    let (e, t, bytes) = decoded(p);
    let e = e.unwrap();
    assert!(
        e.contains("header offsets 32..48: model_sequence_table section"),
        "{e}"
    );
    assert!(
        t.resolve(&format!("{DIR}/vgf/modules/0-graph_partition_0.spv"))
            .is_some()
    );
    assert!(
        t.resolve(&format!("{DIR}/vgf/weights/constant_000.bin"))
            .is_some()
    );
    let h = text_at(&t, &bytes, &format!("{DIR}/vgf/header.json")).unwrap();
    assert!(h.contains("\"error\""), "{h}");
    // A table that does not verify: the verifier's trace, and the rest.
    let mut p = good.clone();
    p[2000..2004].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let (e, t, _) = decoded(p);
    assert!(
        e.unwrap()
            .contains("ModelSequenceTable flatbuffer at payload offset 2000")
    );
    assert!(
        t.resolve(&format!("{DIR}/vgf/weights/constant_002.npy"))
            .is_some()
    );
    // CONST00 with a count that cannot fit.
    let mut p = good.clone();
    set(&mut p, 2752 + 8, u64::MAX / 2);
    let (e, ..) = decoded(p);
    assert!(
        e.unwrap()
            .contains("constants section at payload offset 2760 (count)")
    );
    // A constant record whose data is past the section: that weight says so.
    let mut p = good.clone();
    set(&mut p, 2752 + 16 + 24 + 16, 1 << 33);
    let (e, t, bytes) = decoded(p);
    assert!(e.is_none());
    let index = text_at(&t, &bytes, &format!("{DIR}/vgf/weights/index.json")).unwrap();
    assert!(
        index.contains("constants[1] (record at payload offset 2792): data offset and size"),
        "{index}"
    );
    assert!(
        t.resolve(&format!("{DIR}/vgf/weights/constant_001.bin"))
            .is_none()
    );
}

#[test]
fn every_truncation_and_byte_flip_of_the_exported_payload() {
    let payload = mlp_payload();
    let start = std::time::Instant::now();
    let errors = writer::payloads::mutate_payload("VgfBackend", "vgf", &payload, program);
    eprintln!(
        "{} mutations, {errors} with ERROR.txt, {:?}",
        2 * payload.len(),
        start.elapsed()
    );
    assert!(errors >= payload.len() / 2);
}

/// vww4.vgf is 412 KB, too much to mutate byte by byte in a test: its
/// header is flipped byte by byte, and so are the heads of its module
/// table (not its SPIR-V words), resource table and constants flatbuffer,
/// the tail of the latter, and every third byte of its sequence table; it
/// is cut at every length through the header and at a sample of lengths
/// through the tables and the rest. Every case must build, read whole, and keep
/// `processed.bin`.
#[test]
fn truncations_and_byte_flips_of_the_standalone_vgf() {
    let payload = vww4();
    let h = ptefs::delegate::vgf::header::parse(&payload).unwrap();
    let section = |i| h.section(i).unwrap();
    let (modules, sequence, resources, constants) =
        (section(0), section(1), section(2), section(3));
    let mut flips: Vec<usize> = (0..128).collect();
    let head =
        |s: ptefs::format::Span, n: u64| s.offset as usize..(s.offset + s.len.min(n)) as usize;
    flips.extend(head(modules, 64));
    flips.extend(head(sequence, sequence.len).step_by(3));
    flips.extend(head(resources, 192));
    flips.extend(head(constants, 256));
    flips.extend(constants.end() as usize - 64..constants.end() as usize);
    let mut cuts: Vec<usize> = (0..136).collect();
    cuts.extend((sequence.offset as usize..resources.end() as usize).step_by(61));
    cuts.extend((0..payload.len()).step_by(16411));
    let dir = format!("{DIR}/processed.bin");
    let start = std::time::Instant::now();
    let mut errors = 0;
    let cases = flips
        .iter()
        .map(|&i| {
            let mut m = payload.clone();
            m[i] ^= 0xff;
            m
        })
        .chain(cuts.iter().map(|&n| payload[..n].to_vec()));
    let mut n = 0;
    for m in cases {
        let len = m.len() as u64;
        let (e, t, _) = decoded(m);
        let processed = t
            .resolve(&dir)
            .and_then(|i| t.file(i))
            .map(|f| f.content.len());
        assert_eq!(processed, Some(len), "case {n}");
        errors += usize::from(e.is_some());
        n += 1;
    }
    eprintln!(
        "{n} mutations, {errors} with ERROR.txt, {:?}",
        start.elapsed()
    );
    assert!(errors >= cuts.len() - 1);
}
