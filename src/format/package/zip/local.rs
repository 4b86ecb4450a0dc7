//! A member's local header, checked against the central directory, and the
//! data that follows it.

use super::super::super::{Error, Result, Span};
use super::records::{LOCAL_LEN, LOCAL_SIG, Reader};

/// Checks the local header at `at` and returns the span of the data after it.
pub(super) fn local_data(
    r: &Reader<'_>,
    at: u64,
    len: u64,
    method: u16,
    name: &str,
) -> Result<Span> {
    r.span(at, LOCAL_LEN as u64, || {
        format!("zip member {name}: local header")
    })?;
    if r.u32(at) != LOCAL_SIG {
        return Err(Error::new(format!(
            "zip member {name}: no local header signature at offset {at}"
        )));
    }
    let local_method = r.u16(at + 8);
    if local_method != method {
        return Err(Error::new(format!(
            "zip member {name}: local header at offset {at} says method {local_method}, the central directory {method}"
        )));
    }
    let name_len = u64::from(r.u16(at + 26));
    let extra_len = u64::from(r.u16(at + 28));
    let local_name = r.span(at + LOCAL_LEN as u64, name_len, || {
        format!("zip member {name}: name in the local header")
    })?;
    if local_name.bytes(r.bytes) != name.as_bytes() {
        return Err(Error::new(format!(
            "zip member {name}: the local header at offset {at} names it {:?}",
            String::from_utf8_lossy(local_name.bytes(r.bytes))
        )));
    }
    let start = local_name.end() + extra_len;
    r.span(start, len, || format!("zip member {name}: data"))
}
