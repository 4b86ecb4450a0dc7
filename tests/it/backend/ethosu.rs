//! Ethos-U delegates decoded (`ethos-u/`), on real exports checked against
//! their oracles (every `vela_bin_stream` block's offsets, size, external
//! flag and sha256; the external weights found in the `.ptd` beside the
//! program), through a real mount, in `inspect`, and on hostile payloads.

use crate::common;
use crate::writer;

use std::path::PathBuf;

use common::*;
use ptefs::view::View;
use serde_json::Value;

const DIR: &str = "methods/forward/delegates/0-EthosUBackend";

fn backend_fixture(name: &str) -> PathBuf {
    fixture(&format!("backends/{name}"))
}

fn oracle(stem: &str) -> Value {
    let text = std::fs::read_to_string(backend_fixture(&format!("{stem}.oracle.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn open(stem: &str) -> View {
    view_of(&[backend_fixture(&format!("{stem}.pte"))], &[])
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const FIXTURES: [&str; 2] = ["ethosu55_mlp", "ethosu85_conv_extweights"];

#[test]
fn every_block_the_oracle_lists_is_served_byte_exact() {
    for stem in FIXTURES {
        let o = oracle(stem);
        let v = open(stem);
        let d = &o["execution_plan"][0]["delegates"][0];
        assert_eq!(d["id"], "EthosUBackend");
        let payload = read(&v, &format!("{DIR}/processed.bin"));
        assert_eq!(sha256(&payload), d["payload_sha256"], "{stem}");
        let at = u64_of(&d["payload_abs_offset"]);
        let h = json(&v, &format!("{DIR}/ethos-u/header.json"));
        assert_eq!(h["payload_file_offset"], at);
        assert_eq!(h["payload_size"], d["payload_len"]);
        let blocks = o["arm_inner"][0]["vela_blocks"].as_array().unwrap();
        assert_eq!(
            h["blocks"].as_array().unwrap().len(),
            blocks.len(),
            "{stem}"
        );
        for (b, hb) in blocks.iter().zip(h["blocks"].as_array().unwrap()) {
            let name = b["name"].as_str().unwrap();
            let at_name = format!("{stem}: {name}");
            assert_eq!(hb["name"], name);
            assert_eq!(hb["header_offset"], b["header_offset"], "{at_name}");
            assert_eq!(hb["data_offset"], b["data_offset"], "{at_name}");
            assert_eq!(hb["size"], b["size"], "{at_name}");
            assert_eq!(hb["external"], b["external_ref"], "{at_name}");
            assert_eq!(hb["header_file_offset"], at + u64_of(&b["header_offset"]));
            assert_eq!(hb["data_file_offset"], at + u64_of(&b["data_offset"]));
            let stored = if u64_of(&b["external_ref"]) == 1 {
                let key = b["external_key"].as_str().unwrap();
                assert_eq!(hb["external_key"], key, "{at_name}");
                let key_file = read(&v, &format!("{DIR}/ethos-u/{name}.key"));
                assert_eq!(key_file, key.as_bytes());
                // The block's bytes are the named data in the `.ptd`.
                let ptd = o["ptd"][0]["named_data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["key"] == key)
                    .unwrap();
                let bytes = read(&v, &format!("{DIR}/ethos-u/{name}.bin"));
                assert_eq!(bytes.len() as u64, u64_of(&ptd["len"]));
                assert_eq!(sha256(&bytes), ptd["sha256"], "{at_name}");
                assert_eq!(hex(&bytes[..64]), ptd["first_64_hex"], "{at_name}");
                key_file
            } else {
                read(&v, &format!("{DIR}/ethos-u/{name}.bin"))
            };
            assert_eq!(stored.len() as u64, u64_of(&b["size"]), "{at_name}");
            assert_eq!(sha256(&stored), b["sha256"], "{at_name}");
            assert!(
                hex(&stored).starts_with(b["first_32_hex"].as_str().unwrap()),
                "{at_name}"
            );
            // And in the payload where the oracle says.
            let start = u64_of(&b["data_offset"]) as usize;
            assert_eq!(&payload[start..start + stored.len()], &stored[..]);
        }
        let io = json(&v, &format!("{DIR}/ethos-u/io.json"));
        let scratch = blocks.iter().find(|b| b["name"] == "scratch_size").unwrap();
        let word = u32::from_str_radix(scratch["first_32_hex"].as_str().unwrap(), 16).unwrap();
        assert_eq!(io["scratch_size"], u32::from_be(word), "{stem}");
        for (key, block) in [("inputs", "inputs"), ("outputs", "outputs")] {
            let raw = read(&v, &format!("{DIR}/ethos-u/{block}.bin"));
            let words: Vec<i64> = raw
                .chunks(4)
                .map(|c| i64::from(i32::from_le_bytes(c.try_into().unwrap())))
                .collect();
            let list = io[key].as_array().unwrap();
            assert_eq!(list.len() as i64, words[0]);
            let t = &list[0];
            let shape: Vec<i64> = t["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            assert_eq!(shape, words[1..7]);
            assert_eq!(t["elem_size"], words[7]);
            assert_eq!(t["offset"], words[8]);
            assert_eq!(t["region"], words[9]);
            assert_eq!(t["nbytes"], shape.iter().product::<i64>() * words[7]);
        }
        assert!(
            v.tree
                .resolve(&format!("{DIR}/ethos-u/ERROR.txt"))
                .is_none(),
            "{stem}: {:?}",
            v.tree.warnings
        );
        // The encoded weights, as a weight with a flat uint8 view.
        let w = blocks.iter().find(|b| b["name"] == "weight_data").unwrap();
        let bin = read(&v, &format!("{DIR}/ethos-u/weights/weight_data.bin"));
        assert_eq!(bin, read(&v, &format!("{DIR}/ethos-u/weight_data.bin")));
        let npy = read(&v, &format!("{DIR}/ethos-u/weights/weight_data.npy"));
        assert!(npy.ends_with(&bin) && npy.starts_with(b"\x93NUMPY"));
        let index = json(&v, &format!("{DIR}/ethos-u/weights/index.json"));
        let e = &index[0];
        assert_eq!(e["shape"][0], bin.len());
        assert_eq!(e["users"][0], "cmd_data");
        if u64_of(&w["external_ref"]) == 1 {
            assert_eq!(e["key"], w["external_key"]);
            assert_eq!(e["offset"], Value::Null);
        } else {
            assert_eq!(e["offset"], w["data_offset"]);
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn external_weights_without_their_data_file_are_said_to_be_missing() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(backend_fixture("ethosu85_conv_extweights.pte")).unwrap();
    let (_d, v) = view_bytes("alone.pte", &bytes);
    drop(dir);
    assert!(
        v.tree
            .resolve(&format!("{DIR}/ethos-u/weight_data.key"))
            .is_some()
    );
    assert!(
        v.tree
            .resolve(&format!("{DIR}/ethos-u/weight_data.bin"))
            .is_none()
    );
    assert!(
        v.tree
            .resolve(&format!("{DIR}/ethos-u/cmd_data.bin"))
            .is_some()
    );
    let index = json(&v, &format!("{DIR}/ethos-u/weights/index.json"));
    assert_eq!(
        index[0]["missing"].as_str().map(|s| s.contains("dcd40fe3")),
        Some(true),
        "{index}"
    );
}

/// The delegate's payload and the program's named data, for rebuilding.
fn payload_and_named(stem: &str) -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let v = open(stem);
    let payload = read(&v, &format!("{DIR}/processed.bin"));
    let mut named = Vec::new();
    for name in ls(&v, "named") {
        if let Some(key) = name.strip_suffix(".bin") {
            named.push((key.to_owned(), read(&v, &format!("named/{name}"))));
        }
    }
    (payload, named)
}

#[test]
fn every_truncation_and_byte_flip_of_the_payloads_is_survived() {
    for stem in FIXTURES {
        let (payload, named) = payload_and_named(stem);
        let errors = writer::payloads::mutate_payload("EthosUBackend", "ethos-u", &payload, |p| {
            writer::payloads::one_delegate("EthosUBackend", p, Vec::new(), named.clone())
        });
        // Every truncation loses the end block.
        assert!(errors >= payload.len(), "{stem}: only {errors} reported");
    }
}

fn error_of(payload: Vec<u8>) -> String {
    let bytes = writer::payloads::one_delegate("EthosUBackend", payload, Vec::new(), Vec::new());
    let (_d, v) = view_bytes("x.pte", &bytes);
    String::from_utf8(read(&v, &format!("{DIR}/ethos-u/ERROR.txt"))).unwrap()
}

fn block(name: &str, data: &[u8], external: u8) -> Vec<u8> {
    let mut b = vec![0u8; 32];
    b[..name.len()].copy_from_slice(name.as_bytes());
    b[16..20].copy_from_slice(&(data.len() as u32).to_le_bytes());
    b[20] = external;
    b.extend_from_slice(data);
    b.resize(32 + data.len().div_ceil(16) * 16, 0);
    b
}

#[test]
fn hostile_payloads_are_reported_with_offsets() {
    let start = block("vela_bin_stream", &[], 0);
    let end = block("vela_end_stream", &[], 0);
    let stream = |middle: &[Vec<u8>]| {
        let mut p = start.clone();
        middle.iter().for_each(|m| p.extend_from_slice(m));
        p.extend_from_slice(&end);
        p
    };
    // A size past the payload.
    let mut huge = block("cmd_data", b"COP1", 0);
    huge[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = error_of(stream(&[huge]));
    assert!(
        e.contains("vela block 1 (\"cmd_data\") at payload offset 32, size field at 48: data"),
        "{e}"
    );
    // A count of inputs the block cannot hold.
    let mut io = 1000i32.to_le_bytes().to_vec();
    io.extend_from_slice(&[0; 36]);
    let e = error_of(stream(&[block("inputs", &io, 0)]));
    assert!(
        e.contains("inputs block at payload offset 64: count 1000"),
        "{e}"
    );
    // An external block that is not a key.
    let e = error_of(stream(&[block("weight_data", b"12", 1)]));
    assert!(
        e.contains("marked external (offset 52) but holds 2 bytes"),
        "{e}"
    );
    // A command stream without its magic; the other blocks still shown.
    let bytes = writer::payloads::one_delegate(
        "EthosUBackend",
        stream(&[
            block("cmd_data", b"XXXX", 0),
            block("mystery/../x", b"abc", 0),
        ]),
        Vec::new(),
        Vec::new(),
    );
    let (_d, v) = view_bytes("x.pte", &bytes);
    let e = String::from_utf8(read(&v, &format!("{DIR}/ethos-u/ERROR.txt"))).unwrap();
    assert!(
        e.contains("cmd_data block at payload offset 64: command stream magic \"XXXX\""),
        "{e}"
    );
    assert_eq!(read(&v, &format!("{DIR}/ethos-u/mystery____x.bin")), b"abc");
    // A stream that is not one.
    let e = error_of(b"not a vela stream at all, just text...".to_vec());
    assert!(
        e.contains("the stream must open with \"vela_bin_stream\""),
        "{e}"
    );
    let e = error_of(vec![1, 2, 3]);
    assert!(
        e.contains("vela block 0 at payload offset 0: its header needs 32 bytes, 3 remain"),
        "{e}"
    );
}

#[test]
fn inspect_shows_the_command_stream_and_weights() {
    let out = ptefs()
        .arg("inspect")
        .arg(backend_fixture("ethosu85_conv_extweights.pte"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("forward #0 EthosUBackend: 976 bytes"),
        "{text}"
    );
    assert!(text.contains("1 nodes, 2 values"), "{text}");
    assert!(text.contains("1  ethos-u command stream"), "{text}");
    assert!(text.contains("1104 bytes of npu_weight_stream"), "{text}");
}

#[test]
fn a_mount_serves_the_blocks_byte_for_byte() {
    if !common::mounted::fuse_or_skip("a_mount_serves_the_blocks_byte_for_byte") {
        return;
    }
    let pte = backend_fixture("ethosu85_conv_extweights.pte");
    let v = open("ethosu85_conv_extweights");
    let m = common::mounted::Mounted::new(&[pte.as_os_str()]);
    let mut n = 0;
    for (path, bytes) in files(&v) {
        if path.contains("/ethos-u/") {
            assert_eq!(std::fs::read(m.path(&path)).unwrap(), bytes, "{path}");
            n += 1;
        }
    }
    assert_eq!(n, 13, "header, io, 7 blocks, a key, 3 weight files");
}

#[test]
fn a_remote_source_fetches_the_blocks_but_not_the_weights() {
    for stem in FIXTURES {
        let bytes = std::fs::read(backend_fixture(&format!("{stem}.pte"))).unwrap();
        let image = common::fetched::same_from_plan(&bytes, &format!("{DIR}/ethos-u"));
        let o = oracle(stem);
        let at = u64_of(&o["execution_plan"][0]["delegates"][0]["payload_abs_offset"]) as usize;
        for b in o["arm_inner"][0]["vela_blocks"].as_array().unwrap() {
            let start = at + u64_of(&b["data_offset"]) as usize;
            let end = start + u64_of(&b["size"]) as usize;
            if b["name"] == "weight_data" && b["external_ref"] == 0 {
                assert!(
                    image[start..end].iter().all(|&x| x == 0),
                    "{stem}: weights fetched"
                );
            }
            if b["name"] == "inputs" {
                assert_eq!(image[start..end], bytes[start..end]);
            }
        }
    }
}
