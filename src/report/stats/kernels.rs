//! The statistics kernels: moments and histograms of mapped bytes, read
//! without copying them.
//!
//! Each tensor is cut into chunks that the cores take in turn; each chunk
//! into blocks of [`BLOCK`] elements. A block is read twice while it is in
//! the cache: once for its count, sum, minimum, maximum, zeros and
//! non-finite values, once for the sum of squared deviations from its own
//! mean; blocks and chunks are then combined with Chan's pairwise update,
//! in f64, so the standard deviation stays accurate for tensors of any
//! size and offset. A second pass counts the histogram once the range is
//! known. Minimum, maximum, mean and standard deviation are over the
//! finite values (as NumPy's `nanmin` and friends over `x[isfinite(x)]`);
//! NaN and ±Inf are counted apart.
//!
//! Every element type with a NumPy equivalent is read, bfloat16 and packed
//! 4-bit integers widened while reading. A quantized delegate weight is
//! described twice: as its stored integers, and dequantized with its
//! scales (value × scale of its channel or group).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use crate::format::scalar::f16_to_f32;

/// Elements per block.
const BLOCK: usize = 4096;
/// Elements per chunk a core takes at once.
const CHUNK: usize = 1 << 20;
/// Histogram bins.
pub const BINS: usize = 16;

/// How the elements of a tensor are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// IEEE half.
    F16,
    /// bfloat16, widened to f32.
    Bf16,
    /// f32.
    F32,
    /// f64.
    F64,
    /// i8.
    I8,
    /// u8.
    U8,
    /// i16.
    I16,
    /// u16.
    U16,
    /// i32.
    I32,
    /// u32.
    U32,
    /// i64.
    I64,
    /// u64.
    U64,
    /// bool (one byte).
    Bool,
    /// Two unsigned 4-bit values a byte, low nibble first.
    U4,
}

impl Elem {
    /// The reading of a tensor whose NumPy type string is `descr` (the
    /// raw bits only when `raw_bits`) and whose type is named `dtype`.
    pub fn of(descr: &str, raw_bits: bool, dtype: &str) -> Option<Elem> {
        let d = dtype.to_ascii_lowercase();
        if raw_bits {
            return if d.contains("bfloat16") || d.contains("bf16") {
                Some(Elem::Bf16)
            } else if d.contains("int4") || d.contains("4x2") {
                Some(Elem::U4)
            } else {
                None
            };
        }
        Some(match descr {
            "<f2" => Elem::F16,
            "<f4" => Elem::F32,
            "<f8" => Elem::F64,
            "|i1" => Elem::I8,
            "|u1" => Elem::U8,
            "<i2" => Elem::I16,
            "<u2" => Elem::U16,
            "<i4" => Elem::I32,
            "<u4" => Elem::U32,
            "<i8" => Elem::I64,
            "<u8" => Elem::U64,
            "|b1" => Elem::Bool,
            _ => return None,
        })
    }

    /// Bytes per element (packed 4-bit: 1 byte per two).
    fn size(self) -> usize {
        match self {
            Elem::I8 | Elem::U8 | Elem::Bool | Elem::U4 => 1,
            Elem::F16 | Elem::Bf16 | Elem::I16 | Elem::U16 => 2,
            Elem::F32 | Elem::I32 | Elem::U32 => 4,
            Elem::F64 | Elem::I64 | Elem::U64 => 8,
        }
    }

    /// Bits per stored element.
    pub fn bits(self) -> u32 {
        match self {
            Elem::U4 => 4,
            e => e.size() as u32 * 8,
        }
    }

    /// Elements in `len` bytes.
    pub fn count(self, len: usize) -> usize {
        match self {
            Elem::U4 => len * 2,
            e => len / e.size(),
        }
    }

    /// Element `i` of `b`, as f64.
    #[inline(always)]
    fn get(self, b: &[u8], i: usize) -> f64 {
        let s = self.size();
        let at = |n: usize| -> [u8; 8] {
            let mut a = [0u8; 8];
            if let Some(src) = b.get(i * s..i * s + n) {
                a[..n].copy_from_slice(src);
            }
            a
        };
        match self {
            Elem::F32 => {
                let a = at(4);
                f64::from(f32::from_le_bytes([a[0], a[1], a[2], a[3]]))
            }
            Elem::F64 => f64::from_le_bytes(at(8)),
            Elem::F16 => {
                let a = at(2);
                f64::from(f16_to_f32(u16::from_le_bytes([a[0], a[1]])))
            }
            Elem::Bf16 => {
                let a = at(2);
                f64::from(f32::from_bits(
                    u32::from(u16::from_le_bytes([a[0], a[1]])) << 16,
                ))
            }
            Elem::I8 => f64::from(b.get(i).map_or(0, |&v| v as i8)),
            Elem::U8 | Elem::Bool => f64::from(b.get(i).copied().unwrap_or(0)),
            Elem::I16 => {
                let a = at(2);
                f64::from(i16::from_le_bytes([a[0], a[1]]))
            }
            Elem::U16 => {
                let a = at(2);
                f64::from(u16::from_le_bytes([a[0], a[1]]))
            }
            Elem::I32 => {
                let a = at(4);
                f64::from(i32::from_le_bytes([a[0], a[1], a[2], a[3]]))
            }
            Elem::U32 => {
                let a = at(4);
                f64::from(u32::from_le_bytes([a[0], a[1], a[2], a[3]]))
            }
            Elem::I64 => i64::from_le_bytes(at(8)) as f64,
            Elem::U64 => u64::from_le_bytes(at(8)) as f64,
            Elem::U4 => {
                let byte = b.get(i / 2).copied().unwrap_or(0);
                f64::from(if i.is_multiple_of(2) {
                    byte & 15
                } else {
                    byte >> 4
                })
            }
        }
    }
}

/// Moments of some elements, combinable.
#[derive(Debug, Clone, Copy)]
struct Partial {
    n: u64,
    min: f64,
    max: f64,
    mean: f64,
    m2: f64,
    zeros: u64,
    nan: u64,
    inf: u64,
}

impl Default for Partial {
    fn default() -> Self {
        Partial {
            n: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
            zeros: 0,
            nan: 0,
            inf: 0,
        }
    }
}

impl Partial {
    /// Chan et al.'s pairwise combination.
    fn merge(self, o: Partial) -> Partial {
        if o.n == 0 {
            return Partial {
                nan: self.nan + o.nan,
                inf: self.inf + o.inf,
                ..self
            };
        }
        if self.n == 0 {
            return Partial {
                nan: self.nan + o.nan,
                inf: self.inf + o.inf,
                ..o
            };
        }
        let n = self.n + o.n;
        let delta = o.mean - self.mean;
        let (na, nb, nf) = (self.n as f64, o.n as f64, n as f64);
        Partial {
            n,
            min: self.min.min(o.min),
            max: self.max.max(o.max),
            mean: self.mean + delta * nb / nf,
            m2: self.m2 + o.m2 + delta * delta * na * nb / nf,
            zeros: self.zeros + o.zeros,
            nan: self.nan + o.nan,
            inf: self.inf + o.inf,
        }
    }
}

/// Eight f32s from 32 little-endian bytes.
#[inline(always)]
fn lanes(c: &[u8; 32]) -> [f32; 8] {
    std::array::from_fn(|l| {
        f32::from_le_bytes([c[4 * l], c[4 * l + 1], c[4 * l + 2], c[4 * l + 3]])
    })
}

/// One block of f32s (`b` holds whole elements): eight lanes of
/// branch-free selects so the compiler vectorises, non-finite values
/// masked out and counted apart.
fn block_f32(b: &[u8]) -> Partial {
    const L: usize = 8;
    let mut mn = [f32::INFINITY; L];
    let mut mx = [f32::NEG_INFINITY; L];
    let mut sum = [0f64; L];
    let mut zeros = [0u32; L];
    let mut bad = [0u32; L];
    let mut nan = [0u32; L];
    let chunks = b.chunks_exact(4 * L);
    let rest = chunks.remainder();
    for c in chunks.clone() {
        let Ok(c) = <&[u8; 32]>::try_from(c) else {
            continue;
        };
        let x = lanes(c);
        for l in 0..L {
            let fin = x[l].is_finite();
            let lo = if fin { x[l] } else { f32::INFINITY };
            let hi = if fin { x[l] } else { f32::NEG_INFINITY };
            mn[l] = if lo < mn[l] { lo } else { mn[l] };
            mx[l] = if hi > mx[l] { hi } else { mx[l] };
            sum[l] += f64::from(if fin { x[l] } else { 0.0 });
            zeros[l] += u32::from(x[l] == 0.0);
            bad[l] += u32::from(!fin);
            nan[l] += u32::from(x[l].is_nan());
        }
    }
    let mut p = Partial::default();
    let mut s = 0f64;
    let mut nonfinite = 0u64;
    for l in 0..L {
        p.min = p.min.min(f64::from(mn[l]));
        p.max = p.max.max(f64::from(mx[l]));
        s += sum[l];
        p.zeros += u64::from(zeros[l]);
        nonfinite += u64::from(bad[l]);
        p.nan += u64::from(nan[l]);
    }
    for c in rest.chunks_exact(4) {
        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if x.is_finite() {
            p.min = p.min.min(f64::from(x));
            p.max = p.max.max(f64::from(x));
            s += f64::from(x);
        } else {
            nonfinite += 1;
            p.nan += u64::from(x.is_nan());
        }
        p.zeros += u64::from(x == 0.0);
    }
    p.inf = nonfinite - p.nan;
    let total = (b.len() / 4) as u64;
    p.n = total - nonfinite;
    if p.n == 0 {
        return Partial {
            nan: p.nan,
            inf: p.inf,
            ..Partial::default()
        };
    }
    p.mean = s / p.n as f64;
    let mean = p.mean;
    let mut m2 = [0f64; L];
    for c in chunks {
        let Ok(c) = <&[u8; 32]>::try_from(c) else {
            continue;
        };
        let x = lanes(c);
        for (l, acc) in m2.iter_mut().enumerate() {
            let d = if x[l].is_finite() {
                f64::from(x[l]) - mean
            } else {
                0.0
            };
            *acc += d * d;
        }
    }
    let mut total_m2: f64 = m2.iter().sum();
    for c in rest.chunks_exact(4) {
        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if x.is_finite() {
            let d = f64::from(x) - mean;
            total_m2 += d * d;
        }
    }
    p.m2 = total_m2;
    p
}

/// Histogram of f32s over `lo..=hi`: four interleaved counters so that
/// neighbouring equal bins do not wait on each other, and no branches.
fn histogram_f32(b: &[u8], lo: f64, hi: f64) -> [u64; BINS] {
    let mut h = [[0u32; BINS]; 4];
    let scale = (BINS as f64 / (hi - lo)) as f32;
    let lo = lo as f32;
    let top = (BINS - 1) as f32;
    let chunks = b.chunks_exact(16);
    let rest = chunks.remainder();
    // Called per chunk (at most CHUNK elements): u32 counters suffice.
    // The bin is read from the float's bits: adding 2^23 to a value in
    // [0, 16) rounds it to an integer held in the low mantissa bits, with
    // no float-to-integer conversion (a value on a bin's edge may fall in
    // the bin below); NaN lands anywhere and counts 0.
    const MAGIC: f32 = 8_388_608.0;
    let bin = |x: f32| {
        let v = ((x - lo) * scale - 0.5).clamp(0.0, top);
        ((v + MAGIC).to_bits() & (BINS as u32 - 1)) as usize
    };
    for c in chunks {
        let x: [f32; 4] = std::array::from_fn(|k| {
            f32::from_le_bytes([c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]])
        });
        let b: [usize; 4] = std::array::from_fn(|k| bin(x[k]));
        for k in 0..4 {
            h[k][b[k]] += u32::from(x[k].is_finite());
        }
    }
    for c in rest.chunks_exact(4) {
        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        h[0][bin(x)] += u32::from(x.is_finite());
    }
    let mut out = [0u64; BINS];
    for hk in &h {
        for (o, v) in out.iter_mut().zip(hk) {
            *o += u64::from(*v);
        }
    }
    out
}

/// One block of any other type, element by element.
fn block_any(n: usize, get: impl Fn(usize) -> f64) -> Partial {
    let mut p = Partial::default();
    let mut s = 0f64;
    for i in 0..n {
        let x = get(i);
        if x.is_nan() {
            p.nan += 1;
        } else if x.is_infinite() {
            p.inf += 1;
        } else {
            p.n += 1;
            s += x;
            p.min = p.min.min(x);
            p.max = p.max.max(x);
            p.zeros += u64::from(x == 0.0);
        }
    }
    if p.n == 0 {
        return p;
    }
    p.mean = s / p.n as f64;
    for i in 0..n {
        let x = get(i);
        if x.is_finite() {
            let d = x - p.mean;
            p.m2 += d * d;
        }
    }
    p
}

/// How an element's value is made from the bytes: as stored, or
/// dequantized with a scale per channel or group.
#[derive(Clone, Copy)]
pub(super) struct Reading<'a> {
    pub elem: Elem,
    pub bytes: &'a [u8],
    pub scales: Option<Scales<'a>>,
}

/// The scales of a quantized weight.
#[derive(Clone, Copy)]
pub(super) struct Scales<'a> {
    pub elem: Elem,
    pub bytes: &'a [u8],
    /// Scale of element `i` is `(i / inner) % count` for per-channel, or
    /// `i / inner` for contiguous groups (`count` = 0).
    pub inner: usize,
    pub count: usize,
}

impl Reading<'_> {
    /// Elements.
    pub(super) fn len(&self) -> usize {
        self.elem.count(self.bytes.len())
    }

    #[inline(always)]
    fn value(&self, i: usize) -> f64 {
        let q = self.elem.get(self.bytes, i);
        match self.scales {
            None => q,
            Some(s) => {
                let k = if s.count == 0 {
                    i / s.inner
                } else {
                    (i / s.inner) % s.count
                };
                q * s.elem.get(s.bytes, k)
            }
        }
    }

    /// Moments of elements `from..to`.
    fn partial(&self, from: usize, to: usize) -> Partial {
        let mut p = Partial::default();
        let mut at = from;
        while at < to {
            let end = (at + BLOCK).min(to);
            let b = if self.elem == Elem::F32 && self.scales.is_none() {
                block_f32(self.bytes.get(at * 4..end * 4).unwrap_or(&[]))
            } else {
                block_any(end - at, |i| self.value(at + i))
            };
            p = p.merge(b);
            at = end;
        }
        p
    }

    /// Histogram of elements `from..to` over `lo..=hi`.
    fn histogram(&self, from: usize, to: usize, lo: f64, hi: f64) -> [u64; BINS] {
        let mut h = [0u64; BINS];
        let scale = BINS as f64 / (hi - lo);
        let mut put = |x: f64| {
            if x.is_finite() {
                let b = ((x - lo) * scale) as usize;
                h[b.min(BINS - 1)] += 1;
            }
        };
        if self.elem == Elem::F32 && self.scales.is_none() {
            return histogram_f32(self.bytes.get(from * 4..to * 4).unwrap_or(&[]), lo, hi);
        } else {
            for i in from..to {
                put(self.value(i));
            }
        }
        h
    }
}

/// Statistics of a tensor's elements.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Moments {
    /// Elements read.
    pub elements: u64,
    /// Smallest finite value; `None` when none is finite.
    pub min: Option<f64>,
    /// Largest finite value.
    pub max: Option<f64>,
    /// Mean of the finite values.
    pub mean: Option<f64>,
    /// Population standard deviation of the finite values.
    pub std: Option<f64>,
    /// Elements equal to zero.
    pub zeros: u64,
    /// NaN elements.
    pub nan: u64,
    /// ±Inf elements.
    pub inf: u64,
    /// Counts of the finite values in [`BINS`] equal bins from `min` to
    /// `max` (all in the first when they are equal).
    pub histogram: Vec<u64>,
}

/// Statistics of `bytes` read as `elem`, on every core.
pub fn moments(bytes: &[u8], elem: Elem) -> Moments {
    let r = Reading {
        elem,
        bytes,
        scales: None,
    };
    run(&[r])
        .pop()
        .unwrap_or_else(|| finish(Partial::default(), None))
}

/// Moments and histograms of every reading, the work spread over the
/// cores in chunks.
pub(super) fn run(readings: &[Reading<'_>]) -> Vec<Moments> {
    let mut work: Vec<(usize, usize, usize)> = Vec::new();
    for (t, r) in readings.iter().enumerate() {
        let n = r.len();
        let mut at = 0;
        while at < n {
            work.push((t, at, (at + CHUNK).min(n)));
            at += CHUNK;
        }
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(work.len().max(1));
    // Phase 1: moments per chunk, combined in chunk order per tensor so
    // the result does not depend on which core took which chunk.
    let parts: Vec<Partial> = parallel(threads, &work, |&(t, a, b)| readings[t].partial(a, b));
    let mut totals = vec![Partial::default(); readings.len()];
    for (&(t, _, _), p) in work.iter().zip(&parts) {
        totals[t] = totals[t].merge(*p);
    }
    // Phase 2: histograms over each tensor's range.
    let hists: Vec<[u64; BINS]> = parallel(threads, &work, |&(t, a, b)| {
        let p = totals[t];
        if p.n == 0 {
            [0; BINS]
        } else if p.max > p.min {
            readings[t].histogram(a, b, p.min, p.max)
        } else {
            let mut h = [0; BINS];
            h[0] = readings[t].histogram(a, b, p.min, p.min + 1.0).iter().sum();
            h
        }
    });
    let mut hist_totals = vec![[0u64; BINS]; readings.len()];
    for (&(t, _, _), h) in work.iter().zip(&hists) {
        for (a, b) in hist_totals[t].iter_mut().zip(h) {
            *a += b;
        }
    }
    totals
        .into_iter()
        .zip(hist_totals)
        .map(|(p, h)| finish(p, Some(h)))
        .collect()
}

/// `f` of every item of `work`, in order, computed on `threads` cores
/// taking items in turn.
fn parallel<T: Send + Copy + Default, W: Sync>(
    threads: usize,
    work: &[W],
    f: impl Fn(&W) -> T + Sync,
) -> Vec<T> {
    let out = Mutex::new(vec![T::default(); work.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(w) = work.get(i) else { break };
                    let v = f(w);
                    if let Ok(mut o) = out.lock() {
                        o[i] = v;
                    }
                }
            });
        }
    });
    out.into_inner().unwrap_or_else(|e| e.into_inner())
}

impl Default for Moments {
    fn default() -> Self {
        finish(Partial::default(), None)
    }
}

fn finish(p: Partial, h: Option<[u64; BINS]>) -> Moments {
    let some = |x: f64| (p.n > 0).then_some(x);
    Moments {
        elements: p.n + p.nan + p.inf,
        min: some(p.min),
        max: some(p.max),
        mean: some(p.mean),
        std: some((p.m2 / p.n.max(1) as f64).sqrt()),
        zeros: p.zeros,
        nan: p.nan,
        inf: p.inf,
        histogram: h.map_or_else(Vec::new, |h| h.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn moments_of_a_few_values_with_non_finite_ones() {
        let b = f32s(&[1.0, 2.0, 0.0, f32::NAN, f32::INFINITY, 3.0]);
        let m = moments(&b, Elem::F32);
        assert_eq!((m.min, m.max), (Some(0.0), Some(3.0)));
        assert_eq!(m.mean, Some(1.5));
        assert!((m.std.unwrap() - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!((m.zeros, m.nan, m.inf, m.elements), (1, 1, 1, 6));
        assert_eq!(m.histogram.iter().sum::<u64>(), 4);
    }

    #[test]
    fn chunks_and_blocks_combine_as_one_pass_would() {
        // A large offset makes naive sum-of-squares lose everything.
        let v: Vec<f32> = (0..3 * CHUNK + 77)
            .map(|i| 1.0e4 + (i % 13) as f32 * 0.25)
            .collect();
        let m = moments(&f32s(&v), Elem::F32);
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
        let var = v
            .iter()
            .map(|&x| (f64::from(x) - mean).powi(2))
            .sum::<f64>()
            / n;
        assert!((m.mean.unwrap() - mean).abs() < 1e-9);
        assert!((m.std.unwrap() - var.sqrt()).abs() < 1e-9);
        // The generic path agrees with the f32 one.
        let g = block_any(v.len(), |i| f64::from(v[i]));
        assert!((g.m2 / n - var).abs() < 1e-6);
    }

    #[test]
    fn the_f32_histogram_bins_as_floor_does_away_from_edges() {
        let v: Vec<f32> = (0..1000)
            .map(|i| i as f32 * 0.0161 + 0.001)
            .chain([f32::NAN])
            .collect();
        let (lo, hi) = (0.001f64, f64::from(v[999]));
        let h = histogram_f32(&f32s(&v), lo, hi);
        let mut want = [0u64; BINS];
        for &x in &v[..1000] {
            let b = ((f64::from(x) - lo) / (hi - lo) * BINS as f64) as usize;
            want[b.min(BINS - 1)] += 1;
        }
        assert_eq!(h.iter().sum::<u64>(), 1000);
        for (a, b) in h.iter().zip(want) {
            assert!(a.abs_diff(b) <= 1, "{h:?} vs {want:?}");
        }
    }

    #[test]
    fn half_and_packed_values_widen() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert!(f16_to_f32(0x7e00).is_nan());
        let m = moments(&[0x21, 0xf0], Elem::U4);
        assert_eq!(
            (m.elements, m.min, m.max, m.zeros),
            (4, Some(0.0), Some(15.0), 1)
        );
    }
}
