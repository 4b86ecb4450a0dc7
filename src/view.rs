//! The files being shown: their sources and the tree built from them.
//! The CLI and the FUSE adapter both serve a [`View`].

mod attach;
pub mod check;
mod error;
pub mod etrecord_diff;
mod folder;
mod open;
pub mod profile_diff;

use std::path::PathBuf;
use std::sync::Arc;

use crate::source::{Source, guard};
use crate::tree::{self, Contents, Ino, Tree};
pub use error::OpenError;
pub use open::{Inputs, Opened, Request, load_checkpoint};

/// Sources and their tree.
#[derive(Debug)]
pub struct View {
    /// Every opened file; tree spans refer to them by index.
    pub sources: Vec<Source>,
    /// The tree (shared with the `report/` files it holds, which read it).
    pub tree: Arc<Tree>,
    /// Files skipped while expanding directory arguments, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    /// Data files attached by themselves, one line each.
    pub notes: Vec<String>,
}

impl View {
    /// The size, coverage and statistics report (`ptefs report`) of what
    /// is open. Statistics and duplicates read every byte, so remote
    /// sources are fetched whole first, once.
    pub fn report(&mut self) -> Result<crate::report::summary::Report, OpenError> {
        for s in &mut self.sources {
            s.fetch_whole()?;
        }
        let _guarded = guard::Section::new();
        let bytes: Vec<&[u8]> = self.sources.iter().map(|s| s.bytes()).collect();
        let subject = crate::report::summary::Subject {
            tree: &self.tree,
            dir: tree::ROOT,
            sources: &bytes,
        };
        let parsed = crate::report::summary::parse_sources(subject);
        let parsed: Vec<_> = parsed.iter().map(|(n, p)| (n.as_str(), p)).collect();
        let report = crate::report::summary::summarize(subject, &parsed);
        self.check_unchanged()?;
        Ok(report)
    }

    /// `Ok` while every source is what was opened: what was read from
    /// them since is theirs (see [`Source::check_unchanged`]).
    pub fn check_unchanged(&self) -> Result<(), OpenError> {
        for s in &self.sources {
            s.check_unchanged()?;
        }
        Ok(())
    }

    /// Opens, validates and lays out everything `req` names (see
    /// [`Opened::parse`] for what is an error).
    pub fn open(req: &Request) -> Result<View, OpenError> {
        let _guarded = guard::Section::new();
        let mut opened = Opened::open(req)?;
        if req.names.is_some() {
            opened.fetch_whole()?;
        }
        let names = req.names.as_deref().map(load_checkpoint).transpose()?;
        // The data files beside its programs are looked for in the programs
        // as parsed for the tree; only when some are found is everything
        // opened and parsed again, with them.
        let (with, notes, built) = {
            let parsed = opened.parse()?;
            let (with, notes) = opened.found_data(req, &parsed);
            let same = with.data.len() == req.data.len()
                && with.profile == req.profile
                && with.etrecord == req.etrecord;
            let built = same.then(|| opened.build_from(parsed, names.as_ref()));
            (with, notes, built)
        };
        let (mut tree, mut skipped) = match built {
            Some(built) => built,
            None => {
                opened = Opened::open(&with)?;
                if with.names.is_some() {
                    opened.fetch_whole()?;
                }
                opened.build(names.as_ref())?
            }
        };
        let mut notes = notes;
        // A remote file whose parsing read bytes its fetch plan left out
        // (zeros, not the file's bytes) is fetched whole and built again.
        let gappy: Vec<usize> = (0..opened.sources.len())
            .filter(|&i| !opened.sources[i].unfetched_reads().is_empty())
            .collect();
        if !gappy.is_empty() {
            // Its files rendered when first read share the image refilled.
            drop(tree);
            for i in gappy {
                let s = &mut opened.sources[i];
                let gaps = s.unfetched_reads();
                if let (Some(first), Some(last)) = (gaps.first(), gaps.last()) {
                    notes.push(format!(
                        "{}: reading its structure touched {} range(s) of bytes not fetched for it \
                         (bytes {}..{}); fetched it whole instead",
                        s.name,
                        gaps.len(),
                        first.start,
                        last.end
                    ));
                }
                s.fetch_whole()?;
            }
            (tree, skipped) = opened.build(names.as_ref())?;
        }
        opened.disconnect();
        crate::allocator::release_free();
        let view = View {
            sources: opened.sources,
            tree,
            skipped,
            notes,
        };
        // A source truncated while it was parsed was parsed over zeros.
        view.check_unchanged()?;
        Ok(view)
    }

    /// Bounds the block cache of each remote source to `bytes`.
    pub fn set_cache_size(&self, bytes: u64) {
        for s in &self.sources {
            s.set_cache_size(bytes);
        }
    }

    /// The content of file `ino`, or `None` for a directory.
    pub fn content(&self, ino: Ino) -> Option<Contents<'_>> {
        Some(self.tree.file(ino)?.content)
    }
}
