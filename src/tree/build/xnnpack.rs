//! `xnnpack/` inside an XNNPACK delegate's directory: what its header,
//! weights and their `index.json` entries say beyond the layout every
//! decoded backend shares (`delegate_layout`).

use serde::Serialize;

use super::delegate::{Located, NamedIndex, Npy, Place, found, located, source_of};
use super::delegate_layout::{HeaderJson, Lacking, Listed};
use super::index::Source;
use super::{Builder, Dir};
use crate::delegate::xnnpack::{self, Bytes, Scales, Weight, datatype};
use crate::tree::Dtype;

/// The directory's name and what the warning says of weights without files.
pub(super) const LISTING: (&str, Lacking) =
    ("xnnpack", "weights lack files for their bytes or scales");

impl Builder {
    /// `<name>.bin`, `<name>.npy` and the scale files of one weight.
    pub(super) fn weight<'w>(
        &mut self,
        wdir: &mut Dir,
        place: &Place<'_, '_>,
        named: &NamedIndex<'w>,
        w: &'w Weight<'_>,
    ) -> IndexEntry<'w> {
        let mut e = IndexEntry::new(w);
        match located(&w.bytes, place, named) {
            Ok(at) => {
                let span = at.1;
                // A .npy only when the bytes are exactly what the dims need.
                let numpy = w
                    .storage
                    .zip(w.size.as_ref())
                    .filter(|(_, (n, _))| *n == span.len)
                    .map(|(s, (_, shape))| Npy {
                        descr: s.numpy,
                        shape,
                        widen: false,
                    });
                let dims = w.dims.iter().map(|&d| i64::from(d)).collect();
                let meta = self.meta(Dtype::Xnnpack(w.datatype), dims);
                let (bin, npy) = self.typed_pair(wdir, &w.name, (at.0, span), numpy, meta);
                e.name = Some(bin);
                e.npy = npy;
                e.nbytes = Some(span.len);
                e.source = Some(source_of(&at));
            }
            Err(why) => e.missing = Some(why),
        }
        if let Some(scales) = &w.scales {
            e.scales = Some(self.scale_files(wdir, place, named, &w.name, scales));
        }
        e
    }

    /// `<name>.scale.bin` and `.npy`, and their `index.json` object.
    fn scale_files<'w>(
        &mut self,
        wdir: &mut Dir,
        place: &Place<'_, '_>,
        named: &NamedIndex<'w>,
        name: &str,
        scales: &'w Result<Scales<'_>, String>,
    ) -> ScaleEntry<'w> {
        let s = match scales {
            Ok(s) => s,
            Err(why) => return ScaleEntry::missing(why.clone()),
        };
        let at: Located<'w> = match found(&s.bytes, place, named) {
            Ok(at) => at,
            Err(why) => return ScaleEntry::missing(why),
        };
        let span = at.1;
        let stored = if s.bf16 { "bfloat16" } else { "float32" };
        let meta = self.meta(Dtype::Named(stored), vec![s.count as i64]);
        // bf16 scales are widened to `<f4` in the `.npy`, which NumPy
        // reads as it reads every other scale file.
        let numpy = Npy {
            descr: "<f4",
            shape: &[s.count],
            widen: s.bf16,
        };
        let stem = format!("{name}.scale");
        let (bin, npy) = self.typed_pair(wdir, &stem, (at.0, span), Some(numpy), meta);
        let key = match &s.bytes {
            Bytes::Named { key, .. } => Some(*key),
            Bytes::Payload(_) => None,
        };
        ScaleEntry {
            name: Some(bin),
            npy,
            count: Some(s.count),
            numpy_dtype: Some("<f4"),
            stored_dtype: Some(stored),
            widened: Some(s.bf16),
            nbytes: Some(span.len),
            buffer_index: s.buffer_index,
            key,
            source: Some(source_of(&at)),
            missing: None,
        }
    }
}

/// `header.json` of a payload whose header reads.
pub(super) fn header_json(payload: &[u8], place: &Place<'_, '_>) -> Option<HeaderJson> {
    let h = xnnpack::header::parse(payload).ok()?;
    let fields = (h.magic, h.header_length);
    Some(HeaderJson::new(
        fields,
        (h.flatbuffer, h.constant_data),
        payload,
        place,
    ))
}

/// The `scales` object of an `index.json` entry: the scale files, or why
/// there are none.
#[derive(Default, Serialize)]
struct ScaleEntry<'w> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    npy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    numpy_dtype: Option<&'static str>,
    /// `float32` or `bfloat16`: what the `.bin` holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    stored_dtype: Option<&'static str>,
    /// True when the `.npy` holds bfloat16 scales widened to float32.
    #[serde(skip_serializing_if = "Option::is_none")]
    widened: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nbytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    buffer_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'w str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<Source<'w>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<String>,
}

impl ScaleEntry<'_> {
    fn missing(why: String) -> Self {
        ScaleEntry {
            missing: Some(why),
            ..ScaleEntry::default()
        }
    }
}

/// One entry of `weights/index.json`.
#[derive(Serialize)]
pub(super) struct IndexEntry<'w> {
    name: Option<String>,
    npy: Option<String>,
    value_id: u32,
    value_index: usize,
    constant_index: u32,
    layer: Option<&'w str>,
    role: &'static str,
    datatype: String,
    dims: &'w [u32],
    numpy_dtype: Option<&'static str>,
    raw_bits: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    packed: Option<&'static str>,
    npy_shape: Option<&'w [u64]>,
    nbytes: Option<u64>,
    source: Option<Source<'w>>,
    key: Option<&'w str>,
    quantization: Option<&'w xnnpack::Quant>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scales: Option<ScaleEntry<'w>>,
    users: &'w [xnnpack::Use],
    layout: Option<&'w xnnpack::Layout>,
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<String>,
}

impl Listed for IndexEntry<'_> {
    fn file(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn missing(&self) -> Option<(u32, &str)> {
        let scales = self.scales.as_ref().and_then(|s| s.missing.as_deref());
        let why = self.missing.as_deref().or(scales)?;
        Some((self.value_id, why))
    }
}

impl<'w> IndexEntry<'w> {
    fn new(w: &'w Weight<'_>) -> Self {
        let packed = w.storage.filter(|s| s.bits == 4).map(|_| {
            "two 4-bit values per byte along the last dimension: element 2k in the low nibble, 2k+1 in the high, each stored as value + 8"
        });
        IndexEntry {
            name: None,
            npy: None,
            value_id: w.value_id,
            value_index: w.value_index,
            constant_index: w.constant_index,
            layer: w.layer.as_deref(),
            role: w.role,
            datatype: datatype::name(w.datatype),
            dims: &w.dims,
            numpy_dtype: w.storage.map(|s| s.numpy),
            raw_bits: w.storage.is_some_and(|s| s.raw_bits),
            packed,
            npy_shape: w.size.as_ref().map(|(_, s)| s.as_slice()),
            nbytes: None,
            source: None,
            key: w.key,
            quantization: w.quant.as_ref(),
            scales: None,
            users: &w.users,
            layout: w.layout.as_ref(),
            missing: None,
        }
    }
}
