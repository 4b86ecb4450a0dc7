//! Where an external tensor's bytes are among the data files attached to a
//! program: the first file holding its key, as the runtime's loader looks.

use crate::format::{DataEntry, DataFile, Name};

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
