//! Writes programs, data files and bundled programs with the generated
//! flatbuffer builders, laid out as the exporter lays them out: a 32-byte
//! extended header, segments aligned to 128 bytes, constants aligned to 16
//! inside the constant segment.
//!
//! Tests use it for what no fixture has; `examples/make_model.rs` uses it
//! to build large programs for the benchmarks.
#![allow(dead_code)]

pub mod mps;
pub mod package;
pub mod package_graph;
pub mod payloads;
pub mod vulkan;
pub mod xnnpack;

use std::collections::HashMap;
use std::io::{self, Write};

use flatbuffers::{FlatBufferBuilder, WIPOffset};
use ptefs::schema::ScalarType;
use ptefs::schema::bundled as bp;
use ptefs::schema::flat_tensor as ft;
use ptefs::schema::program as fb;

const SEGMENT_ALIGN: u64 = 128;
const CONSTANT_ALIGN: u64 = 16;

/// Bytes held in memory, or a deterministic pattern produced while writing
/// (for multi-gigabyte benchmark files), or zeros (which a writer that
/// seeks over them leaves as a hole: files far larger than the disk).
#[derive(Debug, Clone, PartialEq)]
pub enum Bytes {
    Owned(Vec<u8>),
    Pattern { len: u64, seed: u64 },
    Zeros { len: u64 },
}

impl Bytes {
    pub fn len(&self) -> u64 {
        match self {
            Bytes::Owned(v) => v.len() as u64,
            Bytes::Pattern { len, .. } | Bytes::Zeros { len } => *len,
        }
    }

    /// The pattern's byte at `i`: cheap, and different for each seed.
    pub fn pattern_byte(seed: u64, i: u64) -> u8 {
        let x = (i ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 56) as u8
    }

    pub fn to_vec(&self) -> Vec<u8> {
        match self {
            Bytes::Owned(v) => v.clone(),
            Bytes::Pattern { len, seed } => {
                (0..*len).map(|i| Self::pattern_byte(*seed, i)).collect()
            }
            Bytes::Zeros { len } => vec![0; *len as usize],
        }
    }

    fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        match self {
            Bytes::Owned(v) => out.write_all(v),
            Bytes::Pattern { len, seed } => {
                let mut buf = vec![0u8; 1 << 20];
                let mut i = 0;
                while i < *len {
                    let n = (*len - i).min(buf.len() as u64) as usize;
                    for (j, b) in buf[..n].iter_mut().enumerate() {
                        *b = Self::pattern_byte(*seed, i + j as u64);
                    }
                    out.write_all(&buf[..n])?;
                    i += n as u64;
                }
                Ok(())
            }
            Bytes::Zeros { len } => {
                let buf = vec![0u8; (*len).min(1 << 20) as usize];
                let mut i = 0;
                while i < *len {
                    let n = (*len - i).min(buf.len() as u64) as usize;
                    out.write_all(&buf[..n])?;
                    i += n as u64;
                }
                Ok(())
            }
        }
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Self {
        Bytes::Owned(v)
    }
}

/// Where a tensor's initial bytes go.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// None: an input, output or activation.
    None,
    /// A constant (deduplicated with identical constants).
    Constant(Bytes),
    /// The initial state of a mutable tensor.
    Mutable(Bytes),
    /// Stored in a .ptd under the fully qualified name; the buffer index
    /// is ignored by readers but recorded (the exporter numbers them).
    External(u32),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub scalar_type: ScalarType,
    pub sizes: Vec<i32>,
    /// Defaults to the identity.
    pub dim_order: Option<Vec<u8>>,
    pub fqn: Option<String>,
    pub data: Data,
    pub storage_offset: i32,
    pub requires_grad: bool,
    pub layout: i8,
    pub shape_dynamism: fb::TensorShapeDynamism,
    /// `(memory_id, offset)`; given to mutable tensors when absent.
    pub allocation: Option<(u32, u64)>,
    /// Forces an ExtraTensorInfo even without a name.
    pub extra_info: bool,
}

impl Tensor {
    pub fn new(scalar_type: ScalarType, sizes: &[i32], data: Data) -> Tensor {
        Tensor {
            scalar_type,
            sizes: sizes.to_vec(),
            dim_order: None,
            fqn: None,
            data,
            storage_offset: 0,
            requires_grad: false,
            layout: 0,
            shape_dynamism: fb::TensorShapeDynamism::STATIC,
            allocation: None,
            extra_info: false,
        }
    }

    pub fn named(mut self, fqn: &str) -> Tensor {
        self.fqn = Some(fqn.to_owned());
        self
    }

    pub fn dim_order(mut self, order: &[u8]) -> Tensor {
        self.dim_order = Some(order.to_vec());
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Bool(bool),
    Double(f64),
    Str(String),
    Tensor(Tensor),
    IntList(Vec<i64>),
    DoubleList(Vec<f64>),
    BoolList(Vec<bool>),
    TensorList(Vec<i32>),
    OptionalTensorList(Vec<i32>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Instr {
    Kernel { op: i32, args: Vec<i32> },
    Delegate { index: i32, args: Vec<i32> },
    Move { from: i32, to: i32 },
    JumpFalse { cond: i32, dest: i32 },
    Free { value: i32 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub filename: Option<String>,
    pub lineno: i32,
    pub name: Option<String>,
    pub context: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delegate {
    pub id: String,
    pub blob: Bytes,
    /// In `Program.backend_delegate_data` rather than a segment.
    pub inline: bool,
    pub compile_specs: Vec<(String, Vec<u8>)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chain {
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub instructions: Vec<Instr>,
    pub stacktrace: Option<Vec<Vec<Frame>>>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Method {
    pub name: String,
    pub container_meta: Option<(Option<String>, Option<String>)>,
    pub values: Vec<Value>,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub chains: Vec<Chain>,
    pub operators: Vec<(String, String)>,
    pub delegates: Vec<Delegate>,
    pub non_const_buffer_sizes: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub version: u32,
    pub identifier: [u8; 4],
    pub methods: Vec<Method>,
    /// Constants inline in `constant_buffer`, with no extended header: how
    /// files were written before segments.
    pub legacy_inline_constants: bool,
    /// `Program.named_data`: identical blobs share one segment.
    pub named: Vec<(String, Bytes)>,
    /// Segments no table refers to (zero-size ones share an offset).
    pub extra_segments: Vec<Bytes>,
    /// Replaces `constant_segment.segment_index`, to make hostile files.
    pub constant_segment_index: Option<u32>,
}

impl Default for Program {
    fn default() -> Self {
        Program {
            version: 0,
            identifier: *b"ET12",
            methods: Vec::new(),
            legacy_inline_constants: false,
            named: Vec::new(),
            extra_segments: Vec::new(),
            constant_segment_index: None,
        }
    }
}

fn align(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Segments in the order they are laid out.
#[derive(Default)]
struct Segments {
    list: Vec<Vec<Bytes>>,
}

impl Segments {
    fn add(&mut self, parts: Vec<Bytes>) -> u32 {
        self.list.push(parts);
        (self.list.len() - 1) as u32
    }
    fn size(parts: &[Bytes]) -> u64 {
        parts.iter().map(Bytes::len).sum()
    }
}

/// Constant or mutable data packed into one segment at 16-byte offsets,
/// identical contents sharing an offset. Offset 0 is reserved.
struct Packed {
    parts: Vec<Bytes>,
    offsets: Vec<u64>,
    size: u64,
    dedupe: HashMap<Vec<u8>, u32>,
}

impl Packed {
    fn new() -> Packed {
        Packed {
            parts: Vec::new(),
            offsets: vec![0],
            size: 0,
            dedupe: HashMap::new(),
        }
    }
    fn add(&mut self, b: &Bytes) -> u32 {
        if let Bytes::Owned(v) = b
            && let Some(&i) = self.dedupe.get(v)
        {
            return i;
        }
        let start = align(self.size, CONSTANT_ALIGN);
        if start > self.size {
            self.parts
                .push(Bytes::Owned(vec![0; (start - self.size) as usize]));
        }
        self.parts.push(b.clone());
        self.size = start + b.len();
        self.offsets.push(start);
        let i = (self.offsets.len() - 1) as u32;
        if let Bytes::Owned(v) = b {
            self.dedupe.insert(v.clone(), i);
        }
        i
    }
}

impl Method {
    /// A method of one empty chain holding `values`.
    pub fn new(name: &str, values: Vec<Value>) -> Method {
        Method {
            name: name.into(),
            values,
            chains: vec![Chain::default()],
            ..Method::default()
        }
    }
}

impl Program {
    /// A program whose one method, `forward`, holds `values`.
    pub fn forward(values: Vec<Value>) -> Program {
        Program {
            methods: vec![Method::new("forward", values)],
            ..Program::default()
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out).unwrap();
        out
    }

    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        let mut fbb = FlatBufferBuilder::new();
        let mut segments = Segments::default();
        let mut constants = Packed::new();
        let mut mutable = Packed::new();
        let mut inline_constants: Vec<Vec<u8>> = vec![Vec::new()];
        let mut inline_delegates: Vec<Vec<u8>> = Vec::new();

        // Resolve data indices first: tensors refer to them.
        let mut buffer_index: Vec<Vec<u32>> = Vec::new();
        for m in &self.methods {
            let mut idx = Vec::new();
            for v in &m.values {
                let i = match v {
                    Value::Tensor(Tensor {
                        data: Data::Constant(b),
                        ..
                    }) => {
                        if self.legacy_inline_constants {
                            inline_constants.push(b.to_vec());
                            (inline_constants.len() - 1) as u32
                        } else {
                            constants.add(b)
                        }
                    }
                    Value::Tensor(Tensor {
                        data: Data::Mutable(b),
                        ..
                    }) => mutable.add(b),
                    Value::Tensor(Tensor {
                        data: Data::External(i),
                        ..
                    }) => *i,
                    _ => 0,
                };
                idx.push(i);
            }
            buffer_index.push(idx);
        }
        // The constant segment comes first, as the exporter writes it.
        let constant_segment = if self.legacy_inline_constants {
            None
        } else {
            Some(segments.add(std::mem::take(&mut constants.parts)))
        };
        let mutable_segment =
            (mutable.offsets.len() > 1).then(|| segments.add(std::mem::take(&mut mutable.parts)));
        let mut delegate_refs: Vec<Vec<(fb::DataLocation, u32)>> = Vec::new();
        for m in &self.methods {
            let mut refs = Vec::new();
            for d in &m.delegates {
                if d.inline {
                    inline_delegates.push(d.blob.to_vec());
                    refs.push((
                        fb::DataLocation::INLINE,
                        (inline_delegates.len() - 1) as u32,
                    ));
                } else {
                    refs.push((
                        fb::DataLocation::SEGMENT,
                        segments.add(vec![d.blob.clone()]),
                    ));
                }
            }
            delegate_refs.push(refs);
        }
        let mut named_segments: HashMap<Vec<u8>, u32> = HashMap::new();
        let named: Vec<(String, u32)> = self
            .named
            .iter()
            .map(|(k, b)| {
                let v = b.to_vec();
                let seg = *named_segments
                    .entry(v)
                    .or_insert_with(|| segments.add(vec![b.clone()]));
                (k.clone(), seg)
            })
            .collect();
        for b in &self.extra_segments {
            segments.add(vec![b.clone()]);
        }

        let plans: Vec<_> = self
            .methods
            .iter()
            .zip(&buffer_index)
            .zip(&delegate_refs)
            .map(|((m, idx), refs)| method(&mut fbb, m, idx, refs, mutable_segment.is_some()))
            .collect();
        let plans = fbb.create_vector(&plans);

        let constant_buffer = self.legacy_inline_constants.then(|| {
            let bufs: Vec<_> = inline_constants
                .iter()
                .map(|c| {
                    let storage = fbb.create_vector(c);
                    fb::Buffer::create(
                        &mut fbb,
                        &fb::BufferArgs {
                            storage: Some(storage),
                        },
                    )
                })
                .collect();
            fbb.create_vector(&bufs)
        });
        let empty_buffers = fbb.create_vector::<WIPOffset<fb::Buffer>>(&[]);
        let inline: Vec<_> = inline_delegates
            .iter()
            .map(|d| {
                let data = fbb.create_vector(d);
                fb::BackendDelegateInlineData::create(
                    &mut fbb,
                    &fb::BackendDelegateInlineDataArgs { data: Some(data) },
                )
            })
            .collect();
        let inline = fbb.create_vector(&inline);

        let mut seg_offsets = Vec::new();
        let mut at = 0u64;
        for parts in &segments.list {
            let size = Segments::size(parts);
            seg_offsets.push(at);
            at = align(at + size, SEGMENT_ALIGN);
        }
        let segs: Vec<_> = segments
            .list
            .iter()
            .zip(&seg_offsets)
            .map(|(parts, &offset)| {
                fb::DataSegment::create(
                    &mut fbb,
                    &fb::DataSegmentArgs {
                        offset,
                        size: Segments::size(parts),
                    },
                )
            })
            .collect();
        let segs = fbb.create_vector(&segs);
        let constant_segment = constant_segment.map(|seg| {
            let offsets = fbb.create_vector(&constants.offsets);
            fb::SubsegmentOffsets::create(
                &mut fbb,
                &fb::SubsegmentOffsetsArgs {
                    segment_index: self.constant_segment_index.unwrap_or(seg),
                    offsets: Some(offsets),
                },
            )
        });
        let mutable_data_segments = mutable_segment.map(|seg| {
            let offsets = fbb.create_vector(&mutable.offsets);
            let one = fb::SubsegmentOffsets::create(
                &mut fbb,
                &fb::SubsegmentOffsetsArgs {
                    segment_index: seg,
                    offsets: Some(offsets),
                },
            );
            fbb.create_vector(&[one])
        });
        let named_data = (!named.is_empty()).then(|| {
            let items: Vec<_> = named
                .iter()
                .map(|(k, seg)| {
                    let key = fbb.create_string(k);
                    fb::NamedData::create(
                        &mut fbb,
                        &fb::NamedDataArgs {
                            key: Some(key),
                            segment_index: *seg,
                        },
                    )
                })
                .collect();
            fbb.create_vector(&items)
        });
        let root = fb::Program::create(
            &mut fbb,
            &fb::ProgramArgs {
                version: self.version,
                execution_plan: Some(plans),
                constant_buffer: Some(constant_buffer.unwrap_or(empty_buffers)),
                backend_delegate_data: Some(inline),
                segments: Some(segs),
                constant_segment,
                mutable_data_segments,
                named_data,
            },
        );
        let ident = std::str::from_utf8(&self.identifier).unwrap();
        fbb.finish(root, Some(ident));
        let body = fbb.finished_data();

        let total: u64 = segments.list.iter().map(|p| Segments::size(p)).sum();
        if total == 0 {
            return out.write_all(body);
        }
        // Insert the extended header after the root offset and identifier;
        // the root offset is the only absolute offset in a flatbuffer.
        let header_len = 32u64;
        let program_size = body.len() as u64 + header_len;
        let base = align(program_size, SEGMENT_ALIGN);
        let last = segments.list.len() - 1;
        let data_size = seg_offsets[last] + Segments::size(&segments.list[last]);
        let root_offset = u32::from_le_bytes(body[0..4].try_into().unwrap()) + header_len as u32;
        let mut head = Vec::new();
        head.extend_from_slice(&root_offset.to_le_bytes());
        head.extend_from_slice(&body[4..8]);
        head.extend_from_slice(b"eh00");
        head.extend_from_slice(&(header_len as u32).to_le_bytes());
        head.extend_from_slice(&program_size.to_le_bytes());
        head.extend_from_slice(&base.to_le_bytes());
        head.extend_from_slice(&data_size.to_le_bytes());
        head.extend_from_slice(&body[8..]);
        head.resize(base as usize, 0);
        out.write_all(&head)?;
        let mut pos = 0u64;
        for (parts, &offset) in segments.list.iter().zip(&seg_offsets) {
            out.write_all(&vec![0; (offset - pos) as usize])?;
            for p in parts {
                p.write_to(out)?;
            }
            pos = offset + Segments::size(parts);
        }
        Ok(())
    }
}

fn ints<'a>(fbb: &mut FlatBufferBuilder<'a>, v: &[i32]) -> WIPOffset<flatbuffers::Vector<'a, i32>> {
    fbb.create_vector(v)
}

fn method<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    m: &Method,
    idx: &[u32],
    delegates: &[(fb::DataLocation, u32)],
    has_mutable: bool,
) -> WIPOffset<fb::ExecutionPlan<'a>> {
    let values: Vec<_> = m
        .values
        .iter()
        .zip(idx)
        .map(|(v, &i)| evalue(fbb, v, i, has_mutable))
        .collect();
    let values = fbb.create_vector(&values);
    let chains: Vec<_> = m.chains.iter().map(|c| chain(fbb, c)).collect();
    let chains = fbb.create_vector(&chains);
    let operators: Vec<_> = m
        .operators
        .iter()
        .map(|(n, o)| {
            let name = fbb.create_string(n);
            let overload = fbb.create_string(o);
            fb::Operator::create(
                fbb,
                &fb::OperatorArgs {
                    name: Some(name),
                    overload: Some(overload),
                },
            )
        })
        .collect();
    let operators = fbb.create_vector(&operators);
    let dels: Vec<_> = m
        .delegates
        .iter()
        .zip(delegates)
        .map(|(d, &(location, index))| {
            let id = fbb.create_string(&d.id);
            let processed = fb::BackendDelegateDataReference::create(
                fbb,
                &fb::BackendDelegateDataReferenceArgs { location, index },
            );
            let specs: Vec<_> = d
                .compile_specs
                .iter()
                .map(|(k, v)| {
                    let key = fbb.create_string(k);
                    let value = fbb.create_vector(v);
                    fb::CompileSpec::create(
                        fbb,
                        &fb::CompileSpecArgs {
                            key: Some(key),
                            value: Some(value),
                        },
                    )
                })
                .collect();
            let compile_specs = fbb.create_vector(&specs);
            fb::BackendDelegate::create(
                fbb,
                &fb::BackendDelegateArgs {
                    id: Some(id),
                    processed: Some(processed),
                    compile_specs: Some(compile_specs),
                },
            )
        })
        .collect();
    let dels = fbb.create_vector(&dels);
    let name = fbb.create_string(&m.name);
    let container_meta_type = m.container_meta.as_ref().map(|(i, o)| {
        let encoded_inp_str = i.as_ref().map(|s| fbb.create_string(s));
        let encoded_out_str = o.as_ref().map(|s| fbb.create_string(s));
        fb::ContainerMetadata::create(
            fbb,
            &fb::ContainerMetadataArgs {
                encoded_inp_str,
                encoded_out_str,
            },
        )
    });
    let inputs = ints(fbb, &m.inputs);
    let outputs = ints(fbb, &m.outputs);
    let sizes = fbb.create_vector(&m.non_const_buffer_sizes);
    fb::ExecutionPlan::create(
        fbb,
        &fb::ExecutionPlanArgs {
            name: Some(name),
            container_meta_type,
            values: Some(values),
            inputs: Some(inputs),
            outputs: Some(outputs),
            chains: Some(chains),
            operators: Some(operators),
            delegates: Some(dels),
            non_const_buffer_sizes: Some(sizes),
            non_const_buffer_device: None,
        },
    )
}

fn evalue<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    v: &Value,
    buffer: u32,
    has_mutable: bool,
) -> WIPOffset<fb::EValue<'a>> {
    use fb::KernelTypes as K;
    let (t, val) = match v {
        Value::Null => (
            K::Null,
            fb::Null::create(fbb, &fb::NullArgs {}).as_union_value(),
        ),
        Value::Int(x) => (
            K::Int,
            fb::Int::create(fbb, &fb::IntArgs { int_val: *x }).as_union_value(),
        ),
        Value::Bool(x) => (
            K::Bool,
            fb::Bool::create(fbb, &fb::BoolArgs { bool_val: *x }).as_union_value(),
        ),
        Value::Double(x) => (
            K::Double,
            fb::Double::create(fbb, &fb::DoubleArgs { double_val: *x }).as_union_value(),
        ),
        Value::Str(s) => {
            let s = fbb.create_string(s);
            (
                K::String,
                fb::String::create(
                    fbb,
                    &fb::StringArgs {
                        string_val: Some(s),
                    },
                )
                .as_union_value(),
            )
        }
        Value::IntList(items) => {
            let items = fbb.create_vector(items);
            (
                K::IntList,
                fb::IntList::create(fbb, &fb::IntListArgs { items: Some(items) }).as_union_value(),
            )
        }
        Value::DoubleList(items) => {
            let items = fbb.create_vector(items);
            let l = fb::DoubleList::create(fbb, &fb::DoubleListArgs { items: Some(items) });
            (K::DoubleList, l.as_union_value())
        }
        Value::BoolList(items) => {
            let items = fbb.create_vector(items);
            let l = fb::BoolList::create(fbb, &fb::BoolListArgs { items: Some(items) });
            (K::BoolList, l.as_union_value())
        }
        Value::TensorList(items) => {
            let items = fbb.create_vector(items);
            let l = fb::TensorList::create(fbb, &fb::TensorListArgs { items: Some(items) });
            (K::TensorList, l.as_union_value())
        }
        Value::OptionalTensorList(items) => {
            let items = fbb.create_vector(items);
            let l = fb::OptionalTensorList::create(
                fbb,
                &fb::OptionalTensorListArgs { items: Some(items) },
            );
            (K::OptionalTensorList, l.as_union_value())
        }
        Value::Tensor(t) => (
            K::Tensor,
            tensor(fbb, t, buffer, has_mutable).as_union_value(),
        ),
    };
    fb::EValue::create(
        fbb,
        &fb::EValueArgs {
            val_type: t,
            val: Some(val),
        },
    )
}

fn tensor<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    t: &Tensor,
    buffer: u32,
    has_mutable: bool,
) -> WIPOffset<fb::Tensor<'a>> {
    let sizes = ints(fbb, &t.sizes);
    let order: Vec<u8> = t
        .dim_order
        .clone()
        .unwrap_or_else(|| (0..t.sizes.len() as u8).collect());
    let dim_order = fbb.create_vector(&order);
    let external = matches!(t.data, Data::External(_));
    let allocation = t
        .allocation
        .or((matches!(t.data, Data::Mutable(_)) && has_mutable).then_some((0, 0)));
    let allocation_info = allocation.map(|(memory_id, off)| {
        fb::AllocationDetails::create(
            fbb,
            &fb::AllocationDetailsArgs {
                memory_id,
                memory_offset_low: off as u32,
                memory_offset_high: (off >> 32) as u32,
            },
        )
    });
    let extra_tensor_info = (t.fqn.is_some() || external || t.extra_info).then(|| {
        let fully_qualified_name = t.fqn.as_ref().map(|n| fbb.create_string(n));
        fb::ExtraTensorInfo::create(
            fbb,
            &fb::ExtraTensorInfoArgs {
                mutable_data_segments_idx: 0,
                fully_qualified_name,
                location: if external {
                    fb::TensorDataLocation::EXTERNAL
                } else {
                    fb::TensorDataLocation::SEGMENT
                },
                device_type: fb::DeviceType::CPU,
                device_index: 0,
            },
        )
    });
    fb::Tensor::create(
        fbb,
        &fb::TensorArgs {
            scalar_type: t.scalar_type,
            storage_offset: t.storage_offset,
            sizes: Some(sizes),
            dim_order: Some(dim_order),
            requires_grad: t.requires_grad,
            data_buffer_idx: buffer,
            allocation_info,
            layout: t.layout,
            shape_dynamism: t.shape_dynamism,
            extra_tensor_info,
        },
    )
}

fn chain<'a>(fbb: &mut FlatBufferBuilder<'a>, c: &Chain) -> WIPOffset<fb::Chain<'a>> {
    use fb::InstructionArguments as A;
    let instructions: Vec<_> = c
        .instructions
        .iter()
        .map(|i| {
            let (t, args) = match i {
                Instr::Kernel { op, args } => {
                    let args = ints(fbb, args);
                    let k = fb::KernelCall::create(
                        fbb,
                        &fb::KernelCallArgs {
                            op_index: *op,
                            args: Some(args),
                        },
                    );
                    (A::KernelCall, k.as_union_value())
                }
                Instr::Delegate { index, args } => {
                    let args = ints(fbb, args);
                    let d = fb::DelegateCall::create(
                        fbb,
                        &fb::DelegateCallArgs {
                            delegate_index: *index,
                            args: Some(args),
                        },
                    );
                    (A::DelegateCall, d.as_union_value())
                }
                Instr::Move { from, to } => {
                    let m = fb::MoveCall::create(
                        fbb,
                        &fb::MoveCallArgs {
                            move_from: *from,
                            move_to: *to,
                        },
                    );
                    (A::MoveCall, m.as_union_value())
                }
                Instr::JumpFalse { cond, dest } => {
                    let j = fb::JumpFalseCall::create(
                        fbb,
                        &fb::JumpFalseCallArgs {
                            cond_value_index: *cond,
                            destination_instruction: *dest,
                        },
                    );
                    (A::JumpFalseCall, j.as_union_value())
                }
                Instr::Free { value } => {
                    let f = fb::FreeCall::create(
                        fbb,
                        &fb::FreeCallArgs {
                            value_index: *value,
                        },
                    );
                    (A::FreeCall, f.as_union_value())
                }
            };
            fb::Instruction::create(
                fbb,
                &fb::InstructionArgs {
                    instr_args_type: t,
                    instr_args: Some(args),
                },
            )
        })
        .collect();
    let instructions = fbb.create_vector(&instructions);
    let stacktrace = c.stacktrace.as_ref().map(|lists| {
        let lists: Vec<_> = lists
            .iter()
            .map(|frames| {
                let frames: Vec<_> = frames
                    .iter()
                    .map(|f| {
                        let filename = f.filename.as_ref().map(|s| fbb.create_string(s));
                        let name = f.name.as_ref().map(|s| fbb.create_string(s));
                        let context = f.context.as_ref().map(|s| fbb.create_string(s));
                        fb::Frame::create(
                            fbb,
                            &fb::FrameArgs {
                                filename,
                                lineno: f.lineno,
                                name,
                                context,
                            },
                        )
                    })
                    .collect();
                let items = fbb.create_vector(&frames);
                fb::FrameList::create(fbb, &fb::FrameListArgs { items: Some(items) })
            })
            .collect();
        fbb.create_vector(&lists)
    });
    let inputs = ints(fbb, &c.inputs);
    let outputs = ints(fbb, &c.outputs);
    fb::Chain::create(
        fbb,
        &fb::ChainArgs {
            inputs: Some(inputs),
            outputs: Some(outputs),
            instructions: Some(instructions),
            stacktrace,
        },
    )
}

/// A tensor layout in a data file.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub scalar_type: ScalarType,
    pub sizes: Vec<i32>,
    pub dim_order: Vec<u8>,
}

/// A `.ptd`: named blobs, each in its own segment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DataFile {
    pub entries: Vec<(String, Option<Layout>, Bytes)>,
}

impl DataFile {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let mut offsets = Vec::new();
        let mut at = 0u64;
        for (_, _, b) in &self.entries {
            offsets.push(at);
            at = align(at + b.len(), SEGMENT_ALIGN);
        }
        let segs: Vec<_> = self
            .entries
            .iter()
            .zip(&offsets)
            .map(|((_, _, b), &offset)| {
                ft::DataSegment::create(
                    &mut fbb,
                    &ft::DataSegmentArgs {
                        offset,
                        size: b.len(),
                    },
                )
            })
            .collect();
        let segs = fbb.create_vector(&segs);
        let named: Vec<_> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (k, layout, _))| {
                let key = fbb.create_string(k);
                let tensor_layout = layout.as_ref().map(|l| {
                    let sizes = fbb.create_vector(&l.sizes);
                    let dim_order = fbb.create_vector(&l.dim_order);
                    ft::TensorLayout::create(
                        &mut fbb,
                        &ft::TensorLayoutArgs {
                            scalar_type: l.scalar_type,
                            sizes: Some(sizes),
                            dim_order: Some(dim_order),
                        },
                    )
                });
                ft::NamedData::create(
                    &mut fbb,
                    &ft::NamedDataArgs {
                        key: Some(key),
                        segment_index: i as u32,
                        tensor_layout,
                    },
                )
            })
            .collect();
        let named = fbb.create_vector(&named);
        let root = ft::FlatTensor::create(
            &mut fbb,
            &ft::FlatTensorArgs {
                version: 0,
                segments: Some(segs),
                named_data: Some(named),
            },
        );
        fbb.finish(root, Some("FT01"));
        let body = fbb.finished_data();
        let header_len = 40u64;
        let fb_size = body.len() as u64 - 8;
        let base = align(8 + header_len + fb_size, SEGMENT_ALIGN);
        let data_size = self
            .entries
            .last()
            .map_or(0, |(_, _, b)| offsets[offsets.len() - 1] + b.len());
        let root_offset = u32::from_le_bytes(body[0..4].try_into().unwrap()) + header_len as u32;
        let mut out = Vec::new();
        out.extend_from_slice(&root_offset.to_le_bytes());
        out.extend_from_slice(&body[4..8]);
        out.extend_from_slice(b"FH01");
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
        out.extend_from_slice(&(8 + header_len).to_le_bytes());
        out.extend_from_slice(&fb_size.to_le_bytes());
        out.extend_from_slice(&base.to_le_bytes());
        out.extend_from_slice(&data_size.to_le_bytes());
        out.extend_from_slice(&body[8..]);
        for ((_, _, b), &off) in self.entries.iter().zip(&offsets) {
            out.resize((base + off) as usize, 0);
            out.extend_from_slice(&b.to_vec());
        }
        out
    }
}

/// A value in a bundled test case.
#[derive(Debug, Clone, PartialEq)]
pub enum TestValue {
    Tensor {
        scalar_type: ScalarType,
        sizes: Vec<i32>,
        data: Vec<u8>,
    },
    Int(i64),
    Bool(bool),
    Double(f64),
}

/// Inputs and expected outputs of one test case.
pub type TestCase = (Vec<TestValue>, Vec<TestValue>);

/// A `.bpte`: a program and, per method, test cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundled {
    pub program: Vec<u8>,
    pub suites: Vec<(String, Vec<TestCase>)>,
}

impl Bundled {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let suites: Vec<_> = self
            .suites
            .iter()
            .map(|(name, cases)| {
                let cases: Vec<_> = cases
                    .iter()
                    .map(|(inputs, outputs)| {
                        let inputs = test_values(&mut fbb, inputs);
                        let expected_outputs = test_values(&mut fbb, outputs);
                        bp::BundledMethodTestCase::create(
                            &mut fbb,
                            &bp::BundledMethodTestCaseArgs {
                                inputs: Some(inputs),
                                expected_outputs: Some(expected_outputs),
                            },
                        )
                    })
                    .collect();
                let test_cases = fbb.create_vector(&cases);
                let method_name = fbb.create_string(name);
                bp::BundledMethodTestSuite::create(
                    &mut fbb,
                    &bp::BundledMethodTestSuiteArgs {
                        method_name: Some(method_name),
                        test_cases: Some(test_cases),
                    },
                )
            })
            .collect();
        let suites = fbb.create_vector(&suites);
        let program = fbb.create_vector(&self.program);
        let root = bp::BundledProgram::create(
            &mut fbb,
            &bp::BundledProgramArgs {
                version: 0,
                method_test_suites: Some(suites),
                program: Some(program),
            },
        );
        fbb.finish(root, Some("BP08"));
        fbb.finished_data().to_vec()
    }
}

fn test_values<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    values: &[TestValue],
) -> WIPOffset<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<bp::Value<'a>>>> {
    let v: Vec<_> = values
        .iter()
        .map(|v| {
            let (t, val) = match v {
                TestValue::Tensor {
                    scalar_type,
                    sizes,
                    data,
                } => {
                    let order: Vec<u8> = (0..sizes.len() as u8).collect();
                    let sizes = fbb.create_vector(sizes);
                    let data = fbb.create_vector(data);
                    let dim_order = fbb.create_vector(&order);
                    let t = bp::Tensor::create(
                        fbb,
                        &bp::TensorArgs {
                            scalar_type: *scalar_type,
                            sizes: Some(sizes),
                            data: Some(data),
                            dim_order: Some(dim_order),
                        },
                    );
                    (bp::ValueUnion::Tensor, t.as_union_value())
                }
                TestValue::Int(x) => (
                    bp::ValueUnion::Int,
                    bp::Int::create(fbb, &bp::IntArgs { int_val: *x }).as_union_value(),
                ),
                TestValue::Bool(x) => (
                    bp::ValueUnion::Bool,
                    bp::Bool::create(fbb, &bp::BoolArgs { bool_val: *x }).as_union_value(),
                ),
                TestValue::Double(x) => (
                    bp::ValueUnion::Double,
                    bp::Double::create(fbb, &bp::DoubleArgs { double_val: *x }).as_union_value(),
                ),
            };
            bp::Value::create(
                fbb,
                &bp::ValueArgs {
                    val_type: t,
                    val: Some(val),
                },
            )
        })
        .collect();
    fbb.create_vector(&v)
}
