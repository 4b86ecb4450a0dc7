//! `xnnpack/` inside an XNNPACK delegate's directory: the payload header,
//! the graph as JSON and text, and every constant as typed, named files
//! that are byte ranges of the source (payload, named data or a `.ptd`).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::json;

use super::index::Source;
use super::{Attached, Builder, Dir, Origin};
use crate::delegate::xnnpack::{self, Bytes, Payload, Scales, Weight, datatype};
use crate::delegate::{self, Decoded};
use crate::format::{ProgramFile, Span};
use crate::tree::render::{npy, xnnpack_code, xnnpack_json};
use crate::tree::{Content, Dtype, TensorMeta};

/// Named-data entries a payload may refer to: the program's own first,
/// then each attached data file's.
pub(super) struct NamedIndex<'d> {
    pub(super) by_key: HashMap<&'d [u8], (Origin, Span, Option<&'d str>)>,
}

impl<'d> NamedIndex<'d> {
    pub(super) fn new(
        p: &'d ProgramFile<'_>,
        origin: Origin,
        data: &'d [Attached<'d, '_>],
    ) -> Self {
        let mut by_key = HashMap::new();
        for n in &p.named {
            by_key
                .entry(n.key.bytes())
                .or_insert((origin, n.span, None));
        }
        for d in data {
            let o = Origin {
                source: d.source,
                shift: 0,
            };
            for e in &d.file.entries {
                by_key
                    .entry(e.key.bytes())
                    .or_insert((o, e.span, Some(d.name)));
            }
        }
        NamedIndex { by_key }
    }
}

/// The program whose delegates are shown.
pub(super) struct Shown<'p, 'a> {
    /// Its file name, for warnings.
    pub file_name: &'p str,
    pub origin: Origin,
    pub program: &'p ProgramFile<'a>,
}

/// Where a delegate's payload is in the tree's source.
pub(super) struct Place<'p, 'a> {
    /// Path of the delegate directory from the program's root.
    pub dir_path: String,
    pub origin: Origin,
    pub program: &'p ProgramFile<'a>,
    pub file_name: &'p str,
    pub processed: Span,
}

/// A weight file's source: which file, the span, and the attached file's
/// name (`None` for the file the tree shows).
type Located<'d> = (Origin, Span, Option<&'d str>);

impl Builder {
    /// Decodes the payload of a delegate whose backend has a decoder and
    /// lays out what it holds; opaque backends get nothing more.
    pub(super) fn decoded_delegate(
        &mut self,
        ddir: &mut Dir,
        backend: &str,
        place: &Place<'_, '_>,
        named: &NamedIndex<'_>,
    ) {
        let payload = place.processed.bytes(place.program.bytes);
        let len = |k: &str| named.by_key.get(k.as_bytes()).map(|(_, s, _)| s.len);
        let Some(decoded) = delegate::decode(backend, payload, &len) else {
            return;
        };
        let dir = if backend == delegate::vulkan::BACKEND_ID {
            "vulkan"
        } else {
            "xnnpack"
        };
        let mut x = self.subdir(ddir, dir);
        match decoded {
            Ok(Decoded::Xnnpack(p)) => self.xnnpack(&mut x, place, named, &p),
            Ok(Decoded::Vulkan(p)) => self.vulkan(&mut x, place, named, &p),
            Err(e) => {
                if dir == "vulkan" {
                    if let Ok(h) = delegate::vulkan::header::parse(payload) {
                        let header = super::vulkan::header_json(&h, payload, place);
                        self.json(&mut x, "header.json", &header);
                    }
                } else if let Ok(h) = xnnpack::header::parse(payload) {
                    self.json(&mut x, "header.json", &header_json(&h, payload, place));
                }
                self.warnings.push(format!(
                    "{}: {}: delegate payload not decoded: {e}",
                    place.file_name, place.dir_path
                ));
                let text = format!(
                    "The payload of this delegate ({} bytes at file offset {}) could not be decoded:\n{e}\n",
                    place.processed.len,
                    place.origin.shifted(place.processed).offset
                );
                self.generated(&mut x, "ERROR.txt", text.into_bytes().into());
            }
        }
    }

    fn xnnpack(
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
        self.json(
            x,
            "graph.json",
            &xnnpack_json::Graph {
                payload: p,
                paths: &paths,
            },
        );
        let code = xnnpack_code::render(p);
        self.generated(x, "code.txt", code.into_bytes().into());
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

    /// `<stem>.bin` and, given a NumPy descr and shape, `<stem>.npy`, both
    /// typed by tensor record `meta` for the extended attributes.
    pub(super) fn typed_pair(
        &mut self,
        dir: &mut Dir,
        stem: &str,
        (o, span): (Origin, Span),
        numpy: Option<Npy<'_>>,
        meta: u32,
    ) -> (String, Option<String>) {
        let widen = numpy.as_ref().is_some_and(|n| n.widen);
        let header = numpy.and_then(|n| npy::header(n.descr, n.shape));
        let Some(header) = header else {
            let name = dir.names.unique(stem, ".bin");
            self.file(dir.ino, name.clone(), o.content(span), Some(meta));
            return (name, None);
        };
        let mut names = dir.names.unique_family(stem, &[".bin", ".npy"]).into_iter();
        let (bin, npy) = (
            names.next().unwrap_or_default(),
            names.next().unwrap_or_default(),
        );
        self.file(dir.ino, bin.clone(), o.content(span), Some(meta));
        let (prefix, source, span) = (header.into(), o.source, o.shifted(span));
        let content = if widen {
            Content::Widened {
                prefix,
                source,
                span,
            }
        } else {
            Content::Prefixed {
                prefix,
                source,
                span,
            }
        };
        self.file(dir.ino, npy.clone(), content, Some(meta));
        (bin, Some(npy))
    }

    /// Records a type and shape for the extended attributes of files.
    pub(super) fn meta(&mut self, dtype: Dtype, sizes: Vec<i64>) -> u32 {
        self.tensors.push(TensorMeta {
            dtype,
            sizes: sizes.into(),
        });
        (self.tensors.len() - 1) as u32
    }
}

/// What a `.npy` holds: NumPy descr and shape, and whether the stored
/// bytes are bfloat16 values it widens to float32.
pub(super) struct Npy<'s> {
    pub descr: &'static str,
    pub shape: &'s [u64],
    pub widen: bool,
}

/// The source span of decoded bytes.
pub(super) fn locate<'d>(
    b: &Bytes<'_>,
    place: &Place<'_, '_>,
    named: &NamedIndex<'d>,
) -> Option<Located<'d>> {
    match b {
        Bytes::Payload(s) => Some((
            place.origin,
            Span {
                offset: place.processed.offset + s.offset,
                len: s.len,
            },
            None,
        )),
        Bytes::Named { key, len } => named
            .by_key
            .get(key.as_bytes())
            .filter(|(_, s, _)| s.len >= *len)
            .map(|&(o, s, f)| (o, Span { len: *len, ..s }, f)),
    }
}

fn header_json(h: &xnnpack::Header, payload: &[u8], place: &Place<'_, '_>) -> serde_json::Value {
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
