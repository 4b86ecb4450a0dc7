//! The directory every decoded delegate backend shares (`xnnpack/`,
//! `vulkan/`): `header.json`, `weights/` with each constant's files and
//! their `index.json`, and `graph.json` and `code.txt` rendered when first
//! read; or `ERROR.txt` when the payload does not decode. A backend states
//! only what differs: its header fields, how one constant becomes files and
//! an index entry, and its renderers.

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;

use super::delegate::{NamedIndex, Place};
use super::{Builder, Dir};
use crate::delegate::{self, Decoded, vulkan, xnnpack};
use crate::format::Span;
use crate::tree::render::{self, xnnpack_code, xnnpack_json};

/// An entry of `weights/index.json`: the file its bytes got, or why none.
pub(super) trait Listed: Serialize {
    /// The `.bin` file's name, when the bytes have one.
    fn file(&self) -> Option<&str>;
    /// The value id and why its bytes (or what goes with them) have no
    /// file, if so.
    fn missing(&self) -> Option<(u32, &str)>;
}

/// What a backend's warning says of constants without files
/// (`weights lack files for their bytes`).
pub(super) type Lacking = &'static str;

/// `header.json`: a payload header's fields, with offsets in the file.
#[derive(Serialize)]
pub(super) struct HeaderJson {
    magic: Option<&'static str>,
    header_length: Option<u16>,
    identifier: Option<String>,
    payload_size: usize,
    payload_file_offset: u64,
    flatbuffer_offset: u64,
    flatbuffer_size: u64,
    flatbuffer_file_offset: u64,
    constant_data_offset: u64,
    constant_data_size: u64,
    /// The size as written where a backend gives it a meaning of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constant_data_size_field: Option<u64>,
    constant_data_file_offset: u64,
}

impl HeaderJson {
    /// The fields every header has: `magic` and `header_length` are `None`
    /// for a payload without a header.
    pub(super) fn new(
        (magic, header_length): (Option<&'static str>, Option<u16>),
        (flatbuffer, constant_data): (Span, Span),
        payload: &[u8],
        place: &Place<'_, '_>,
    ) -> Self {
        let start = place.origin.shifted(place.processed).offset;
        let at = flatbuffer.offset as usize + 4;
        HeaderJson {
            magic,
            header_length,
            identifier: payload
                .get(at..at + 4)
                .map(|id| String::from_utf8_lossy(id).into_owned()),
            payload_size: payload.len(),
            payload_file_offset: start,
            flatbuffer_offset: flatbuffer.offset,
            flatbuffer_size: flatbuffer.len,
            flatbuffer_file_offset: start + flatbuffer.offset,
            constant_data_offset: constant_data.offset,
            constant_data_size: constant_data.len,
            constant_data_size_field: None,
            constant_data_file_offset: start + constant_data.offset,
        }
    }
}

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
        let (dir, id, header) = if backend == vulkan::BACKEND_ID {
            let header = super::vulkan::header_json(payload, place);
            (super::vulkan::LISTING.0, vulkan::BACKEND_ID, header)
        } else {
            let header = super::xnnpack::header_json(payload, place);
            (super::xnnpack::LISTING.0, xnnpack::BACKEND_ID, header)
        };
        let mut x = self.subdir(ddir, dir);
        if let Some(h) = header {
            self.json(&mut x, "header.json", &h);
        }
        let at = (&mut x, place);
        let paths = match &decoded {
            Ok(Decoded::Xnnpack(p)) => {
                self.weights_dir(at, super::xnnpack::LISTING, &p.weights, |b, wdir, w| {
                    (w.value_index, b.weight(wdir, place, named, w))
                })
            }
            Ok(Decoded::Vulkan(p)) => {
                self.weights_dir(at, super::vulkan::LISTING, &p.constants, |b, wdir, c| {
                    (c.value_id as usize, b.constant(wdir, place, named, c))
                })
            }
            Err(e) => return self.not_decoded(&mut x, place, e),
        };
        let from = (id, place, named);
        self.lazy_decoded(&mut x, "graph.json", from, move |d, out| {
            graph_json(d, &paths, out)
        });
        self.lazy_decoded(&mut x, "code.txt", from, code_txt);
    }

    /// `ERROR.txt` and a warning for a payload that does not decode.
    fn not_decoded(&mut self, x: &mut Dir, place: &Place<'_, '_>, e: &crate::format::Error) {
        self.warnings.push(format!(
            "{}: {}: delegate payload not decoded: {e}",
            place.file_name, place.dir_path
        ));
        let text = format!(
            "The payload of this delegate ({} bytes at file offset {}) could not be decoded:\n{e}\n",
            place.processed.len,
            place.origin.shifted(place.processed).offset
        );
        self.generated(x, "ERROR.txt", text.into_bytes().into());
    }

    /// `weights/` in `x`: the files `lay_out` makes of each constant, and
    /// `index.json` with the entry it gives each, and one warning for the
    /// constants without files (a program without its `.ptd` would
    /// otherwise print a line per constant). Returns the path of each
    /// constant's `.bin` by value index, for `graph.json`.
    pub(super) fn weights_dir<'c, T, E: Listed>(
        &mut self,
        (x, place): (&mut Dir, &Place<'_, '_>),
        (dir, lacking): (&str, Lacking),
        constants: &'c [T],
        mut lay_out: impl FnMut(&mut Builder, &mut Dir, &'c T) -> (usize, E),
    ) -> HashMap<usize, String> {
        let base = format!("{}/{dir}/weights", place.dir_path);
        let mut wdir = self.subdir(x, "weights");
        let mut paths = HashMap::new();
        let mut index = Vec::with_capacity(constants.len());
        for c in constants {
            let (value, entry) = lay_out(self, &mut wdir, c);
            if let Some(bin) = entry.file() {
                paths.insert(value, format!("{base}/{bin}"));
            }
            index.push(entry);
        }
        let missing: Vec<(u32, &str)> = index.iter().filter_map(Listed::missing).collect();
        if let Some((id, why)) = missing.first() {
            self.warnings.push(format!(
                "{}: {base}: {} of {} {lacking} (see index.json); value {id}: {why}",
                place.file_name,
                missing.len(),
                index.len(),
            ));
        }
        self.json(&mut wdir, "index.json", &index);
        paths
    }

    /// `name` in `x`, rendered from the payload at `place` when first looked
    /// at: the payload is decoded again for each render (with the lengths
    /// of the named data it refers to, as when the tree was built), so the
    /// tree keeps no view of it.
    fn lazy_decoded(
        &mut self,
        x: &mut Dir,
        name: &str,
        (backend, place, named): (&'static str, &Place<'_, '_>, &NamedIndex<'_>),
        render: impl Fn(&Decoded<'_>, &mut dyn Write) -> io::Result<()> + Send + Sync + 'static,
    ) {
        let lens: HashMap<Vec<u8>, u64> = named
            .by_key
            .iter()
            .map(|(k, (_, span, _))| (k.to_vec(), span.len))
            .collect();
        let at = place.origin.shifted(place.processed);
        let renderer = move |bytes: &[u8], out: &mut dyn Write| {
            let Some(payload) = usize::try_from(at.offset)
                .ok()
                .zip(usize::try_from(at.end()).ok())
                .and_then(|(start, end)| bytes.get(start..end))
            else {
                return writeln!(out, "cannot render: the payload is no longer where it was");
            };
            let len = |k: &str| lens.get(k.as_bytes()).copied();
            match delegate::decode(backend, payload, &len) {
                Some(Ok(d)) => render(&d, out),
                Some(Err(e)) => writeln!(out, "cannot render: {e}"),
                None => Ok(()),
            }
        };
        self.lazy(x, name, place.origin.source, Box::new(renderer));
    }
}

/// `graph.json`, with the path of each constant's file by value index.
fn graph_json(
    d: &Decoded<'_>,
    paths: &HashMap<usize, String>,
    out: &mut dyn Write,
) -> io::Result<()> {
    match d {
        Decoded::Xnnpack(payload) => render::json_to(out, &xnnpack_json::Graph { payload, paths }),
        Decoded::Vulkan(p) => render::json_to(out, &super::vulkan::graph_json(p.graph, paths)),
    }
}

/// `code.txt`.
fn code_txt(d: &Decoded<'_>, out: &mut dyn Write) -> io::Result<()> {
    let text = match d {
        Decoded::Xnnpack(p) => xnnpack_code::render(p),
        Decoded::Vulkan(p) => p.code(),
    };
    out.write_all(text.as_bytes())
}
