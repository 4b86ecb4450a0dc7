//! Each method output a profiled run logged (in its debug buffer) against
//! the reference output the ETRecord holds for it: `profile/outputs/
//! compare.tsv`. The figures are those of Inspector's numeric-gap
//! comparators (`devtools/inspector/numerical_comparator/`): both sides as
//! float64 with NaN taken as 0, MSE the mean of the squared differences, L1
//! their absolute sum, SNR `10 log10(mean(ref²) / mean((ref − run)²))` in
//! dB; beside them the largest absolute difference and that over the
//! largest absolute reference value.
//!
//! A run is paired with the reference outputs as Inspector pairs them: the
//! set at the run's bundled input index, counted from the end when it is
//! negative (so the last set for a run that used none).

use crate::format::etdump::DebugTensor;
use crate::format::etrecord::torch_save::{Saved, SavedTensor};
use crate::format::scalar::{self, f16_to_f32};
use crate::join::profile::Join;
use crate::schema::ScalarType;

/// The figures of one output against its reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gap {
    /// max |ref − run|.
    pub max_abs: f64,
    /// `max_abs` over max |ref| (0 when both are 0).
    pub max_rel: f64,
    /// mean (ref − run)².
    pub mse: f64,
    /// Σ |ref − run|.
    pub l1: f64,
    /// 10 log10(mean ref² / mean (ref − run)²); infinite when they are
    /// equal.
    pub snr_db: f64,
}

/// The gap between `reference` and `run`, element by element (equal
/// lengths; NaN counted as 0, as Inspector's `convert_to_float_tensor`
/// does).
pub fn gap(reference: &[f64], run: &[f64]) -> Gap {
    let clean = |x: f64| if x.is_nan() { 0.0 } else { x };
    let (mut max_abs, mut max_ref, mut sq, mut l1, mut power) = (0f64, 0f64, 0f64, 0f64, 0f64);
    for (&a, &b) in reference.iter().zip(run) {
        let (a, b) = (clean(a), clean(b));
        let d = a - b;
        max_abs = max_abs.max(d.abs());
        max_ref = max_ref.max(a.abs());
        sq += d * d;
        l1 += d.abs();
        power += a * a;
    }
    let n = reference.len().min(run.len()) as f64;
    let (mse, power) = (sq / n, power / n);
    let max_rel = if max_abs == 0.0 {
        0.0
    } else {
        max_abs / max_ref
    };
    Gap {
        max_abs,
        max_rel,
        mse,
        l1,
        snr_db: 10.0 * (power / mse).log10(),
    }
}

/// The elements of a row-major little-endian tensor of type `t` as
/// float64, `None` for a type without a real value per element.
pub fn values(t: ScalarType, bytes: &[u8]) -> Option<Vec<f64>> {
    fn each<const N: usize>(b: &[u8], f: impl Fn([u8; N]) -> f64) -> Vec<f64> {
        b.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    Some(match t {
        ScalarType::FLOAT => each(bytes, |b| f64::from(f32::from_le_bytes(b))),
        ScalarType::DOUBLE => each(bytes, f64::from_le_bytes),
        ScalarType::HALF => each(bytes, |b| f64::from(f16_to_f32(u16::from_le_bytes(b)))),
        ScalarType::BFLOAT16 => each(bytes, |b| {
            f64::from(f32::from_bits(u32::from(u16::from_le_bytes(b)) << 16))
        }),
        ScalarType::BYTE | ScalarType::BOOL => each(bytes, |[b]: [u8; 1]| f64::from(b)),
        ScalarType::CHAR => each(bytes, |b| f64::from(i8::from_le_bytes(b))),
        ScalarType::SHORT => each(bytes, |b| f64::from(i16::from_le_bytes(b))),
        ScalarType::INT => each(bytes, |b| f64::from(i32::from_le_bytes(b))),
        ScalarType::LONG => each(bytes, |b| i64::from_le_bytes(b) as f64),
        _ => return None,
    })
}

/// One method output a run logged, and the reference output it is held
/// against.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The run data block (the ETDump's `runs/<n>`).
    pub run: usize,
    /// The output's position among the method's outputs.
    pub output: usize,
    /// The logged tensor.
    pub logged: DebugTensor,
    /// Its reference: the path of the tensor in the ETRecord's
    /// `reference_outputs` (`forward/0/0`) and the tensor, or why there is
    /// none.
    pub reference: Result<(String, SavedTensor), String>,
}

/// Each method output the runs of `join` logged, with its reference from
/// `references` (the ETRecord's `reference_outputs` value), a run's
/// reference set chosen by `bundled_input_index` (by run data block).
pub fn pairs(join: &Join, references: &Saved, bundled_input_index: &[i32]) -> Vec<Pair> {
    let tensors = references.tensors();
    let sets: Vec<usize> = tensors
        .iter()
        .filter_map(|(path, _)| {
            let rest = path.strip_prefix(&join.method)?.strip_prefix('/')?;
            rest.split('/').next()?.parse().ok()
        })
        .collect();
    let set_count = sets.iter().max().map_or(0, |m| m + 1);
    join.logged
        .iter()
        .filter(|l| l.at.is_none() && l.delegate_id.is_none() && l.item.is_none())
        .map(|l| {
            let index = bundled_input_index.get(l.run).copied().unwrap_or(-1);
            let set = if index < 0 {
                set_count.checked_sub(index.unsigned_abs() as usize)
            } else {
                Some(index as usize).filter(|&s| s < set_count)
            };
            let reference = match set {
                None => Err(format!(
                    "the ETRecord holds {set_count} reference output sets for method {:?}, \
                     none at the run's bundled input index {index}",
                    join.method
                )),
                Some(set) => {
                    let path = format!("{}/{set}/{}", join.method, l.position);
                    tensors
                        .iter()
                        .find(|(p, _)| *p == path)
                        .map(|(p, t)| (p.clone(), (*t).clone()))
                        .ok_or_else(|| format!("the ETRecord has no reference output {path}"))
                }
            };
            Pair {
                run: l.run,
                output: l.position,
                logged: l.tensor.clone(),
                reference,
            }
        })
        .collect()
}

/// `compare.tsv` of `pairs`: per run and output its type, shape, the
/// reference's file, the figures, and why there are none where there are
/// none. `etrecord` is the ETRecord's bytes, `buffer` the debug buffer's.
pub fn compare_tsv(pairs: &[Pair], etrecord: &[u8], buffer: &[u8]) -> String {
    let mut o = String::from(
        "run\toutput\tdtype\tshape\treference\tmax_abs_error\tmax_rel_error\tmse\tl1\tsnr_db\tproblem\n",
    );
    for p in pairs {
        let shape: Vec<String> = p.logged.sizes.iter().map(i64::to_string).collect();
        let reference = match &p.reference {
            Ok((path, _)) => format!("reference_outputs/{path}.npy"),
            Err(_) => String::new(),
        };
        let figures = match compared(p, etrecord, buffer) {
            Ok(g) => {
                [g.max_abs, g.max_rel, g.mse, g.l1, g.snr_db]
                    .iter()
                    .map(|&x| figure(x))
                    .collect::<Vec<_>>()
                    .join("\t")
                    + "\t"
            }
            Err(why) => format!("\t\t\t\t\t{}", why.replace(['\t', '\n'], " ")),
        };
        o.push_str(&format!(
            "{}\t{}\t{}\t[{}]\t{reference}\t{figures}\n",
            p.run,
            p.output,
            scalar::name(p.logged.scalar_type),
            shape.join(","),
        ));
    }
    o
}

/// The gap of one pair, or why it has none.
fn compared(p: &Pair, etrecord: &[u8], buffer: &[u8]) -> Result<Gap, String> {
    let (path, reference) = p.reference.as_ref().map_err(String::clone)?;
    let span = p.logged.span_in(buffer.len() as u64)?;
    let shape: Vec<i64> = reference.shape.iter().map(|&s| s as i64).collect();
    if shape != p.logged.sizes {
        return Err(format!(
            "the run logged shape {:?}, the reference {path} has {shape:?}",
            p.logged.sizes
        ));
    }
    let typed = |t: ScalarType, b: &[u8]| {
        values(t, b).ok_or_else(|| format!("{} has no real values to compare", scalar::name(t)))
    };
    let run = typed(p.logged.scalar_type, span.bytes(buffer))?;
    let reference = typed(reference.scalar_type, &reference.gather(etrecord))?;
    if run.len() != reference.len() {
        return Err(format!(
            "the run logged {} elements, the reference {path} has {}",
            run.len(),
            reference.len()
        ));
    }
    Ok(gap(&reference, &run))
}

/// A figure as Python prints a float: shortest round trip, exponent form
/// for very small and very large magnitudes.
fn figure(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e16).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_outputs_have_no_gap_and_an_infinite_snr() {
        let g = gap(&[1.0, -2.0], &[1.0, -2.0]);
        assert_eq!((g.max_abs, g.max_rel, g.mse, g.l1), (0.0, 0.0, 0.0, 0.0));
        assert_eq!(g.snr_db, f64::INFINITY);
    }

    #[test]
    fn figures_follow_their_definitions() {
        let g = gap(&[1.0, -2.0, 4.0, f64::NAN], &[1.5, -2.0, 3.0, 0.0]);
        assert_eq!(g.max_abs, 1.0);
        assert_eq!(g.max_rel, 0.25);
        assert_eq!(g.mse, (0.25 + 1.0) / 4.0);
        assert_eq!(g.l1, 1.5);
        assert!((g.snr_db - 10.0 * (21.0f64 / 1.25).log10()).abs() < 1e-12);
    }

    #[test]
    fn halves_and_bfloat16_widen_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        let bf = values(ScalarType::BFLOAT16, &0x3f80u16.to_le_bytes());
        assert_eq!(bf, Some(vec![1.0]));
    }

    #[test]
    fn figures_print_as_python_reads_them() {
        assert_eq!(figure(7.771561172376096e-16), "7.771561172376096e-16");
        assert_eq!(figure(140.19383257927674), "140.19383257927674");
        assert_eq!(figure(f64::INFINITY), "inf");
        assert_eq!(figure(0.0), "0");
    }
}
