//! Writing a data file (`.ptd`) byte for byte as ExecuTorch's
//! `FlatTensorSerializer` does: blobs with equal bytes share a segment,
//! each segment starts at a multiple of 128 bytes from the segment base,
//! the FlatTensor flatbuffer is built in the order `flatc` builds it from
//! the serializer's JSON, the 40-byte `FH01` header (padded to 48) goes
//! after the flatbuffer's root offset and identifier, and the segments
//! start at the next multiple of 128 after the flatbuffer.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};

use crate::format::TensorLayout;
use crate::schema::flat_tensor as fb;

/// ExecuTorch's default `FlatTensorConfig.segment_alignment`.
pub const SEGMENT_ALIGNMENT: u64 = 128;
/// Where the flatbuffer's tables start after the header is inserted.
const FLATBUFFER_ALIGNMENT: u64 = 16;
/// The `FH01` header's length.
const HEADER_LEN: u64 = 40;

/// One named blob to store.
#[derive(Debug, Clone)]
pub struct Blob<'b> {
    /// The key.
    pub key: String,
    /// The bytes.
    pub bytes: Cow<'b, [u8]>,
    /// The tensor layout, for a tensor.
    pub layout: Option<TensorLayout>,
}

/// A data file laid out: the header and flatbuffer, then the segments.
#[derive(Debug)]
pub struct Ptd<'b> {
    /// Bytes up to the segment base: header, flatbuffer, padding.
    pub head: Vec<u8>,
    /// Each segment's offset from the segment base, and its bytes.
    pub segments: Vec<(u64, Cow<'b, [u8]>)>,
    /// Total size.
    pub len: u64,
}

fn align(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Lays out `blobs`, in order.
pub fn layout(blobs: Vec<Blob<'_>>) -> Ptd<'_> {
    // Equal bytes are stored once, as the exporter's named data store
    // does: candidates are found by size and first bytes, then compared.
    let mut seen: HashMap<(usize, &[u8]), Vec<usize>> = HashMap::new();
    let mut segment_of: Vec<usize> = Vec::with_capacity(blobs.len());
    let mut firsts: Vec<usize> = Vec::new();
    for (i, b) in blobs.iter().enumerate() {
        let bytes: &[u8] = &b.bytes;
        let fingerprint = (bytes.len(), &bytes[..bytes.len().min(64)]);
        let same = seen.get(&fingerprint).and_then(|c| {
            c.iter()
                .copied()
                .find(|&s| blobs[firsts[s]].bytes[..] == *bytes)
        });
        let s = same.unwrap_or_else(|| {
            firsts.push(i);
            seen.entry(fingerprint).or_default().push(firsts.len() - 1);
            firsts.len() - 1
        });
        segment_of.push(s);
    }
    let mut offsets = Vec::with_capacity(firsts.len());
    let mut end = 0u64;
    for &i in &firsts {
        let at = if offsets.is_empty() {
            0
        } else {
            align(end, SEGMENT_ALIGNMENT)
        };
        offsets.push(at);
        end = at + blobs[i].bytes.len() as u64;
    }
    let flatbuffer = flatbuffer(&blobs, &segment_of, &firsts, &offsets);
    let padded_header = align(HEADER_LEN, FLATBUFFER_ALIGNMENT);
    let base = align(flatbuffer.len() as u64 + padded_header, SEGMENT_ALIGNMENT);
    let mut head = Vec::with_capacity(base as usize);
    let root = u32::from_le_bytes(flatbuffer[..4].try_into().expect("4 bytes"));
    head.extend_from_slice(&(root + padded_header as u32).to_le_bytes());
    head.extend_from_slice(&flatbuffer[4..8]);
    head.extend_from_slice(b"FH01");
    head.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    for v in [padded_header, flatbuffer.len() as u64, base, end] {
        head.extend_from_slice(&v.to_le_bytes());
    }
    head.resize(8 + padded_header as usize, 0);
    head.extend_from_slice(&flatbuffer[8..]);
    head.resize(base as usize, 0);
    let mut blobs = blobs;
    let segments = firsts
        .iter()
        .zip(&offsets)
        .rev()
        .map(|(&i, &at)| {
            (
                at,
                std::mem::replace(&mut blobs[i].bytes, Cow::Borrowed(&[])),
            )
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Ptd {
        head,
        segments,
        len: base + end,
    }
}

impl Ptd<'_> {
    /// Writes the file.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(&self.head)?;
        let mut at = 0u64;
        let zeros = [0u8; SEGMENT_ALIGNMENT as usize];
        for (offset, bytes) in &self.segments {
            out.write_all(&zeros[..(offset - at) as usize])?;
            out.write_all(bytes)?;
            at = offset + bytes.len() as u64;
        }
        Ok(())
    }
}

/// The FlatTensor flatbuffer, its objects made in the order `flatc` makes
/// them from the serializer's JSON (each table's fields in the order the
/// generated `create` adds them, which is `flatc`'s too).
fn flatbuffer(
    blobs: &[Blob<'_>],
    segment_of: &[usize],
    firsts: &[usize],
    offsets: &[u64],
) -> Vec<u8> {
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let segments: Vec<_> = firsts
        .iter()
        .zip(offsets)
        .map(|(&i, &offset)| {
            fb::DataSegment::create(
                &mut fbb,
                &fb::DataSegmentArgs {
                    offset,
                    size: blobs[i].bytes.len() as u64,
                },
            )
        })
        .collect();
    let segments = fbb.create_vector(&segments);
    let mut named = Vec::with_capacity(blobs.len());
    for (b, &s) in blobs.iter().zip(segment_of) {
        let key = fbb.create_string(&b.key);
        let tensor_layout = b.layout.as_ref().map(|l| {
            let sizes: Vec<i32> = l.sizes.iter().map(|&d| d as i32).collect();
            let sizes = fbb.create_vector(&sizes);
            let dim_order = fbb.create_vector(&l.dim_order[..]);
            fb::TensorLayout::create(
                &mut fbb,
                &fb::TensorLayoutArgs {
                    scalar_type: l.scalar_type,
                    sizes: Some(sizes),
                    dim_order: Some(dim_order),
                },
            )
        });
        named.push(fb::NamedData::create(
            &mut fbb,
            &fb::NamedDataArgs {
                key: Some(key),
                segment_index: s as u32,
                tensor_layout,
            },
        ));
    }
    let named_data = fbb.create_vector(&named);
    let root = fb::FlatTensor::create(
        &mut fbb,
        &fb::FlatTensorArgs {
            version: 0,
            segments: Some(segments),
            named_data: Some(named_data),
        },
    );
    fb::finish_flat_tensor_buffer(&mut fbb, root);
    fbb.finished_data().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::DataFile;

    /// Every blob of a data file ExecuTorch wrote, laid out again.
    fn again(path: &str) -> (Vec<u8>, Vec<u8>) {
        let old = std::fs::read(path).unwrap();
        let d = DataFile::parse(&old).unwrap();
        let blobs = d
            .entries
            .iter()
            .map(|e| Blob {
                key: e.key.as_str().unwrap().to_owned(),
                bytes: Cow::Borrowed(e.span.bytes(&old)),
                layout: e.layout.clone(),
            })
            .collect();
        let ptd = layout(blobs);
        let mut new = Vec::new();
        ptd.write(&mut new).unwrap();
        assert_eq!(new.len() as u64, ptd.len);
        (old.clone(), new)
    }

    #[test]
    fn exporters_data_files_are_laid_out_again_byte_for_byte() {
        for f in [
            "tests/fixtures/mlp_external.ptd",
            "tests/fixtures/xnnpack_external.ptd",
        ] {
            let (old, new) = again(f);
            assert_eq!(old.len(), new.len(), "{f}");
            let first = old.iter().zip(&new).position(|(a, b)| a != b);
            assert_eq!(first, None, "{f}");
        }
    }
}
