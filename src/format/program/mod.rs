//! The program (`.pte`): its flatbuffer and where each tensor's bytes live.

mod constants;
mod tensors;

use std::sync::Arc;

use super::checked_index::segment;
use super::header::PteHeader;
use super::shapes::Shapes;
use super::strings::{self, Name};
use super::{Error, Result, Span, verify};
use crate::schema::ScalarType;
use crate::schema::program as fb;
use constants::Constants;
use tensors::Reader;
pub use tensors::tensor_nbytes;

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
    let name = strings::operator_name(op).unwrap_or_default().show();
    let overload = strings::operator_overload(op).unwrap_or_default().show();
    let name = clip(&name, NAME_LIMIT);
    Some(match clip(&overload, NAME_LIMIT) {
        o if o.is_empty() => name.into_owned(),
        o => format!("{name}.{o}"),
    })
}

impl<'a> ProgramFile<'a> {
    /// Each constant buffer's whole slot (from its offset to the next
    /// buffer's, alignment padding included), where [`Self::constants`]
    /// holds the bytes of its largest tensor. Index 0 is reserved and
    /// always `None`. Read again from the file: a parse keeps only the
    /// narrowed spans.
    pub fn constant_slots(&self) -> Result<Vec<Option<Span>>> {
        Constants::of(self.program).slots(self.bytes, &self.segments)
    }

    /// Parses and validates a program.
    pub fn parse(bytes: &'a [u8]) -> Result<ProgramFile<'a>> {
        let header = PteHeader::parse(bytes)?;
        let flatbuffer = Span {
            offset: 0,
            len: header.flatbuffer_len(bytes.len() as u64),
        };
        let fb_bytes = flatbuffer.bytes(bytes);
        let (program, warning) = verify::root::<fb::Program>(fb_bytes, "program flatbuffer")?;
        let segments = segment_spans(program, header.segment_base(), bytes.len() as u64)?;
        let constants = Constants::of(program);
        let mut slots = constants.slots(bytes, &segments)?;
        let mut reader = Reader {
            file: bytes,
            program,
            segments: &segments,
            constants,
            shapes: Shapes::default(),
        };
        let mut methods = Vec::new();
        let mut warnings: Vec<String> = warning.into_iter().collect();
        for (m, plan) in program.execution_plan().iter().flatten().enumerate() {
            methods.push(reader.method(m, plan, &mut warnings)?);
        }
        drop(reader);
        constants::fit_to_tensors(&mut slots, &methods);
        let named = named_blobs(program, &segments)?;
        Ok(ProgramFile {
            bytes,
            header,
            flatbuffer,
            program,
            segments,
            constants: slots,
            methods,
            named,
            warnings,
        })
    }
}

/// `Program.segments` as spans of a file of `file_len` bytes whose segments
/// start at `base`.
fn segment_spans(program: fb::Program<'_>, base: u64, file_len: u64) -> Result<Vec<Span>> {
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
    Ok(segments)
}

/// `Program.named_data`, each located in its segment.
fn named_blobs<'a>(program: fb::Program<'a>, segments: &[Span]) -> Result<Vec<NamedBlob<'a>>> {
    let mut named = Vec::new();
    for (i, nd) in program.named_data().iter().flatten().enumerate() {
        let key = strings::named_data_key(nd).unwrap_or_default();
        let span = *segment(segments, u64::from(nd.segment_index()), || {
            format!("named_data {i} (key {key:?})")
        })?;
        named.push(NamedBlob {
            key,
            segment_index: nd.segment_index(),
            span,
        });
    }
    Ok(named)
}
