//! Heavy load: 64 concurrent readers doing random-offset reads, stats and
//! directory listings over a large synthetic program for 30 seconds
//! (`PTEFS_LOAD_SECONDS` to change), and on until a minimum of each is
//! done. Every byte read is checked against the
//! offline tree; no error is allowed; the daemon's memory must stay bounded
//! and not grow. Prints requests per second and memory.

use crate::common;
use crate::writer;

use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use common::mounted::*;
use common::required::slow_or_skip;
use common::*;
use ptefs::schema::ScalarType;
use ptefs::tree::ROOT;
use writer::{Bytes, Data, Program, Tensor, Value as V};

/// What a run must have done, however long that takes up to `MAX_RUN`.
const MIN_READS: u64 = 1000;
const MIN_STATS: u64 = 100;
const MIN_LISTINGS: u64 = 10;
const MAX_RUN: Duration = Duration::from_secs(600);

#[test]
fn sixty_four_readers_for_thirty_seconds() {
    if !slow_or_skip("sixty_four_readers_for_thirty_seconds")
        || !fuse_or_skip("sixty_four_readers_for_thirty_seconds")
    {
        return;
    }
    let seconds: u64 = std::env::var("PTEFS_LOAD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("load.pte");
    let mut values: Vec<V> = (0..4)
        .map(|i| {
            V::Tensor(Tensor::new(
                ScalarType::FLOAT,
                &[1 << 22],
                Data::Constant(Bytes::Pattern {
                    len: 16 << 20,
                    seed: 1000 + i,
                }),
            ))
        })
        .collect();
    values.extend((0..5000).map(|i| {
        V::Tensor(
            Tensor::new(
                ScalarType::FLOAT,
                &[16384],
                Data::Constant(Bytes::Pattern {
                    len: 65536,
                    seed: i,
                }),
            )
            .named(&format!("layer.{i}.w")),
        )
    }));
    let p = Program::forward(values);
    p.write(&mut std::io::BufWriter::new(
        std::fs::File::create(&src).unwrap(),
    ))
    .unwrap();

    let v = view_of(std::slice::from_ref(&src), &[]);
    let mut file_list = Vec::new();
    let mut dirs = Vec::new();
    for (path, ino) in v.tree.walk(ROOT) {
        match v.tree.entries(ino) {
            Some(e) => dirs.push((path, e.count())),
            None => file_list.push((path, ino, v.content(ino).unwrap().len())),
        }
    }
    let m = Mounted::new(&[src.as_os_str()]);
    let pid = daemon_pid(&m.dir).unwrap();
    let (reads, bytes, stats, listings) = (
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    );
    let errors = Mutex::new(Vec::<String>::new());
    let stop = AtomicBool::new(false);
    let samples = Mutex::new(Vec::<(f64, u64, u64)>::new());
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Relaxed) {
                samples.lock().unwrap().push((
                    start.elapsed().as_secs_f64(),
                    status_kb(&pid.to_string(), "RssAnon:"),
                    status_kb(&pid.to_string(), "VmRSS:"),
                ));
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        for t in 0..64u64 {
            let (v, m, file_list, dirs) = (&v, &m, &file_list, &dirs);
            let (reads, bytes, stats, listings, errors, stop) =
                (&reads, &bytes, &stats, &listings, &errors, &stop);
            s.spawn(move || {
                let mut x = 0x2545_F491_4F6C_DD1Du64 ^ (t + 1).wrapping_mul(0x9E37_79B9);
                let mut rng = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let fail = |what: String| {
                    let mut e = errors.lock().unwrap();
                    if e.len() < 20 {
                        e.push(what);
                    }
                };
                while !stop.load(Relaxed) {
                    match rng() % 10 {
                        0..=6 => {
                            let (path, ino, len) =
                                &file_list[(rng() % file_list.len() as u64) as usize];
                            let off = if *len == 0 { 0 } else { rng() % len };
                            let n = (rng() % (256 << 10)).min(len - off);
                            let mut got = vec![0; n as usize];
                            match std::fs::File::open(m.path(path))
                                .and_then(|f| f.read_exact_at(&mut got, off))
                            {
                                Ok(()) => {
                                    let want = read_range(v, *ino, off, n);
                                    if got != want {
                                        fail(format!("{path} @{off}+{n}: wrong bytes"));
                                    }
                                    reads.fetch_add(1, Relaxed);
                                    bytes.fetch_add(n, Relaxed);
                                }
                                Err(e) => fail(format!("{path}: {e}")),
                            }
                        }
                        7 | 8 => {
                            let (path, _, len) =
                                &file_list[(rng() % file_list.len() as u64) as usize];
                            match std::fs::metadata(m.path(path)) {
                                Ok(md) if md.len() == *len => {
                                    stats.fetch_add(1, Relaxed);
                                }
                                Ok(md) => fail(format!("{path}: size {} != {len}", md.len())),
                                Err(e) => fail(format!("{path}: {e}")),
                            }
                        }
                        _ => {
                            let (path, n) = &dirs[(rng() % dirs.len() as u64) as usize];
                            match std::fs::read_dir(m.path(path)).map(|d| d.count()) {
                                Ok(c) if c == *n => {
                                    listings.fetch_add(1, Relaxed);
                                }
                                Ok(c) => fail(format!("{path}/: {c} entries != {n}")),
                                Err(e) => fail(format!("{path}/: {e}")),
                            }
                        }
                    }
                }
            });
        }
        // The run lasts `seconds`, and goes on until enough of each kind
        // is done: a first read of a report file renders the report, which
        // a debug build on a busy machine takes tens of seconds over, and
        // the readers wait for it. How fast is for the benchmarks to say.
        std::thread::sleep(Duration::from_secs(seconds));
        let enough = || {
            reads.load(Relaxed) > MIN_READS
                && stats.load(Relaxed) > MIN_STATS
                && listings.load(Relaxed) > MIN_LISTINGS
        };
        while !enough() && start.elapsed() < MAX_RUN {
            std::thread::sleep(Duration::from_millis(100));
        }
        stop.store(true, Relaxed);
    });
    let secs = start.elapsed().as_secs_f64();
    let (r, b, st, l) = (
        reads.load(Relaxed),
        bytes.load(Relaxed),
        stats.load(Relaxed),
        listings.load(Relaxed),
    );
    let samples = samples.into_inner().unwrap();
    let max_anon = samples.iter().map(|s| s.1).max().unwrap_or(0);
    let max_rss = samples.iter().map(|s| s.2).max().unwrap_or(0);
    let settled = samples
        .iter()
        .find(|s| s.0 >= seconds as f64 / 3.0)
        .map_or(0, |s| s.1);
    let last = samples.last().map_or(0, |s| s.1);
    eprintln!(
        "load: {secs:.1} s, 64 readers: {:.0} requests/s ({:.0} reads/s verified, {:.0} MB/s; {:.0} stats/s; {:.0} listings/s); \
         daemon RssAnon max {max_anon} kB (at a third of the run {settled} kB, at the end {last} kB), VmRSS max {max_rss} kB",
        (r + st + l) as f64 / secs,
        r as f64 / secs,
        b as f64 / secs / 1e6,
        st as f64 / secs,
        l as f64 / secs,
    );
    let errors = errors.into_inner().unwrap();
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(
        r > MIN_READS && st > MIN_STATS && l > MIN_LISTINGS,
        "too little done in {secs:.0} s: {r} reads, {st} stats, {l} listings"
    );
    assert!(max_anon < 256 << 10, "daemon RssAnon reached {max_anon} kB");
    assert!(
        last <= settled + (32 << 10),
        "daemon RssAnon grew from {settled} kB to {last} kB"
    );
}
