//! OpenVINO delegates decoded (`openvino/`) on a real export (from the
//! executorch-numpy-runtime tests): the header against the payload's own
//! bytes, the regions adding up, the IR served decoded as `model.xml`
//! (parsed by Python's XML reader, its `Const` layers' bytes inside the
//! weights), through a mount, in `inspect`, and on hostile payloads.

use crate::common;
use crate::writer;

use std::ffi::OsStr;
use std::path::PathBuf;

use common::*;
use ptefs::view::View;
use serde_json::Value;

const DIR: &str = "methods/forward/delegates/0-OpenvinoBackend";
const OV: &str = "methods/forward/delegates/0-OpenvinoBackend/openvino";

fn pte() -> PathBuf {
    fixture("backends/openvino_tiny.pte")
}

fn open() -> View {
    view_of(&[pte()], &[])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn header_regions_and_weights_are_served_as_the_bytes_say() {
    let v = open();
    let payload = read(&v, &format!("{DIR}/processed.bin"));
    let h = json(&v, &format!("{OV}/header.json"));
    assert_eq!(h["payload_size"], payload.len());
    let at = h["payload_file_offset"].as_u64().unwrap();
    // The six u64s, read here from the payload itself.
    let mut end = 48;
    for (k, name) in ["custom_data", "weights", "model"].iter().enumerate() {
        let (off, size) = (u64_at(&payload, 16 * k), u64_at(&payload, 16 * k + 8));
        assert_eq!(h[name]["offset"], off, "{name}");
        assert_eq!(h[name]["size"], size, "{name}");
        assert_eq!(h[name]["file_offset"], at + off, "{name}");
        // The regions follow one another from the header to the end.
        assert_eq!(off, end, "{name} starts where the last region ended");
        end = off + size;
    }
    assert_eq!(
        end,
        payload.len() as u64,
        "the regions add up to the payload"
    );
    assert_eq!(h["model_xor_obfuscated"], true);
    let region = |name: &str| {
        let o = h[name]["offset"].as_u64().unwrap() as usize;
        let s = h[name]["size"].as_u64().unwrap() as usize;
        payload[o..o + s].to_vec()
    };
    let custom = read(&v, &format!("{OV}/custom_data.xml"));
    assert_eq!(custom, region("custom_data"));
    assert!(custom.starts_with(b"<?xml") && custom.windows(9).any(|w| w == b"<cnndata>"));
    let consts = read(&v, &format!("{OV}/consts.bin"));
    assert_eq!(consts, region("weights"));
    assert_eq!(consts.len(), 288);
    let stored = read(&v, &format!("{OV}/model.stored.bin"));
    assert_eq!(stored, region("model"));
    // model.xml is the stored IR XOR-ed with one repeating 12-byte key.
    let xml = read(&v, &format!("{OV}/model.xml"));
    assert_eq!(xml.len(), stored.len());
    let key: Vec<u8> = xml.iter().zip(&stored).map(|(a, b)| a ^ b).collect();
    assert!(
        key.chunks(12).all(|c| c == &key[..c.len()]),
        "not a 12-byte key"
    );
    assert!(xml.starts_with(b"<?xml"));
    assert!(v.tree.resolve(&format!("{OV}/ERROR.txt")).is_none());

    // Python's XML reader: every Const layer's bytes inside the weights,
    // and each one's .bin and .npy as the IR types them.
    let dir = tempfile::tempdir().unwrap();
    extract(&v, dir.path());
    let out = python(
        r#"
import json, sys, pathlib, xml.etree.ElementTree as ET
import numpy as np
ov = pathlib.Path(sys.argv[1]) / "methods/forward/delegates/0-OpenvinoBackend/openvino"
net = ET.parse(ov / "model.xml").getroot()
consts = (ov / "consts.bin").read_bytes()
index = {e["layer"]: e for e in json.loads((ov / "weights/index.json").read_text())}
layers = net.find("layers").findall("layer")
n = 0
for pos, l in enumerate(layers):
    if l.get("type") != "Const":
        continue
    d = l.find("data")
    off, size = int(d.get("offset")), int(d.get("size"))
    assert off + size <= len(consts), (off, size)
    shape = [int(x) for x in d.get("shape").split(",")] if d.get("shape").strip() else []
    e = index[pos]
    assert e["offset"] == off and e["size"] == size and e["shape"] == shape, e
    assert e["element_type"] == d.get("element_type"), e
    bin_ = (ov / "weights" / e["name"]).read_bytes()
    assert bin_ == consts[off:off + size], e["name"]
    arr = np.load(ov / "weights" / e["npy"])
    assert list(arr.shape) == shape and arr.dtype == np.float32, (arr.shape, arr.dtype)
    assert arr.tobytes() == bin_
    users = [x for x in net.find("edges") if x.get("from-layer") == l.get("id")]
    assert [u["layer"] for u in e["users"]] == [u.get("to-layer") for u in users], e
    n += 1
print("consts", n, "layers", len(layers))
"#,
        &[dir.path()],
    );
    assert!(out.contains("consts 2 layers 6"), "{out}");
}

#[test]
fn code_and_graph_show_every_layer() {
    let v = open();
    let code = String::from_utf8(read(&v, &format!("{OV}/code.txt"))).unwrap();
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(
        lines[0],
        "# OpenVINO IR \"Model0\" version 11: 6 layers, 5 edges, 2 constants"
    );
    assert_eq!(lines.len(), 7);
    assert!(
        lines[4].starts_with(
            "3 FullyConnected \"aten_addmm_default/aten.addmm.default/Add\" %0.0 %1.0 %2.0 -> %3.3:FP32[1,8]"
        ),
        "{code}"
    );
    let g = json(&v, &format!("{OV}/graph.json"));
    assert_eq!(g["layers"].as_array().unwrap().len(), 6);
    assert_eq!(g["edges"].as_array().unwrap().len(), 5);
    let path = g["layers"][1]["ptefs_path"].as_str().unwrap();
    assert_eq!(read(&v, path).len(), 256);
    let dot = read(&v, &format!("{OV}/graph.dot"));
    let svg = common::dot_svg("graph.dot", &dot);
    assert!(svg.contains("FullyConnected"));
}

#[test]
fn inspect_counts_the_weights_as_weights() {
    let out = ptefs().arg("inspect").arg(pte()).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("6 nodes, 5 values"), "{text}");
    assert!(text.contains("2  Const"), "{text}");
    assert!(text.contains("288 bytes of f32"), "{text}");
    assert!(
        text.contains("delegate weights                    288 bytes"),
        "{text}"
    );
    assert!(
        text.contains("delegate blobs                     3481 bytes"),
        "{text}"
    );
    let j = ptefs_json([OsStr::new("inspect"), "--json".as_ref(), pte().as_os_str()]);
    let total: u64 = j["composition"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(total, j["file_size"].as_u64().unwrap());
}

#[test]
fn a_mount_serves_the_folder_byte_for_byte() {
    if !common::mounted::fuse_or_skip("a_mount_serves_the_folder_byte_for_byte") {
        return;
    }
    let v = open();
    let p = pte();
    let m = common::mounted::Mounted::new(&[p.as_os_str()]);
    let mut n = 0;
    for (path, bytes) in files(&v) {
        if path.contains("/openvino/") {
            assert_eq!(std::fs::read(m.path(&path)).unwrap(), bytes, "{path}");
            n += 1;
        }
    }
    assert_eq!(n, 8 + 5, "8 files, 2 weights with .npy, index.json");
}

fn payload() -> Vec<u8> {
    read(&open(), &format!("{DIR}/processed.bin"))
}

#[test]
fn every_truncation_and_byte_flip_of_the_payload_is_survived() {
    let p = payload();
    let errors = writer::payloads::mutate_payload("OpenvinoBackend", "openvino", &p, |m| {
        writer::payloads::one_delegate("OpenvinoBackend", m, Vec::new(), Vec::new())
    });
    // Every truncation cuts the IR short.
    assert!(errors >= p.len(), "only {errors} reported");
}

fn folder_of(payload: Vec<u8>) -> (tempfile::TempDir, View) {
    let bytes = writer::payloads::one_delegate("OpenvinoBackend", payload, Vec::new(), Vec::new());
    view_bytes("x.pte", &bytes)
}

fn error_of(payload: Vec<u8>) -> String {
    let (_d, v) = folder_of(payload);
    String::from_utf8(read(&v, &format!("{OV}/ERROR.txt"))).unwrap()
}

/// The fixture's payload with its IR replaced by `xml` (stored plainly).
fn with_ir(xml: &str) -> Vec<u8> {
    let mut p = payload();
    let at = u64_at(&p, 32) as usize;
    p.truncate(at);
    p.extend_from_slice(xml.as_bytes());
    p[40..48].copy_from_slice(&(xml.len() as u64).to_le_bytes());
    p
}

#[test]
fn hostile_payloads_are_reported_with_offsets() {
    let mut p = payload();
    p[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
    let e = error_of(p);
    assert!(
        e.contains("OpenVINO header (offsets 32..48): model XML"),
        "{e}"
    );
    let e = error_of(vec![0; 20]);
    assert!(
        e.contains("payload is 20 bytes, the header needs 48"),
        "{e}"
    );
    let mut p = payload();
    p[392] ^= 0x55;
    let e = error_of(p);
    assert!(
        e.contains("model XML at payload offset 392: neither its 3377 bytes"),
        "{e}"
    );
    let e = error_of(with_ir(
        "<?xml version=\"1.0\"?><net version=\"11\"><layers><layer>",
    ));
    assert!(e.contains("model.xml at byte"), "{e}");
    assert!(e.contains("the IR stored at payload offset 392"), "{e}");
    // A Const layer past the weights: the rest is shown, the weight says why.
    let (_d, v) = folder_of(with_ir(
        r#"<?xml version="1.0"?><net name="m" version="11"><layers>
<layer id="1" name="../w" type="Const" version="opset1"><data element_type="f32" shape="100" offset="200" size="400"/></layer>
<layer id="2" name="ok" type="Const" version="opset1"><data element_type="i4" shape="2" offset="0" size="1"/></layer>
</layers><edges/></net>"#,
    ));
    let index = json(&v, &format!("{OV}/weights/index.json"));
    let missing = index[0]["missing"].as_str().unwrap_or_default();
    assert!(
        missing.contains("Const layer 1 (\"../w\"): offset 200 and size 400 in the weights region"),
        "{index}"
    );
    assert_eq!(index[1]["name"], "ok.bin");
    assert_eq!(index[1]["npy"], Value::Null, "no NumPy view of i4");
    assert!(v.tree.resolve(&format!("{OV}/ERROR.txt")).is_none());
}

#[test]
fn a_remote_source_fetches_the_ir_but_not_the_weights() {
    let bytes = std::fs::read(pte()).unwrap();
    let image = common::fetched::same_from_plan(&bytes, OV);
    let v = open();
    let h = json(&v, &format!("{OV}/header.json"));
    let at = |k: &str| h[k]["file_offset"].as_u64().unwrap() as usize;
    let size = |k: &str| h[k]["size"].as_u64().unwrap() as usize;
    let (w, m) = (at("weights"), at("model"));
    assert!(image[w..w + size("weights")].iter().all(|&x| x == 0));
    assert_eq!(image[m..m + size("model")], bytes[m..m + size("model")]);
}
