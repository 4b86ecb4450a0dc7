//! Writes a synthetic native program package for benchmarks:
//! `make_package OUT.ptn [--tensors N] [--tensor-bytes B]`. One method
//! reads N float tensors of B bytes each (a deterministic pattern, so no
//! two are equal) and every tenth key is an alias of the key before it.

#[path = "../tests/writer/mod.rs"]
mod writer;

use ptefs::schema::native_graph as ng;
use writer::package::{Chunk, StTensor, constants_method, package};

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: make_package OUT.ptn [--tensors N] [--tensor-bytes B]");
    let (mut n, mut each) = (20_000u64, 56 * 1024u64);
    while let Some(flag) = args.next() {
        let v: u64 = args
            .next()
            .and_then(|v| v.parse().ok())
            .expect("a number after each flag");
        match flag.as_str() {
            "--tensors" => n = v,
            "--tensor-bytes" => each = v,
            other => panic!("unknown flag {other}"),
        }
    }
    let key = |i: u64| format!("layers.{i}.weight");
    let sizes = [(each / 4) as i64];
    let keys: Vec<String> = (0..n).map(key).collect();
    let uses: Vec<(&str, ng::ScalarType, &[i64])> = keys
        .iter()
        .map(|k| (k.as_str(), ng::ScalarType::FLOAT, &sizes[..]))
        .collect();
    let owners: Vec<u64> = (0..n).filter(|i| i % 10 != 9).collect();
    let tensors: Vec<StTensor> = owners
        .iter()
        .map(|&i| StTensor {
            key: key(i),
            dtype: "F32",
            shape: vec![each / 4],
            data: Chunk::Bytes(
                (0..each)
                    .map(|b| (b ^ i.wrapping_mul(0x9e37)) as u8)
                    .collect(),
            ),
        })
        .collect();
    let aliases: Vec<(String, String)> = (0..n)
        .filter(|i| i % 10 == 9)
        .map(|i| (key(i), key(i - 1)))
        .collect();
    let alias_refs: Vec<(&str, &str)> = aliases
        .iter()
        .map(|(a, o)| (a.as_str(), o.as_str()))
        .collect();
    let zip = package(&[constants_method(&uses)], &tensors, &alias_refs);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    zip.write(&mut f).unwrap();
}
