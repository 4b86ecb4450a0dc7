//! Where the time of opening a file goes, for benchmarks:
//! `open_phases FILE [RUNS]` prints the median, over RUNS runs in this one
//! process (default 1001), of validating the file, of decoding each
//! delegate of a program (its payload validated and read, as the tree's
//! layout needs it) and of listing what the decoded payload shows, and of
//! the whole `View::open` of the file, tree dropped included.

use std::time::Instant;

use ptefs::delegate::NamedData;
use ptefs::format::{self, Parsed};
use ptefs::view::{Request, View};

/// Median microseconds of `runs` calls of `f`.
fn median_us(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: open_phases FILE [RUNS]")?;
    let runs: usize = args.next().map_or(Ok(1001), |r| r.parse())?;
    let bytes = std::fs::read(&path)?;
    let name = std::path::Path::new(&path)
        .file_name()
        .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());

    let parse = median_us(runs, || {
        let _ = format::parse(&bytes);
    });
    println!("{name}: validating the file: {parse:.1} µs");

    if let Parsed::Program(p) = format::parse(&bytes)? {
        let named = NamedData::of(&p, &[]);
        for m in &p.methods {
            for d in &m.delegates {
                let (Some(span), Some(id)) = (d.processed, d.id.as_str()) else {
                    continue;
                };
                let payload = span.bytes(p.bytes);
                let specs = ptefs::delegate::text_specs(&d.compile_specs);
                let decode = || ptefs::delegate::decode(id, payload, &specs, &named);
                if decode().is_none() {
                    continue;
                }
                let decoded = median_us(runs, || {
                    let _ = decode();
                });
                let laid_out = median_us(runs, || {
                    if let Some(Ok(d)) = decode() {
                        let _ = d.layout();
                    }
                });
                println!(
                    "{name}: method {}, delegate {} ({id}): decoding: {decoded:.1} µs, \
                     and listing its files: {:.1} µs more",
                    m.name,
                    d.index,
                    laid_out - decoded
                );
            }
        }
    }

    let request = Request {
        inputs: vec![path.clone().into()],
        auto_data: true,
        ..Request::default()
    };
    let open = median_us(runs, || {
        let _ = View::open(&request);
    });
    println!("{name}: View::open, the tree dropped: {open:.1} µs");
    Ok(())
}
