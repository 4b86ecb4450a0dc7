//! Verification of the flatbuffers, as strict as ExecuTorch's own verifier
//! and no stricter.
//!
//! Each buffer is verified against its twin in `src/generated/*_verify_*`
//! (derived by `scripts/gen-schema.sh`), which differs from the real schema
//! only where the crate's verifier is stricter than the C++ one: it accepts
//! vectors of 8-byte scalars that start at 4 mod 8, and strings that are not
//! UTF-8. The buffer is then read through the real schema.

use flatbuffers::{Follow, Verifiable, VerifierOptions};

use super::header::show_magic;
use super::{Error, Result};
use crate::generated::{
    bundled_program_verify_generated as bundled_twin, etdump_verify_generated as etdump_twin,
    flat_tensor_verify_generated as data_twin, program_verify_generated as program_twin,
};
use crate::schema::{bundled, etdump, flat_tensor, program};

/// A real root type and the twin it is verified as.
pub(super) trait Root<'a>: Follow<'a> + 'a {
    /// The verification twin.
    type Twin: Verifiable;
    /// The identifier the schema declares.
    const IDENTIFIER: &'static [u8; 4];
}

impl<'a> Root<'a> for program::Program<'a> {
    type Twin = flatbuffers::ForwardsUOffset<program_twin::executorch_flatbuffer::Program<'a>>;
    const IDENTIFIER: &'static [u8; 4] = b"ET12";
}

impl<'a> Root<'a> for flat_tensor::FlatTensor<'a> {
    type Twin = flatbuffers::ForwardsUOffset<data_twin::flat_tensor_flatbuffer::FlatTensor<'a>>;
    const IDENTIFIER: &'static [u8; 4] = b"FT01";
}

impl<'a> Root<'a> for bundled::BundledProgram<'a> {
    type Twin =
        flatbuffers::ForwardsUOffset<bundled_twin::bundled_program_flatbuffer::BundledProgram<'a>>;
    const IDENTIFIER: &'static [u8; 4] = b"BP08";
}

impl<'a> Root<'a> for etdump::ETDump<'a> {
    type Twin = flatbuffers::ForwardsUOffset<etdump_twin::etdump::ETDump<'a>>;
    const IDENTIFIER: &'static [u8; 4] = b"ED00";
}

/// The verified root of the flatbuffer `bytes`, plus a warning when bytes
/// 4..8 are not the schema's identifier. `what` names the buffer in errors.
pub(super) fn root<'a, R: Root<'a>>(
    bytes: &'a [u8],
    what: &'static str,
) -> Result<(R::Inner, Option<String>)> {
    let opts = options(bytes.len());
    let mut v = flatbuffers::Verifier::new(&opts, bytes);
    <R::Twin as Verifiable>::run_verifier(&mut v, 0).map_err(|e| Error::Verification {
        what,
        len: bytes.len(),
        detail: one_line(&e),
    })?;
    // SAFETY: the twin has the real schema's wire layout field for field; it
    // differs only in declaring 8-byte scalar vectors as vectors of an 8-byte
    // struct (same size, so the same bounds are checked) and strings as
    // `[ubyte]` (same bounds). The real accessors read scalars with
    // unaligned copies (`flatbuffers::read_scalar`), so an 8-byte vector at
    // 4 mod 8 is read soundly; strings are read as bytes by `text`, never as
    // `&str`. So every access through the real schema stays within ranges
    // the twin's verification checked.
    let root = unsafe { flatbuffers::root_unchecked::<R>(bytes) };
    let magic = bytes.get(4..8).unwrap_or_default();
    let warning = (magic != R::IDENTIFIER).then(|| {
        format!(
            "file identifier is {}; this reader's schema is \"{}\", so fields may be misread",
            show_magic(magic),
            String::from_utf8_lossy(R::IDENTIFIER)
        )
    });
    Ok((root, warning))
}

/// [`root`] for a size-prefixed flatbuffer: `bytes` holds the u32 size
/// prefix and then exactly the flatbuffer, whose alignment the writer
/// counted from the prefix's first byte (as flatbuffers' own
/// `size_prefixed_root` does).
pub(super) fn size_prefixed_root<'a, R: Root<'a>>(
    bytes: &'a [u8],
    what: &'static str,
) -> Result<(R::Inner, Option<String>)> {
    let opts = options(bytes.len());
    let mut v = flatbuffers::Verifier::new(&opts, bytes);
    <flatbuffers::SkipSizePrefix<R::Twin> as Verifiable>::run_verifier(&mut v, 0).map_err(|e| {
        Error::Verification {
            what,
            len: bytes.len(),
            detail: one_line(&e),
        }
    })?;
    // SAFETY: as in `root`, with the size prefix skipped on both sides.
    let root = unsafe { flatbuffers::size_prefixed_root_unchecked::<R>(bytes) };
    let magic = bytes.get(8..12).unwrap_or_default();
    let warning = (magic != R::IDENTIFIER).then(|| {
        format!(
            "file identifier is {}; this reader's schema is \"{}\", so fields may be misread",
            show_magic(magic),
            String::from_utf8_lossy(R::IDENTIFIER)
        )
    });
    Ok((root, warning))
}

/// Verifier limits for a flatbuffer of `len` bytes.
///
/// Real programs reach 100,000+ tensors and flatbuffers of gigabytes (legacy
/// inline constants), so the limits grow with the buffer. A table occupies
/// at least four bytes, so more tables than `len / 4` means objects are
/// shared, which is how a small hostile file would make verification and
/// everything after it do work out of proportion to its size.
pub(super) fn options(len: usize) -> VerifierOptions {
    VerifierOptions {
        max_depth: 64,
        max_tables: len / 4 + 16,
        max_apparent_size: len.saturating_mul(4).saturating_add(16 << 20),
        ignore_missing_null_terminator: false,
    }
}

/// The verifier's error on one line: it reports the failing range and then
/// the path of fields that led there, one per line.
pub(super) fn one_line(e: &flatbuffers::InvalidFlatbuffer) -> String {
    let text = e.to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    parts.join(", ")
}
