use flatbuffers::VerifierOptions;

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
