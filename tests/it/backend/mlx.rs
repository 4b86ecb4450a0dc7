//! MLX delegates decoded (`mlx/`) on a real export, checked against its
//! oracle (ExecuTorch's own `pte_inspector` and generated bindings: header,
//! every graph field, instruction, named slot and tensor meta; the named
//! data's lengths and sha256), through a mount, in `inspect`, and on
//! hostile payloads.

use crate::common;
use crate::writer;

use std::path::PathBuf;

use common::*;
use ptefs::view::View;
use serde_json::Value;

const DIR: &str = "methods/forward/delegates/0-MLXBackend";
const MLX: &str = "methods/forward/delegates/0-MLXBackend/mlx";

fn pte() -> PathBuf {
    fixture("backends/mlx_mlp.pte")
}

fn oracle() -> Value {
    let text = std::fs::read_to_string(fixture("backends/mlx_mlp.oracle.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn open() -> View {
    view_of(&[pte()], &[])
}

/// `want` (the oracle's value of an op field) against `got` (graph.json's):
/// the oracle writes a tensor slot as `{"tid": n}`, graph.json as the
/// schema's `Tid` struct, `{"idx": n}`.
fn same_field(want: &Value, got: &Value, at: &str) {
    match (want, got) {
        (Value::Object(w), _) if w.contains_key("tid") => {
            assert_eq!(got["idx"], w["tid"], "{at}");
        }
        (Value::Number(w), Value::Number(g)) => {
            assert_eq!(w.as_f64(), g.as_f64(), "{at}");
        }
        (Value::Array(w), Value::Array(g)) => {
            assert_eq!(w.len(), g.len(), "{at}");
            for (k, (a, b)) in w.iter().zip(g).enumerate() {
                same_field(a, b, &format!("{at}[{k}]"));
            }
        }
        _ => assert_eq!(want, got, "{at}"),
    }
}

#[test]
fn header_and_graph_are_what_the_oracle_read() {
    let o = oracle();
    let v = open();
    let d = &o["execution_plan"][0]["delegates"][0];
    let payload = read(&v, &format!("{DIR}/processed.bin"));
    assert_eq!(sha256(&payload), d["payload_sha256"]);
    let inner = &o["mlx_inner"][0];
    let h = json(&v, &format!("{MLX}/header.json"));
    assert_eq!(h["magic"], inner["header"]["magic"]);
    assert_eq!(h["header_length"], inner["MLX_HEADER_LENGTH"]);
    assert_eq!(
        h["data_segment_offset"],
        inner["header"]["data_segment_offset"]
    );
    assert_eq!(h["data_segment_size"], inner["header"]["data_segment_size"]);
    assert_eq!(h["flatbuffer_size"], inner["flatbuffer_size"]);
    assert_eq!(h["payload_size"], d["payload_len"]);
    let at = d["payload_abs_offset"].as_u64().unwrap();
    assert_eq!(h["payload_file_offset"], at);
    assert_eq!(h["flatbuffer_file_offset"], at + 24);

    let want = &inner["graph"];
    let g = json(&v, &format!("{MLX}/graph.json"));
    for key in [
        "version",
        "num_constant_tensors",
        "num_input_tensors",
        "num_output_tensors",
        "num_mutable_buffer_tensors",
        "num_temp_tensors",
        "num_values",
        "main_chain_idx",
        "init_chain_idx",
    ] {
        assert_eq!(g[key], want[key], "{key}");
    }
    let len = |v: &Value| v.as_array().unwrap().len();
    assert_eq!(
        len(&g["instruction_chains"]),
        want["num_instruction_chains"]
    );
    for (list, n) in [
        ("input_map", "input_map_length"),
        ("output_map", "output_map_length"),
        ("mutable_buffer_map", "mutable_buffer_map_length"),
        ("named_slots", "named_slots_length"),
        ("tensor_meta", "tensor_meta_length"),
    ] {
        assert_eq!(len(&g[list]), want[n], "{list}");
    }
    for list in ["input_map", "output_map", "mutable_buffer_map"] {
        for (w, s) in want[list]
            .as_array()
            .unwrap()
            .iter()
            .zip(g[list].as_array().unwrap())
        {
            assert_eq!(s["idx"], w["idx"], "{list}");
            assert_eq!(w["slot_type"], 0);
            assert_eq!(s["slot_type"], "TensorSlot", "{list}");
        }
    }
    for (w, s) in want["named_slots"]
        .as_array()
        .unwrap()
        .iter()
        .zip(g["named_slots"].as_array().unwrap())
    {
        assert_eq!(s["name"], w["name"]);
        assert_eq!(s["slot"]["idx"], w["slot_idx"]);
        assert_eq!(w["slot_type"], 0);
        assert_eq!(s["slot"]["slot_type"], "TensorSlot");
    }
    for (w, m) in want["tensor_meta"]
        .as_array()
        .unwrap()
        .iter()
        .zip(g["tensor_meta"].as_array().unwrap())
    {
        let shape: Vec<Value> = m["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["value"].clone())
            .collect();
        assert_eq!(
            Value::Array(shape),
            w["shape"],
            "tensor_meta {}",
            w["index"]
        );
        assert_eq!(m["scalar_type"], w["scalar_type"]);
        // An absent vector (null here) is one of length 0 to the Python
        // bindings.
        let dim_order = if m["dim_order"].is_null() {
            serde_json::json!([])
        } else {
            m["dim_order"].clone()
        };
        assert_eq!(dim_order, w["dim_order"]);
    }
    for (c, wc) in want["instruction_chains"]
        .as_array()
        .unwrap()
        .iter()
        .zip(g["instruction_chains"].as_array().unwrap())
    {
        let wi = c["instructions"].as_array().unwrap();
        let gi = wc["instructions"].as_array().unwrap();
        assert_eq!(wi.len(), gi.len());
        for (w, i) in wi.iter().zip(gi) {
            let at = format!("instruction {}", w["instr_idx"]);
            assert_eq!(i["op_type_id"], w["op_type"], "{at}");
            assert_eq!(i["op_type"], w["op_name"], "{at}");
            let mut fields = 0;
            for (k, wv) in w.as_object().unwrap() {
                if matches!(k.as_str(), "instr_idx" | "op_type" | "op_name") {
                    continue;
                }
                same_field(wv, &i["op"][k], &format!("{at}.{k}"));
                fields += 1;
            }
            // Every field graph.json shows that the oracle does not is
            // unset (null).
            let shown = i["op"].as_object().unwrap();
            let extra = shown
                .iter()
                .filter(|(k, v)| !v.is_null() && w.get(k.as_str()).is_none());
            assert_eq!(extra.count(), 0, "{at}: {shown:?}");
            assert!(fields >= 2, "{at}");
        }
    }
    assert!(v.tree.resolve(&format!("{MLX}/ERROR.txt")).is_none());
}

#[test]
fn constants_are_the_named_data_typed_by_their_slots() {
    let o = oracle();
    let v = open();
    let g = &o["mlx_inner"][0]["graph"];
    let index = json(&v, &format!("{MLX}/weights/index.json"));
    let entries = index.as_array().unwrap();
    let constants: Vec<&Value> = g["named_slots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["slot_idx"].as_u64().unwrap() < g["num_constant_tensors"].as_u64().unwrap())
        .collect();
    assert_eq!(entries.len(), constants.len());
    assert_eq!(entries.len(), 5);
    for (s, e) in constants.iter().zip(entries) {
        let key = s["name"].as_str().unwrap();
        assert_eq!(e["key"], key);
        assert_eq!(e["tid"], s["slot_idx"]);
        let named = o["named_data_payloads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["key"] == key)
            .unwrap();
        let bin = read(
            &v,
            &format!("{MLX}/weights/{}", e["name"].as_str().unwrap()),
        );
        assert_eq!(bin.len() as u64, named["len"].as_u64().unwrap(), "{key}");
        assert_eq!(sha256(&bin), named["sha256"], "{key}");
        let hex: String = bin.iter().take(64).map(|x| format!("{x:02x}")).collect();
        assert_eq!(hex, named["first_64_hex"], "{key}");
        let meta = &g["tensor_meta"][s["slot_idx"].as_u64().unwrap() as usize];
        assert_eq!(e["shape"], meta["shape"], "{key}");
        assert_eq!(meta["scalar_type"], 6);
        assert_eq!(e["dtype"], "FLOAT");
        let npy = read(&v, &format!("{MLX}/weights/{}", e["npy"].as_str().unwrap()));
        assert!(
            npy.starts_with(b"\x93NUMPY") && npy.ends_with(&bin),
            "{key}"
        );
        assert!(!e["users"].as_array().unwrap().is_empty(), "{key}");
    }
    // graph.json points each constant's named slot at its file.
    let graph = json(&v, &format!("{MLX}/graph.json"));
    let slot = &graph["named_slots"][0];
    let path = slot["ptefs_path"].as_str().unwrap();
    assert_eq!(read(&v, path).len(), 2048);
}

#[test]
fn code_and_graph_show_every_instruction() {
    let v = open();
    let code = String::from_utf8(read(&v, &format!("{MLX}/code.txt"))).unwrap();
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(lines.len(), 4 + 5, "{code}");
    assert_eq!(lines[1], "inputs: %5");
    assert_eq!(
        lines[5],
        "001 AddmmNode mat1=%5:float[1,16] mat2=%8 bias=%1:float[32] alpha=1.0 beta=1.0 -> %7"
    );
    assert_eq!(lines[6], "002 MaximumNode a=%7 b=%4:float[] -> %8");
    let dot = read(&v, &format!("{MLX}/graph.dot"));
    let svg = common::dot_svg("graph.dot", &dot);
    // Graphviz writes `-` as `&#45;` in SVG text.
    assert!(svg.contains("001&#45;AddmmNode"), "{svg}");
    assert!(svg.contains("d2ef/l1.weight"));
}

#[test]
fn inspect_shows_ops_and_constant_bytes() {
    let out = ptefs().arg("inspect").arg(pte()).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("forward #0 MLXBackend: 1104 bytes"), "{text}");
    assert!(text.contains("5 nodes, 9 values"), "{text}");
    assert!(text.contains("2  AddmmNode"), "{text}");
    assert!(text.contains("2  TransposeNode"), "{text}");
    assert!(text.contains("1  MaximumNode"), "{text}");
    assert!(text.contains("3236 bytes of FLOAT"), "{text}");
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
        if path.contains("/mlx/") {
            assert_eq!(std::fs::read(m.path(&path)).unwrap(), bytes, "{path}");
            n += 1;
        }
    }
    assert_eq!(
        n,
        4 + 11,
        "header, graph, code, dot; 5 weights with .npy, index.json"
    );
}

/// The payload and the program's named data.
fn payload_and_named() -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let v = open();
    let payload = read(&v, &format!("{DIR}/processed.bin"));
    let index = json(&v, "named/index.json");
    let named = index
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let key = e["key"].as_str().unwrap().to_owned();
            let bytes = read(&v, &format!("named/{}", e["name"].as_str().unwrap()));
            (key, bytes)
        })
        .collect();
    (payload, named)
}

#[test]
fn every_truncation_and_byte_flip_of_the_payload_is_survived() {
    let (payload, named) = payload_and_named();
    assert_eq!(named.len(), 5);
    let errors = writer::payloads::mutate_payload("MLXBackend", "mlx", &payload, |p| {
        writer::payloads::one_delegate("MLXBackend", p, Vec::new(), named.clone())
    });
    assert!(errors >= payload.len(), "only {errors} reported");
}

fn folder_of(payload: Vec<u8>, named: Vec<(String, Vec<u8>)>) -> (tempfile::TempDir, View) {
    let bytes = writer::payloads::one_delegate("MLXBackend", payload, Vec::new(), named);
    view_bytes("x.pte", &bytes)
}

fn error_of(payload: Vec<u8>) -> String {
    let (_d, v) = folder_of(payload, Vec::new());
    String::from_utf8(read(&v, &format!("{MLX}/ERROR.txt"))).unwrap()
}

#[test]
fn hostile_payloads_are_reported_with_offsets() {
    let (payload, named) = payload_and_named();
    let mut p = payload.clone();
    p[4] = b'X';
    assert!(error_of(p).contains("MLX header at offset 4: magic \"XLX0\""));
    let mut p = payload.clone();
    p[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let e = error_of(p);
    assert!(
        e.contains("MLX header (offsets 8..24): data segment"),
        "{e}"
    );
    let mut p = payload.clone();
    p[8..16].copy_from_slice(&30u64.to_le_bytes());
    assert!(error_of(p).contains("data segment offset 30 leaves no room"));
    let e = error_of(payload[..200].to_vec());
    assert!(
        e.contains("MLX header (offsets 8..24): data segment"),
        "{e}"
    );
    // The graph's root offset pointing past the flatbuffer.
    let mut p = payload.clone();
    p[24..28].copy_from_slice(&0xfff0u32.to_le_bytes());
    let e = error_of(p);
    assert!(
        e.contains("MLXGraph flatbuffer at payload offset 24"),
        "{e}"
    );
    // Without the named data the graph still shows, each constant says why.
    let (_d, v) = folder_of(payload.clone(), Vec::new());
    let index = json(&v, &format!("{MLX}/weights/index.json"));
    let missing = index[0]["missing"].as_str().unwrap_or_default();
    assert!(
        missing.contains("constant %0: named data \"d2ef/l1.weight\" is not in the program"),
        "{index}"
    );
    assert!(v.tree.resolve(&format!("{MLX}/code.txt")).is_some());
    // An op tag this schema does not know: shown by number, not decoded.
    let tag = payload
        .windows(1)
        .enumerate()
        .filter(|(_, w)| w[0] == 41)
        .map(|(k, _)| k)
        .collect::<Vec<_>>();
    let mut unknown = 0;
    for at in tag {
        let mut p = payload.clone();
        p[at] = 250;
        let (_d, v) = folder_of(p, named.clone());
        if let Some(ino) = v.tree.resolve(&format!("{MLX}/code.txt")) {
            let code = String::from_utf8(read_ino(&v, ino)).unwrap();
            if code.contains("op250 (op type 250 not known)") {
                unknown += 1;
            }
        }
    }
    assert!(unknown >= 1, "no union tag found to change");
}

#[test]
fn a_remote_source_builds_the_same_folder_from_its_plan() {
    let bytes = std::fs::read(pte()).unwrap();
    common::fetched::same_from_plan(&bytes, MLX);
}

#[test]
fn diff_names_a_changed_constant_by_its_weight_file() {
    let mut changed = std::fs::read(pte()).unwrap();
    let v = open();
    let index = json(&v, &format!("{MLX}/weights/index.json"));
    // One byte of `l1.weight`'s named data, where the file has it.
    let at = index[0]["source"]["offset"].as_u64().unwrap() as usize + 1;
    changed[at] ^= 0x40;
    let dir = tempfile::tempdir().unwrap();
    let b = write_file(dir.path(), "b.pte", &changed);
    let out = ptefs().arg("diff").arg(pte()).arg(&b).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "tensor changed: methods/forward/delegates/0-MLXBackend/mlx/weights/l1.weight.bin"
        ),
        "{text}"
    );
    // Compared as the float32 values the weight's .npy has.
    assert!(text.contains("1 of 512 elements differ"), "{text}");
}

#[test]
fn constants_kept_in_a_data_file_beside_the_program_are_found() {
    let (payload, named) = payload_and_named();
    let dir = tempfile::tempdir().unwrap();
    let program = writer::payloads::one_delegate("MLXBackend", payload, Vec::new(), Vec::new());
    let pte = write_file(dir.path(), "m.pte", &program);
    let data = writer::DataFile {
        entries: named
            .iter()
            .map(|(k, b)| (k.clone(), None, writer::Bytes::Owned(b.clone())))
            .collect(),
    };
    write_file(dir.path(), "weights.ptd", &data.to_bytes());
    let v = view_of(&[pte], &[]);
    let index = json(&v, &format!("{MLX}/weights/index.json"));
    for (e, (key, bytes)) in index.as_array().unwrap().iter().zip(&named) {
        assert_eq!(&e["key"], key);
        assert_eq!(e["source"]["file"], "weights.ptd", "{e}");
        let bin = read(
            &v,
            &format!("{MLX}/weights/{}", e["name"].as_str().unwrap()),
        );
        assert_eq!(&bin, bytes, "{key}");
    }
}
