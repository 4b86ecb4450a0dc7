//! The program (`.pte`): its flatbuffer and where each tensor's bytes live.

use std::sync::Arc;

use super::header::PteHeader;
use super::index::{at, segment};
use super::shapes::Shapes;
use super::text::{self, Name};
use super::{Error, Result, Span, scalar, verify};
use crate::schema::ScalarType;
use crate::schema::program as fb;

/// A validated program file. Every span in it lies within `bytes`.
pub struct ProgramFile<'a> {
    /// The whole file.
    pub bytes: &'a [u8],
    /// Bytes 0..8 and the extended header.
    pub header: PteHeader,
    /// Where the flatbuffer lies in the file.
    pub flatbuffer: Span,
    /// The verified flatbuffer root.
    pub program: fb::Program<'a>,
    /// `Program.segments`, as file spans, by index.
    pub segments: Vec<Span>,
    /// Constant buffers by index: what `constants/<i>.bin` holds. Index 0
    /// is reserved and always `None`.
    pub constants: Vec<Option<Span>>,
    /// The methods, in file order.
    pub methods: Vec<MethodInfo<'a>>,
    /// `Program.named_data`.
    pub named: Vec<NamedBlob<'a>>,
    /// Oddities worth a note that do not stop the file being shown.
    pub warnings: Vec<String>,
}

/// One execution plan and the values in it that have bytes.
pub struct MethodInfo<'a> {
    /// The method name (`forward`).
    pub name: Name<'a>,
    /// The plan in the flatbuffer.
    pub plan: fb::ExecutionPlan<'a>,
    /// Tensor values with initial bytes in this or an external file.
    pub tensors: Vec<TensorInfo<'a>>,
    /// `ExecutionPlan.delegates`, with their processed blobs located.
    pub delegates: Vec<Delegate<'a>>,
}

/// A tensor value whose bytes are stored somewhere.
#[derive(Debug, Clone)]
pub struct TensorInfo<'a> {
    /// Index in `ExecutionPlan.values`.
    pub value_index: usize,
    /// The element type as stored.
    pub scalar_type: ScalarType,
    /// Logical sizes, shared by every value that uses the same tensor
    /// table (a file may point many values at one table).
    pub sizes: Arc<[i64]>,
    /// Dimension order, outermost first; shared like `sizes`.
    pub dim_order: Arc<[u8]>,
    /// `extra_tensor_info.fully_qualified_name`.
    pub fqn: Option<Name<'a>>,
    /// Elements × element size.
    pub nbytes: u64,
    /// Where the bytes are.
    pub data: TensorData<'a>,
}

/// Where a tensor's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensorData<'a> {
    /// A constant, in the constant segment or the legacy inline buffers.
    Constant {
        /// `Tensor.data_buffer_idx`.
        buffer_index: u32,
        /// The tensor's bytes in the file.
        span: Span,
    },
    /// The initial state of a mutable tensor.
    MutableInitialState {
        /// Index into `Program.mutable_data_segments`.
        table: u64,
        /// `Tensor.data_buffer_idx`.
        buffer_index: u32,
        /// The tensor's bytes in the file.
        span: Span,
    },
    /// Stored in a data file under this key.
    External {
        /// The named-data key, equal to the fully qualified name.
        key: Name<'a>,
    },
}

impl TensorData<'_> {
    /// The bytes' span in this file, unless they are external.
    pub fn span(&self) -> Option<Span> {
        match self {
            TensorData::Constant { span, .. } | TensorData::MutableInitialState { span, .. } => {
                Some(*span)
            }
            TensorData::External { .. } => None,
        }
    }

    /// The `location` word of `index.json`.
    pub fn location(&self) -> &'static str {
        match self {
            TensorData::Constant { .. } => "constant",
            TensorData::MutableInitialState { .. } => "mutable_initial_state",
            TensorData::External { .. } => "external",
        }
    }
}

/// A backend delegate with its processed blob located.
#[derive(Debug, Clone)]
pub struct Delegate<'a> {
    /// Index in `ExecutionPlan.delegates`.
    pub index: usize,
    /// The backend id (`XnnpackBackend`).
    pub id: Name<'a>,
    /// The processed blob; `None` when it is inline and its data vector is
    /// absent (no bytes anywhere).
    pub processed: Option<Span>,
    /// `(key, value)` of each compile spec.
    pub compile_specs: Vec<(Name<'a>, &'a [u8])>,
}

/// A `Program.named_data` entry.
#[derive(Debug, Clone)]
pub struct NamedBlob<'a> {
    /// The key.
    pub key: Name<'a>,
    /// The segment holding the blob.
    pub segment_index: u32,
    /// The blob's bytes (the whole segment).
    pub span: Span,
}

// Debug by hand: the generated tables' Debug reads strings through the
// `&str` accessors, which must not run on unchecked bytes (see `text`).
impl std::fmt::Debug for ProgramFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramFile")
            .field("header", &self.header)
            .field("flatbuffer", &self.flatbuffer)
            .field("segments", &self.segments)
            .field("constants", &self.constants)
            .field("methods", &self.methods)
            .field("named", &self.named)
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for MethodInfo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodInfo")
            .field("name", &self.name)
            .field("tensors", &self.tensors)
            .field("delegates", &self.delegates)
            .finish_non_exhaustive()
    }
}

/// Longest operator or backend name shown per use. A file can make one
/// enormous name serve a million calls; text that repeats it per call must
/// not grow with that product.
pub const NAME_LIMIT: usize = 256;

/// `s` cut to at most `max` bytes at a character boundary, with `…` when cut.
pub fn clip(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &s[..cut]).into()
}

/// `name.overload` (or `name` when the overload is empty) of operator
/// `index` of `plan`, each part clipped to [`NAME_LIMIT`]; `None` when the
/// index is out of range.
pub fn operator_name(plan: fb::ExecutionPlan<'_>, index: i32) -> Option<String> {
    let i = usize::try_from(index).ok()?;
    let op = plan.operators().filter(|o| i < o.len())?.get(i);
    let name = text::operator_name(op).unwrap_or_default().show();
    let overload = text::operator_overload(op).unwrap_or_default().show();
    let name = clip(&name, NAME_LIMIT);
    Some(match clip(&overload, NAME_LIMIT) {
        o if o.is_empty() => name.into_owned(),
        o => format!("{name}.{o}"),
    })
}

fn is_external(t: fb::Tensor<'_>) -> bool {
    t.extra_tensor_info()
        .is_some_and(|e| e.location() == fb::TensorDataLocation::EXTERNAL)
}

/// Whether a tensor value has initial bytes stored in a file.
fn has_bytes(t: fb::Tensor<'_>) -> bool {
    is_external(t) || t.data_buffer_idx() > 0
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

impl<'a> ProgramFile<'a> {
    /// Parses and validates a program.
    pub fn parse(bytes: &'a [u8]) -> Result<ProgramFile<'a>> {
        let header = PteHeader::parse(bytes)?;
        let file_len = bytes.len() as u64;
        let flatbuffer = Span {
            offset: 0,
            len: header.flatbuffer_len(file_len),
        };
        let fb_bytes = flatbuffer.bytes(bytes);
        let (program, warning) = verify::root::<fb::Program>(fb_bytes, "program flatbuffer")?;
        let warnings = warning.into_iter().collect();

        let base = header.segment_base();
        let mut segments = Vec::new();
        for (i, s) in program.segments().iter().flatten().enumerate() {
            let start = base
                .checked_add(s.offset())
                .ok_or_else(|| Error::Overflow {
                    what: format!("segment {i} from base {base}"),
                    offset: base,
                    len: s.offset(),
                })?;
            segments.push(Span::checked(start, s.size(), file_len, || {
                format!(
                    "segment {i} (offset {} size {} from base {base})",
                    s.offset(),
                    s.size()
                )
            })?);
        }

        let mut file = ProgramFile {
            bytes,
            header,
            flatbuffer,
            program,
            segments,
            constants: Vec::new(),
            methods: Vec::new(),
            named: Vec::new(),
            warnings,
        };
        file.constants = file.constant_slots()?;
        let mut notes = Vec::new();
        for (m, plan) in program.execution_plan().iter().flatten().enumerate() {
            let method = file.method(m, plan, &mut notes)?;
            file.methods.push(method);
        }
        file.warnings.extend(notes);
        file.fit_constants_to_tensors();
        for (i, nd) in program.named_data().iter().flatten().enumerate() {
            let key = text::named_data_key(nd).unwrap_or_default();
            let span = *file.segment(u64::from(nd.segment_index()), || {
                format!("named_data {i} (key {key:?})")
            })?;
            file.named.push(NamedBlob {
                key,
                segment_index: nd.segment_index(),
                span,
            });
        }
        Ok(file)
    }

    fn segment(&self, index: u64, what: impl FnOnce() -> String) -> Result<&Span> {
        segment(&self.segments, index, what)
    }

    /// True when constants are stored inline (files from before segments).
    fn legacy_constants(&self) -> bool {
        self.program
            .constant_buffer()
            .is_some_and(|b| !b.is_empty())
    }

    /// Each constant buffer's whole slot, before tensors narrow it down.
    fn constant_slots(&self) -> Result<Vec<Option<Span>>> {
        if self.legacy_constants() {
            let buffers = self.program.constant_buffer().into_iter().flatten();
            return Ok(buffers
                .enumerate()
                .map(|(i, b)| {
                    let storage = b.storage().map(|s| s.bytes());
                    (i > 0)
                        .then(|| Span::of_vector(self.bytes, storage))
                        .flatten()
                })
                .collect());
        }
        let Some(cs) = self.program.constant_segment() else {
            return Ok(Vec::new());
        };
        let offsets: Vec<u64> = cs.offsets().iter().flatten().collect();
        if offsets.len() <= 1 {
            return Ok(vec![None; offsets.len()]);
        }
        let seg = *self.segment(u64::from(cs.segment_index()), || "constant_segment".into())?;
        let mut sorted = offsets.clone();
        sorted.sort_unstable();
        offsets
            .iter()
            .enumerate()
            .map(|(i, &off)| {
                if i == 0 {
                    return Ok(None);
                }
                let next = sorted.get(sorted.partition_point(|&o| o <= off)).copied();
                let end = next.unwrap_or(seg.len).min(seg.len);
                let len = end.saturating_sub(off);
                seg.sub(off, len, || {
                    format!("constant_segment.offsets[{i}] = {off}")
                })
                .map(Some)
            })
            .collect()
    }

    /// A used constant buffer holds exactly the bytes of its largest tensor.
    fn fit_constants_to_tensors(&mut self) {
        let mut used: Vec<Option<u64>> = vec![None; self.constants.len()];
        for t in self.methods.iter().flat_map(|m| &m.tensors) {
            if let TensorData::Constant { buffer_index, .. } = t.data
                && let Some(u) = used.get_mut(buffer_index as usize)
            {
                *u = Some(u.unwrap_or(0).max(t.nbytes));
            }
        }
        for (slot, used) in self.constants.iter_mut().zip(used) {
            if let (Some(span), Some(n)) = (slot.as_mut(), used) {
                span.len = n;
            }
        }
    }

    fn method(
        &self,
        m: usize,
        plan: fb::ExecutionPlan<'a>,
        warnings: &mut Vec<String>,
    ) -> Result<MethodInfo<'a>> {
        let name = text::plan_name(plan).unwrap_or_default();
        let ctx = |e: Error| e.context(format_args!("method {m} ({name:?})"));
        let mut tensors = Vec::new();
        let mut shapes = Shapes::default();
        for (v, value) in plan.values().iter().flatten().enumerate() {
            let Some(t) = value.val_as_tensor() else {
                continue;
            };
            if scalar::element_size(t.scalar_type()).is_none() && has_bytes(t) {
                warnings.push(format!(
                    "method {name:?} value {v}: scalar type {} is unknown, so its bytes are not shown",
                    t.scalar_type().0
                ));
                continue;
            }
            if t.storage_offset() != 0 {
                warnings.push(format!(
                    "method {name:?} value {v}: storage_offset is {}; the runtime only supports 0, and ptefs shows the bytes from the buffer start",
                    t.storage_offset()
                ));
            }
            let info = self
                .tensor(v, t, &mut shapes)
                .map_err(|e| ctx(e.context(format_args!("value {v}"))))?;
            tensors.extend(info);
        }
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

    /// The tensor's stored bytes, or `None` when it has none.
    fn tensor(
        &self,
        v: usize,
        t: fb::Tensor<'a>,
        shapes: &mut Shapes,
    ) -> Result<Option<TensorInfo<'a>>> {
        if !has_bytes(t) {
            return Ok(None);
        }
        let eti = t.extra_tensor_info();
        let external = is_external(t);
        let idx = t.data_buffer_idx();
        let (sizes, dim_order) = shapes.of(t._tab.loc(), t.sizes(), t.dim_order());
        let Some(nbytes) = tensor_nbytes(t.scalar_type(), &sizes)? else {
            return Ok(None);
        };
        let fqn = eti.and_then(text::fully_qualified_name);
        let data = if external {
            let key = fqn.ok_or_else(|| {
                Error::new("is EXTERNAL but has no fully_qualified_name to look it up by")
            })?;
            TensorData::External { key }
        } else if t.allocation_info().is_none() {
            let Some(span) = self.constant_span(idx, nbytes)? else {
                return Ok(None);
            };
            TensorData::Constant {
                buffer_index: idx,
                span,
            }
        } else {
            let table = eti.map_or(0, |e| e.mutable_data_segments_idx());
            let subsegments = at(
                self.program.mutable_data_segments(),
                table,
                "mutable_data_segments",
            )?;
            let off = at(subsegments.offsets(), u64::from(idx), "mutable data buffer")?;
            let seg = *self.segment(u64::from(subsegments.segment_index()), || {
                format!("mutable_data_segments[{table}]")
            })?;
            let span = seg.sub(off, nbytes, || {
                format!(
                    "initial state at offset {off} of segment {}",
                    subsegments.segment_index()
                )
            })?;
            TensorData::MutableInitialState {
                table,
                buffer_index: idx,
                span,
            }
        };
        Ok(Some(TensorInfo {
            value_index: v,
            scalar_type: t.scalar_type(),
            sizes,
            dim_order,
            fqn,
            nbytes,
            data,
        }))
    }

    /// The bytes of a constant tensor; `None` for an empty tensor in a
    /// legacy buffer without storage, which has no bytes anywhere.
    fn constant_span(&self, idx: u32, nbytes: u64) -> Result<Option<Span>> {
        let what = || format!("constant buffer {idx} holding {nbytes} bytes");
        if self.legacy_constants() {
            let buffer = at(
                self.program.constant_buffer(),
                u64::from(idx),
                "constant_buffer",
            )?;
            let storage = buffer.storage().map(|s| s.bytes());
            return match Span::of_vector(self.bytes, storage) {
                Some(span) => span.prefix(nbytes, what).map(Some),
                None if nbytes == 0 => Ok(None),
                None => Err(Error::new(format!("{}: the buffer has no storage", what()))),
            };
        }
        let cs = self.program.constant_segment().ok_or_else(|| {
            Error::new("refers to constant data but the program has no constant_segment")
        })?;
        let off = at(cs.offsets(), u64::from(idx), "constant_segment.offsets")?;
        let seg = *self.segment(u64::from(cs.segment_index()), || "constant_segment".into())?;
        seg.sub(off, nbytes, what).map(Some)
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
                Span::of_vector(self.bytes, inline.data().map(|v| v.bytes()))
            }
            fb::DataLocation::SEGMENT => Some(*self.segment(index, || "processed data".into())?),
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
                    text::compile_spec_key(cs).unwrap_or_default(),
                    cs.value().map_or(&[][..], |v| v.bytes()),
                )
            })
            .collect();
        Ok(Delegate {
            index: d,
            id: text::backend_id(del).unwrap_or_default(),
            processed: span,
            compile_specs,
        })
    }
}
