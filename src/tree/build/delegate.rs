//! What the delegate directories of every decoder share: the named data a
//! payload may refer to, where a payload is, the dispatch to each
//! backend's layout (`xnnpack/`, `vulkan/`, or `ERROR.txt` under them), and
//! typed `.bin`/`.npy` pairs served as byte ranges of the source.

use std::collections::HashMap;
use std::io::{self, Write};

use super::{Attached, Builder, Dir, Origin};
use crate::delegate::xnnpack::Bytes;
use crate::delegate::{self, Decoded};
use crate::format::{ProgramFile, Span};
use crate::tree::render::npy;
use crate::tree::{Content, Dtype};

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
                } else if let Ok(h) = delegate::xnnpack::header::parse(payload) {
                    let header = super::xnnpack::header_json(&h, payload, place);
                    self.json(&mut x, "header.json", &header);
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

    /// `name` in `x`, rendered from the payload at `place` when first looked
    /// at: the payload is decoded again for each render (with the lengths
    /// of the named data it refers to, as when the tree was built), so the
    /// tree keeps no view of it.
    pub(super) fn lazy_decoded(
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
        self.meta_of(dtype, sizes.into())
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
