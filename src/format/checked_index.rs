//! Bounds-checked access by an index read from a file.

use flatbuffers::{Follow, Vector};

use super::{Error, Result};

/// Element `i` of an optional flatbuffer vector; `what` names the vector.
pub(super) fn at<'a, T: Follow<'a> + 'a>(
    v: Option<Vector<'a, T>>,
    i: u64,
    what: &str,
) -> Result<T::Inner> {
    let len = v.map_or(0, |v| v.len());
    match v {
        Some(v) if i < len as u64 => Ok(v.get(i as usize)),
        _ => Err(Error::Index {
            what: what.to_owned(),
            index: i,
            len: len as u64,
            items: "entries",
        }),
    }
}

/// Segment `i` of `segments`; `what` names the reference to it.
pub(super) fn segment<T>(segments: &[T], i: u64, what: impl FnOnce() -> String) -> Result<&T> {
    usize::try_from(i)
        .ok()
        .and_then(|i| segments.get(i))
        .ok_or_else(|| Error::Index {
            what: format!("{}: segment", what()),
            index: i,
            len: segments.len() as u64,
            items: "segments",
        })
}
