//! Vulkan delegates decoded, on payloads the writer makes: `vulkan/`'s
//! header, graph (against flatc's own rendering), code and weights (bytes
//! from the payload, named data or a `.ptd` found beside the program), and
//! hostile payloads, which leave the rest of the tree intact and say what
//! is wrong.

use crate::common;
use crate::writer;

use std::path::Path;

use common::flatc::*;
use common::in_memory::{cat, json_at, tree};
use common::*;
use ptefs::schema::vulkan::VkDataType as Dt;
use ptefs::tree::Tree;
use writer::Bytes;
use writer::vulkan::{Constant, Graph, Value};

const DIR: &str = "methods/forward/delegates/0-VulkanBackend";

fn weight_bytes() -> Vec<u8> {
    (0..2 * 3 * 3 * 3)
        .flat_map(|i| (i as f32 * 0.25 - 3.0).to_le_bytes())
        .collect()
}

fn bias_bytes() -> Vec<u8> {
    [0.5f32, -1.5]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

/// A convolution and a relu over every kind of value: %1 (weight) in the
/// payload's constant bytes, %2 (bias) in named data `vk_bias`, %12 an
/// fp16 constant no call uses.
fn graph() -> Graph {
    Graph {
        version: "0".into(),
        chain: vec![
            (
                "aten.convolution.default".into(),
                vec![0, 1, 2, 3, 4, 5, 6, 7, 8],
            ),
            ("aten.relu.default".into(), vec![8, 13]),
            ("et_vk.custom".into(), vec![9, 10, 11, 13]),
        ],
        values: vec![
            Value::Tensor(Dt::FLOAT32, vec![1, 3, 4, 4], -1, 0),
            Value::Tensor(Dt::FLOAT32, vec![2, 3, 3, 3], 0, -1),
            Value::Tensor(Dt::FLOAT32, vec![2], 1, -1),
            Value::IntList(vec![1, 1]),
            Value::IntList(vec![0, 0]),
            Value::Bool(false),
            Value::Double(0.5),
            Value::Null,
            Value::Tensor(Dt::FLOAT32, vec![1, 2, 2, 2], -1, 1),
            Value::String("mode \"x\"".into()),
            Value::Ids(vec![3, 4]),
            Value::SymInt(3),
            Value::Tensor(Dt::FLOAT16, vec![4], 2, -1),
            Value::Tensor(Dt::FLOAT32, vec![1, 2, 2, 2], -1, 2),
            Value::DoubleList(vec![1.0, f64::INFINITY]),
            Value::Int(-7),
            Value::BoolList(vec![true, false]),
        ],
        inputs: vec![0],
        outputs: vec![13],
        constants: vec![
            Constant::at(0, 216),
            Constant::named("vk_bias", 8),
            Constant::at(224, 8),
        ],
    }
}

fn constant_bytes() -> Vec<u8> {
    let mut c = weight_bytes();
    c.resize(224, 0);
    c.extend_from_slice(&[0x00, 0x3c, 0x00, 0x40, 0x00, 0xc0, 0x00, 0x00]);
    c
}

/// A program whose one method has one delegate with `payload`.
fn program(backend: &str, payload: Vec<u8>, named: Vec<(&str, Vec<u8>)>) -> Vec<u8> {
    let named = named.into_iter().map(|(k, b)| (k.to_owned(), b)).collect();
    writer::payloads::one_delegate(backend, payload, Vec::new(), named)
}

fn good() -> Vec<u8> {
    program(
        "VulkanBackend",
        graph().payload(&constant_bytes()),
        vec![("vk_bias", bias_bytes())],
    )
}

fn text_at(tree: &Tree, bytes: &[u8], path: &str) -> String {
    String::from_utf8(cat(tree, bytes, path)).unwrap()
}

#[test]
fn header_code_and_weights_of_a_payload() {
    let bytes = good();
    let t = tree(&bytes);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let v = format!("{DIR}/vulkan");
    let processed = cat(&t, &bytes, &format!("{DIR}/processed.bin"));
    let h = json_at(&t, &bytes, &format!("{v}/header.json"));
    assert_eq!(h["magic"], "VH00");
    assert_eq!(h["identifier"], "VK00");
    assert_eq!(
        (h["header_length"].as_u64(), h["flatbuffer_offset"].as_u64()),
        (Some(30), Some(32))
    );
    let start = h["payload_file_offset"].as_u64().unwrap() as usize;
    assert_eq!(&bytes[start..start + processed.len()], processed);
    let cd = h["constant_data_file_offset"].as_u64().unwrap() as usize;
    assert_eq!(h["constant_data_size"], 232);
    assert_eq!(&bytes[cd..cd + 232], constant_bytes());

    let code = text_at(&t, &bytes, &format!("{v}/code.txt"));
    let want = "# VkGraph version \"0\", 3 calls, 17 values, 3 constants\n\
        inputs: %0:f32[1,3,4,4]\n\
        outputs: %13:f32[1,2,2,2]\n\
        000 aten.convolution.default %0:f32[1,3,4,4] %1:f32[2,3,3,3] %2:f32[2] %3=[1, 1] %4=[0, 0] %5=false %6=0.5 %7=none %8:f32[1,2,2,2]\n\
        001 aten.relu.default %8:f32[1,2,2,2] %13:f32[1,2,2,2]\n\
        002 et_vk.custom %9=\"mode \\\"x\\\"\" %10=[%3, %4] %11=symint(3) %13:f32[1,2,2,2]\n";
    assert_eq!(code, want);

    let w = format!("{v}/weights");
    let names = ls_tree(&t, &w);
    assert_eq!(
        names,
        [
            "000-aten.convolution.default.arg1.bin",
            "000-aten.convolution.default.arg1.npy",
            "000-aten.convolution.default.arg2.bin",
            "000-aten.convolution.default.arg2.npy",
            "index.json",
            "unused.12.bin",
            "unused.12.npy",
        ]
    );
    assert_eq!(
        cat(
            &t,
            &bytes,
            &format!("{w}/000-aten.convolution.default.arg1.bin")
        ),
        weight_bytes()
    );
    let npy = cat(
        &t,
        &bytes,
        &format!("{w}/000-aten.convolution.default.arg1.npy"),
    );
    let header = String::from_utf8_lossy(&npy[..128]);
    assert!(
        header.contains("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 3, 3)"),
        "{header}"
    );
    assert_eq!(&npy[128..], weight_bytes());
    assert_eq!(
        cat(
            &t,
            &bytes,
            &format!("{w}/000-aten.convolution.default.arg2.bin")
        ),
        bias_bytes()
    );
    assert_eq!(
        cat(&t, &bytes, &format!("{w}/unused.12.bin")),
        [0x00, 0x3c, 0x00, 0x40, 0x00, 0xc0, 0x00, 0x00]
    );
    let index = json_at(&t, &bytes, &format!("{w}/index.json"));
    let index = index.as_array().unwrap();
    assert_eq!(index.len(), 3);
    let (e1, e2, e12) = (&index[0], &index[1], &index[2]);
    assert_eq!(
        (e1["value_id"].as_u64(), e1["constant_id"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(e1["datatype"], "FLOAT32");
    assert_eq!(e1["source"]["offset"].as_u64(), Some(cd as u64));
    assert!(e1["key"].is_null());
    assert_eq!(
        e1["users"],
        serde_json::json!([{"call": 0, "op": "aten.convolution.default", "arg": 1}])
    );
    assert_eq!(e2["key"], "vk_bias");
    assert_eq!(e2["nbytes"], 8);
    assert_eq!(
        (e12["role"].as_str(), e12["numpy_dtype"].as_str()),
        (Some("unused"), Some("<f2"))
    );
    // The named blob and the weight holding it are one file.
    let a = t.resolve("named/vk_bias.bin").unwrap();
    let b = t
        .resolve(&format!("{w}/000-aten.convolution.default.arg2.bin"))
        .unwrap();
    assert_eq!(a, b);
}

fn ls_tree(t: &Tree, path: &str) -> Vec<String> {
    let ino = t.resolve(path).unwrap_or_else(|| panic!("no {path}"));
    t.entries(ino)
        .unwrap()
        .map(|e| e.name.to_string())
        .collect()
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
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/vulkan.fbs");
    let bytes = good();
    let t = tree(&bytes);
    let mut got = json_at(&t, &bytes, &format!("{DIR}/vulkan/graph.json"));
    assert_eq!(
        got["values"][1]["value"]["ptefs_path"],
        format!("{DIR}/vulkan/weights/000-aten.convolution.default.arg1.bin")
    );
    assert_eq!(got["values"][14]["value"]["items"][1], "inf");
    strip_ptefs_paths(&mut got);
    let want = flatc_print(&flatc, &schema, &graph().flatbuffer());
    same(&got, &want, "graph.json");
}

#[test]
fn inspect_and_weight_names_for_reports() {
    use ptefs::delegate::{NamedData, decode_program};
    let bytes = good();
    let p = ptefs::format::ProgramFile::parse(&bytes).unwrap();
    let named = NamedData::of(&p, &[]);
    let all = decode_program(&p, &named);
    let d = all[0].decoded.as_ref().unwrap().as_ref().unwrap();
    let s = d.summary();
    assert_eq!(
        (s.backend.as_str(), s.nodes, s.values),
        ("VulkanBackend", 3, 17)
    );
    assert_eq!(s.ops["aten.convolution.default"], 1);
    assert_eq!(s.constant_bytes["FLOAT32"], 216 + 8);
    assert_eq!(s.constant_bytes["FLOAT16"], 8);
    let weights = all[0].weights_with_bytes(&named);
    let found: Vec<(&str, Option<&[u8]>)> =
        weights.iter().map(|(n, b)| (n.name.as_str(), *b)).collect();
    let (w, b) = (weight_bytes(), bias_bytes());
    assert_eq!(
        found,
        [
            ("000-aten.convolution.default.arg1", Some(&w[..])),
            ("000-aten.convolution.default.arg2", Some(&b[..])),
            (
                "unused.12",
                Some(&[0x00, 0x3c, 0x00, 0x40, 0x00, 0xc0, 0x00, 0x00][..])
            ),
        ]
    );
}

#[test]
fn diff_pairs_constants_in_named_data_by_their_use() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_file(dir.path(), "a.pte", &good());
    let changed = program(
        "VulkanBackend",
        graph().payload(&constant_bytes()),
        vec![(
            "vk_bias",
            [0.5f32, -1.25]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        )],
    );
    let b = write_file(dir.path(), "b.pte", &changed);
    let out = ptefs()
        .args(["diff", "--stat"])
        .args([&a, &b])
        .output()
        .unwrap();
    let stat = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stat}");
    assert!(
        stat.contains("vulkan/weights/000-aten.convolution.default.arg2.bin | 1 of 2 elements"),
        "{stat}"
    );
    assert!(stat.ends_with(" 1 change\n"), "{stat}");
}

#[test]
fn sharded_constants_are_found_beside_the_program() {
    // All constants in named data, over two shards with any names.
    let mut g = graph();
    g.constants = vec![
        Constant::named("w", 216),
        Constant::named("b", 8),
        Constant::named("h", 8),
    ];
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(
        dir.path(),
        "model.pte",
        &program("VulkanBackend", g.payload(&[]), vec![]),
    );
    let shard = |entries: Vec<(&str, Vec<u8>)>| {
        writer::DataFile {
            entries: entries
                .into_iter()
                .map(|(k, b)| (k.to_owned(), None, Bytes::Owned(b)))
                .collect(),
        }
        .to_bytes()
    };
    write_file(
        dir.path(),
        "vulkan_constants_aa.ptd",
        &shard(vec![("w", weight_bytes()), ("b", bias_bytes())]),
    );
    write_file(
        dir.path(),
        "vulkan_constants_bb.ptd",
        &shard(vec![("h", vec![0; 8])]),
    );
    let v = view_of(std::slice::from_ref(&pte), &[]);
    assert_eq!(v.notes.len(), 2, "{:?}", v.notes);
    assert_eq!(
        v.notes[0],
        "model.pte: attached vulkan_constants_aa.ptd (found beside it) for 2 named blobs of its VulkanBackend delegates: w, b"
    );
    assert!(v.tree.warnings.is_empty(), "{:?}", v.tree.warnings);
    let w = format!("{DIR}/vulkan/weights");
    assert_eq!(
        read(&v, &format!("{w}/000-aten.convolution.default.arg1.bin")),
        weight_bytes()
    );
    let index = json(&v, &format!("{w}/index.json"));
    assert_eq!(index[1]["source"]["file"], "vulkan_constants_aa.ptd");
    assert_eq!(index[2]["source"]["file"], "vulkan_constants_bb.ptd");
    // Without them: listed as missing, with one warning.
    let off = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![pte],
        ..Default::default()
    })
    .unwrap();
    let index = json(&off, &format!("{w}/index.json"));
    assert!(index[0]["missing"].as_str().unwrap().contains("\"w\""));
    assert_eq!(off.tree.warnings.len(), 1, "{:?}", off.tree.warnings);
}

/// The error the tree reports for `payload`, after checking the rest of
/// the tree is intact.
fn error_of(payload: Vec<u8>) -> String {
    let bytes = program("VulkanBackend", payload.clone(), vec![]);
    let t = tree(&bytes);
    assert_eq!(cat(&t, &bytes, &format!("{DIR}/processed.bin")), payload);
    text_at(&t, &bytes, &format!("{DIR}/vulkan/ERROR.txt"))
}

#[test]
fn hostile_payloads_are_reported_with_offsets() {
    let good = graph().payload(&constant_bytes());
    let mut bad_magic = good.clone();
    bad_magic[4..8].copy_from_slice(b"XH00");
    let mut bad_id = good.clone();
    bad_id[36..40].copy_from_slice(b"VK01");
    let mut past_end = good.clone();
    past_end[14..18].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut bad_fb = good.clone();
    bad_fb[32..36].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    for (payload, want) in [
        (good[..20].to_vec(), "the VH00 header needs 30"),
        (
            bad_magic,
            "payload offset 4: header magic is \"XH00\", expected VH00",
        ),
        (
            bad_id,
            "payload offset 36: flatbuffer identifier is \"VK01\", expected VK00",
        ),
        (past_end, "payload header (offsets 10..18): flatbuffer"),
        (bad_fb, "VkGraph flatbuffer at payload offset 32"),
    ] {
        let e = error_of(payload);
        assert!(e.contains(want), "{e}\n(wanted {want})");
    }
    // Constants out of range are listed, not fatal.
    let mut g = graph();
    g.constants[0] = Constant::at(200, 64);
    g.constants.pop();
    let bytes = program(
        "VulkanBackend",
        g.payload(&constant_bytes()),
        vec![("vk_bias", bias_bytes())],
    );
    let t = tree(&bytes);
    let index = json_at(&t, &bytes, &format!("{DIR}/vulkan/weights/index.json"));
    assert!(
        index[0]["missing"]
            .as_str()
            .unwrap()
            .contains("constants[0] in the payload's constant bytes"),
        "{}",
        index[0]
    );
    assert!(
        index[2]["missing"]
            .as_str()
            .unwrap()
            .contains("constant_id 2 is out of range (2 constants)"),
        "{}",
        index[2]
    );
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
}

#[test]
fn every_truncation_and_byte_flip_of_a_payload_is_survived() {
    let good = graph().payload(&constant_bytes());
    let mut errors = 0;
    let mut check = |payload: Vec<u8>| {
        let bytes = program(
            "VulkanBackend",
            payload.clone(),
            vec![("vk_bias", bias_bytes())],
        );
        let t = tree(&bytes);
        assert_eq!(cat(&t, &bytes, &format!("{DIR}/processed.bin")), payload);
        assert_eq!(cat(&t, &bytes, "named/vk_bias.bin"), bias_bytes());
        reads_within(&t, &bytes);
        if t.resolve(&format!("{DIR}/vulkan/ERROR.txt")).is_some() {
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

#[test]
fn the_fuzz_seed_is_current_and_decodes() {
    let seed = good();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-seeds/vulkan.pte");
    if std::env::var_os("PTEFS_WRITE_SEEDS").is_some() {
        std::fs::write(&path, &seed).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        seed,
        "run with PTEFS_WRITE_SEEDS=1 to rewrite {}",
        path.display()
    );
    let t = tree(&seed);
    assert!(t.resolve(&format!("{DIR}/vulkan/code.txt")).is_some());
    assert!(seed.len() < 65536);
}

#[test]
fn a_mount_serves_the_decoded_delegate_as_the_tree_describes_it() {
    if !common::mounted::fuse_or_skip(
        "a_mount_serves_the_decoded_delegate_as_the_tree_describes_it",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "v.pte", &good());
    let v = view_of(std::slice::from_ref(&pte), &[]);
    let m = common::mounted::Mounted::new(&[pte.as_os_str()]);
    let mut n = 0;
    for (path, bytes) in files(&v) {
        if path.contains("/vulkan/") {
            assert_eq!(std::fs::read(m.path(&path)).unwrap(), bytes, "{path}");
            n += 1;
        }
    }
    assert_eq!(
        n,
        4 + 6 + 1,
        "header, graph.json, code, graph.dot; 3 .bin and 3 .npy; index.json"
    );
    let weight = m.path(&format!(
        "{DIR}/vulkan/weights/000-aten.convolution.default.arg1.npy"
    ));
    let attr = |name: &str| {
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg("import os,sys\nprint(os.getxattr(sys.argv[1], sys.argv[2]).decode())")
            .arg(&weight)
            .arg(name)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(attr("user.ptefs.dtype"), "FLOAT32");
    assert_eq!(attr("user.ptefs.shape"), "[2, 3, 3, 3]");
}

/// A tensor of rank 1,000 and a list of 1,000 items, each named by 2,000
/// call arguments: `code.txt` shows 16 items per use, so it grows with the
/// uses, not with uses × length.
#[test]
fn code_txt_does_not_multiply_length_by_uses() {
    let g = Graph {
        version: "0".into(),
        chain: vec![("et_vk.wide".into(), [0, 1].repeat(1000))],
        values: vec![
            Value::Tensor(Dt::FLOAT32, vec![1; 1000], -1, -1),
            Value::IntList((0..1000).collect()),
        ],
        ..Graph::default()
    };
    let bytes = program("VulkanBackend", g.payload(&[]), vec![]);
    let t = tree(&bytes);
    let code = text_at(&t, &bytes, &format!("{DIR}/vulkan/code.txt"));
    assert!(code.len() < 2000 * 80, "{} bytes", code.len());
    assert!(
        code.contains(" %0:f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,… 1000 in all] %1=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, … 1000 in all] "),
        "{}",
        &code[..400]
    );
}
