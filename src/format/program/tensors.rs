//! The tensor values of each method that have stored bytes, and where
//! those bytes are.
//!
//! This runs once per value of every method, a million times for the
//! largest files, so each field of a tensor table is read once and error
//! text is built only when there is an error.

use super::constants::Constants;
use super::{Delegate, MethodInfo, TensorData, TensorInfo};
use crate::format::checked_index::{at, segment};
use crate::format::shapes::Shapes;
use crate::format::strings::{self, Name};
use crate::format::{Error, Result, Span, scalar};
use crate::schema::ScalarType;
use crate::schema::program as fb;

/// What reading a method's values needs from the rest of the program.
pub(super) struct Reader<'a, 'p> {
    /// The whole file.
    pub file: &'a [u8],
    /// The verified program.
    pub program: fb::Program<'a>,
    /// `Program.segments` as file spans.
    pub segments: &'p [Span],
    /// How the program stores constants.
    pub constants: Constants<'a>,
    /// Sizes and dim orders shared between the tensors of every method.
    pub shapes: Shapes<'a>,
}

impl<'a> Reader<'a, '_> {
    /// Method `m`, with notes on values whose bytes cannot be shown as
    /// stored added to `warnings`.
    pub(super) fn method(
        &mut self,
        m: usize,
        plan: fb::ExecutionPlan<'a>,
        warnings: &mut Vec<String>,
    ) -> Result<MethodInfo<'a>> {
        let name = strings::plan_name(plan).unwrap_or_default();
        let ctx = |e: Error| e.context(format_args!("method {m} ({name:?})"));
        let mut tensors = Vec::new();
        for (v, value) in plan.values().iter().flatten().enumerate() {
            let Some(t) = value.val_as_tensor() else {
                continue;
            };
            let info = self
                .tensor(v, t, name, warnings)
                .map_err(|e| ctx(e.context(format_args!("value {v}"))))?;
            tensors.extend(info);
        }
        tensors.shrink_to_fit();
        let mut delegates = Vec::new();
        for (d, del) in plan.delegates().iter().flatten().enumerate() {
            let delegate = self
                .delegate(d, del)
                .map_err(|e| ctx(e.context(format_args!("delegate {d}"))))?;
            delegates.push(delegate);
        }
        Ok(MethodInfo {
            name,
            plan,
            tensors,
            delegates,
        })
    }

    /// Value `v`'s stored bytes, or `None` when it has none (or none that
    /// can be shown, which gets a warning).
    fn tensor(
        &mut self,
        v: usize,
        t: fb::Tensor<'a>,
        method: Name<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<TensorInfo<'a>>> {
        let eti = t.extra_tensor_info();
        let external = eti.is_some_and(|e| e.location() == fb::TensorDataLocation::EXTERNAL);
        let idx = t.data_buffer_idx();
        let has_bytes = external || idx > 0;
        let scalar_type = t.scalar_type();
        if has_bytes && scalar::element_size(scalar_type).is_none() {
            warnings.push(format!(
                "method {method:?} value {v}: scalar type {} is unknown, so its bytes are not shown",
                scalar_type.0
            ));
            return Ok(None);
        }
        let storage_offset = t.storage_offset();
        if storage_offset != 0 {
            warnings.push(format!(
                "method {method:?} value {v}: storage_offset is {storage_offset}; the runtime only supports 0, and ptefs shows the bytes from the buffer start",
            ));
        }
        if !has_bytes {
            return Ok(None);
        }
        let (sizes, dim_order) = self.shapes.of(t.sizes(), t.dim_order());
        let Some(nbytes) = tensor_nbytes(scalar_type, &sizes)? else {
            return Ok(None);
        };
        let fqn = eti.and_then(strings::fully_qualified_name);
        let data = if external {
            let key = fqn.ok_or_else(|| {
                Error::new("is EXTERNAL but has no fully_qualified_name to look it up by")
            })?;
            TensorData::External { key }
        } else if t.allocation_info().is_none() {
            let span = self.constants.span(self.file, self.segments, idx, nbytes)?;
            let Some(span) = span else {
                return Ok(None);
            };
            TensorData::Constant {
                buffer_index: idx,
                span,
            }
        } else {
            let table = eti.map_or(0, |e| e.mutable_data_segments_idx());
            self.initial_state(table, idx, nbytes)?
        };
        Ok(Some(TensorInfo {
            value_index: v,
            scalar_type,
            sizes,
            dim_order,
            fqn,
            nbytes,
            data,
        }))
    }

    /// The initial state of a mutable tensor: buffer `idx` of
    /// `mutable_data_segments[table]`.
    fn initial_state(&self, table: u64, idx: u32, nbytes: u64) -> Result<TensorData<'a>> {
        let subsegments = at(
            self.program.mutable_data_segments(),
            table,
            "mutable_data_segments",
        )?;
        let off = at(subsegments.offsets(), u64::from(idx), "mutable data buffer")?;
        let seg_index = subsegments.segment_index();
        let seg = segment(self.segments, u64::from(seg_index), || {
            format!("mutable_data_segments[{table}]")
        })?;
        let span = seg.sub(off, nbytes, || {
            format!("initial state at offset {off} of segment {seg_index}")
        })?;
        Ok(TensorData::MutableInitialState {
            table,
            buffer_index: idx,
            span,
        })
    }

    fn delegate(&self, d: usize, del: fb::BackendDelegate<'a>) -> Result<Delegate<'a>> {
        let processed = del
            .processed()
            .ok_or_else(|| Error::new("has no processed data reference"))?;
        let index = u64::from(processed.index());
        let span = match processed.location() {
            fb::DataLocation::INLINE => {
                let inline = at(
                    self.program.backend_delegate_data(),
                    index,
                    "backend_delegate_data",
                )?;
                Span::of_vector(self.file, inline.data().map(|v| v.bytes()))
            }
            fb::DataLocation::SEGMENT => {
                Some(*segment(self.segments, index, || "processed data".into())?)
            }
            other => {
                return Err(Error::new(format!(
                    "processed data location {} is neither INLINE nor SEGMENT",
                    other.0
                )));
            }
        };
        let compile_specs = del
            .compile_specs()
            .iter()
            .flatten()
            .map(|cs| {
                (
                    strings::compile_spec_key(cs).unwrap_or_default(),
                    cs.value().map_or(&[][..], |v| v.bytes()),
                )
            })
            .collect();
        Ok(Delegate {
            index: d,
            id: strings::backend_id(del).unwrap_or_default(),
            processed: span,
            compile_specs,
        })
    }
}

/// Elements × element size, checked: `None` for an unknown type.
pub fn tensor_nbytes(scalar_type: ScalarType, sizes: &[i64]) -> Result<Option<u64>> {
    let Some(elem) = scalar::element_size(scalar_type) else {
        return Ok(None);
    };
    let bad = |problem: String| Error::Sizes {
        sizes: show_sizes(sizes),
        problem,
    };
    let mut n: u64 = 1;
    for &d in sizes {
        let d = u64::try_from(d).map_err(|_| bad("has a negative dimension".into()))?;
        n = n
            .checked_mul(d)
            .ok_or_else(|| bad("overflow a 64-bit element count".into()))?;
    }
    n.checked_mul(elem)
        .map(Some)
        .ok_or_else(|| bad(format!("× {elem} bytes overflow a 64-bit byte count")))
}

/// Sizes for a message: the first 16, then how many more.
fn show_sizes(sizes: &[i64]) -> String {
    let shown: Vec<String> = sizes.iter().take(16).map(i64::to_string).collect();
    match sizes.len() {
        n if n > 16 => format!("[{}, … {} more]", shown.join(", "), n - 16),
        _ => format!("[{}]", shown.join(", ")),
    }
}
