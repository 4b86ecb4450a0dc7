//! The files being shown: their sources and the tree built from them.
//! The CLI and the FUSE adapter both serve a [`View`].

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::format::{self, Kind, Parsed};
use crate::source::Source;
use crate::tree::{self, Content, Ino, Input, NodeKind, Tree};

/// Sources and their tree.
#[derive(Debug)]
pub struct View {
    /// Every opened file; tree spans refer to them by index.
    pub sources: Vec<Source>,
    /// The tree.
    pub tree: Tree,
    /// Files skipped while expanding directory arguments, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

/// A file that could not be shown, and why.
#[derive(Debug)]
pub struct OpenError {
    /// The file (or directory) at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for OpenError {}

fn fail(path: &Path, message: impl fmt::Display) -> OpenError {
    OpenError {
        path: path.to_owned(),
        message: message.to_string(),
    }
}

/// What to show.
#[derive(Debug, Default, Clone)]
pub struct Request {
    /// Programs, data files, bundled programs, or directories of them.
    pub inputs: Vec<PathBuf>,
    /// Data files attached to every program.
    pub data: Vec<PathBuf>,
    /// Descend into subdirectories of directory inputs.
    pub recursive: bool,
}

impl View {
    /// Opens, validates and lays out everything `req` names. Any invalid
    /// file given by name is an error; invalid files found by expanding a
    /// directory are skipped and listed in `skipped`.
    pub fn open(req: &Request) -> Result<View, OpenError> {
        let mut skipped = Vec::new();
        let mut files = Vec::new();
        // Files found in a directory may be skipped when invalid; files
        // named on the command line may not.
        let mut found = Vec::new();
        for p in &req.inputs {
            let meta = std::fs::metadata(p).map_err(|e| fail(p, e))?;
            if meta.is_dir() {
                expand_dir(p, req.recursive, &mut files, &mut skipped)?;
                found.resize(files.len(), true);
            } else {
                files.push(p.clone());
                found.push(false);
            }
        }
        if files.is_empty() {
            let p = req.inputs.first().cloned().unwrap_or_default();
            return Err(fail(&p, "holds no program, data or bundled program file"));
        }
        let mut seen = std::collections::HashMap::new();
        for f in &files {
            let name = f.file_name().map(|n| n.to_owned()).unwrap_or_default();
            if let Some(prev) = seen.insert(name, f.clone()) {
                return Err(fail(
                    f,
                    format_args!(
                        "has the same base name as {}; each file in one tree needs its own name",
                        prev.display()
                    ),
                ));
            }
        }
        let mut sources = Vec::new();
        for f in files.iter().chain(&req.data) {
            sources.push(Source::open(f).map_err(|e| fail(f, e))?);
        }
        let mut inputs = Vec::new();
        for (id, s) in sources.iter().enumerate() {
            let parsed = match format::parse(s.bytes()) {
                Ok(p) => p,
                Err(e) if found.get(id) == Some(&true) => {
                    // Its source stays open but nothing in the tree refers to it.
                    skipped.push((s.path.clone(), e.to_string()));
                    continue;
                }
                Err(e) => return Err(fail(&s.path, e)),
            };
            if id >= files.len() && !matches!(parsed, Parsed::Data(_)) {
                return Err(fail(
                    &s.path,
                    "is given with --data but is not a data file (.ptd)",
                ));
            }
            inputs.push(Input {
                name: s.name.clone(),
                source: id,
                parsed,
            });
        }
        let shown = inputs.iter().take_while(|i| i.source < files.len()).count();
        if shown == 0 {
            let p = req.inputs.first().cloned().unwrap_or_default();
            return Err(fail(
                &p,
                "holds no valid program, data or bundled program file",
            ));
        }
        let attached = inputs.split_off(shown);
        let tree = tree::build(&inputs, &attached);
        Ok(View {
            sources,
            tree,
            skipped,
        })
    }

    /// Writes `size` bytes of file `ino` from `offset` to `out`. Source
    /// bytes go from the map straight to the writer.
    pub fn write_range(
        &self,
        ino: Ino,
        offset: u64,
        size: u64,
        out: &mut impl Write,
    ) -> io::Result<()> {
        let Some(content) = self.content(ino) else {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        };
        let piece = content.read(offset, size);
        out.write_all(piece.head)?;
        if let Some((id, span)) = piece.tail {
            out.write_all(self.sources[id].slice(span))?;
        }
        Ok(())
    }

    /// The content of file `ino`, or `None` for a directory.
    pub fn content(&self, ino: Ino) -> Option<&Content> {
        match &self.tree.node(ino)?.kind {
            NodeKind::File(f) => Some(&f.content),
            NodeKind::Dir(_) => None,
        }
    }
}

fn expand_dir(
    dir: &Path,
    recursive: bool,
    files: &mut Vec<PathBuf>,
    skipped: &mut Vec<(PathBuf, String)>,
) -> Result<(), OpenError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| fail(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            if recursive {
                expand_dir(&p, recursive, files, skipped)?;
            }
            continue;
        }
        if !meta.is_file() {
            continue;
        }
        match sniff_file(&p) {
            Ok(_) => files.push(p),
            Err(why) => skipped.push((p, why)),
        }
    }
    Ok(())
}

/// The kind of the file at `path`, from its first eight bytes.
fn sniff_file(path: &Path) -> Result<Kind, String> {
    use std::io::Read;
    let mut head = Vec::with_capacity(8);
    std::fs::File::open(path)
        .and_then(|f| f.take(8).read_to_end(&mut head))
        .map_err(|e| e.to_string())?;
    format::sniff(&head).map_err(|e| e.to_string())
}
