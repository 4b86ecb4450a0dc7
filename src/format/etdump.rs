//! The runtime's profile (ETDump, `.etdp`): per run data block, the timed
//! spans (profile events), allocations and logged intermediate outputs
//! (debug events) of one load or execution.
//!
//! The file is a size-prefixed flatbuffer: a little-endian u32 giving the
//! flatbuffer's length, then the flatbuffer, whose identifier `ED00` sits at
//! bytes 8..12 of the file. Times are in the runtime's ticks; the file does
//! not say how long a tick is.

use super::program::tensor_nbytes;
use super::strings::{self, Name};
use super::{Error, Result, Span, verify};
use crate::schema::ScalarType;
use crate::schema::etdump as fb;

/// What a tick is taken to be: the file does not record it.
pub const TICK: &str = "the ETDump does not record how long a tick is; times in ms and µs take a tick to be 1 ns, as ExecuTorch's Inspector does by default and as the runtime's clock on Linux and macOS counts";

/// A validated ETDump. Every span in it lies within `bytes`.
pub struct ProfileFile<'a> {
    /// The whole file.
    pub bytes: &'a [u8],
    /// The u32 at bytes 0..4: the flatbuffer's length.
    pub size_prefix: u32,
    /// Where the flatbuffer lies in the file (bytes 4..4 + size prefix).
    pub flatbuffer: Span,
    /// `ETDump.version`.
    pub version: u32,
    /// `ETDump.run_data`, in file order.
    pub runs: Vec<Run<'a>>,
    /// Oddities worth a note that do not stop the file being shown.
    pub warnings: Vec<String>,
}

// Debug by hand, as for the other files: nothing reads strings as `&str`.
impl std::fmt::Debug for ProfileFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfileFile")
            .field("size_prefix", &self.size_prefix)
            .field("flatbuffer", &self.flatbuffer)
            .field("version", &self.version)
            .field("runs", &self.runs.len())
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

/// One `RunData` block: "Default" for loading, then one per execution.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    /// `RunData.name`.
    pub name: Option<Name<'a>>,
    /// The bundled input the run used, or -1.
    pub bundled_input_index: i32,
    /// The allocators profiled, by index (allocation events name them).
    pub allocators: Vec<Option<Name<'a>>>,
    /// The events, in file order.
    pub events: Vec<Event<'a>>,
}

/// One event of a run.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A timed span.
    Profile(ProfileEvent<'a>),
    /// An allocation.
    Allocation(AllocationEvent),
    /// A logged value.
    Debug(DebugEvent<'a>),
    /// An `Event` with no field set (the schema requires exactly one).
    Empty,
}

/// A timed span, in ticks.
#[derive(Debug, Clone)]
pub struct ProfileEvent<'a> {
    /// The event's name (`OPERATOR_CALL`, `native_call_addmm.out`, ...).
    pub name: Option<Name<'a>>,
    /// The chain, or -1 for a method-level event.
    pub chain_index: i32,
    /// The instruction within the chain.
    pub instruction_id: i32,
    /// A delegate's integer debug id, or -1.
    pub delegate_debug_id_int: i32,
    /// A delegate's string debug id.
    pub delegate_debug_id_str: Option<Name<'a>>,
    /// A delegate's metadata bytes.
    pub delegate_debug_metadata: Option<&'a [u8]>,
    /// Start, in ticks.
    pub start: u64,
    /// End, in ticks.
    pub end: u64,
}

impl ProfileEvent<'_> {
    /// `end - start`, or `None` when the span ends before it starts.
    pub fn duration(&self) -> Option<u64> {
        self.end.checked_sub(self.start)
    }

    /// Whether a delegate recorded it (it has a delegate debug id).
    pub fn is_delegated(&self) -> bool {
        self.delegate_debug_id_int != -1 || self.delegate_debug_id_str.is_some()
    }
}

/// An allocation from one of the run's allocators.
#[derive(Debug, Clone, Copy)]
pub struct AllocationEvent {
    /// Index into [`Run::allocators`].
    pub allocator_id: i32,
    /// Bytes allocated.
    pub size: u64,
}

/// A logged value: an intermediate output, or a method output.
#[derive(Debug, Clone)]
pub struct DebugEvent<'a> {
    /// The event's name, if the runtime gave one.
    pub name: Option<Name<'a>>,
    /// The chain (u64; all ones for a method output).
    pub chain_index: u64,
    /// The instruction that produced the value.
    pub instruction_id: i32,
    /// A delegate's integer debug id, or -1.
    pub delegate_debug_id_int: i32,
    /// A delegate's string debug id.
    pub delegate_debug_id_str: Option<Name<'a>>,
    /// The value.
    pub value: Value<'a>,
    /// `Value.output`: whether the value is a method output, when stated.
    pub output: Option<bool>,
}

/// A debug event's value.
#[derive(Debug, Clone)]
pub enum Value<'a> {
    /// No `debug_entry`, or `val` names a field that is absent.
    Missing,
    /// `Null`.
    Null,
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A float.
    Float(f32),
    /// A double.
    Double(f64),
    /// A tensor (metadata; its bytes are in the debug buffer).
    Tensor(DebugTensor),
    /// A list of tensors.
    TensorList(Vec<DebugTensor>),
    /// A string.
    String(Option<Name<'a>>),
    /// A `ValueType` this reader does not know.
    Unknown(i8),
}

/// A logged tensor: its type and shape, and where its bytes are in the
/// debug buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebugTensor {
    /// Element type.
    pub scalar_type: ScalarType,
    /// Sizes.
    pub sizes: Vec<i64>,
    /// Strides, in elements.
    pub strides: Vec<i64>,
    /// Byte offset in the debug buffer.
    pub offset: i64,
    /// Its size in bytes, when the type and sizes give one.
    pub nbytes: Option<u64>,
    /// Why it cannot be read, when it cannot.
    pub problem: Option<String>,
}

impl DebugTensor {
    fn of(t: fb::Tensor<'_>) -> DebugTensor {
        let sizes: Vec<i64> = t.sizes().iter().flatten().collect();
        let strides: Vec<i64> = t.strides().iter().flatten().collect();
        let (nbytes, mut problem) = match tensor_nbytes(t.scalar_type(), &sizes) {
            Ok(Some(n)) => (Some(n), None),
            Ok(None) => (
                None,
                Some(format!("scalar type {} is unknown", t.scalar_type().0)),
            ),
            Err(e) => (None, Some(e.to_string())),
        };
        if t.offset() < 0 {
            problem = Some(format!("offset {} is negative", t.offset()));
        }
        if problem.is_none() && !is_contiguous(&sizes, &strides) {
            problem = Some(format!(
                "strides {strides:?} are not contiguous for sizes {sizes:?}"
            ));
        }
        DebugTensor {
            scalar_type: t.scalar_type(),
            sizes,
            strides,
            offset: t.offset(),
            nbytes,
            problem,
        }
    }

    /// Its bytes in `buffer` (a debug buffer), or why there are none.
    pub fn span_in(&self, buffer_len: u64) -> std::result::Result<Span, String> {
        if let Some(p) = &self.problem {
            return Err(p.clone());
        }
        let (Ok(offset), Some(len)) = (u64::try_from(self.offset), self.nbytes) else {
            return Err("no size".into());
        };
        match offset.checked_add(len) {
            Some(end) if end <= buffer_len => Ok(Span { offset, len }),
            _ => Err(format!(
                "its {len} bytes at offset {offset} extend past the debug buffer's {buffer_len} bytes"
            )),
        }
    }
}

/// Whether `strides` lay `sizes` out row-major without gaps (empty strides
/// count as contiguous; the runtime writes tensors packed).
fn is_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    if strides.is_empty() {
        return true;
    }
    if strides.len() != sizes.len() {
        return false;
    }
    let mut expect: i64 = 1;
    for (&s, &st) in sizes.iter().zip(strides).rev() {
        if s > 1 && st != expect {
            return false;
        }
        expect = expect.saturating_mul(s.max(1));
    }
    true
}

impl<'a> ProfileFile<'a> {
    /// Parses and validates an ETDump.
    pub fn parse(bytes: &'a [u8]) -> Result<ProfileFile<'a>> {
        if bytes.len() < 12 {
            return Err(Error::TooShort {
                what: "ETDump",
                len: bytes.len() as u64,
                needed: "a size prefix and a flatbuffer header (12 bytes)",
            });
        }
        let size_prefix = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let rest = bytes.len() as u64 - 4;
        if u64::from(size_prefix) > rest {
            return Err(Error::HeaderField {
                field: "ETDump size prefix (bytes 0..4)",
                value: size_prefix.to_string(),
                problem: format!("past the end: {rest} bytes follow it"),
            });
        }
        let mut warnings = Vec::new();
        if u64::from(size_prefix) < rest {
            warnings.push(format!(
                "the size prefix says {size_prefix} bytes but {rest} follow it; the last {} are not read",
                rest - u64::from(size_prefix)
            ));
        }
        let flatbuffer = Span {
            offset: 4,
            len: u64::from(size_prefix),
        };
        let framed = Span {
            offset: 0,
            len: flatbuffer.end(),
        };
        let (root, warning) =
            verify::size_prefixed_root::<fb::ETDump>(framed.bytes(bytes), "ETDump")?;
        warnings.extend(warning);
        if root.version() != 0 {
            warnings.push(format!(
                "ETDump.version is {}; this reader knows version 0",
                root.version()
            ));
        }
        let mut runs = Vec::new();
        for (r, rd) in root.run_data().iter().flatten().enumerate() {
            let allocators: Vec<Option<Name<'a>>> = rd
                .allocators()
                .iter()
                .flatten()
                .map(strings::allocator_name)
                .collect();
            let mut events = Vec::new();
            for (i, e) in rd.events().iter().flatten().enumerate() {
                let set = [
                    e.profile_event().is_some(),
                    e.allocation_event().is_some(),
                    e.debug_event().is_some(),
                ];
                if set.iter().filter(|s| **s).count() != 1 {
                    warnings.push(format!(
                        "run {r} event {i} sets {} of profile_event, allocation_event and debug_event; exactly one is expected",
                        set.iter().filter(|s| **s).count()
                    ));
                }
                let event = if let Some(p) = e.profile_event() {
                    let p = ProfileEvent {
                        name: strings::profile_event_name(p),
                        chain_index: p.chain_index(),
                        instruction_id: p.instruction_id(),
                        delegate_debug_id_int: p.delegate_debug_id_int(),
                        delegate_debug_id_str: strings::profile_event_delegate_id(p),
                        delegate_debug_metadata: p.delegate_debug_metadata().map(|v| v.bytes()),
                        start: p.start_time(),
                        end: p.end_time(),
                    };
                    if p.duration().is_none() {
                        warnings.push(format!(
                            "run {r} event {i} ends (tick {}) before it starts (tick {})",
                            p.end, p.start
                        ));
                    }
                    Event::Profile(p)
                } else if let Some(a) = e.allocation_event() {
                    let in_range =
                        usize::try_from(a.allocator_id()).is_ok_and(|id| id < allocators.len());
                    if !in_range {
                        warnings.push(format!(
                            "run {r} event {i}: allocator {} is out of range ({} allocators)",
                            a.allocator_id(),
                            allocators.len()
                        ));
                    }
                    Event::Allocation(AllocationEvent {
                        allocator_id: a.allocator_id(),
                        size: a.allocation_size(),
                    })
                } else if let Some(d) = e.debug_event() {
                    let (value, output) = value(d.debug_entry());
                    Event::Debug(DebugEvent {
                        name: strings::debug_event_name(d),
                        chain_index: d.chain_index(),
                        instruction_id: d.instruction_id(),
                        delegate_debug_id_int: d.delegate_debug_id_int(),
                        delegate_debug_id_str: strings::debug_event_delegate_id(d),
                        value,
                        output,
                    })
                } else {
                    Event::Empty
                };
                events.push(event);
            }
            runs.push(Run {
                name: strings::run_name(rd),
                bundled_input_index: rd.bundled_input_index(),
                allocators,
                events,
            });
        }
        Ok(ProfileFile {
            bytes,
            size_prefix,
            flatbuffer,
            version: root.version(),
            runs,
            warnings,
        })
    }

    /// Every debug tensor, in order (run, event, list position), with the
    /// run and event it belongs to. `debug/<k>.npy` numbers them so.
    pub fn debug_tensors(&self) -> Vec<(usize, usize, &DebugTensor)> {
        let mut out = Vec::new();
        for (r, run) in self.runs.iter().enumerate() {
            for (i, e) in run.events.iter().enumerate() {
                if let Event::Debug(d) = e {
                    match &d.value {
                        Value::Tensor(t) => out.push((r, i, t)),
                        Value::TensorList(ts) => out.extend(ts.iter().map(|t| (r, i, t))),
                        _ => {}
                    }
                }
            }
        }
        out
    }
}

fn value(v: Option<fb::Value<'_>>) -> (Value<'_>, Option<bool>) {
    let Some(v) = v else {
        return (Value::Missing, None);
    };
    let output = v.output().map(|b| b.bool_val());
    let missing = Value::Missing;
    let value = match v.val() {
        fb::ValueType::Null => Value::Null,
        fb::ValueType::Int => v.int_value().map_or(missing, |x| Value::Int(x.int_val())),
        fb::ValueType::Bool => v
            .bool_value()
            .map_or(missing, |x| Value::Bool(x.bool_val())),
        fb::ValueType::Float => v
            .float_value()
            .map_or(missing, |x| Value::Float(x.float_val())),
        fb::ValueType::Double => v
            .double_value()
            .map_or(missing, |x| Value::Double(x.double_val())),
        fb::ValueType::Tensor => v
            .tensor()
            .map_or(missing, |t| Value::Tensor(DebugTensor::of(t))),
        fb::ValueType::TensorList => v.tensor_list().map_or(missing, |l| {
            Value::TensorList(l.tensors().iter().flatten().map(DebugTensor::of).collect())
        }),
        // `Value` has no string field: a String value cannot be stored.
        fb::ValueType::String => Value::String(None),
        other => Value::Unknown(other.0),
    };
    (value, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguity() {
        assert!(is_contiguous(&[1, 3, 4], &[12, 4, 1]));
        assert!(is_contiguous(&[2, 3], &[]));
        assert!(!is_contiguous(&[2, 3], &[1, 2]));
        assert!(!is_contiguous(&[2, 3], &[3]));
    }

    #[test]
    fn short_and_oversized_files_are_refused() {
        assert!(ProfileFile::parse(b"\0\0\0\0ED00").is_err());
        let mut b = vec![0u8; 16];
        b[0] = 200;
        b[8..12].copy_from_slice(b"ED00");
        let e = ProfileFile::parse(&b).unwrap_err().to_string();
        assert!(e.contains("size prefix"), "{e}");
    }
}
