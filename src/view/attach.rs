//! The files joined with those shown: the debug buffers of ETDumps and
//! the profile, opened into the sources beside them.

use std::path::{Path, PathBuf};

use super::error::OpenError;
use crate::source::{Source, remote};
use crate::tree;

/// Adds `source` to `sources`; its index there.
pub(super) fn push(sources: &mut Vec<Source>, source: Source) -> usize {
    sources.push(source);
    sources.len() - 1
}

/// The debug buffers of the files shown (the first `files` of `sources`),
/// as (file, buffer) source pairs: the one `given` for every file (for
/// each that turns out to be an ETDump), else the one the runtime writes
/// beside each, opened and added to `sources`.
pub(super) fn debug_buffers(
    files: &[PathBuf],
    given: Option<usize>,
    sources: &mut Vec<Source>,
) -> Result<Vec<(usize, usize)>, OpenError> {
    if let Some(given) = given {
        return Ok((0..files.len()).map(|i| (i, given)).collect());
    }
    let mut debug = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if let Some(buffer) = debug_buffer_beside(f) {
            debug.push((i, push(sources, Source::open(&buffer)?)));
        }
    }
    Ok(debug)
}

/// Opens the profile at `path` into `sources`, and its debug buffer,
/// `given` or beside it, into `debug`: the tensors its debug events
/// logged are shown with the program. Its index in `sources`.
pub(super) fn open_profile(
    path: &Path,
    given: Option<usize>,
    sources: &mut Vec<Source>,
    debug: &mut Vec<(usize, usize)>,
) -> Result<usize, OpenError> {
    let mut source = Source::open(path)?;
    source.prefetch(tree::fetch_plan)?;
    let at = push(sources, source);
    if let Some(given) = given {
        debug.push((at, given));
    } else if let Some(buffer) = debug_buffer_beside(path) {
        let buffer = push(sources, Source::open(&buffer)?);
        debug.push((at, buffer));
    }
    Ok(at)
}

/// The debug buffer beside `path` when `path` is a local `<stem>.etdp`:
/// `<stem>.debug.bin`, else `debug_output.bin`, the name ExecuTorch's
/// runners write it under by default (beside their `etdump_output.etdp`).
fn debug_buffer_beside(path: &Path) -> Option<PathBuf> {
    if path.to_str().is_some_and(remote::is_url) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".etdp")?;
    [format!("{stem}.debug.bin"), "debug_output.bin".to_owned()]
        .into_iter()
        .map(|n| path.with_file_name(n))
        .find(|b| b.is_file())
}
