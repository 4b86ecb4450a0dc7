//! Thousands of deterministic mutations of every fixture: bit flips, stores
//! of boundary values, truncations at structure boundaries, offsets and
//! lengths rewritten to huge values. Each must open to a valid tree (every
//! file readable, every range inside the file) or fail with a one-line
//! error; never panic, hang or exhaust memory.
//!
//! Each fixture runs in a child process (this test binary again) under an
//! address-space limit, with an alarm per case: a crash, a hang or a
//! blow-up kills the child, and the parent names the case that did it.

use crate::common;
use crate::writer;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use ptefs::format::{self, Parsed, Span};
use ptefs::tree::{ROOT, Tree};

const CHILD: &str = "PTEFS_MUTATION_CHILD";
/// Address space a child may use: far above what any case needs.
const ADDRESS_SPACE: u64 = 4 << 30;
/// Seconds one case may take before the child is killed.
const CASE_SECONDS: u32 = 20;

#[derive(Debug, Clone)]
enum Mutation {
    /// Flip one bit.
    Flip { at: usize, bit: u8 },
    /// Overwrite bytes.
    Store { at: usize, bytes: Vec<u8> },
    /// Keep only the first `len` bytes.
    Truncate(usize),
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Where the structure of a file is: its flatbuffer and its segments.
fn structure(bytes: &[u8]) -> (usize, Vec<Span>) {
    match format::parse(bytes).expect("fixtures parse") {
        Parsed::Program(p) => (p.flatbuffer.len as usize, p.segments.clone()),
        Parsed::Data(d) => (d.flatbuffer.len as usize, d.segments.clone()),
        Parsed::Bundled(b) => (b.bytes.len(), Vec::new()),
        Parsed::Package(p) => (p.bytes.len(), p.members.iter().map(|m| m.data).collect()),
        Parsed::EtRecord(r) => (r.bytes.len(), r.members.iter().map(|m| m.data).collect()),
        Parsed::Profile(p) => (p.bytes.len(), Vec::new()),
    }
}

fn mutations(bytes: &[u8], seed: u64) -> Vec<Mutation> {
    let (fb_len, segments) = structure(bytes);
    let len = bytes.len();
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    // Headers: every byte, both ends of it, and its extremes.
    for at in 0..64.min(len) {
        out.push(Mutation::Flip { at, bit: 0 });
        out.push(Mutation::Flip { at, bit: 7 });
        out.push(Mutation::Store {
            at,
            bytes: vec![0x00],
        });
        out.push(Mutation::Store {
            at,
            bytes: vec![0xff],
        });
    }
    // Header fields rewritten to huge and edge values.
    for at in [12usize, 16, 24, 32, 40] {
        for v in [
            u64::MAX,
            u64::MAX - 7,
            len as u64,
            len as u64 + 1,
            0,
            1 << 40,
            1 << 63,
        ] {
            if at + 8 <= len {
                out.push(Mutation::Store {
                    at,
                    bytes: v.to_le_bytes().to_vec(),
                });
            }
        }
    }
    // The flatbuffer: random bit flips and boundary bytes.
    for _ in 0..2000 {
        out.push(Mutation::Flip {
            at: rng.below(fb_len),
            bit: (rng.next() % 8) as u8,
        });
    }
    for _ in 0..1000 {
        let v = [0x00, 0x01, 0x7f, 0x80, 0xff][rng.below(5)];
        out.push(Mutation::Store {
            at: rng.below(fb_len),
            bytes: vec![v],
        });
    }
    // Offsets, lengths and counts (all u32 in a flatbuffer) made huge.
    for _ in 0..1000 {
        let at = rng.below(fb_len / 4) * 4;
        let v = [
            u32::MAX,
            i32::MAX as u32,
            0x8000_0000,
            fb_len as u32,
            0x0001_0000,
        ][rng.below(5)];
        if at + 4 <= len {
            out.push(Mutation::Store {
                at,
                bytes: v.to_le_bytes().to_vec(),
            });
        }
    }
    // Segment offsets and sizes as stored in the flatbuffer, made huge.
    let known: Vec<u64> = segments
        .iter()
        .flat_map(|s| [s.len, s.offset])
        .filter(|&v| v > 0)
        .collect();
    for at in (8..fb_len.saturating_sub(8)).step_by(4) {
        let v = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        if known.contains(&v) {
            for huge in [u64::MAX, 1 << 62, len as u64 + 1] {
                out.push(Mutation::Store {
                    at,
                    bytes: huge.to_le_bytes().to_vec(),
                });
            }
        }
    }
    // Truncations at structure boundaries.
    let mut cuts: Vec<usize> = (0..=72).collect();
    cuts.extend([
        fb_len.saturating_sub(1),
        fb_len,
        fb_len + 1,
        len.saturating_sub(1),
    ]);
    for s in &segments {
        for edge in [s.offset, s.end()] {
            let e = edge as usize;
            cuts.extend([e.saturating_sub(1), e, e + 1]);
        }
    }
    for _ in 0..50 {
        cuts.push(rng.below(len));
    }
    cuts.sort_unstable();
    cuts.dedup();
    out.extend(
        cuts.into_iter()
            .filter(|&c| c < len)
            .map(Mutation::Truncate),
    );
    out
}

/// Opens `bytes` and reads every file the way a mount would. Returns
/// whether it opened.
fn exercise(bytes: &[u8]) -> bool {
    let tree = match Tree::from_bytes("m.pte", bytes) {
        Ok(t) => t,
        Err(e) => {
            let msg = e.to_string();
            assert!(
                !msg.is_empty() && !msg.contains('\n'),
                "error is not one line: {msg:?}"
            );
            return false;
        }
    };
    for (_, ino) in tree.walk(ROOT) {
        let _ = tree.xattrs(ino);
        let Some(f) = tree.file(ino) else {
            continue;
        };
        let len = f.content.len();
        // Piece after piece: an assembled file gives one part at a time.
        let mut at = 0;
        while at < len {
            let piece = f.content.read(at, len - at);
            assert!(!piece.is_empty(), "nothing at {at} of {len}");
            at += piece.len();
            std::hint::black_box(piece.head.iter().fold(0u8, |a, &b| a ^ b));
            if let Some((_, span)) = piece.tail {
                assert!(
                    span.end() <= bytes.len() as u64,
                    "{span:?} is beyond the {} bytes",
                    bytes.len()
                );
                if span.len > 0 {
                    std::hint::black_box((
                        bytes[span.offset as usize],
                        bytes[span.end() as usize - 1],
                    ));
                }
            }
        }
        assert_eq!(at, len);
    }
    true
}

/// The child: runs every mutation of the file at `path`, announcing each
/// first.
fn child(path: &str) {
    let limit = libc::rlimit {
        rlim_cur: ADDRESS_SPACE,
        rlim_max: ADDRESS_SPACE,
    };
    // SAFETY: setrlimit reads the struct we pass.
    unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    let mut bytes = std::fs::read(path).unwrap();
    let list = mutations(&bytes, bytes.len() as u64);
    let (mut opened, mut refused) = (0, 0);
    for (i, m) in list.iter().enumerate() {
        println!("case {i} {m:?}");
        // SAFETY: alarm only schedules SIGALRM, whose default action ends
        // the process: a hang becomes a death the parent sees.
        unsafe { libc::alarm(CASE_SECONDS) };
        let ok = match m {
            Mutation::Truncate(n) => exercise(&bytes[..*n]),
            Mutation::Flip { at, bit } => {
                bytes[*at] ^= 1 << bit;
                let ok = exercise(&bytes);
                bytes[*at] ^= 1 << bit;
                ok
            }
            Mutation::Store { at, bytes: new } => {
                let old = bytes[*at..*at + new.len()].to_vec();
                bytes[*at..*at + new.len()].copy_from_slice(new);
                let ok = exercise(&bytes);
                bytes[*at..*at + new.len()].copy_from_slice(&old);
                ok
            }
        };
        if ok { opened += 1 } else { refused += 1 }
    }
    nix::unistd::alarm::cancel();
    println!(
        "done {} cases: {opened} opened, {refused} refused",
        list.len()
    );
}

#[test]
fn mutated_fixtures_open_or_fail_cleanly() {
    if let Ok(path) = std::env::var(CHILD) {
        return child(&path);
    }
    // The fixtures, and a bundled program (no fixture is one).
    let dir = tempfile::tempdir().unwrap();
    let bundled = writer::Bundled {
        program: std::fs::read(fixture("mlp.pte")).unwrap(),
        suites: vec![(
            "forward".into(),
            vec![(
                vec![writer::TestValue::Tensor {
                    scalar_type: ptefs::schema::ScalarType::FLOAT,
                    sizes: vec![1, 16],
                    data: vec![1; 64],
                }],
                vec![writer::TestValue::Int(7)],
            )],
        )],
    };
    let mut inputs: Vec<(String, std::path::PathBuf)> = models()
        .into_iter()
        .map(|m| (m.clone(), fixture(&m)))
        .collect();
    inputs.extend(["kv.ptn", "tied.ptn"].map(|m| (m.to_owned(), fixture(m))));
    inputs.extend(
        [
            "etdump/portable_mlp.etdp",
            "etdump/xnnpack_mobilenetish_debug.etdp",
        ]
        .map(|m| (m.to_owned(), fixture(m))),
    );
    inputs.push((
        "mlp.bpte".into(),
        write_file(dir.path(), "mlp.bpte", &bundled.to_bytes()),
    ));
    // Odd files the runtime loads (see tests/it/odd_inputs.rs and
    // tests/it/names.rs), stored as fuzz seeds.
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    for name in [
        "non-utf8-names.pte",
        "absent-vectors.pte",
        "long-colliding-names.pte",
        "hidden-characters.pte",
        "aoti-views.pte",
    ] {
        inputs.push((name.into(), seeds.join(name)));
    }
    // A Vulkan delegate (no fixture has one), and small outputs of the
    // scale generators (examples/make_model, examples/make_profile), as the
    // fuzzer's seeds.
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-seeds");
    for name in ["vulkan.pte", "tiny-tensors.pte", "events.etdp"] {
        inputs.push((name.into(), seeds.join(name)));
    }
    // Files ptefs wrote: a program with a weight set, and a packed data file.
    let edit = fixture("edit");
    let set = dir.path().join("set.pte");
    let packed = dir.path().join("packed.ptd");
    for args in [
        vec![
            "set".into(),
            edit.join("portable.pte"),
            format!(
                "methods/forward/tensors/0.npy={}",
                edit.join("portable.fc1.weight.npy").display()
            )
            .into(),
            "-o".into(),
            set.clone(),
        ],
        vec![
            "pack".into(),
            "--for".into(),
            edit.join("external.pte"),
            edit.join("external.ptd"),
            "-o".into(),
            packed.clone(),
        ],
    ] {
        let args: Vec<std::path::PathBuf> = args;
        let o = ptefs().args(&args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    inputs.push(("set.pte".into(), set));
    inputs.push(("packed.ptd".into(), packed));
    let mut total = 0;
    for (model, path) in inputs {
        let start = Instant::now();
        let mut c = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &common::test_name(module_path!(), "mutated_fixtures_open_or_fail_cleanly"),
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, &path)
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut last = String::new();
        let mut done = None;
        for line in BufReader::new(c.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if line.starts_with("case ") {
                last = line;
            } else if line.starts_with("done ") {
                done = Some(line);
            }
            assert!(
                start.elapsed() < Duration::from_secs(900),
                "{model}: the whole run is too slow; at {last}"
            );
        }
        let status = c.wait().unwrap();
        let mut err = String::new();
        c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let Some(done) = done.filter(|_| status.success()) else {
            panic!("{model}: the child died ({status}) in {last}\n{err}");
        };
        let n: usize = done.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(n >= 4000, "{model}: only {n} cases");
        total += n;
        eprintln!("{model}: {done} in {:.1} s", start.elapsed().as_secs_f64());
    }
    assert!(total > 13 * 4000);
}
