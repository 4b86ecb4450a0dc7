//! Vendor-binary delegates (QNN, TensorRT, AOTInductor, MediaTek, NXP):
//! each fixture in `tests/fixtures/vendor/` opened offline and checked
//! against the oracle its generator wrote (every header field where the
//! writer put it, every artifact byte-exact and served from where it
//! lies), QNN's real `stories260k` export, a mount, `inspect`, and every
//! truncation and byte flip of each kind of payload.

use crate::common;
use crate::writer;

use common::mounted::{Mounted, fuse_or_skip};
use common::*;
use ptefs::view::View;
use serde_json::{Value, json};

fn oracle(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(&format!("vendor/{name}.oracle.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn folder(backend: &str) -> &'static str {
    match backend {
        "TensorRTBackend" => "tensorrt",
        "NeuropilotBackend" => "mediatek",
        "NeutronBackend" => "nxp",
        "QnnBackend" => "qnn",
        _ => "aoti",
    }
}

fn dir(method: &str, w: &Value) -> String {
    let backend = w["backend"].as_str().unwrap();
    format!("methods/{method}/delegates/0-{backend}/{}", folder(backend))
}

fn exists(v: &View, path: &str) -> bool {
    v.tree.resolve(path).is_some()
}

fn ino(v: &View, path: &str) -> u64 {
    v.tree.resolve(path).unwrap_or_else(|| panic!("no {path}"))
}

/// Every header field the oracle records, at the file offset the writer
/// put it (`payload_offset` + its offset in the payload), with its value.
fn check_fields(header: &Value, fields: &Value, at: u64, what: &str) {
    for (name, f) in fields.as_object().unwrap() {
        let (off, value) = (f[0].as_u64().unwrap(), &f[1]);
        assert_eq!(header[name]["at"], json!(at + off), "{what}: {name} offset");
        assert_eq!(&header[name]["value"], value, "{what}: {name} value");
    }
}

/// Each artifact the oracle records: byte-exact, and the very bytes of the
/// program at the offset the writer put them; artifacts the oracle has no
/// record of (headers that claim too much) are absent.
fn check_artifacts(v: &View, pte: &[u8], d: &str, w: &Value, at: u64) {
    let arts = w["artifacts"].as_object().unwrap();
    for (path, a) in arts {
        let got = read(v, &format!("{d}/{path}"));
        assert_eq!(sha256(&got), a["sha256"].as_str().unwrap(), "{d}/{path}");
        let start = (at + a["offset"].as_u64().unwrap()) as usize;
        assert_eq!(got, &pte[start..start + got.len()], "{d}/{path} in place");
    }
    for name in ["engine.plan", "model.bin", "context.bin", "microcode.bin"] {
        if !arts.contains_key(name) && !w["named"].as_object().unwrap().contains_key(name) {
            assert!(!exists(v, &format!("{d}/{name}")), "{d}/{name} shown");
        }
    }
}

/// The programs whose layout is a header and byte ranges: every method of
/// each checked against its oracle.
#[test]
fn headers_and_artifacts_match_what_the_writer_put() {
    for name in ["tensorrt", "mediatek", "nxp", "qnn"] {
        let o = oracle(name);
        let v = view(&format!("vendor/{name}.pte"));
        let pte = std::fs::read(fixture(&format!("vendor/{name}.pte"))).unwrap();
        for (method, w) in o["methods"].as_object().unwrap() {
            let d = dir(method, w);
            let at = w["payload_offset"].as_u64().unwrap();
            let header = json(&v, &format!("{d}/header.json"));
            assert_eq!(
                header["payload"],
                json!({"offset": at, "size": w["payload_size"]}),
                "{d}"
            );
            check_fields(&header, &w["fields"], at, &d);
            check_artifacts(&v, &pte, &d, w, at);
            let wrong = exists(&v, &format!("{d}/ERROR.txt"));
            let corner = ["overclaim", "wrap", "misaligned", "bad_magic"];
            assert_eq!(wrong, corner.contains(&method.as_str()), "{d}: ERROR.txt");
        }
    }
}

#[test]
fn tensorrt_metadata_and_what_the_runtime_would_refuse() {
    let o = oracle("tensorrt");
    let v = view("vendor/tensorrt.pte");
    for (method, w) in o["methods"].as_object().unwrap() {
        let d = dir(method, w);
        let header = json(&v, &format!("{d}/header.json"));
        assert_eq!(
            header["runtime_accepts"], w["extra"]["runtime_accepts"],
            "{d}"
        );
        let meta = json(&v, &format!("{d}/metadata.json"));
        assert_eq!(meta, w["extra"]["metadata"], "{d}");
    }
    let wrap = json(
        &v,
        "methods/wrap/delegates/0-TensorRTBackend/tensorrt/header.json",
    );
    assert!(wrap["wraps"].as_str().unwrap().contains("wrap past 2^64"));
    assert_eq!(wrap["runtime_refuses"], json!([]));
    assert_eq!(wrap["engine"], Value::Null);
    let kv = json(
        &v,
        "methods/kv/delegates/0-TensorRTBackend/tensorrt/header.json",
    );
    assert_eq!(kv["magic"]["value"], "TR02");
    let empty = read(
        &v,
        "methods/empty/delegates/0-TensorRTBackend/tensorrt/engine.plan",
    );
    assert!(empty.is_empty());
}

#[test]
fn nxp_microcode_header_and_regions() {
    let o = oracle("nxp");
    let v = view("vendor/nxp.pte");
    for (method, w) in o["methods"].as_object().unwrap() {
        let d = dir(method, w);
        let at = w["payload_offset"].as_u64().unwrap();
        let header = json(&v, &format!("{d}/header.json"));
        check_fields(
            &header["microcode_header"],
            &w["extra"]["microcode_words"],
            at,
            &d,
        );
        assert!(header["not_bounded"].as_str().unwrap().contains("kernels"));
    }
}

#[test]
fn mediatek_shared_weights_link_to_named_data() {
    let o = oracle("mediatek");
    let v = view("vendor/mediatek.pte");
    let w = &o["methods"]["shared"];
    let d = dir("shared", w);
    let n = &w["named"]["shared_weights.bin"];
    let got = read(&v, &format!("{d}/shared_weights.bin"));
    assert_eq!(sha256(&got), n["sha256"].as_str().unwrap());
    assert_eq!(
        ino(&v, &format!("{d}/shared_weights.bin")),
        ino(&v, "named/mtk_shared_weights.bin")
    );
    let missing = dir("missing_shared", &o["methods"]["missing_shared"]);
    assert!(!exists(&v, &format!("{missing}/shared_weights.bin")));
    let keys = json(&v, &format!("{missing}/keys.json"));
    assert_eq!(keys[0]["found"], json!(false));
    assert_eq!(keys[0]["key"], "mtk_nowhere");
}

#[test]
fn qnn_options_and_shared_contexts() {
    let v = view("vendor/qnn.pte");
    let want: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("vendor/qnn_options.expected.json")).unwrap(),
    )
    .unwrap();
    let d = "methods/forward/delegates/0-QnnBackend/qnn";
    let o = json(&v, &format!("{d}/compile_specs.json"));
    assert_eq!(o["soc_info"], want["soc_info"]);
    let htp = &o["backend_options"]["htp_options"];
    assert_eq!(o["backend_options"]["backend_type"], want["backend_type"]);
    assert_eq!(htp["performance_mode"], want["performance_mode"]);
    assert_eq!(htp["precision"], want["precision"]);
    assert_eq!(htp["use_conv_hmx"], want["use_conv_hmx"]);
    for k in [
        "log_level",
        "online_prepare",
        "profile_level",
        "saver_output_dir",
    ] {
        assert_eq!(o[k], want[k], "{k}");
    }
    assert!(o["raw_hex"].is_string());
    let a = "methods/shared_a/delegates/0-QnnBackend/qnn";
    let b = "methods/shared_b/delegates/0-QnnBackend/qnn";
    assert_eq!(
        ino(&v, &format!("{a}/context.bin")),
        ino(&v, &format!("{b}/context.bin"))
    );
    let ha = json(&v, &format!("{a}/header.json"));
    let names: Vec<&str> = ha["shared_with"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["method"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"shared_b"), "{names:?}");
    assert!(!names.contains(&"shared_a"), "{names:?}");
    let raw = json(&v, "methods/raw/delegates/0-QnnBackend/qnn/header.json");
    assert_eq!(raw["format"], "no custom-protocol magic");
    assert!(raw["runtime_reads_it_as"].as_str().unwrap().contains("DLC"));
}

/// ExecuTorch's own QNN-delegated stories260k llama: two methods sharing
/// one context binary.
#[test]
fn stories260k_qnn_context_binary() {
    let name = "vendor/stories260k_hybrid_llama_qnn.pte";
    let pte = std::fs::read(fixture(name)).unwrap();
    let v = view(name);
    let kv = "methods/kv_forward/delegates/0-QnnBackend/qnn";
    let prefill = "methods/prefill_forward/delegates/0-QnnBackend/qnn";
    let h = json(&v, &format!("{kv}/header.json"));
    let at = h["payload"]["offset"].as_u64().unwrap() as usize;
    assert_eq!(&pte[at..at + 4], &0x5678_ABCDu32.to_le_bytes());
    let size = u64::from_le_bytes(pte[at + 12..at + 20].try_into().unwrap());
    let sig = i64::from_le_bytes(pte[at + 4..at + 12].try_into().unwrap());
    assert_eq!(h["context_binary_size"]["value"], json!(size));
    assert_eq!(h["signature"]["value"], json!(sig));
    assert_eq!(h["context_binary"]["offset"], json!(at + 256));
    let ctx = read(&v, &format!("{kv}/context.bin"));
    assert_eq!(ctx.len() as u64, size);
    assert_eq!(ctx, &pte[at + 256..at + 256 + ctx.len()]);
    assert_eq!(
        ino(&v, &format!("{kv}/context.bin")),
        ino(&v, &format!("{prefill}/context.bin"))
    );
    assert_eq!(h["shared_with"][0]["method"], "prefill_forward");
    let specs = json(&v, &format!("{kv}/compile_specs.json"));
    assert_eq!(specs["soc_info"]["soc_model"], "SM8650");
    assert_eq!(specs["soc_info"]["htp_info"]["htp_arch"], "V75");
    assert_eq!(specs["backend_options"]["backend_type"], "kHtpBackend");
    assert!(!exists(&v, &format!("{kv}/ERROR.txt")));
}

/// AOTInductor in its three forms: keys, the CUDA manifest (each weight
/// by its FQN from the `.ptd` found beside the program), and an empty
/// payload; keys that resolve nowhere are listed, not errors.
#[test]
fn aoti_libraries_and_weights() {
    let o = oracle("aoti");
    let v = view("vendor/aoti.pte");
    for (method, w) in o["methods"].as_object().unwrap() {
        let d = dir(method, w);
        let at = w["payload_offset"].as_u64();
        if let Some(at) = at.filter(|_| w["payload_size"] != json!(0)) {
            let header = json(&v, &format!("{d}/header.json"));
            for (name, f) in w["fields"].as_object().unwrap() {
                let value = &f[1];
                let got = &header[name];
                let got = got.get("value").unwrap_or(got);
                assert_eq!(got, value, "{d}: {name}");
                if let Some(a) = header[name].get("at") {
                    assert_eq!(a, &json!(at + f[0].as_u64().unwrap()), "{d}: {name}");
                }
            }
        }
        assert!(!exists(&v, &format!("{d}/ERROR.txt")), "{d}");
        for (path, n) in w["named"].as_object().unwrap() {
            let p = format!("{d}/{path}");
            if n["missing"] == json!(true) {
                assert!(!exists(&v, &p), "{p}");
                continue;
            }
            let got = read(&v, &p);
            let key = n["key"].as_str().unwrap();
            // The oracle's digest is of the named-data entry; a weight that
            // is a transposed view of it holds the view's own bytes.
            if let Some(want) = transposed(n, &read(&v, &format!("named/{key}.bin"))) {
                assert_eq!(got, want, "{p}");
                let npy = read(&v, &p.replace(".bin", ".npy"));
                assert_eq!(npy_payload(&npy), want, "{p}: .npy");
                continue;
            }
            assert_eq!(sha256(&got), n["sha256"].as_str().unwrap(), "{p}");
            assert_eq!(ino(&v, &p), ino(&v, &format!("named/{key}.bin")), "{p}");
            if n["npy"] == json!(true) {
                let npy = read(&v, &p.replace(".bin", ".npy"));
                assert!(npy.ends_with(&got), "{p}: .npy");
            } else if let Some(values) = n.get("values").and_then(Value::as_array) {
                // bfloat16, widened to float32 in the .npy.
                let npy = read(&v, &p.replace(".bin", ".npy"));
                let want: Vec<u8> = values
                    .iter()
                    .flat_map(|x| (x.as_f64().unwrap() as f32).to_le_bytes())
                    .collect();
                assert!(npy.ends_with(&want), "{p}: widened .npy");
            } else if n.get("npy").is_some() {
                assert!(!exists(&v, &p.replace(".bin", ".npy")), "{p}");
            }
        }
        if w["named"]["model.so"].get("sha256").is_some() {
            let syms = String::from_utf8(read(&v, &format!("{d}/symbols.txt"))).unwrap();
            for s in w["extra"]["symbols"].as_array().unwrap() {
                assert!(
                    syms.contains(&format!("T {}\n", s.as_str().unwrap())),
                    "{syms}"
                );
            }
        }
    }
    let index = json(
        &v,
        "methods/cuda/delegates/0-CudaBackend/aoti/weights/index.json",
    );
    let first = &index[0];
    assert_eq!(first["fqn"], "l1.weight");
    assert_eq!(first["dtype"], "float32");
    assert_eq!(first["sizes"], json!([4, 4]));
    assert_eq!(first["source"]["file"], "aoti_cuda_blob.ptd");
    let ghost = index
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["fqn"] == "ghost")
        .unwrap();
    assert!(ghost["missing"].is_string(), "{ghost}");
    // Every weight the manifest holds, in index.json and in header.json's
    // fields, as the writer gave it to ExecuTorch's encoder.
    let header = json(&v, "methods/cuda/delegates/0-CudaBackend/aoti/header.json");
    let fields: Vec<&Value> = header["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["field"] == "weight")
        .collect();
    let named = o["methods"]["cuda"]["named"].as_object().unwrap();
    let mut seen = 0;
    for (path, n) in named.iter().filter(|(p, _)| p.starts_with("weights/")) {
        let fqn = &path["weights/".len()..path.len() - ".bin".len()];
        let e = index
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["fqn"] == fqn)
            .unwrap_or_else(|| panic!("{fqn} not in index.json"));
        let f = fields.iter().find(|f| f["fqn"] == fqn).unwrap();
        for x in [e, *f] {
            assert_eq!(x["storage_key"], n["key"], "{fqn}");
            assert_eq!(x["sizes"], n["sizes"], "{fqn}");
            assert_eq!(x["strides"], n["strides"], "{fqn}");
            assert_eq!(x["storage_nbytes"], n["size"], "{fqn}");
        }
        assert_eq!(e["dtype_code"], n["dtype_code"], "{fqn}");
        assert_eq!(f["dtype"], n["dtype_code"], "{fqn}");
        assert_eq!(f["device_type"], json!(1), "{fqn}");
        seen += 1;
    }
    assert_eq!(seen, 6);
    let keys = json(&v, "methods/missing/delegates/0-CudaBackend/aoti/keys.json");
    assert_eq!(keys[0]["found"], json!(false));
}

/// The bytes of a float32 weight of the oracle whose strides transpose
/// its two dimensions, read element by element from `storage` (whose
/// digest the oracle holds); `None` for any other weight.
fn transposed(n: &Value, storage: &[u8]) -> Option<Vec<u8>> {
    let (sizes, strides) = (n.get("sizes")?, n.get("strides")?);
    let [r, c] = serde_json::from_value::<[usize; 2]>(sizes.clone()).ok()?;
    if strides != &json!([1, r]) || r == 1 || c == 1 {
        return None;
    }
    assert_eq!(n["dtype_code"], json!(6), "float32");
    assert_eq!(sha256(storage), n["sha256"].as_str().unwrap());
    let mut out = Vec::new();
    for i in 0..r {
        for j in 0..c {
            let at = 4 * (i + j * r);
            out.extend_from_slice(&storage[at..at + 4]);
        }
    }
    Some(out)
}

fn ptefs_out(args: &[&str]) -> String {
    let out = ptefs().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn inspect_names_sizes_and_header_fields() {
    let trt = fixture("vendor/tensorrt.pte");
    let text = ptefs_out(&["inspect", trt.to_str().unwrap()]);
    assert!(
        text.contains("  forward #0 TensorRTBackend: 404 bytes\n"),
        "{text}"
    );
    assert!(text.contains("    magic: TR01\n"), "{text}");
    assert!(text.contains("    engine_size: 100\n"), "{text}");
    assert!(text.contains("100 bytes in engine.plan\n"), "{text}");
    assert!(text.contains("wrap past 2^64"), "{text}");
    let qnn = fixture("vendor/stories260k_hybrid_llama_qnn.pte");
    let text = ptefs_out(&["inspect", qnn.to_str().unwrap()]);
    assert!(text.contains("    context_size: 1331200\n"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let other = writer::payloads::one_delegate(
        "SomeVendorBackend",
        vec![7; 33],
        vec![
            ("level".into(), b"3".to_vec()),
            ("raw".into(), vec![0xff, 0]),
        ],
        vec![],
    );
    let p = write_file(dir.path(), "other.pte", &other);
    let text = ptefs_out(&["inspect", p.to_str().unwrap()]);
    assert!(text.contains("    not decoded (33 bytes)\n"), "{text}");
    let v = view_of(&[p], &[]);
    let specs = json(
        &v,
        "methods/forward/delegates/0-SomeVendorBackend/compile_specs.json",
    );
    assert_eq!(specs[0], json!({"key": "level", "size": 1, "text": "3"}));
    assert_eq!(specs[1], json!({"key": "raw", "size": 2, "hex": "ff00"}));
}

/// A mount shows the same bytes, and one context shared by two methods is
/// one inode there too.
#[test]
fn mounted_vendor_files() {
    if !fuse_or_skip("mounted_vendor_files") {
        return;
    }
    let qnn = fixture("vendor/qnn.pte");
    let m = Mounted::new(&[qnn.as_os_str()]);
    let a = m.path("methods/shared_a/delegates/0-QnnBackend/qnn/context.bin");
    let b = m.path("methods/shared_b/delegates/0-QnnBackend/qnn/context.bin");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(&a).unwrap().ino(),
        std::fs::metadata(&b).unwrap().ino()
    );
    let o = oracle("qnn");
    let want = &o["methods"]["shared_a"]["artifacts"]["context.bin"]["sha256"];
    assert_eq!(sha256(&std::fs::read(&a).unwrap()), want.as_str().unwrap());
    let trt = fixture("vendor/tensorrt.pte");
    let m = Mounted::new(&[trt.as_os_str()]);
    let o = oracle("tensorrt");
    let plan = std::fs::read(m.path("methods/kv/delegates/0-TensorRTBackend/tensorrt/engine.plan"))
        .unwrap();
    assert_eq!(
        sha256(&plan),
        o["methods"]["kv"]["artifacts"]["engine.plan"]["sha256"]
            .as_str()
            .unwrap()
    );
    let err = std::fs::read_to_string(
        m.path("methods/misaligned/delegates/0-TensorRTBackend/tensorrt/ERROR.txt"),
    )
    .unwrap();
    assert!(err.contains("not 16-byte aligned"), "{err}");
}

/// The payload of method `method` of vendor fixture `name`, as written.
fn payload(name: &str, method: &str) -> Vec<u8> {
    let o = oracle(name);
    let w = &o["methods"][method];
    let pte = std::fs::read(fixture(&format!("vendor/{name}.pte"))).unwrap();
    let at = w["payload_offset"].as_u64().unwrap() as usize;
    pte[at..at + w["payload_size"].as_u64().unwrap() as usize].to_vec()
}

/// Backend id, folder, payload, compile specs and named data.
type Case = (
    &'static str,
    &'static str,
    Vec<u8>,
    Vec<(String, Vec<u8>)>,
    Vec<(String, Vec<u8>)>,
);

/// Every truncation and byte flip of a payload of each backend: the tree
/// builds, every file reads within its size, never past the payload.
#[test]
fn hostile_payloads_leave_a_partial_tree() {
    use writer::payloads::{mutate_payload, one_delegate};
    let so = read(
        &view("vendor/aoti.pte"),
        "methods/metal/delegates/0-MetalBackend/aoti/model.so",
    );
    let cases: Vec<Case> = vec![
        (
            "TensorRTBackend",
            "tensorrt",
            payload("tensorrt", "kv"),
            vec![],
            vec![],
        ),
        (
            "NeuropilotBackend",
            "mediatek",
            payload("mediatek", "shared"),
            vec![("ExtractSharedBlobKey".into(), b"k".to_vec())],
            vec![("k".into(), vec![1; 48])],
        ),
        (
            "NeutronBackend",
            "nxp",
            payload("nxp", "forward"),
            vec![],
            vec![],
        ),
        (
            "QnnBackend",
            "qnn",
            payload("qnn", "forward"),
            {
                let v = view("vendor/qnn.pte");
                let specs = json(
                    &v,
                    "methods/forward/delegates/0-QnnBackend/qnn/compile_specs.json",
                );
                let hex = specs["raw_hex"].as_str().unwrap().to_owned();
                let bytes = (0..hex.len() / 2)
                    .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                    .collect();
                vec![("qnn_compile_spec".into(), bytes)]
            },
            vec![],
        ),
        ("CudaBackend", "aoti", payload("aoti", "cuda"), vec![], {
            let o = oracle("aoti");
            let key = o["methods"]["cuda"]["named"]["model.so"]["key"]
                .as_str()
                .unwrap()
                .to_owned();
            vec![
                (key, so.clone()),
                ("cuda_fqn_weight:cuda:l1.bias".into(), vec![0; 16]),
            ]
        }),
        (
            "MetalBackend",
            "aoti",
            payload("aoti", "metal"),
            vec![],
            vec![],
        ),
    ];
    let start = std::time::Instant::now();
    for (id, folder, p, specs, named) in cases {
        assert!(!p.is_empty(), "{id}");
        let errors = mutate_payload(id, folder, &p, |m| {
            one_delegate(id, m, specs.clone(), named.clone())
        });
        assert!(errors > 0, "{id}: no mutation gave ERROR.txt");
    }
    // Flipping bytes of the QNN options alone: the compile spec is read
    // with every offset checked.
    let v = view("vendor/qnn.pte");
    let specs = json(
        &v,
        "methods/forward/delegates/0-QnnBackend/qnn/compile_specs.json",
    );
    let hex = specs["raw_hex"].as_str().unwrap().to_owned();
    let spec: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let body = payload("qnn", "forward");
    for i in 0..spec.len() {
        for m in [spec[..i].to_vec(), {
            let mut m = spec.clone();
            m[i] ^= 0xff;
            m
        }] {
            let bytes = one_delegate(
                "QnnBackend",
                body.clone(),
                vec![("qnn_compile_spec".into(), m)],
                vec![],
            );
            let tree = ptefs::tree::Tree::from_bytes("x.pte", &bytes).unwrap();
            writer::payloads::read_all(&tree, &bytes);
        }
    }
    eprintln!("hostile payloads: {:?}", start.elapsed());
}

/// Three one-delegate TensorRT programs: the fixture's `forward` payload,
/// the same with its engine's last byte flipped, and its `kv` payload.
fn tensorrt_programs() -> [Vec<u8>; 3] {
    use writer::payloads::one_delegate;
    let a = payload("tensorrt", "forward");
    let mut b = a.clone();
    let last = b.len() - 1;
    b[last] ^= 1;
    let c = payload("tensorrt", "kv");
    let specs = || vec![("level".to_owned(), b"1".to_vec())];
    [a, b, c].map(|p| one_delegate("TensorRTBackend", p, specs(), vec![]))
}

/// docs/backends/README.md diffs `tests/fixtures/vendor/tensorrt_diff/a.pte`
/// and `c.pte`, which are these programs (`PTEFS_DOCS_WRITE=1` writes them
/// again).
#[test]
fn the_documented_diff_fixtures_are_these_programs() {
    let [a, _, c] = tensorrt_programs();
    let dir = fixture("vendor/tensorrt_diff");
    for (name, bytes) in [("a.pte", a), ("c.pte", c)] {
        let path = dir.join(name);
        if std::env::var("PTEFS_DOCS_WRITE").as_deref() == Ok("1") {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        assert!(
            std::fs::read(&path).unwrap() == bytes,
            "{} is not the program these tests build",
            path.display()
        );
    }
}

/// `diff` of two TensorRT programs whose engines differ in one byte, and
/// whose metadata differ in size: header fields, artifact sizes, and
/// whether the bytes are equal.
#[test]
fn diff_compares_headers_and_artifacts() {
    let [a, b, c] = tensorrt_programs();
    let dir = tempfile::tempdir().unwrap();
    let pa = write_file(dir.path(), "a.pte", &a);
    let pb = write_file(dir.path(), "b.pte", &b);
    let pc = write_file(dir.path(), "c.pte", &c);
    let out = |x: &std::path::Path, y: &std::path::Path| {
        let o = ptefs()
            .args(["diff", x.to_str().unwrap(), y.to_str().unwrap()])
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    let text = out(&pa, &pb);
    assert!(
        text.contains("  engine.plan: 100 bytes -> 100 bytes, bytes differ\n"),
        "{text}"
    );
    assert!(
        text.contains("  metadata.json: 258 bytes -> 258 bytes, bytes equal\n"),
        "{text}"
    );
    let text = out(&pa, &pc);
    assert!(text.contains("  header magic: TR01 -> TR02\n"), "{text}");
    assert!(
        text.contains("  metadata.json: 258 bytes -> 469 bytes, bytes differ\n"),
        "{text}"
    );
}

/// The image a remote source builds of `bytes` from its fetch plan: the
/// planned ranges, zeros elsewhere; and how many bytes it fetched.
fn planned(bytes: &[u8]) -> (Vec<u8>, u64) {
    use ptefs::format::Ranges;
    let mut image = vec![0u8; bytes.len()];
    let mut have = Ranges::default();
    let mut fetched = 0;
    for round in 0.. {
        assert!(round < 64, "the plan does not converge");
        let want: Vec<std::ops::Range<u64>> = ptefs::tree::fetch_plan(&image, &have)
            .iter()
            .map(|r| r.start.min(r.end)..r.end.min(bytes.len() as u64))
            .flat_map(|r| have.missing(&r))
            .collect();
        if want.is_empty() {
            return (image, fetched);
        }
        for r in want {
            let (a, b) = (r.start as usize, r.end as usize);
            image[a..b].copy_from_slice(&bytes[a..b]);
            fetched += r.end - r.start;
            have.insert(r);
        }
    }
    unreachable!()
}

/// Every path of `t` with what it holds: generated or rendered bytes, or
/// where its source bytes are.
fn shape(t: &ptefs::tree::Tree) -> std::collections::BTreeMap<String, String> {
    use ptefs::tree::{Content, ROOT};
    t.walk(ROOT)
        .map(|(path, ino)| {
            let what = match t.file(ino) {
                None => "dir".to_owned(),
                Some(f) => match &*f.content {
                    Content::Generated(b) => format!("generated {}", sha256(b)),
                    Content::Lazy(l) => format!("lazy {}", sha256(&l.rendered())),
                    other => format!("{:?}", std::mem::discriminant(other)),
                },
            };
            (path, what)
        })
        .collect()
}

/// A remote source reads each vendor program from its fetch plan alone
/// and gets the same tree: headers and metadata are fetched, the
/// artifacts (a 1.3 MB QNN context here) are not.
#[test]
fn fetch_plans_read_headers_not_artifacts() {
    for name in [
        "tensorrt",
        "mediatek",
        "nxp",
        "qnn",
        "aoti",
        "stories260k_hybrid_llama_qnn",
    ] {
        let bytes = std::fs::read(fixture(&format!("vendor/{name}.pte"))).unwrap();
        let (image, fetched) = planned(&bytes);
        let whole = ptefs::tree::Tree::from_bytes("f.pte", &bytes).unwrap();
        let part = ptefs::tree::Tree::from_bytes("f.pte", &image).unwrap();
        let (w, p) = (shape(&whole), shape(&part));
        for (path, s) in &w {
            assert_eq!(p.get(path), Some(s), "{name}: {path}");
        }
        assert_eq!(w.len(), p.len(), "{name}: paths");
        assert_eq!(whole.warnings, part.warnings, "{name}");
        if name.starts_with("stories") {
            assert!(fetched < 64 * 1024, "{name}: fetched {fetched} bytes");
        }
    }
}
