//! Files that ExecuTorch's runtime loads though they are unusual: vectors
//! placed as flatc 24 places them, names that are not UTF-8, vectors that
//! are absent. Each must open fully and show nothing that points outside
//! its source.

use crate::common;
use crate::writer;

use common::*;
use flatbuffers::FlatBufferBuilder;
use ptefs::format::{self, Parsed};
use ptefs::schema::ScalarType;
use ptefs::schema::program as fb;
use ptefs::tree::{ROOT, Tree};
use serde_json::Value;
use writer::{Bytes, Chain, Data, Delegate, Instr, Method, Program, Tensor, Value as V};

/// Every file of `tree` (built from `src` alone) read whole, by path.
fn contents(tree: &Tree, src: &[u8]) -> Vec<(String, Vec<u8>)> {
    tree.walk(ROOT)
        .filter_map(|(path, ino)| {
            let f = tree.file(ino)?;
            let len = f.content.len();
            let mut out = Vec::new();
            // Piece after piece: an assembled file gives one part at a time.
            while (out.len() as u64) < len {
                let piece = f.content.read(out.len() as u64, len - out.len() as u64);
                if piece.is_empty() {
                    break;
                }
                let tail = piece.tail.map_or(&[][..], |(_, span)| span.bytes(src));
                piece.assemble(tail, &mut out);
            }
            Some((path, out))
        })
        .collect()
}

#[test]
fn empty_8_byte_vectors_at_4_mod_8_open_like_the_runtime_loads_them() {
    let bytes = std::fs::read(fixture("empty_vectors.pte")).unwrap();
    let Ok(Parsed::Program(p)) = format::parse(&bytes) else {
        panic!("empty_vectors.pte does not open")
    };
    // The flatbuffers crate's own verifier refuses the file: this is the
    // case the test is about.
    let strict = flatbuffers::root::<fb::Program>(p.flatbuffer.bytes(&bytes));
    let err = strict.map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("unaligned"), "{err}");
    // Every tensor with bytes is served from its place in the file.
    let tensors: usize = p.methods.iter().map(|m| m.tensors.len()).sum();
    assert!(tensors > 0);
    let tree = Tree::from_bytes("empty_vectors.pte", &bytes).unwrap();
    for m in &p.methods {
        for t in &m.tensors {
            let span = t.data.span().unwrap();
            assert!(span.end() <= bytes.len() as u64);
        }
    }
    // Distinct files: an unnamed tensor's alias is another name of its .bin.
    let bins = tree
        .walk(ROOT)
        .filter(|(p, _)| p.contains("/tensors/") && p.ends_with(".bin"))
        .map(|(_, ino)| ino)
        .collect::<std::collections::HashSet<_>>()
        .len();
    assert_eq!(bins, tensors);
}

#[test]
fn a_really_broken_vector_is_still_refused_with_its_position() {
    let mut bytes = std::fs::read(fixture("empty_vectors.pte")).unwrap();
    // The empty [long] the crate calls unaligned starts at 2276; its length
    // prefix is the four bytes before.
    assert_eq!(bytes[2272..2276], [0, 0, 0, 0]);
    bytes[2272..2276].copy_from_slice(&0x1000_0000u32.to_le_bytes());
    let err = format::parse(&bytes).unwrap_err().to_string();
    assert!(err.contains("program flatbuffer (bytes 0.."), "{err}");
    assert!(err.contains("fails verification"), "{err}");
    assert!(err.contains("2276"), "{err}");
}

/// Replaces the one occurrence of `marker` in `bytes` with `with`.
fn patch(bytes: &mut [u8], marker: &[u8], with: &[u8]) {
    assert_eq!(marker.len(), with.len());
    let at: Vec<usize> = bytes
        .windows(marker.len())
        .enumerate()
        .filter(|(_, w)| *w == marker)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "{marker:?} occurs {} times", at.len());
    bytes[at[0]..at[0] + with.len()].copy_from_slice(with);
}

/// A program whose method name, tensor name, named key, backend id and
/// operator name each hold the byte 0xFF (and a `%`).
fn non_utf8_program() -> Vec<u8> {
    let t = Tensor::new(ScalarType::FLOAT, &[2], Data::Constant(vec![7; 8].into())).named("w.QQ2");
    let m = Method {
        name: "fwdQQ1".into(),
        values: vec![V::Tensor(t)],
        operators: vec![("aten::opQQ5".into(), String::new())],
        delegates: vec![Delegate {
            id: "BackendQQ4".into(),
            blob: Bytes::Owned(vec![1, 2, 3]),
            inline: false,
            compile_specs: vec![],
        }],
        chains: vec![Chain {
            instructions: vec![Instr::Kernel {
                op: 0,
                args: vec![0],
            }],
            ..Chain::default()
        }],
        ..Method::default()
    };
    let mut bytes = Program {
        methods: vec![m],
        named: vec![("kQQ3".into(), Bytes::Owned(vec![9; 4]))],
        ..Program::default()
    }
    .to_bytes();
    for n in 1..=5u8 {
        patch(&mut bytes, &[b'Q', b'Q', b'0' + n], &[0xFF, b'%', b'0' + n]);
    }
    bytes
}

#[test]
fn names_that_are_not_utf8_are_served_percent_encoded() {
    let bytes = non_utf8_program();
    // Without the fix the whole file was refused.
    let tree = Tree::from_bytes("odd.pte", &bytes).unwrap();
    let paths: Vec<String> = tree.walk(ROOT).map(|(p, _)| p).collect();
    for want in [
        "methods/fwd%FF%251/tensors/0.w.%FF%252.bin",
        "methods/fwd%FF%251/tensors/0.w.%FF%252.npy",
        "methods/fwd%FF%251/delegates/0-Backend%FF%254/processed.bin",
        "named/k%FF%253.bin",
    ] {
        assert!(paths.iter().any(|p| p == want), "{want} missing: {paths:?}");
    }
    let files: std::collections::BTreeMap<String, Vec<u8>> =
        contents(&tree, &bytes).into_iter().collect();
    assert_eq!(files["methods/fwd%FF%251/tensors/0.w.%FF%252.bin"], [7; 8]);
    assert_eq!(files["named/k%FF%253.bin"], [9; 4]);
    let index: Value =
        serde_json::from_slice(&files["methods/fwd%FF%251/tensors/index.json"]).unwrap();
    assert_eq!(index[0]["fqn"], "w.%FF%252");
    assert_eq!(index[0]["percent_encoded"], true);
    let named: Value = serde_json::from_slice(&files["named/index.json"]).unwrap();
    assert_eq!(named[0]["key"], "k%FF%253");
    assert_eq!(named[0]["percent_encoded"], true);
    let program: Value = serde_json::from_slice(&files["program.json"]).unwrap();
    assert_eq!(program["methods"][0], "fwd%FF%251");
    let code = String::from_utf8(files["methods/fwd%FF%251/code.txt"].clone()).unwrap();
    assert!(code.contains("aten::op%FF%255"), "{code}");
    let plan: Value = serde_json::from_slice(&files["methods/fwd%FF%251/plan.json"]).unwrap();
    assert_eq!(plan["name"], "fwd%FF%251");
    assert_eq!(plan["delegates"][0]["id"], "Backend%FF%254");
    // A name that is UTF-8 keeps its `%` and gets no flag.
    let mut clean_bytes = non_utf8_program();
    for n in 1..=5u8 {
        patch(
            &mut clean_bytes,
            &[0xFF, b'%', b'0' + n],
            &[b'x', b'%', b'0' + n],
        );
    }
    let clean = Tree::from_bytes("clean.pte", &clean_bytes).unwrap();
    let named: Value = serde_json::from_slice(
        &contents(&clean, &clean_bytes)
            .into_iter()
            .find(|(p, _)| p == "named/index.json")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(named[0]["key"], "kx%3");
    assert!(named[0].get("percent_encoded").is_none());
    // The command line serves it too.
    let d = tempfile::tempdir().unwrap();
    let path = write_file(d.path(), "odd.pte", &bytes);
    let out = ptefs().args(["ls", "-R"]).arg(&path).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("named/k%FF%253.bin"));
}

/// A legacy program with absent vectors: a constant buffer without
/// storage holding an empty tensor, and inline delegate data without data.
fn absent_vectors_program() -> Vec<u8> {
    let mut b = FlatBufferBuilder::new();
    let sizes = b.create_vector(&[0i32]);
    let t = fb::Tensor::create(
        &mut b,
        &fb::TensorArgs {
            scalar_type: ScalarType::FLOAT,
            sizes: Some(sizes),
            data_buffer_idx: 1,
            ..Default::default()
        },
    );
    let e = fb::EValue::create(
        &mut b,
        &fb::EValueArgs {
            val_type: fb::KernelTypes::Tensor,
            val: Some(t.as_union_value()),
        },
    );
    let values = b.create_vector(&[e]);
    let processed = fb::BackendDelegateDataReference::create(
        &mut b,
        &fb::BackendDelegateDataReferenceArgs {
            location: fb::DataLocation::INLINE,
            index: 0,
        },
    );
    let id = b.create_string("Backend");
    let del = fb::BackendDelegate::create(
        &mut b,
        &fb::BackendDelegateArgs {
            id: Some(id),
            processed: Some(processed),
            compile_specs: None,
        },
    );
    let delegates = b.create_vector(&[del]);
    let name = b.create_string("forward");
    let plan = fb::ExecutionPlan::create(
        &mut b,
        &fb::ExecutionPlanArgs {
            name: Some(name),
            values: Some(values),
            delegates: Some(delegates),
            ..Default::default()
        },
    );
    let plans = b.create_vector(&[plan]);
    let buffers: Vec<_> = (0..2)
        .map(|_| fb::Buffer::create(&mut b, &fb::BufferArgs { storage: None }))
        .collect();
    let buffers = b.create_vector(&buffers);
    let inline = fb::BackendDelegateInlineData::create(
        &mut b,
        &fb::BackendDelegateInlineDataArgs { data: None },
    );
    let inline = b.create_vector(&[inline]);
    let root = fb::Program::create(
        &mut b,
        &fb::ProgramArgs {
            execution_plan: Some(plans),
            constant_buffer: Some(buffers),
            backend_delegate_data: Some(inline),
            ..Default::default()
        },
    );
    b.finish(root, Some("ET12"));
    b.finished_data().to_vec()
}

/// Every offset a tree shows (xattrs, and `offset`/`file_offset` in its
/// JSON files) with the path showing it.
fn offsets(tree: &Tree, src: &[u8]) -> Vec<(String, u64)> {
    fn walk(path: &str, v: &Value, out: &mut Vec<(String, u64)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x.as_u64()) {
                        ("offset" | "file_offset", Some(n)) => {
                            out.push((format!("{path}: {k}"), n))
                        }
                        _ => walk(path, x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(path, x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (path, ino) in tree.walk(ROOT) {
        for (k, v) in tree.xattrs(ino) {
            if k == "user.ptefs.offset" {
                let n = String::from_utf8(v).unwrap().parse().unwrap();
                out.push((format!("{path}: {k}"), n));
            }
        }
    }
    for (path, bytes) in contents(tree, src) {
        // A delegate's graph.json shows the payload's own fields as flatc
        // prints them: offsets into its constant data, u64::MAX for named.
        if path.ends_with(".json") && !path.ends_with("xnnpack/graph.json") {
            walk(&path, &serde_json::from_slice(&bytes).unwrap(), &mut out);
        }
    }
    out
}

#[test]
fn no_offset_points_past_the_end_of_its_source() {
    let mut cases: Vec<(String, Vec<u8>)> = models()
        .into_iter()
        .map(|m| (m.clone(), std::fs::read(fixture(&m)).unwrap()))
        .collect();
    cases.push(("absent.pte".into(), absent_vectors_program()));
    cases.push(("odd.pte".into(), non_utf8_program()));
    for (name, bytes) in &cases {
        let tree = Tree::from_bytes(name, bytes).unwrap();
        let found = offsets(&tree, bytes);
        assert!(!found.is_empty() || name == "absent.pte", "{name}");
        for (what, off) in found {
            assert!(
                off <= bytes.len() as u64,
                "{name}: {what} = {off} is past {}",
                bytes.len()
            );
        }
    }
    // The absent vectors are shown as empty files, not as ranges.
    let bytes = absent_vectors_program();
    let tree = Tree::from_bytes("absent.pte", &bytes).unwrap();
    let ino = tree
        .resolve("methods/forward/delegates/0-Backend/processed.bin")
        .unwrap();
    assert!(tree.xattrs(ino).is_empty());
    let Ok(Parsed::Program(p)) = format::parse(&bytes) else {
        panic!()
    };
    assert_eq!(p.constants, [None, None]);
    assert_eq!(p.methods[0].delegates[0].processed, None);
}

/// The odd files above are seeds of the fuzz corpus and the mutation suite
/// (`tests/fuzz-regressions/`); this keeps the stored copies equal to what
/// the generators make. `PTEFS_WRITE_SEEDS=1` rewrites them.
#[test]
fn stored_seeds_match_their_generators() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    for (name, bytes) in [
        ("non-utf8-names.pte", non_utf8_program()),
        ("absent-vectors.pte", absent_vectors_program()),
    ] {
        let path = dir.join(name);
        if std::env::var_os("PTEFS_WRITE_SEEDS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        assert!(std::fs::read(&path).unwrap() == bytes, "{name} is stale");
    }
}
