//! bfloat16 scales of 4-bit group quantization: the `.bin` holds the stored
//! bf16 bits, the `.npy` their exact float32 widening, rendered on read.
//! Checked on payloads the writer makes, with NumPy, with reads at every
//! offset, through the filesystem core and through a mount.

use crate::common;
use crate::writer;

use common::mounted::{Mounted, fuse_or_skip};
use common::*;
use ptefs::fs::{Data, Fs};
use writer::xnnpack::{Graph, Node, Quant, Value};
use writer::{Bytes, Delegate, Method, Program};

const WEIGHTS: &str = "methods/forward/delegates/0-XnnpackBackend/xnnpack/weights";
const FP32: i16 = 1;
const QBINT4: i16 = 10;

/// Values exact in bfloat16: signs, a negative zero, 2^-100 and 2^16.
const BLOB_SCALES: [f32; 8] = [
    0.5,
    -1.25,
    3.0,
    0.0078125,
    -0.0,
    65536.0,
    7.888_609e-31,
    -7.5,
];
const INLINE_SCALES: [f32; 4] = [0.25, 2.0, -0.375, 1024.0];

fn bf16_bits(v: &[f32]) -> Vec<u16> {
    v.iter()
        .map(|x| {
            let bits = x.to_bits();
            assert_eq!(bits & 0xffff, 0, "{x} is not exact in bfloat16");
            (bits >> 16) as u16
        })
        .collect()
}

fn le(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Two 4-bit group-quantized fully connected layers: %1 [4,8] with its
/// 8 bf16 scales in a named-data blob, %2 [2,8] with 4 inline
/// (`scale_bf16`) scales.
fn program() -> Vec<u8> {
    let fc = |input, filter, output| {
        (
            Node::FullyConnected {
                input,
                filter,
                bias: u32::MAX,
                output,
            },
            None,
        )
    };
    let group = |scale_bf16, buffer, num_scales| Quant::Group {
        scale: vec![],
        channel_dim: 0,
        group_size: 4,
        scale_bf16,
        buffer,
        num_scales,
    };
    let g = Graph {
        nodes: vec![fc(0, 1, 3), fc(3, 2, 4)],
        values: vec![
            Value::new(0, FP32, &[1, 8], 0),
            Value::new(1, QBINT4, &[4, 8], 1).quant(group(vec![], 3, 8)),
            Value::new(2, QBINT4, &[2, 8], 2).quant(group(bf16_bits(&INLINE_SCALES), 0, 0)),
            Value::new(3, FP32, &[1, 4], 0),
            Value::new(4, FP32, &[1, 2], 0),
        ],
        inputs: vec![0],
        outputs: vec![4],
        constant_data: vec![
            (0, 0, String::new()),
            (u64::MAX, 16, "w1".into()),
            (u64::MAX, 8, "w2".into()),
            (u64::MAX, 16, "s1".into()),
        ],
        ..Graph::default()
    };
    let mut m = Method::new("forward", Vec::new());
    m.delegates.push(Delegate {
        id: "XnnpackBackend".into(),
        blob: Bytes::Owned(g.payload(true, &[])),
        inline: false,
        compile_specs: Vec::new(),
    });
    let named = [
        ("w1", (0..16).collect()),
        ("w2", (16..24).collect()),
        ("s1", le(&bf16_bits(&BLOB_SCALES))),
    ];
    Program {
        methods: vec![m],
        named: named
            .into_iter()
            .map(|(k, b): (&str, Vec<u8>)| (k.to_owned(), Bytes::Owned(b)))
            .collect(),
        ..Program::default()
    }
    .to_bytes()
}

/// The scale files: (stem, scales).
fn scale_files() -> [(&'static str, &'static [f32]); 2] {
    [
        ("000-fully_connected.filter.scale", &BLOB_SCALES),
        ("001-fully_connected.filter.scale", &INLINE_SCALES),
    ]
}

#[test]
fn bf16_scales_are_stored_in_the_bin_and_widened_in_the_npy() {
    let (_dir, v) = view_bytes("q4.pte", &program());
    assert!(v.tree.warnings.is_empty(), "{:?}", v.tree.warnings);
    let index = json(&v, &format!("{WEIGHTS}/index.json"));
    for (i, (stem, scales)) in scale_files().into_iter().enumerate() {
        let bin = read(&v, &format!("{WEIGHTS}/{stem}.bin"));
        assert_eq!(bin, le(&bf16_bits(scales)), "{stem}");
        let npy = read(&v, &format!("{WEIGHTS}/{stem}.npy"));
        let header_len = 10 + u16::from_le_bytes([npy[8], npy[9]]) as usize;
        let header = String::from_utf8_lossy(&npy[..header_len]);
        let shape = format!("'shape': ({},)", scales.len());
        assert!(
            header.contains("'descr': '<f4'") && header.contains(&shape),
            "{header}"
        );
        assert_eq!(&npy[header_len..], f32s(scales), "{stem}");
        // Every range reads as the slice of the whole file.
        let ino = v.tree.resolve(&format!("{WEIGHTS}/{stem}.npy")).unwrap();
        for offset in 0..=npy.len() as u64 {
            for size in [0, 1, 2, 3, 5, 7, 64, 1000] {
                let end = (offset + size).min(npy.len() as u64) as usize;
                assert_eq!(
                    read_range(&v, ino, offset, size),
                    &npy[offset as usize..end],
                    "{stem} at {offset}+{size}"
                );
            }
        }
        let s = &index[i]["scales"];
        assert_eq!(s["npy"], format!("{stem}.npy"));
        assert_eq!(s["numpy_dtype"], "<f4");
        assert_eq!(s["stored_dtype"], "bfloat16");
        assert_eq!(s["widened"], true);
        assert_eq!(s["count"], scales.len());
        assert_eq!(s["nbytes"], scales.len() * 2);
    }
    assert_eq!(index[0]["scales"]["key"], "s1");
    assert_eq!(index[0]["scales"]["buffer_index"], 3);
    assert!(index[1]["scales"]["key"].is_null());
}

#[test]
fn the_filesystem_core_reads_widened_scales_as_the_tree_describes_them() {
    let (_dir, v) = view_bytes("q4.pte", &program());
    let expected: Vec<(u64, Vec<u8>)> = scale_files()
        .iter()
        .map(|(stem, _)| {
            let ino = v.tree.resolve(&format!("{WEIGHTS}/{stem}.npy")).unwrap();
            (ino, read_ino(&v, ino))
        })
        .collect();
    let fs = Fs::new(v);
    for (ino, whole) in expected {
        for offset in 0..=whole.len() as u64 {
            for size in [1, 3, 4, 9, 4096] {
                let end = (offset + size).min(whole.len() as u64) as usize;
                let want = &whole[offset as usize..end];
                let got = match fs.read(ino, offset, size).unwrap() {
                    Data::Rendered(b) | Data::Mapped(b) => b.to_vec(),
                    Data::Owned(b) => b,
                };
                assert_eq!(got, want, "read at {offset}+{size}");
                assert_eq!(fs.read_copy(ino, offset, size).unwrap(), want);
            }
        }
    }
}

/// NumPy loads each scale `.npy` as float32 with the values of the bf16
/// bits in the `.bin` beside it, and the values the program was written
/// with (given as JSON).
const NUMPY_SCALES: &str = r#"
import json, pathlib, sys
import numpy as np
d = pathlib.Path(sys.argv[1])
want = json.loads(sys.argv[2])
for stem, values in want.items():
    got = np.load(d / (stem + ".npy"))
    assert got.dtype == np.dtype("<f4") and got.shape == (len(values),), (stem, got.dtype, got.shape)
    bits = np.frombuffer((d / (stem + ".bin")).read_bytes(), dtype="<u2")
    widened = (bits.astype("<u4") << 16).view("<f4")
    assert np.array_equal(got, widened), (stem, got, widened)
    assert np.array_equal(got, np.array(values, dtype="<f4")), (stem, got, values)
    assert np.signbit(got).tolist() == [str(v).startswith("-") for v in values], stem
print("checked", len(want))
"#;

#[test]
fn numpy_reads_widened_scales_with_their_values() {
    let (_dir, v) = view_bytes("q4.pte", &program());
    let out = tempfile::tempdir().unwrap();
    extract(&v, out.path());
    let want: serde_json::Map<String, serde_json::Value> = scale_files()
        .iter()
        .map(|(stem, s)| (stem.to_string(), serde_json::json!(s)))
        .collect();
    let want = serde_json::Value::Object(want).to_string();
    let printed = std::process::Command::new("python3")
        .arg("-c")
        .arg(NUMPY_SCALES)
        .arg(out.path().join(WEIGHTS))
        .arg(&want)
        .output()
        .unwrap();
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&printed.stdout), "checked 2\n");
}

#[test]
fn a_mount_serves_the_widened_scales_byte_for_byte() {
    if !fuse_or_skip("a_mount_serves_the_widened_scales_byte_for_byte") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "q4.pte", &program());
    let v = view_of(std::slice::from_ref(&pte), &[]);
    let m = Mounted::new(&[pte.as_os_str()]);
    for (stem, _) in scale_files() {
        for ext in ["bin", "npy"] {
            let path = format!("{WEIGHTS}/{stem}.{ext}");
            assert_eq!(
                std::fs::read(m.path(&path)).unwrap(),
                read(&v, &path),
                "{path}"
            );
        }
    }
}
