//! XNNPACK delegates decoded: every fixture's `xnnpack/` against the
//! independent oracle beside it (`<fixture>.xnnpack.oracle.jsonl`), `graph.json`
//! against flatc's own rendering of the payload, and payloads the writer
//! makes for what no fixture has (payload constant data, old
//! `constant_buffer` weights, 4-bit weights, hostile bytes).

use crate::common;

use std::collections::{BTreeMap, HashMap};

use common::flatc::*;
use common::xnnpack::*;
use common::*;
use serde_json::Value;

fn oracle(model: &str) -> Vec<Value> {
    let path = fixture(&format!("{model}.xnnpack.oracle.jsonl"));
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `.npy` header's dict and the bytes after the header.
fn npy(bytes: &[u8]) -> (String, &[u8]) {
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let dict = std::str::from_utf8(&bytes[10..10 + len])
        .unwrap()
        .trim_end()
        .to_owned();
    (dict, &bytes[10 + len..])
}

fn npy_dict(descr: &str, shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}")
}

fn dtype_of(datatype: &str) -> &'static str {
    match datatype {
        "xnn_datatype_fp32" => "<f4",
        "xnn_datatype_qcint8" | "xnn_datatype_qint8" => "|i1",
        "xnn_datatype_qcint32" | "xnn_datatype_qint32" => "<i4",
        other => panic!("no dtype for {other} in this test"),
    }
}

#[test]
fn every_constant_and_scale_blob_matches_the_oracle() {
    let mut checked = 0;
    for (model, v) in fixtures() {
        let index = json(&v, &format!("{DELEGATE}/xnnpack/weights/index.json"));
        let by_id: HashMap<u64, &Value> = index
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["value_id"].as_u64().unwrap(), e))
            .collect();
        let records = oracle(model);
        let summary = &records[0];
        assert_eq!(summary["backend"], "XnnpackBackend");
        assert_eq!(
            by_id.len() as u64,
            summary["constants"].as_u64().unwrap(),
            "{model}"
        );
        let mut scale_blobs = 0;
        let dir = format!("{DELEGATE}/xnnpack/weights");
        for rec in records[1..].iter().filter(|r| r["scale_of"].is_u64()) {
            let id = rec["scale_of"].as_u64().unwrap();
            let s = &by_id[&id]["scales"];
            assert_eq!(
                by_id[&id]["quantization"]["scheme"], rec["scheme"],
                "{model} {id}"
            );
            assert_eq!(s["count"], rec["num_scales"], "{model} {id}");
            assert_eq!(s["nbytes"], rec["nbytes"], "{model} {id}");
            assert_eq!(s["key"], rec["named_key"], "{model} {id}");
            assert_eq!(
                s["source"]["offset"], rec["source"]["offset"],
                "{model} {id}"
            );
            assert_eq!(rec["datatype"], "fp32");
            assert_eq!(s["numpy_dtype"], "<f4");
            let sbin = read(&v, &format!("{dir}/{}", s["name"].as_str().unwrap()));
            assert_eq!(
                sha256(&sbin),
                rec["sha256"].as_str().unwrap(),
                "{model} {id}"
            );
            scale_blobs += 1;
            checked += 1;
        }
        for rec in records[1..].iter().filter(|r| r["value"].is_u64()) {
            let id = rec["value"].as_u64().unwrap();
            let e = by_id
                .get(&id)
                .unwrap_or_else(|| panic!("{model}: no entry for {rec}"));
            assert_eq!(e["datatype"], rec["datatype"], "{model} {id}");
            assert_eq!(e["dims"], rec["dims"], "{model} {id}");
            assert_eq!(e["nbytes"], rec["nbytes"], "{model} {id}");
            assert_eq!(e["key"], rec["named_key"], "{model} {id}");
            assert_eq!(
                e["source"]["offset"], rec["source"]["offset"],
                "{model} {id}"
            );
            let file = if rec["where"] == "ptd" {
                rec["source"]["file"].clone()
            } else {
                Value::Null
            };
            assert_eq!(e["source"]["file"], file, "{model} {id}");
            let bin = read(&v, &format!("{dir}/{}", e["name"].as_str().unwrap()));
            assert_eq!(
                sha256(&bin),
                rec["sha256"].as_str().unwrap(),
                "{model} {id}"
            );
            let dims: Vec<u64> = rec["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            let descr = dtype_of(rec["datatype"].as_str().unwrap());
            let npy_bytes = read(&v, &format!("{dir}/{}", e["npy"].as_str().unwrap()));
            let (dict, data) = npy(&npy_bytes);
            assert_eq!(dict, npy_dict(descr, &dims), "{model} {id}");
            assert_eq!(data, &bin[..], "{model} {id}");
            match &rec["quant"] {
                Value::Null => assert!(
                    e["scales"].is_null() && e["quantization"].is_null(),
                    "{model} {id}"
                ),
                q => {
                    assert_eq!(e["quantization"]["scheme"], q["scheme"], "{model} {id}");
                    assert_eq!(
                        e["quantization"]["channel_dim"], q["channel_dim"],
                        "{model} {id}"
                    );
                    assert_eq!(
                        e["quantization"]["num_scales"], q["num_scales"],
                        "{model} {id}"
                    );
                    let s = &e["scales"];
                    assert_eq!(s["buffer_index"], q["scale_buffer_idx"], "{model} {id}");
                    let n = q["num_scales"].as_u64().unwrap();
                    let sbin = read(&v, &format!("{dir}/{}", s["name"].as_str().unwrap()));
                    assert_eq!(sbin.len() as u64, n * 4, "{model} {id}: fp32 scales");
                    let key = s["key"].as_str().unwrap();
                    assert_eq!(key, format!("scale_{}", sha256(&sbin)), "{model} {id}");
                    let snpy = read(&v, &format!("{dir}/{}", s["npy"].as_str().unwrap()));
                    let (dict, data) = npy(&snpy);
                    assert_eq!(dict, npy_dict("<f4", &[n]));
                    assert_eq!(data, &sbin[..]);
                    // The scale file is the named-data blob itself.
                    assert_eq!(read(&v, &format!("named/{key}.bin")), sbin);
                }
            }
            // The same bytes are also the named-data file.
            if rec["where"] == "named_data" {
                assert_eq!(
                    read(
                        &v,
                        &format!("named/{}.bin", rec["named_key"].as_str().unwrap())
                    ),
                    bin
                );
            }
            checked += 1;
        }
        assert_eq!(
            scale_blobs,
            summary["scale_buffers"].as_u64().unwrap(),
            "{model}"
        );
    }
    assert_eq!(checked, 106 + 4 + 4 + 4);
}

#[test]
fn graph_counts_ops_and_header_match_the_oracle() {
    for (model, v) in fixtures() {
        let rec = &oracle(model)[0];
        let x = format!("{DELEGATE}/xnnpack");
        let g = json(&v, &format!("{x}/graph.json"));
        let nodes = g["xnodes"].as_array().unwrap();
        assert_eq!(
            nodes.len() as u64,
            rec["xnodes"].as_u64().unwrap(),
            "{model}"
        );
        assert_eq!(
            g["xvalues"].as_array().unwrap().len() as u64,
            rec["xvalues"].as_u64().unwrap()
        );
        let mut ops: BTreeMap<String, u64> = BTreeMap::new();
        for n in nodes {
            *ops.entry(n["xnode_union_type"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        let want: BTreeMap<String, u64> = serde_json::from_value(rec["ops"].clone()).unwrap();
        assert_eq!(ops, want, "{model}");

        let code = String::from_utf8(read(&v, &format!("{x}/code.txt"))).unwrap();
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(
            lines.len(),
            nodes.len() + 1,
            "{model}: a header and a line per node"
        );
        for (i, (line, n)) in lines[1..].iter().zip(nodes).enumerate() {
            assert!(line.starts_with(&format!("{i}: ")), "{line}");
            let op = n["xnode_union_type"].as_str().unwrap();
            let out = n["xnode_union"]["output_id"].as_u64().unwrap();
            assert!(
                line.contains(&format!("-> %{out}:")),
                "{model}: {line} for {op}"
            );
        }

        let h = json(&v, &format!("{x}/header.json"));
        for k in [
            "magic",
            "header_length",
            "flatbuffer_offset",
            "flatbuffer_size",
            "constant_data_offset",
            "constant_data_size",
        ] {
            assert_eq!(h[k], rec["header"][k], "{model} {k}");
        }
        assert_eq!(h["identifier"], rec["identifier"]);
        assert_eq!(h["payload_file_offset"], rec["payload"]["offset"]);
        assert_eq!(h["payload_size"], rec["payload"]["nbytes"]);
        let processed = read(&v, &format!("{DELEGATE}/processed.bin"));
        assert_eq!(
            processed.len() as u64,
            rec["payload"]["nbytes"].as_u64().unwrap()
        );
    }
}

#[test]
fn every_constant_value_in_graph_json_has_its_file() {
    for (model, v) in fixtures() {
        let g = json(&v, &format!("{DELEGATE}/xnnpack/graph.json"));
        let mut n = 0;
        for x in g["xvalues"].as_array().unwrap() {
            let u = &x["xvalue_union"];
            let t = if u["tensor_value"].is_object() {
                &u["tensor_value"]
            } else {
                u
            };
            let constant = t["constant_buffer_idx"].as_u64().unwrap() != 0;
            assert_eq!(t["ptefs_path"].is_string(), constant, "{model}: {t}");
            if let Some(path) = t["ptefs_path"].as_str() {
                let want = t["dims"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap())
                    .product::<u64>();
                let bytes = read(&v, path);
                assert_eq!(bytes.len() as u64 % want, 0, "{model}: {path}");
                n += 1;
            }
        }
        assert!(n > 0, "{model}");
    }
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
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/xnnpack.fbs");
    for (model, v) in fixtures() {
        let x = format!("{DELEGATE}/xnnpack");
        let h = json(&v, &format!("{x}/header.json"));
        let processed = read(&v, &format!("{DELEGATE}/processed.bin"));
        let off = h["flatbuffer_offset"].as_u64().unwrap() as usize;
        let len = h["flatbuffer_size"].as_u64().unwrap() as usize;
        let want = flatc_print(&flatc, &schema, &processed[off..off + len]);
        let mut got = json(&v, &format!("{x}/graph.json"));
        strip_ptefs_paths(&mut got);
        same(&got, &want, model);
    }
}

#[test]
fn non_finite_bounds_are_strings() {
    let v = view("quant_xnnpack.pte");
    let text = String::from_utf8(read(&v, &format!("{DELEGATE}/xnnpack/graph.json"))).unwrap();
    let g: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(g["xnodes"][1]["output_min_max"]["output_max"], "inf");
    assert_eq!(g["xnodes"][1]["output_min_max"]["output_min"], 0.0);
    let code = String::from_utf8(read(&v, &format!("{DELEGATE}/xnnpack/code.txt"))).unwrap();
    assert!(code.contains("1: fully_connected %1:qint8[4,32] filter=%2:qcint8[64,32] bias=%3:qcint32[64] -> %4:qint8[4,64] min=0 max=inf\n"), "{code}");
}

#[test]
fn weights_are_named_by_layer_and_role() {
    let v = view("mv2_xnnpack.pte");
    let names = ls(&v, &format!("{DELEGATE}/xnnpack/weights"));
    // 106 values, each .bin and .npy, and index.json.
    assert_eq!(names.len(), 106 * 2 + 1);
    for want in [
        "001-conv2d.filter.bin",
        "001-conv2d.bias.npy",
        "002-depthwise_conv2d.filter.npy",
        "066-fully_connected.filter.bin",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    let index = json(&v, &format!("{DELEGATE}/xnnpack/weights/index.json"));
    let e = index
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "001-conv2d.filter.bin")
        .unwrap();
    assert_eq!(e["layout"]["stored"], "OHWI");
    assert_eq!(e["users"][0]["op"], "conv2d");
    // 67 distinct blobs for 106 values: some values share a named key.
    let keys: std::collections::HashSet<&str> = index
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 67);
}

#[test]
fn without_its_data_file_the_weights_are_listed_as_missing() {
    // The .ptd beside the fixture would be found by itself.
    let v = ptefs::view::View::open(&ptefs::view::Request {
        inputs: vec![fixture("xnnpack_external.pte")],
        auto_data: false,
        ..Default::default()
    })
    .unwrap();
    let index = json(&v, &format!("{DELEGATE}/xnnpack/weights/index.json"));
    let entries = index.as_array().unwrap();
    assert_eq!(entries.len(), 4);
    for e in entries {
        assert!(e["name"].is_null(), "{e}");
        assert!(
            e["missing"].as_str().unwrap().contains("named data key"),
            "{e}"
        );
    }
    assert_eq!(
        ls(&v, &format!("{DELEGATE}/xnnpack/weights")),
        ["index.json"]
    );
    assert!(
        v.tree
            .warnings
            .iter()
            .any(|w| w.contains("xnnpack/weights") || w.contains("weight")),
        "{:?}",
        v.tree.warnings
    );
    // The graph is still there.
    assert_eq!(
        json(&v, &format!("{DELEGATE}/xnnpack/graph.json"))["xnodes"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// NumPy loads every delegate weight and scale file with the dtype and
/// shape index.json gives, and the values of the `.bin` beside it.
const NUMPY_XNNPACK: &str = r#"
import json, pathlib, sys
import numpy as np
root = pathlib.Path(sys.argv[1])
n = 0
for index in sorted(root.rglob("xnnpack/weights/index.json")):
    d = index.parent
    for e in json.loads(index.read_text()):
        files = [(e["name"], e["npy"], e["numpy_dtype"], e["npy_shape"], False)]
        if e.get("scales"):
            s = e["scales"]
            files.append((s["name"], s["npy"], s["numpy_dtype"], [s["count"]], s["widened"]))
        for name, npy, dtype, shape, widened in files:
            raw = (d / name).read_bytes()
            if widened:
                want = (np.frombuffer(raw, dtype="<u2").astype("<u4") << 16).view("<f4")
            else:
                want = np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape)
            got = np.load(d / npy, mmap_mode="r")
            assert got.dtype == np.dtype(dtype) and list(got.shape) == shape, (npy, got.dtype, got.shape)
            assert np.array_equal(got, want, equal_nan=True), npy
            n += 1
print("checked", n)
"#;

#[test]
fn numpy_loads_every_weight_and_scale() {
    let dir = tempfile::tempdir().unwrap();
    for (model, v) in fixtures() {
        let out = dir.path().join(model);
        extract(&v, &out);
    }
    let text = python(NUMPY_XNNPACK, &[dir.path()]);
    assert!(
        text.contains(&format!("checked {}", 106 + 4 + 4 + 4)),
        "{text}"
    );
}

/// The report-side API (`delegate::decode_program`, `Decoded::summary`,
/// `weights_with_bytes`) agrees with the oracle too.
#[test]
fn summaries_and_weight_bytes_for_reports_match_the_oracle() {
    use ptefs::delegate::{NamedData, decode_program};
    use ptefs::format::{DataFile, ProgramFile};
    let ptd = std::fs::read(fixture("xnnpack_external.ptd")).unwrap();
    let ptd = DataFile::parse(&ptd).unwrap();
    for model in [
        "mv2_xnnpack.pte",
        "quant_xnnpack.pte",
        "xnnpack_external.pte",
    ] {
        let bytes = std::fs::read(fixture(model)).unwrap();
        let p = ProgramFile::parse(&bytes).unwrap();
        let named = NamedData::of(&p, &[&ptd]);
        let all = decode_program(&p, &named);
        assert_eq!(all.len(), 1);
        let d = all[0].decoded.as_ref().unwrap().as_ref().unwrap();
        let records = oracle(model);
        let s = d.summary();
        assert_eq!(s.nodes as u64, records[0]["xnodes"].as_u64().unwrap());
        assert_eq!(s.values as u64, records[0]["xvalues"].as_u64().unwrap());
        let want: BTreeMap<String, usize> =
            serde_json::from_value(records[0]["ops"].clone()).unwrap();
        assert_eq!(s.ops, want, "{model}");
        let weights = all[0].weights_with_bytes(&named);
        let mut total = 0;
        let (mut places, mut shared) = (std::collections::HashSet::new(), 0);
        for rec in records.iter().filter(|r| r["value"].is_u64()) {
            let (name, b) = weights
                .iter()
                .find(|(w, _)| u64::from(w.value_id) == rec["value"].as_u64().unwrap())
                .unwrap();
            assert_eq!(
                sha256(b.unwrap()),
                rec["sha256"].as_str().unwrap(),
                "{model}: {name:?}"
            );
            assert_eq!(name.datatype, rec["datatype"].as_str().unwrap());
            // Values whose bytes are one stored range share them: counted
            // once.
            let place = (rec["source"].to_string(), rec["nbytes"].as_u64());
            if places.insert(place) {
                total += rec["nbytes"].as_u64().unwrap();
            } else {
                shared += 1;
            }
        }
        let counted: u64 = s
            .constant_bytes
            .iter()
            .filter(|(k, _)| *k != "scales")
            .map(|(_, v)| v)
            .sum();
        assert_eq!(counted, total, "{model}");
        assert_eq!(s.shared_values, shared, "{model}");
    }
}

/// Finding the data files a program needs reads only the named-data keys
/// of its XNNPACK payloads (a schema of those alone): they must be the
/// keys the full decode finds its weights under, for payloads keeping
/// their weights in the program and in a `.ptd`.
#[test]
fn the_key_only_reading_finds_the_keys_the_decode_uses() {
    use ptefs::delegate::{NamedData, decode_program, referenced_named_keys};
    use ptefs::format::{self, Parsed};
    use std::collections::BTreeSet;
    for (pte, ptd) in [
        ("mv2_xnnpack.pte", None),
        ("xnnpack_external.pte", Some("xnnpack_external.ptd")),
    ] {
        let bytes = std::fs::read(common::fixture(pte)).unwrap();
        let data = ptd.map(|d| std::fs::read(common::fixture(d)).unwrap());
        let Ok(Parsed::Program(p)) = format::parse(&bytes) else {
            panic!("{pte} is a program");
        };
        let data = data.as_deref().map(|d| match format::parse(d) {
            Ok(Parsed::Data(d)) => d,
            other => panic!("{ptd:?} is a data file: {other:?}"),
        });
        let attached: Vec<_> = data.iter().collect();
        let read: BTreeSet<String> = referenced_named_keys(&p)
            .iter()
            .map(|(k, backend)| {
                assert_eq!(*backend, "XnnpackBackend");
                k.show().into_owned()
            })
            .collect();
        let decoded: BTreeSet<String> = decode_program(&p, &NamedData::of(&p, &attached))
            .into_iter()
            .filter_map(|d| d.decoded)
            .flat_map(|d| d.unwrap().weights())
            .filter_map(|(name, bytes)| {
                assert!(bytes.is_some(), "{pte}: {} has its bytes", name.name);
                name.key
            })
            .collect();
        assert!(!read.is_empty(), "{pte} refers to named data");
        assert_eq!(read, decoded, "{pte}");
    }
}
