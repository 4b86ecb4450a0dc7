//! Where constant tensors' bytes are: the constant segment, or the inline
//! buffers of files from before segments.

use flatbuffers::{ForwardsUOffset, Vector};

use super::{MethodInfo, TensorData};
use crate::format::checked_index::{at, segment};
use crate::format::{Error, Result, Span};
use crate::schema::program as fb;

/// How a program stores its constants, decided once per file rather than
/// per tensor.
#[derive(Clone, Copy)]
pub(super) enum Constants<'a> {
    /// `Program.constant_buffer` is non-empty (files from before
    /// segments): each buffer's bytes are inline in the flatbuffer.
    Inline(Vector<'a, ForwardsUOffset<fb::Buffer<'a>>>),
    /// `Program.constant_segment`: offsets into one segment.
    Segment {
        /// The segment holding every constant.
        segment_index: u32,
        /// Each buffer's offset in that segment.
        offsets: Option<Vector<'a, u64>>,
    },
    /// The program stores no constants.
    Absent,
}

impl<'a> Constants<'a> {
    /// How `program` stores its constants.
    pub(super) fn of(program: fb::Program<'a>) -> Constants<'a> {
        if let Some(buffers) = program.constant_buffer().filter(|b| !b.is_empty()) {
            return Constants::Inline(buffers);
        }
        match program.constant_segment() {
            Some(cs) => Constants::Segment {
                segment_index: cs.segment_index(),
                offsets: cs.offsets(),
            },
            None => Constants::Absent,
        }
    }

    /// Each constant buffer's whole slot, before tensors narrow it down.
    /// Index 0 is reserved and always `None`.
    pub(super) fn slots(&self, file: &'a [u8], segments: &[Span]) -> Result<Vec<Option<Span>>> {
        match *self {
            Constants::Inline(buffers) => Ok(buffers
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let storage = b.storage().map(|s| s.bytes());
                    (i > 0).then(|| Span::of_vector(file, storage)).flatten()
                })
                .collect()),
            Constants::Segment {
                segment_index,
                offsets,
            } => segment_slots(segment_index, offsets, segments),
            Constants::Absent => Ok(Vec::new()),
        }
    }

    /// The bytes of a constant tensor of `nbytes` bytes in buffer `idx`;
    /// `None` for an empty tensor in an inline buffer without storage, which
    /// has no bytes anywhere.
    pub(super) fn span(
        &self,
        file: &'a [u8],
        segments: &[Span],
        idx: u32,
        nbytes: u64,
    ) -> Result<Option<Span>> {
        let what = || format!("constant buffer {idx} holding {nbytes} bytes");
        match *self {
            Constants::Inline(buffers) => {
                let buffer = at(Some(buffers), u64::from(idx), "constant_buffer")?;
                let storage = buffer.storage().map(|s| s.bytes());
                match Span::of_vector(file, storage) {
                    Some(span) => span.prefix(nbytes, what).map(Some),
                    None if nbytes == 0 => Ok(None),
                    None => Err(Error::new(format!("{}: the buffer has no storage", what()))),
                }
            }
            Constants::Segment {
                segment_index,
                offsets,
            } => {
                let off = at(offsets, u64::from(idx), "constant_segment.offsets")?;
                let seg = segment(segments, u64::from(segment_index), || {
                    "constant_segment".into()
                })?;
                seg.sub(off, nbytes, what).map(Some)
            }
            Constants::Absent => Err(Error::new(
                "refers to constant data but the program has no constant_segment",
            )),
        }
    }
}

/// The slots of the constant segment: each runs from its offset to the next
/// larger offset (or the segment's end), since offsets need not be in order.
fn segment_slots(
    segment_index: u32,
    offsets: Option<Vector<'_, u64>>,
    segments: &[Span],
) -> Result<Vec<Option<Span>>> {
    let offsets: Vec<u64> = offsets.iter().flatten().collect();
    if offsets.len() <= 1 {
        return Ok(vec![None; offsets.len()]);
    }
    let seg = *segment(segments, u64::from(segment_index), || {
        "constant_segment".into()
    })?;
    // The exporter writes offsets in order, so the next larger offset is
    // found by a cursor that only moves forward; a file out of order gets a
    // sorted copy to search instead.
    let in_order = offsets.is_sorted();
    let sorted = if in_order {
        Vec::new()
    } else {
        let mut copy = offsets.clone();
        copy.sort_unstable();
        copy
    };
    let mut cursor = 0;
    let mut slots = Vec::with_capacity(offsets.len());
    slots.push(None);
    for (i, &off) in offsets.iter().enumerate().skip(1) {
        let next = if in_order {
            cursor = cursor.max(i);
            while offsets.get(cursor).is_some_and(|&o| o <= off) {
                cursor += 1;
            }
            offsets.get(cursor)
        } else {
            sorted.get(sorted.partition_point(|&o| o <= off))
        };
        let end = next.copied().unwrap_or(seg.len).min(seg.len);
        let len = end.saturating_sub(off);
        let span = seg.sub(off, len, || {
            format!("constant_segment.offsets[{i}] = {off}")
        })?;
        slots.push(Some(span));
    }
    Ok(slots)
}

/// Narrows each constant buffer that tensors use to exactly the bytes of its
/// largest tensor; unused buffers keep their whole slot.
pub(super) fn fit_to_tensors(slots: &mut [Option<Span>], methods: &[MethodInfo<'_>]) {
    let mut used = vec![false; slots.len()];
    for t in methods.iter().flat_map(|m| &m.tensors) {
        let TensorData::Constant { buffer_index, .. } = t.data else {
            continue;
        };
        let i = buffer_index as usize;
        if let (Some(Some(span)), Some(seen)) = (slots.get_mut(i), used.get_mut(i)) {
            span.len = if *seen {
                span.len.max(t.nbytes)
            } else {
                t.nbytes
            };
            *seen = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constant slots of a 64-byte segment at file offset 100 with
    /// these offsets.
    fn slots(offsets: &[u64]) -> Result<Vec<Option<Span>>> {
        let mut b = flatbuffers::FlatBufferBuilder::new();
        let v = b.create_vector(offsets);
        b.finish_minimal(v);
        let offsets = flatbuffers::root::<Vector<u64>>(b.finished_data()).ok();
        assert!(offsets.is_some());
        segment_slots(
            0,
            offsets,
            &[Span {
                offset: 100,
                len: 64,
            }],
        )
    }

    fn span(offset: u64, len: u64) -> Option<Span> {
        Some(Span { offset, len })
    }

    #[test]
    fn each_slot_runs_to_the_next_larger_offset_in_any_order() {
        assert_eq!(
            slots(&[0, 0, 16, 16, 48]).unwrap(),
            [
                None,
                span(100, 16),
                span(116, 32),
                span(116, 32),
                span(148, 16)
            ]
        );
        assert_eq!(
            slots(&[0, 48, 16, 0, 16]).unwrap(),
            [
                None,
                span(148, 16),
                span(116, 32),
                span(100, 16),
                span(116, 32)
            ]
        );
        assert_eq!(slots(&[0]).unwrap(), [None]);
        assert_eq!(slots(&[0, 64]).unwrap(), [None, span(164, 0)]);
    }

    #[test]
    fn an_offset_past_the_segment_is_named() {
        for offsets in [&[0, 16, 80][..], &[0, 80, 16]] {
            let e = slots(offsets).unwrap_err().to_string();
            assert!(
                e.contains("constant_segment.offsets[") && e.contains("= 80"),
                "{e}"
            );
        }
    }
}
