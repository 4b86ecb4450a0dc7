//! The `report/` directory of a program's tree: `ptefs report`'s numbers
//! as files (`size.json`, `layers.tsv`, ...), rendered when first read.
//!
//! The report reads trees, so the tree cannot compute it itself: whoever
//! builds a tree and may use reports (the view) hands the builder a
//! [`ReportMaker`], and the tree only lays out the files and keeps what
//! each needs to be rendered: the bytes of the file reported on, of the
//! data files attached to it, and the `--names` checkpoint.

use std::io::{self, Write};
use std::sync::Arc;

use super::{SharedBytes, SourceId};
use crate::meta::checkpoint::Checkpoint;

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

/// What one `report/` directory is computed from.
#[derive(Debug, Clone)]
pub struct ReportInputs {
    /// The file reported on.
    pub shown: ReportFile,
    /// The data files attached to it.
    pub attached: Vec<ReportFile>,
    /// The `--names` checkpoint.
    pub names: Option<Checkpoint>,
}

/// Renders the files of one `report/` directory; one is made per
/// directory, so it may compute the report once for all its files.
pub trait ReportFiles: Send + Sync {
    /// Writes file `file` (one of [`FILES`]) of the report of `inputs`.
    fn render(&self, inputs: &ReportInputs, file: &str, out: &mut dyn Write) -> io::Result<()>;
}

/// Makes the renderer of one `report/` directory.
pub type ReportMaker = fn() -> Arc<dyn ReportFiles>;
