//! A payload's flatbuffer, verified with limits sized to it, and the
//! verifier's complaint turned into one error line that says where.

use flatbuffers::{Follow, Verifiable};

use crate::format::{Error, Result, Span};

/// Verifier limits for a payload's flatbuffer of `len` bytes: depth is
/// bounded, and more tables than 4-byte slots means shared objects, which
/// is how a small hostile payload would make a decoder work out of
/// proportion.
pub fn verifier_options(len: usize) -> flatbuffers::VerifierOptions {
    flatbuffers::VerifierOptions {
        max_depth: 32,
        max_tables: len / 4 + 16,
        max_apparent_size: len.saturating_mul(4).saturating_add(1 << 20),
        ignore_missing_null_terminator: false,
    }
}

/// Verifies the flatbuffer at `span` of `payload` as a `T` (named `what`
/// in errors, e.g. `XNNGraph`) and returns its root.
pub fn root<'a, T>(payload: &'a [u8], span: Span, what: &str) -> Result<T::Inner>
where
    T: 'a + Follow<'a> + Verifiable,
{
    let bytes = span.bytes(payload);
    flatbuffers::root_with_opts::<T>(&verifier_options(bytes.len()), bytes).map_err(|e| {
        let text = e.to_string();
        let parts: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        Error::new(format!(
            "{what} flatbuffer at payload offset {}: {}",
            span.offset,
            parts.join(", ")
        ))
    })
}
