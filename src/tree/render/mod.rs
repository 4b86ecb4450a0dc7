//! Generated file contents. Every JSON file goes through [`json`].

pub mod code_txt;
pub mod dot;
pub mod flatc_json;
pub(crate) mod json_style;
pub mod npy;
pub mod ops_yaml;
pub mod package_code;
pub mod package_graph_json;
pub mod profile_tsv;
pub mod readme;

use serde::Serialize;

/// Writes `v` to `out` as [`json`] renders it.
pub fn json_to(out: &mut dyn std::io::Write, v: &impl Serialize) -> std::io::Result<()> {
    json_style::write(&mut *out, v)?;
    out.write_all(b"\n")
}

/// A JSON array whose elements the closure's iterator makes as they are
/// written, so a file of a million entries never holds them at once. The
/// closure runs once per write (measuring a file writes it twice).
pub struct Streamed<F>(pub F);

impl<F, I> Serialize for Streamed<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: Serialize,
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

/// JSON with a final newline: objects one member per line, arrays on one
/// line (so a shape reads `[1, 3, 224, 224]` and costs a few bytes per
/// dimension, however long).
///
/// The text is measured first and then written into a buffer of exactly
/// that size: a tree holds every JSON file, and a growing buffer would
/// briefly need up to twice the size of the largest.
pub fn json(v: &impl Serialize) -> serde_json::Result<Box<[u8]>> {
    let mut count = json_style::Counter(0);
    json_style::write(&mut count, v)?;
    let mut out = Vec::with_capacity(count.0 + 1);
    json_style::write(&mut out, v)?;
    out.push(b'\n');
    debug_assert_eq!(out.len(), out.capacity());
    Ok(out.into_boxed_slice())
}
