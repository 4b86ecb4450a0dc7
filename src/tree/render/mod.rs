//! Generated file contents. Every JSON file goes through [`json`].

pub mod code_txt;
pub mod flatc_json;
pub mod npy;
pub mod readme;
pub mod xnnpack_code;
pub mod xnnpack_json;

use serde::Serialize;

/// Pretty-printed JSON with a final newline.
pub fn json(v: &impl Serialize) -> serde_json::Result<Box<[u8]>> {
    let mut out = serde_json::to_vec_pretty(v)?;
    out.push(b'\n');
    Ok(out.into_boxed_slice())
}
