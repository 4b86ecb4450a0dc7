//! The data file (`.ptd`): named blobs, some of them tensors.

use std::sync::Arc;

use super::checked_index::segment;
use super::header::PtdHeader;
use super::program::tensor_nbytes;
use super::shapes::Shapes;
use super::strings::{self, Name};
use super::{Error, Result, Span, verify};
use crate::schema::ScalarType;
use crate::schema::flat_tensor as fb;

/// A validated data file. Every span in it lies within `bytes`.
pub struct DataFile<'a> {
    /// The whole file.
    pub bytes: &'a [u8],
    /// The fixed header.
    pub header: PtdHeader,
    /// Where the flatbuffer lies in the file.
    pub flatbuffer: Span,
    /// The verified flatbuffer root.
    pub flat: fb::FlatTensor<'a>,
    /// `FlatTensor.segments`, as file spans, by index.
    pub segments: Vec<Span>,
    /// `FlatTensor.named_data`, in file order.
    pub entries: Vec<DataEntry<'a>>,
    /// Oddities worth a note that do not stop the file being shown.
    pub warnings: Vec<String>,
}

// Debug by hand: the generated tables' Debug reads strings through the
// `&str` accessors, which must not run on unchecked bytes (see `text`).
impl std::fmt::Debug for DataFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataFile")
            .field("header", &self.header)
            .field("flatbuffer", &self.flatbuffer)
            .field("segments", &self.segments)
            .field("entries", &self.entries)
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

/// A named blob of a data file.
#[derive(Debug, Clone)]
pub struct DataEntry<'a> {
    /// The key; for tensors, the fully qualified name.
    pub key: Name<'a>,
    /// The segment holding the bytes.
    pub segment_index: u32,
    /// The tensor's bytes, or the whole segment for an opaque blob.
    pub span: Span,
    /// Present when the blob is a tensor.
    pub layout: Option<TensorLayout>,
}

/// A tensor layout recorded in a data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorLayout {
    /// Element type.
    pub scalar_type: ScalarType,
    /// Logical sizes, shared by entries that share a layout table.
    pub sizes: Arc<[i64]>,
    /// Dimension order, outermost first; shared like `sizes`.
    pub dim_order: Arc<[u8]>,
}

impl<'a> DataFile<'a> {
    /// Parses and validates a data file.
    pub fn parse(bytes: &'a [u8]) -> Result<DataFile<'a>> {
        let header = PtdHeader::parse(bytes)?;
        let flatbuffer = Span {
            offset: 0,
            len: header.flatbuffer_len(),
        };
        let fb_bytes = flatbuffer.bytes(bytes);
        let (flat, warning) = verify::root::<fb::FlatTensor>(fb_bytes, "data flatbuffer")?;
        let mut warnings: Vec<String> = warning.into_iter().collect();
        if flat.version() != 0 {
            warnings.push(format!(
                "FlatTensor.version is {}; the runtime only loads version 0",
                flat.version()
            ));
        }
        let base = header.segment_base_offset;
        let seg_area = Span {
            offset: base,
            len: header.segment_data_size,
        };
        let mut segments = Vec::new();
        for (i, s) in flat.segments().iter().flatten().enumerate() {
            segments.push(seg_area.sub(s.offset(), s.size(), || {
                format!(
                    "segment {i} (offset {} size {} in the segment area at {base} of {} bytes)",
                    s.offset(),
                    s.size(),
                    header.segment_data_size
                )
            })?);
        }
        let mut entries = Vec::new();
        let mut shapes = Shapes::default();
        for (i, nd) in flat.named_data().iter().flatten().enumerate() {
            let key = strings::data_key(nd).unwrap_or_default();
            let ctx = |e: Error| e.context(format_args!("named_data {i} (key {key:?})"));
            let seg = *segment(&segments, u64::from(nd.segment_index()), || {
                format!("named_data {i} (key {key:?})")
            })?;
            let (span, layout) = match nd.tensor_layout() {
                None => (seg, None),
                Some(l) => {
                    let (sizes, dim_order) = shapes.of(l.sizes(), l.dim_order());
                    match tensor_nbytes(l.scalar_type(), &sizes).map_err(ctx)? {
                        Some(n) => {
                            let span = seg.prefix(n, || format!("tensor {key:?}")).map_err(ctx)?;
                            let layout = TensorLayout {
                                scalar_type: l.scalar_type(),
                                sizes,
                                dim_order,
                            };
                            (span, Some(layout))
                        }
                        None => {
                            warnings.push(format!(
                                "named_data {key:?}: scalar type {} is unknown; shown as an opaque blob",
                                l.scalar_type().0
                            ));
                            (seg, None)
                        }
                    }
                }
            };
            entries.push(DataEntry {
                key,
                segment_index: nd.segment_index(),
                span,
                layout,
            });
        }
        Ok(DataFile {
            bytes,
            header,
            flatbuffer,
            flat,
            segments,
            entries,
            warnings,
        })
    }
}
