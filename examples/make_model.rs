//! Writes a synthetic program for benchmarks and load tests:
//! `make_model OUT.pte [--tensors N] [--tensor-bytes B] [--big-bytes G] [--last-seed S]`.
//! The program has one method with N float tensors of B bytes each and,
//! when G > 0, one more tensor of G bytes (value 0). Tensor bytes are a
//! deterministic pattern, so no two tensors share a buffer.

#[path = "../tests/writer/mod.rs"]
mod writer;

use std::io::BufWriter;

use ptefs::schema::ScalarType;
use writer::{Bytes, Data, Program, Tensor, Value};

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: make_model OUT.pte [--tensors N] [--tensor-bytes B] [--big-bytes G] [--last-seed S]");
    let (mut n, mut each, mut big) = (20_000u64, 56 * 1024u64, 1u64 << 30);
    // Another pattern for the last tensor: a file that differs from the
    // default one in its last tensor only, for `ptefs diff` against `cmp`.
    let mut last_seed = None;
    while let Some(flag) = args.next() {
        let v: u64 = args
            .next()
            .and_then(|v| v.parse().ok())
            .expect("a number after each flag");
        match flag.as_str() {
            "--tensors" => n = v,
            "--tensor-bytes" => each = v,
            "--big-bytes" => big = v,
            "--last-seed" => last_seed = Some(v),
            other => panic!("unknown flag {other}"),
        }
    }
    let tensor = |i: u64, bytes: u64| {
        let sizes = [(bytes / 4) as i32];
        let t = Tensor::new(
            ScalarType::FLOAT,
            &sizes,
            Data::Constant(Bytes::Pattern {
                len: bytes,
                seed: if i + 1 == n {
                    last_seed.unwrap_or(i)
                } else {
                    i
                },
            }),
        );
        Value::Tensor(t.named(&format!("layers.{}.weight", i)))
    };
    let mut values = Vec::new();
    if big > 0 {
        values.push(tensor(u64::MAX, big));
    }
    values.extend((0..n).map(|i| tensor(i, each)));
    let p = Program::forward(values);
    let f = std::fs::File::create(&out).expect("create output");
    p.write(&mut BufWriter::with_capacity(1 << 22, f))
        .expect("write");
}
