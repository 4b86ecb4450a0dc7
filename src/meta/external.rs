//! Where an external tensor's bytes are among the data files attached to a
//! program: the first file holding its key, as the runtime's loader looks;
//! which keys (of external tensors, or of named data delegates refer to)
//! no attached file holds, and which other data files (found beside the
//! program) would supply them.

use std::collections::HashSet;

use crate::format::{DataEntry, DataFile, Name, ProgramFile, TensorData};

/// The first of `files` with an entry `key`: the file's position among
/// them and the entry.
pub fn find<'d, 'a: 'd>(
    files: impl IntoIterator<Item = &'d DataFile<'a>>,
    key: Name<'_>,
) -> Option<(usize, &'d DataEntry<'a>)> {
    files
        .into_iter()
        .enumerate()
        .find_map(|(i, d)| d.entries.iter().find(|e| e.key == key).map(|e| (i, e)))
}

/// The external tensor keys of `program` that none of `attached` holds, in
/// method and value order, each once.
pub fn missing_keys<'p>(program: &ProgramFile<'p>, attached: &[&DataFile<'_>]) -> Vec<Name<'p>> {
    let mut out: Vec<Name<'p>> = Vec::new();
    for t in program.methods.iter().flat_map(|m| &m.tensors) {
        if let TensorData::External { key } = t.data
            && find(attached.iter().copied(), key).is_none()
            && !out.contains(&key)
        {
            out.push(key);
        }
    }
    out
}

/// Those of `keys` (named data that delegates of `program` refer to) that
/// neither the program's own `named_data` nor any of `attached` holds, in
/// order, each once.
pub fn missing_named<'k>(
    program: &ProgramFile<'_>,
    attached: &[&DataFile<'_>],
    keys: impl IntoIterator<Item = Name<'k>>,
) -> Vec<Name<'k>> {
    let held: HashSet<&[u8]> = program
        .named
        .iter()
        .map(|n| n.key.bytes())
        .chain(
            attached
                .iter()
                .flat_map(|d| d.entries.iter().map(|e| e.key.bytes())),
        )
        .collect();
    let mut seen = HashSet::new();
    keys.into_iter()
        .filter(|k| !held.contains(k.bytes()) && seen.insert(*k))
        .collect()
}

/// Which of `candidates` (data files found beside a program, say) to
/// attach so that the `missing` keys are found: each candidate holding at
/// least one key not supplied by an earlier one, with those keys. Keys no
/// candidate holds are left out; so are candidates that add nothing.
pub fn suppliers<'k>(
    missing: &[Name<'k>],
    candidates: &[&DataFile<'_>],
) -> Vec<(usize, Vec<Name<'k>>)> {
    let mut left: Vec<Name<'k>> = missing.to_vec();
    let mut out = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let (found, rest): (Vec<Name<'k>>, Vec<Name<'k>>) = left
            .into_iter()
            .partition(|k| c.entries.iter().any(|e| e.key == *k));
        left = rest;
        if !found.is_empty() {
            out.push((i, found));
        }
    }
    out
}
