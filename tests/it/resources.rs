//! Memory on hostile input: whatever a file declares, opening it and
//! reading every file of its tree must not raise peak memory by more than
//! `RATIO` × its flatbuffer bytes + `FIXED` (docs/robustness.md states this bound).
//!
//! Each case runs in a child process (this test binary again), which
//! resets the kernel's peak-RSS mark, opens the file from memory, reads
//! every file, and reports how far the peak rose. The child also runs
//! under an RLIMIT_DATA of the bound, so a case that tried to allocate
//! beyond it dies rather than passes.

use crate::common;
use crate::writer;

use std::process::Command;

use common::required::slow_or_skip;
use common::*;
use flatbuffers::FlatBufferBuilder;
use ptefs::format::{self, Parsed};
use ptefs::schema::ScalarType;
use ptefs::schema::program as fb;
use ptefs::tree::{ROOT, Tree};
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
    let open_and_read_all = || match Tree::from_bytes("x.pte", &bytes) {
        Ok(tree) => {
            for (_, ino) in tree.walk(ROOT) {
                let _ = tree.xattrs(ino);
                if let Some(f) = tree.file(ino) {
                    std::hint::black_box(f.content.read(0, f.content.len()).len());
                }
            }
            "ok"
        }
        Err(_) => "refused",
    };
    // Once first, so that the pages of code the work runs are resident
    // before measuring (this one test binary holds every test's code, and
    // the pages it runs count as resident memory), and the memory it freed
    // handed back where there is much of it.
    open_and_read_all();
    ptefs::allocator::release_free();
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_kb("self", "VmRSS:");
    let outcome = open_and_read_all();
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
        // A package's metadata: its graph, safetensors header and aliases.
        Ok(Parsed::Package(p)) => (p.members.iter())
            .map(|m| match m.name.as_str() {
                "program.safetensors" => 8 + p.tensors.header_len,
                _ => m.data.len,
            })
            .sum(),
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
            &common::test_name(module_path!(), "memory_stays_within_the_stated_bound"),
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
    if !slow_or_skip("memory_stays_within_the_stated_bound") {
        return;
    }
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
    cases.push(("many-keys.ptn".to_owned(), many_keys_package(50_000)));
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

/// A package of `n` one-byte tensors, every fifth key an alias, all used by
/// one method.
fn many_keys_package(n: usize) -> Vec<u8> {
    use writer::package::{Chunk, StTensor, constants_method, package};
    let keys: Vec<String> = (0..n).map(|i| format!("k.{i}")).collect();
    let uses: Vec<_> = (keys.iter())
        .map(|k| {
            (
                k.as_str(),
                ptefs::schema::native_graph::ScalarType::BYTE,
                &[1i64][..],
            )
        })
        .collect();
    let tensors: Vec<StTensor> = (keys.iter().enumerate())
        .filter(|(i, _)| i % 5 != 4)
        .map(|(i, k)| StTensor {
            key: k.clone(),
            dtype: "U8",
            shape: vec![1],
            data: Chunk::Bytes(vec![i as u8]),
        })
        .collect();
    let aliases: Vec<(&str, &str)> = (0..n)
        .filter(|i| i % 5 == 4)
        .map(|i| (keys[i].as_str(), keys[i - 1].as_str()))
        .collect();
    package(&[constants_method(&uses)], &tensors, &aliases).to_bytes()
}

/// Peak RSS of the command line on worst cases may reach at most
/// `CLI_RATIO` × the file size + `CLI_FIXED` (docs/robustness.md).
const CLI_RATIO: u64 = 16;
const CLI_FIXED: u64 = 64 << 20;

/// A legacy-inline program whose `n` values all share one EValue and so
/// one tensor of `dims` dimensions, padded with `pad` bytes of inline
/// delegate data so that the verifier's budget lets every value through.
fn shared_tensor(n: usize, dims: usize, pad: usize) -> Vec<u8> {
    let mut b = FlatBufferBuilder::new();
    let sizes = b.create_vector(&vec![1i32; dims]);
    let order: Vec<u8> = (0..dims).map(|d| d as u8).collect();
    let order = b.create_vector(&order);
    let t = fb::Tensor::create(
        &mut b,
        &fb::TensorArgs {
            scalar_type: ScalarType::FLOAT,
            sizes: Some(sizes),
            dim_order: Some(order),
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
    let storage = b.create_vector(&[0u8; 4]);
    let buffers = [
        fb::Buffer::create(&mut b, &fb::BufferArgs { storage: None }),
        fb::Buffer::create(
            &mut b,
            &fb::BufferArgs {
                storage: Some(storage),
            },
        ),
    ];
    let buffers = b.create_vector(&buffers);
    let pad = b.create_vector(&vec![0u8; pad]);
    let inline = fb::BackendDelegateInlineData::create(
        &mut b,
        &fb::BackendDelegateInlineDataArgs { data: Some(pad) },
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

const CLI_CHILD: &str = "PTEFS_RESOURCES_CLI";

/// Peak RSS in bytes of `ptefs ARGS FILE`, which must succeed.
///
/// A process's `ru_maxrss` starts from the high-water mark of the memory it
/// was spawned from, which for this test binary includes the other tests'
/// cases; so a small helper (this binary again, in `cli_child`) spawns
/// `ptefs` and reports its figure.
fn cli_peak(args: &[&str], path: &std::path::Path) -> u64 {
    let mut spec: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    spec.push(path.display().to_string());
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &common::test_name(
                module_path!(),
                "command_line_memory_grows_with_entries_not_shared_bytes",
            ),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CLI_CHILD, spec.join("\n"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let peak = text
        .lines()
        .find_map(|l| l.split_once("cli-peak ").map(|(_, n)| n.trim().to_owned()));
    match peak {
        Some(n) => n.parse().unwrap(),
        None => panic!(
            "ptefs {args:?} {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The helper: runs `ptefs` with the arguments in `spec` (one a line) and
/// prints `cli-peak <bytes>`.
// The child is reaped by wait4, which std does not offer, to get its rusage.
#[allow(clippy::zombie_processes)]
fn cli_child(spec: &str) {
    let args: Vec<&str> = spec.split('\n').collect();
    let child = ptefs()
        .args(&args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in; `pid` is our child,
    // reaped here (its Child handle is dropped without waiting).
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut usage), pid);
        usage
    };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "ptefs {args:?} failed ({status})"
    );
    println!("cli-peak {}", usage.ru_maxrss as u64 * 1024);
}

/// Generated worst cases for memory: values sharing one tensor object (and
/// so one long shape), very many small values, and long shapes.
fn worst_cases() -> [(&'static str, Vec<u8>); 3] {
    let t =
        |sizes: &[i32]| Tensor::new(ScalarType::FLOAT, sizes, Data::Constant(vec![0; 4].into()));
    [
        // One tensor object (4,096 dims) behind 1,000 values; the padding
        // buys the verifier budget for them.
        ("shared-tensor.pte", shared_tensor(1_000, 4_096, 4 << 20)),
        (
            "many-values.pte",
            program(
                (0..60_000).map(|_| V::Tensor(t(&[1]))).collect(),
                vec![],
                vec![],
            ),
        ),
        (
            "long-shapes.pte",
            program(
                (0..16).map(|_| V::Tensor(t(&[1; 65_536]))).collect(),
                vec![],
                vec![],
            ),
        ),
    ]
}

#[test]
fn a_mounted_find_grows_with_entries_not_shared_bytes() {
    if !slow_or_skip("a_mounted_find_grows_with_entries_not_shared_bytes") {
        return;
    }
    use common::mounted::*;
    if !fuse_or_skip("a_mounted_find_grows_with_entries_not_shared_bytes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut over = Vec::new();
    for (name, bytes) in &worst_cases() {
        let path = write_file(dir.path(), name, bytes);
        let m = Mounted::new(&[path.as_os_str()]);
        let out = Command::new("find").arg(&m.dir).output().unwrap();
        assert!(out.status.success());
        let found = out.stdout.iter().filter(|&&b| b == b'\n').count();
        let pid = daemon_pid(&m.dir).expect("the daemon");
        let peak = status_kb(&pid.to_string(), "VmHWM:") * 1024;
        let size = bytes.len() as u64;
        let bound = CLI_RATIO * size + CLI_FIXED;
        eprintln!(
            "mounted find over {name} ({found} paths): file {size} bytes, daemon peak RSS {:.1} MiB (bound {:.1} MiB)",
            peak as f64 / f64::from(1 << 20),
            bound as f64 / f64::from(1 << 20)
        );
        assert!(found > 10, "{name}: {found} paths");
        if peak > bound {
            over.push(format!("mounted find {name}: peak {peak} > {bound}"));
        }
    }
    assert!(over.is_empty(), "{over:#?}");
}

#[test]
fn command_line_memory_grows_with_entries_not_shared_bytes() {
    if !slow_or_skip("command_line_memory_grows_with_entries_not_shared_bytes") {
        return;
    }
    if let Ok(spec) = std::env::var(CLI_CHILD) {
        return cli_child(&spec);
    }
    let cases = worst_cases();
    let dir = tempfile::tempdir().unwrap();
    let mut over = Vec::new();
    for (name, bytes) in &cases {
        let path = write_file(dir.path(), name, bytes);
        let size = bytes.len() as u64;
        let bound = CLI_RATIO * size + CLI_FIXED;
        for args in [&["ls", "-R"][..], &["inspect"], &["inspect", "--json"]] {
            let peak = cli_peak(args, &path);
            eprintln!(
                "ptefs {} {name}: file {size} bytes, peak RSS {:.1} MiB (bound {:.1} MiB)",
                args.join(" "),
                peak as f64 / (1 << 20) as f64,
                bound as f64 / (1 << 20) as f64
            );
            if peak > bound {
                over.push(format!("ptefs {args:?} {name}: peak {peak} > {bound}"));
            }
        }
    }
    assert!(over.is_empty(), "{over:#?}");
}
