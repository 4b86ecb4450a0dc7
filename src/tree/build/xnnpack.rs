//! `xnnpack/` inside an XNNPACK delegate's directory: the payload header,
//! the graph as JSON and text, and every constant as typed, named files
//! that are byte ranges of the source (payload, named data or a `.ptd`).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::json;

use super::delegate::{NamedIndex, Npy, Place, locate};
use super::index::Source;
use super::{Builder, Dir};
use crate::delegate::Decoded;
use crate::delegate::xnnpack::{self, Bytes, Payload, Scales, Weight, datatype};
use crate::format::Span;
use crate::tree::Dtype;
use crate::tree::render::{self, xnnpack_code, xnnpack_json};

impl Builder {
    pub(super) fn xnnpack(
        &mut self,
        x: &mut Dir,
        place: &Place<'_, '_>,
        named: &NamedIndex<'_>,
        p: &Payload<'_>,
    ) {
        self.json(x, "header.json", &header_json(&p.header, p.bytes, place));
        let base = format!("{}/xnnpack/weights", place.dir_path);
        let mut wdir = self.subdir(x, "weights");
        let mut paths: HashMap<usize, String> = HashMap::new();
        let mut index = Vec::with_capacity(p.weights.len());
        for w in &p.weights {
            let entry = self.weight(&mut wdir, place, named, w);
            if let Some(bin) = &entry.name {
                paths.insert(w.value_index, format!("{base}/{bin}"));
            }
            index.push(entry);
        }
        // One warning per delegate: a program without its .ptd would
        // otherwise print a line per weight.
        let missing: Vec<(u32, String)> = index.iter().filter_map(IndexEntry::missing).collect();
        if let Some((id, why)) = missing.first() {
            self.warnings.push(format!(
                "{}: {base}: {} of {} weights lack files for their bytes or scales (see index.json); value {id}: {why}",
                place.file_name,
                missing.len(),
                index.len(),
            ));
        }
        self.json(&mut wdir, "index.json", &index);
        let from = (xnnpack::BACKEND_ID, place, named);
        self.lazy_decoded(x, "graph.json", from, move |d, out| match d {
            Decoded::Xnnpack(p) => render::json_to(
                out,
                &xnnpack_json::Graph {
                    payload: p,
                    paths: &paths,
                },
            ),
            _ => Ok(()),
        });
        self.lazy_decoded(x, "code.txt", from, |d, out| match d {
            Decoded::Xnnpack(p) => out.write_all(xnnpack_code::render(p).as_bytes()),
            _ => Ok(()),
        });
    }

    /// `<name>.bin`, `<name>.npy` and the scale files of one weight.
    fn weight<'w>(
        &mut self,
        wdir: &mut Dir,
        place: &Place<'_, '_>,
        named: &NamedIndex<'w>,
        w: &'w Weight<'_>,
    ) -> IndexEntry<'w> {
        let mut e = IndexEntry::new(w);
        match w.bytes.as_ref().map(|b| locate(b, place, named)) {
            Ok(Some((o, span, file))) => {
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
                let (bin, npy) = self.typed_pair(wdir, &w.name, (o, span), numpy, meta);
                e.name = Some(bin);
                e.npy = Some(npy);
                e.nbytes = Some(span.len);
                e.source = Some(Source {
                    file,
                    offset: o.shifted(span).offset,
                });
            }
            Ok(None) => e.missing = Some("named data entry vanished".to_owned()),
            Err(why) => {
                e.missing = Some(why.clone());
            }
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
        let Some((o, span, file)) = locate(&s.bytes, place, named) else {
            return ScaleEntry::missing("named data entry vanished".into());
        };
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
        let (bin, npy) = self.typed_pair(wdir, &stem, (o, span), Some(numpy), meta);
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
            source: Some(Source {
                file,
                offset: o.shifted(span).offset,
            }),
            missing: None,
        }
    }
}

pub(super) fn header_json(
    h: &xnnpack::Header,
    payload: &[u8],
    place: &Place<'_, '_>,
) -> serde_json::Value {
    let file = |s: Span| place.origin.shifted(place.processed).offset + s.offset;
    let at = h.flatbuffer.offset as usize + 4;
    json!({
        "magic": h.magic,
        "header_length": h.header_length,
        "identifier": payload.get(at..at + 4).map(|id| String::from_utf8_lossy(id).into_owned()),
        "payload_size": payload.len(),
        "payload_file_offset": place.origin.shifted(place.processed).offset,
        "flatbuffer_offset": h.flatbuffer.offset,
        "flatbuffer_size": h.flatbuffer.len,
        "flatbuffer_file_offset": file(h.flatbuffer),
        "constant_data_offset": h.constant_data.offset,
        "constant_data_size": h.constant_data.len,
        "constant_data_file_offset": file(h.constant_data),
    })
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
struct IndexEntry<'w> {
    name: Option<String>,
    npy: Option<Option<String>>,
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

impl<'w> IndexEntry<'w> {
    /// The value id and why its bytes or scales have no file, if so.
    fn missing(&self) -> Option<(u32, String)> {
        let scales = self.scales.as_ref().and_then(|s| s.missing.as_deref());
        let why = self.missing.as_deref().or(scales)?;
        Some((self.value_id, why.to_owned()))
    }

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
