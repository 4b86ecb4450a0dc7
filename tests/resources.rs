//! Memory on hostile input: whatever a file declares, opening it and
//! reading every file of its tree must not raise peak memory by more than
//! `RATIO` × its flatbuffer bytes + `FIXED` (README states this bound).
//!
//! Each case runs in a child process (this test binary again), which
//! resets the kernel's peak-RSS mark, opens the file from memory, reads
//! every file, and reports how far the peak rose. The child also runs
//! under an RLIMIT_DATA of the bound, so a case that tried to allocate
//! beyond it dies rather than passes.

mod common;
mod writer;

use std::process::Command;

use common::*;
use flatbuffers::FlatBufferBuilder;
use ptefs::format::{self, Parsed};
use ptefs::schema::ScalarType;
use ptefs::schema::program as fb;
use ptefs::tree::{NodeKind, ROOT, Tree};
use writer::{Bytes, Chain, Data, Instr, Method, Program, Tensor, Value as V};

/// Peak memory may rise by at most RATIO × flatbuffer bytes + FIXED.
const RATIO: u64 = 64;
const FIXED: u64 = 16 << 20;

const CHILD: &str = "PTEFS_RESOURCES_CHILD";

/// The child: opens the file at `path`, prints `peak <bytes> fb <bytes> ok|refused`.
fn child(path: &str) {
    let bytes = std::fs::read(path).unwrap();
    let fb_len = flatbuffer_len(&bytes);
    let bound = RATIO * fb_len + FIXED;
    let data = status_kb("self", "VmData:") * 1024;
    let limit = libc::rlimit {
        rlim_cur: data + bound + (64 << 20),
        rlim_max: data + bound + (64 << 20),
    };
    // SAFETY: setrlimit reads the struct we pass.
    unsafe { libc::setrlimit(libc::RLIMIT_DATA, &limit) };
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_kb("self", "VmRSS:");
    let outcome = match Tree::from_bytes("x.pte", &bytes) {
        Ok(tree) => {
            for (_, ino) in tree.walk(ROOT) {
                let _ = tree.xattrs(ino);
                if let Some(NodeKind::File(f)) = tree.node(ino).map(|n| &n.kind) {
                    std::hint::black_box(f.content.read(0, f.content.len()).len());
                }
            }
            "ok"
        }
        Err(_) => "refused",
    };
    let peak = status_kb("self", "VmHWM:");
    println!(
        "peak {} fb {fb_len} {outcome}",
        peak.saturating_sub(before) * 1024
    );
}

/// The flatbuffer's length, by the headers alone (the file may not verify).
fn flatbuffer_len(bytes: &[u8]) -> u64 {
    match format::parse(bytes) {
        Ok(Parsed::Program(p)) => p.flatbuffer.len,
        Ok(Parsed::Data(d)) => d.flatbuffer.len,
        _ => bytes.len() as u64,
    }
}

/// Runs the child on `bytes`; returns (peak rise, flatbuffer bytes, opened).
fn measure(name: &str, bytes: &[u8]) -> (u64, u64, bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), name, bytes);
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "memory_stays_within_the_stated_bound",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, &path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.find("peak ").map(|i| &l[i..]))
        .unwrap_or_else(|| {
            panic!(
                "{name}: the child died ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let f: Vec<&str> = line.split_whitespace().collect();
    (f[1].parse().unwrap(), f[3].parse().unwrap(), f[4] == "ok")
}

fn program(values: Vec<V>, instructions: Vec<Instr>, operators: Vec<(String, String)>) -> Vec<u8> {
    let m = Method {
        name: "forward".into(),
        values,
        operators,
        chains: vec![Chain {
            instructions,
            ..Chain::default()
        }],
        ..Method::default()
    };
    Program {
        methods: vec![m],
        ..Program::default()
    }
    .to_bytes()
}

/// A plan whose `values` lists one shared EValue `n` times.
fn shared_values(n: usize) -> Vec<u8> {
    let mut b = FlatBufferBuilder::new();
    let sizes = b.create_vector(&[1i32; 256]);
    let t = fb::Tensor::create(
        &mut b,
        &fb::TensorArgs {
            scalar_type: ScalarType::FLOAT,
            sizes: Some(sizes),
            data_buffer_idx: 0,
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
    let values = b.create_vector(&vec![e; n]);
    let name = b.create_string("forward");
    let plan = fb::ExecutionPlan::create(
        &mut b,
        &fb::ExecutionPlanArgs {
            name: Some(name),
            values: Some(values),
            ..Default::default()
        },
    );
    let plans = b.create_vector(&[plan]);
    let root = fb::Program::create(
        &mut b,
        &fb::ProgramArgs {
            execution_plan: Some(plans),
            ..Default::default()
        },
    );
    b.finish(root, Some("ET12"));
    b.finished_data().to_vec()
}

/// `n` named data entries sharing one key of `key_len` bytes.
fn shared_keys(n: usize, key_len: usize) -> Vec<u8> {
    let mut b = FlatBufferBuilder::new();
    let key = b.create_string(&"k".repeat(key_len));
    let nd: Vec<_> = (0..n)
        .map(|_| {
            fb::NamedData::create(
                &mut b,
                &fb::NamedDataArgs {
                    key: Some(key),
                    segment_index: 0,
                },
            )
        })
        .collect();
    let nd = b.create_vector(&nd);
    let seg = fb::DataSegment::create(&mut b, &fb::DataSegmentArgs { offset: 0, size: 0 });
    let segs = b.create_vector(&[seg]);
    let root = fb::Program::create(
        &mut b,
        &fb::ProgramArgs {
            segments: Some(segs),
            named_data: Some(nd),
            ..Default::default()
        },
    );
    b.finish(root, Some("ET12"));
    b.finished_data().to_vec()
}

#[test]
fn memory_stays_within_the_stated_bound() {
    if let Ok(path) = std::env::var(CHILD) {
        return child(&path);
    }
    let mut cases: Vec<(String, Vec<u8>)> = models()
        .into_iter()
        .map(|m| (m.clone(), std::fs::read(fixture(&m)).unwrap()))
        .collect();
    let t = |sizes: &[i32]| V::Tensor(Tensor::new(ScalarType::FLOAT, sizes, Data::None));
    cases.extend([
        ("shared-values.pte".to_owned(), shared_values(200_000)),
        ("shared-keys.pte".to_owned(), shared_keys(30_000, 4096)),
        (
            "many-named.pte".to_owned(),
            Program {
                named: (0..50_000)
                    .map(|i| (format!("blob/{i}"), Bytes::Owned(vec![i as u8])))
                    .collect(),
                ..Program::default()
            }
            .to_bytes(),
        ),
        (
            "long-list-many-args.pte".to_owned(),
            program(
                vec![V::IntList((0..200_000).collect()), t(&[1])],
                vec![Instr::Kernel {
                    op: 0,
                    args: vec![0; 100_000],
                }],
                vec![("op".into(), "out".into())],
            ),
        ),
        (
            "huge-string-args.pte".to_owned(),
            program(
                vec![V::Str("s".repeat(1 << 20))],
                vec![Instr::Kernel {
                    op: 0,
                    args: vec![0; 20_000],
                }],
                vec![("op".into(), String::new())],
            ),
        ),
        (
            "huge-operator-name.pte".to_owned(),
            program(
                vec![t(&[1])],
                (0..100_000)
                    .map(|_| Instr::Kernel {
                        op: 0,
                        args: vec![0],
                    })
                    .collect(),
                vec![("x".repeat(1 << 20), "y".repeat(1 << 16))],
            ),
        ),
        (
            "wide-tensor.pte".to_owned(),
            program(
                vec![V::Tensor(Tensor::new(
                    ScalarType::FLOAT,
                    &vec![1; 1 << 20],
                    Data::Constant(vec![0; 4].into()),
                ))],
                vec![],
                vec![],
            ),
        ),
    ]);
    let mut worst = 0f64;
    for (name, bytes) in &cases {
        let (peak, fb_len, opened) = measure(name, bytes);
        let bound = RATIO * fb_len + FIXED;
        let ratio = peak.saturating_sub(FIXED) as f64 / fb_len as f64;
        eprintln!(
            "{name}: flatbuffer {fb_len} bytes, {}, peak rose {peak} bytes ({:.1} x flatbuffer beyond the fixed {} MiB; bound {RATIO} x)",
            if opened { "opened" } else { "refused" },
            ratio.max(0.0),
            FIXED >> 20
        );
        assert!(
            peak <= bound,
            "{name}: peak rose {peak} bytes, above {RATIO} x {fb_len} + {FIXED}"
        );
        if opened && fb_len > FIXED / RATIO {
            worst = worst.max(peak as f64 / fb_len as f64);
        }
    }
    eprintln!("largest ratio among cases whose flatbuffer outweighs the fixed part: {worst:.1}");
    // The shared-object files are refused by the verifier's limits.
    assert!(
        !measure(
            "shared-values.pte",
            &cases.iter().find(|c| c.0 == "shared-values.pte").unwrap().1
        )
        .2
    );
}
