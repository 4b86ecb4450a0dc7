//! Writes a synthetic program for benchmarks and load tests:
//! `make_model OUT.pte [--tensors N] [--tensor-bytes B] [--big-bytes G] [--last-seed S] [--zeros 1] [--external 1] [--shared 1]`.
//! The program has one method with N float tensors of B bytes each and,
//! when G > 0, one more tensor of G bytes (value 0). Tensor bytes are a
//! deterministic pattern, so no two tensors share a buffer; with
//! `--zeros 1` they are zeros, written as holes: a sparse file whose size
//! may far exceed the disk (a million 100 KiB tensors: 100 GiB). With
//! `--external 1` the N tensors are external, named `layers.<i>.weight`:
//! their bytes are for a data file to hold. With `--shared 1` the N
//! tensors hold the same bytes, which the writer stores once: N values of
//! one constant buffer (the generator holds N copies while writing).

#[path = "../tests/writer/mod.rs"]
mod writer;

use std::io::{BufWriter, Seek, SeekFrom, Write};

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
    let mut zeros = false;
    let mut external = false;
    let mut shared = false;
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
            "--zeros" => zeros = v != 0,
            "--external" => external = v != 0,
            "--shared" => shared = v != 0,
            other => panic!("unknown flag {other}"),
        }
    }
    let tensor = |i: u64, bytes: u64| {
        let sizes = [(bytes / 4) as i32];
        let t = Tensor::new(
            ScalarType::FLOAT,
            &sizes,
            if external && i != u64::MAX {
                Data::External(i as u32)
            } else if shared && i != u64::MAX {
                Data::Constant(Bytes::Owned(
                    Bytes::Pattern {
                        len: bytes,
                        seed: 0,
                    }
                    .to_vec(),
                ))
            } else {
                Data::Constant(if zeros {
                    Bytes::Zeros { len: bytes }
                } else {
                    Bytes::Pattern {
                        len: bytes,
                        seed: if i + 1 == n {
                            last_seed.unwrap_or(i)
                        } else {
                            i
                        },
                    }
                })
            },
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
    let mut w = BufWriter::with_capacity(1 << 22, Sparse { file: f, len: 0 });
    p.write(&mut w).expect("write");
    let sparse = w.into_inner().expect("flush");
    sparse.file.set_len(sparse.len).expect("set length");
}

/// A file writer that seeks over whole blocks of zeros, leaving holes.
#[derive(Debug)]
struct Sparse {
    file: std::fs::File,
    len: u64,
}

impl Write for Sparse {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        const BLOCK: usize = 4096;
        let hole = |c: &[u8]| c.len() == BLOCK && c.iter().all(|&b| b == 0);
        let zeros = buf.chunks(BLOCK).take_while(|c| hole(c)).count() * BLOCK;
        let n = if zeros > 0 {
            self.file.seek(SeekFrom::Current(zeros as i64))?;
            zeros
        } else {
            let data: usize = buf
                .chunks(BLOCK)
                .take_while(|c| !hole(c))
                .map(<[u8]>::len)
                .sum();
            self.file.write(&buf[..data])?
        };
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}
