//! Weight statistics: which tensors of a tree are read and as what
//! (stored integers, and dequantized with their scales where the tree
//! knows them), and the table `report` and `inspect --stats` print. The
//! kernels that read the bytes are in [`kernels`].
//!
//! A quantized delegate weight is described twice: as its stored
//! integers, and dequantized with its scales (value × scale of its
//! channel or group).

mod kernels;

use std::fmt::Write as _;

use serde::Serialize;

use crate::escape::escape;
use crate::report::stored::{Name, Stored, Subject};
use kernels::{Reading, Scales, run};

pub use kernels::{BINS, Elem, Moments, moments};

/// One tensor's statistics.
#[derive(Debug, Clone, Serialize)]
pub struct TensorStats {
    /// Its path in the tree.
    pub path: Name,
    /// Its name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// Its layer.
    pub layer: Name,
    /// The file holding its bytes.
    pub file: Name,
    /// Where they start in that file.
    pub offset: u64,
    /// Element type.
    pub dtype: Name,
    /// The stored values' statistics.
    #[serde(flatten)]
    pub stored: Moments,
    /// A quantized weight's statistics after multiplying by its scales.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dequantized: Option<Box<Moments>>,
}

/// Statistics of every readable tensor of `subject`'s tree: what
/// `inspect --stats` asks for, without the rest of the report.
pub fn of(subject: Subject<'_>) -> Vec<TensorStats> {
    let mut notes = Vec::new();
    compute(
        subject,
        &crate::report::stored::collect(subject, &mut notes),
    )
}

/// Statistics of every tensor of `items` whose type can be read.
pub(crate) fn compute(subject: Subject<'_>, items: &[Stored]) -> Vec<TensorStats> {
    let mut chosen: Vec<(&Stored, Reading<'_>)> = Vec::new();
    let mut dequant: Vec<(usize, Reading<'_>)> = Vec::new();
    for s in items {
        let (Some(dtype), Some((descr, raw))) = (&s.dtype, &s.numpy) else {
            continue;
        };
        let Some(elem) = Elem::of(descr, *raw, dtype) else {
            continue;
        };
        let bytes = subject.bytes(s.source, s.span);
        let r = Reading {
            elem,
            bytes,
            scales: None,
        };
        if let Some(d) = dequantized(subject, s, r) {
            dequant.push((chosen.len(), d));
        }
        chosen.push((s, r));
    }
    let readings: Vec<Reading<'_>> = chosen.iter().map(|(_, r)| *r).collect();
    let mut stored = run(&readings);
    let deq = run(&dequant.iter().map(|(_, r)| *r).collect::<Vec<_>>());
    let mut deq_of: Vec<Option<Moments>> = vec![None; chosen.len()];
    for ((i, _), m) in dequant.iter().zip(deq) {
        deq_of[*i] = Some(m);
    }
    let files: Vec<Name> = (0..subject.sources.len())
        .map(|id| Name::from(subject.tree.source_name(id)))
        .collect();
    let no_dtype = Name::from("");
    chosen
        .iter()
        .zip(stored.drain(..))
        .zip(deq_of)
        .map(|(((s, _), m), d)| TensorStats {
            path: s.path.clone(),
            name: s.name.clone(),
            layer: s.layer.clone(),
            file: files
                .get(s.source)
                .cloned()
                .unwrap_or_else(|| no_dtype.clone()),
            offset: s.span.offset,
            dtype: s.dtype.clone().unwrap_or_else(|| no_dtype.clone()),
            stored: m,
            dequantized: d.map(Box::new),
        })
        .collect()
}

/// The dequantized reading of a quantized weight whose scales are known
/// and fit its shape: one per tensor, one per channel of its channel
/// dimension, or one per contiguous group.
fn dequantized<'a>(subject: Subject<'a>, s: &Stored, r: Reading<'a>) -> Option<Reading<'a>> {
    let q = s.quant.as_ref()?;
    let (source, span, dtype) = q.scales.as_ref()?;
    let elem = match dtype.as_str() {
        "float32" => Elem::F32,
        "bfloat16" => Elem::Bf16,
        "float16" => Elem::F16,
        _ => return None,
    };
    // Packed 4-bit weights carry a zero point this does not know.
    if r.elem == Elem::U4 {
        return None;
    }
    let bytes = subject.bytes(*source, *span);
    let count = elem.count(bytes.len());
    let n = r.len();
    let sizes: Vec<usize> = s
        .sizes
        .as_ref()?
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(0))
        .collect();
    if count == 0 || n == 0 {
        return None;
    }
    let scales = if count == 1 {
        Scales {
            elem,
            bytes,
            inner: n,
            count: 1,
        }
    } else if let Some(cd) = q.channel_dim.filter(|&cd| sizes.get(cd) == Some(&count)) {
        Scales {
            elem,
            bytes,
            inner: sizes[cd + 1..].iter().product::<usize>().max(1),
            count,
        }
    } else if n.is_multiple_of(count) {
        Scales {
            elem,
            bytes,
            inner: n / count,
            count: 0,
        }
    } else {
        return None;
    };
    Some(Reading {
        scales: Some(scales),
        ..r
    })
}

/// Per tensor statistics as a table, a row per tensor (and one more for
/// its dequantized values, where it has them).
pub fn table(stats: &[TensorStats]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<48} {:<10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>8} {:>6} {:>6}",
        "tensor", "dtype", "elements", "min", "max", "mean", "std", "zeros", "nan", "inf"
    );
    for t in stats {
        let m = &t.stored;
        let name = t.name.as_deref().unwrap_or(&t.path);
        let _ = writeln!(
            s,
            "{:<48} {:<10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>8} {:>6} {:>6}",
            escape(name),
            escape(&t.dtype),
            m.elements,
            opt(m.min),
            opt(m.max),
            opt(m.mean),
            opt(m.std),
            m.zeros,
            m.nan,
            m.inf
        );
        if let Some(d) = &t.dequantized {
            let _ = writeln!(
                s,
                "{:<48} {:<10} {:>10} {:>12} {:>12} {:>12} {:>12}",
                "  dequantized",
                "",
                d.elements,
                opt(d.min),
                opt(d.max),
                opt(d.mean),
                opt(d.std)
            );
        }
    }
    s
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{v:.6}"))
}
