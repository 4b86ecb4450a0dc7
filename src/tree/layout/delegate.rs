//! What the delegate directories of every decoder share: the named data a
//! payload may refer to, where a payload is, and typed `.bin`/`.npy` pairs
//! served as byte ranges of the source.

use super::{Attached, Builder, Dir, Origin};
use crate::delegate::folder::Npy;
use crate::delegate::{self, Bytes, Lookup};
use crate::format::{ProgramFile, Span};
use crate::tree::render::npy;
use crate::tree::{Content, Dtype};

/// Named-data entries a payload may refer to: the program's own first,
/// then each attached data file's.
pub(super) struct NamedIndex<'d> {
    /// A fast hash: keys are often 64-character digests, looked up a few
    /// times per weight.
    pub(super) by_key: foldhash::HashMap<&'d [u8], NamedEntry<'d>>,
}

impl<'d> NamedIndex<'d> {
    pub(super) fn new(
        p: &'d ProgramFile<'_>,
        origin: Origin,
        data: &'d [Attached<'d, '_>],
    ) -> Self {
        let files: Vec<_> = data.iter().map(|d| d.file).collect();
        let by_key = delegate::named_index(p, &files, |file, span, bytes| match file {
            None => (origin, span, None, bytes),
            Some(i) => {
                let d = &data[i];
                let o = Origin {
                    source: d.source,
                    shift: 0,
                };
                (o, span, Some(d.name), bytes)
            }
        });
        NamedIndex { by_key }
    }
}

/// A named-data entry: where it is in which source, the attached file's
/// name (`None` for the program's own), and its bytes.
pub(super) type NamedEntry<'d> = (Origin, Span, Option<&'d str>, &'d [u8]);

impl<'x, 'd: 'x> Lookup<'x> for NamedIndex<'d> {
    fn bytes(&self, key: &str) -> Option<&'x [u8]> {
        self.by_key.get(key.as_bytes()).map(|e| e.3)
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
    /// The delegate's compile specs whose keys are text.
    pub specs: Vec<(&'a str, &'a [u8])>,
}

/// A weight file's source: which file, the span, and the attached file's
/// name (`None` for the file the tree shows).
pub(super) type Located<'d> = (Origin, Span, Option<&'d str>);

impl Builder {
    /// `<stem>.bin` and, given a NumPy descr and shape, `<stem>.npy`, both
    /// typed by tensor record `meta` for the extended attributes.
    pub(super) fn typed_pair(
        &mut self,
        dir: &mut Dir,
        stem: &str,
        (o, span): (Origin, Span),
        numpy: Option<&Npy>,
        meta: u32,
    ) -> (String, Option<String>) {
        let widen = numpy.is_some_and(|n| n.widen);
        let header = numpy.and_then(|n| npy::header(n.descr, &n.shape));
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

/// The source span of decoded bytes.
fn locate<'d>(b: &Bytes<'_>, place: &Place<'_, '_>, named: &NamedIndex<'d>) -> Option<Located<'d>> {
    match b {
        Bytes::Payload(s) => Some((
            place.origin,
            Span {
                offset: place.processed.offset + s.offset,
                len: s.len,
            },
            None,
        )),
        Bytes::Named { key, span } => named
            .by_key
            .get(key.as_bytes())
            .filter(|(_, s, ..)| span.end() <= s.len)
            .map(|&(o, s, f, _)| {
                let inner = Span {
                    offset: s.offset + span.offset,
                    len: span.len,
                };
                (o, inner, f)
            }),
    }
}

/// Why a located constant has no file after all: the named-data entry
/// it was decoded against is not in the index.
const VANISHED: &str = "named data entry vanished";

/// The source span of a constant's bytes, or why it has none.
pub(super) fn located<'d>(
    bytes: &Result<Bytes<'_>, String>,
    place: &Place<'_, '_>,
    named: &NamedIndex<'d>,
) -> Result<Located<'d>, String> {
    match bytes {
        Ok(b) => found(b, place, named),
        Err(why) => Err(why.clone()),
    }
}

/// The source span of decoded bytes that must be there, or why not.
pub(super) fn found<'d>(
    b: &Bytes<'_>,
    place: &Place<'_, '_>,
    named: &NamedIndex<'d>,
) -> Result<Located<'d>, String> {
    locate(b, place, named).ok_or_else(|| match b.key() {
        Some(k) if crate::delegate::Lookup::bytes(named, k).is_none() => {
            format!("named-data key {k:?} is in no attached data")
        }
        _ => VANISHED.to_owned(),
    })
}
