//! The `report/` directory of a program's tree: `ptefs report`'s numbers
//! as files (`size.json`, `layers.tsv`, ...), rendered when first read.
//!
//! The report reads trees, so the tree cannot compute it itself: whoever
//! builds a tree and may use reports (the view) hands the builder a
//! [`ReportMaker`], and the tree only lays out the files and keeps what
//! each needs to be rendered: the directory reported on, and the bytes of
//! the file shown there and of the data files attached to it. The report
//! is computed from the tree the files live in, which the renderer is
//! handed when a file is read, so that reading `report/` builds no second
//! tree of the same files and names everything as this tree does.

use std::io::{self, Write};
use std::sync::Arc;

use super::{Ino, SharedBytes, SourceId, Tree};

/// The files of `report/`, in the order README.txt lists them.
pub const FILES: [&str; 7] = [
    "size.json",
    "layers.tsv",
    "duplicates.tsv",
    "coverage.json",
    "quantization.tsv",
    "stats.tsv",
    "treemap.svg",
];

/// One file a report is computed from.
#[derive(Debug, Clone)]
pub struct ReportFile {
    /// Its name in the tree.
    pub name: String,
    /// Its source.
    pub source: SourceId,
    /// Its bytes.
    pub bytes: SharedBytes,
}

/// What one `report/` directory is computed from, besides its tree.
#[derive(Debug, Clone)]
pub struct ReportInputs {
    /// The directory the file reported on is shown in (the one holding
    /// `report/`): the root, or the file's own directory in a tree of
    /// several files.
    pub dir: Ino,
    /// The file reported on.
    pub shown: ReportFile,
    /// The data files attached to it.
    pub attached: Vec<ReportFile>,
}

/// Renders the files of one `report/` directory; one is made per
/// directory, so it may compute the report once for all its files.
pub trait ReportFiles: Send + Sync {
    /// Writes file `file` (one of [`FILES`]) of the report of `inputs`,
    /// shown in `tree` (the tree the file is read from).
    fn render(
        &self,
        tree: &Tree,
        inputs: &ReportInputs,
        file: &str,
        out: &mut dyn Write,
    ) -> io::Result<()>;
}

/// Makes the renderer of one `report/` directory.
pub type ReportMaker = fn() -> Arc<dyn ReportFiles>;
