//! The files being shown: their sources and the tree built from them.
//! The CLI and the FUSE adapter both serve a [`View`].

pub mod check;
pub mod etrecord_diff;

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::format::{self, Kind, Parsed};
use crate::meta::checkpoint::Checkpoint;
use crate::source::redact::shown;
use crate::source::{Source, SourceError, guard, open_regular, remote};
use crate::tree::{self, Contents, Ino, Input, Tree};

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

/// A file that could not be shown, and why.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// It cannot be opened or is not a regular file.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A directory could not be listed.
    #[error("{}: {error}", shown(path))]
    Dir {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// It is not a valid file of any kind this reads.
    #[error("{}: {error}", shown(path))]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        error: format::Error,
    },
    /// Two files would have the same name in the tree.
    #[error(
        "{}: has the same base name as {}; each file in one tree needs its own name",
        shown(path),
        shown(other)
    )]
    SameName {
        /// The later file.
        path: PathBuf,
        /// The earlier one.
        other: PathBuf,
    },
    /// A `--names` checkpoint that cannot be read.
    #[error("{}: {error}", shown(path))]
    Names {
        /// The checkpoint.
        path: PathBuf,
        /// What is wrong.
        error: String,
    },
    /// An `--etrecord` file that is not an ETRecord.
    #[error(
        "{}: is given with --etrecord but is not an ETRecord (a zip with an ETRECORD_V0 member): {why}",
        shown(path)
    )]
    NotEtRecord {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// A `--profile` file that is not an ETDump.
    #[error(
        "{}: is given with --profile but is not an ETDump (.etdp): {why}",
        shown(path)
    )]
    NotProfile {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// A `--data` file that is not a data file.
    #[error("{}: is given with --data but is not a data file (.ptd)", shown(path))]
    NotData {
        /// The file.
        path: PathBuf,
    },
    /// Nothing to show.
    #[error("{}: holds no program, data or bundled program file", shown(path))]
    Empty {
        /// The directory (or first input).
        path: PathBuf,
    },
    /// Nothing valid to show.
    #[error(
        "{}: holds no valid program, data or bundled program file",
        shown(path)
    )]
    NoneValid {
        /// The directory (or first input).
        path: PathBuf,
    },
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
    /// A checkpoint whose keys name the tensors holding their bytes
    /// (`--names`: safetensors, or a JSON map of name to SHA-256).
    pub names: Option<PathBuf>,
    /// Attach the data files beside each program that hold keys it needs
    /// (of external tensors, or named data its delegates refer to) and no
    /// given data file holds (off with `--no-auto-data`).
    pub auto_data: bool,
    /// The debug buffer of the ETDumps shown (`--debug-buffer`), in place
    /// of the `<stem>.debug.bin` found beside each.
    pub debug_buffer: Option<PathBuf>,
    /// A profile (ETDump) to join with the programs shown (`--profile`);
    /// with `auto_data` on and none given, the only `.etdp` beside a lone
    /// program whose events all name its instructions.
    pub profile: Option<PathBuf>,
    /// An ETRecord to join with the programs shown (`--etrecord`); with
    /// `auto_data` on and none given, `<stem>.etrecord` or `etrecord.bin`
    /// beside a lone program.
    pub etrecord: Option<PathBuf>,
}

impl Request {
    /// This request with the data files found beside its programs added
    /// to `data` when `auto_data` is on, and one note per file found.
    pub fn with_found_data(&self) -> (Request, Vec<String>) {
        let mut req = self.clone();
        if !self.auto_data {
            return (req, Vec::new());
        }
        let (found, mut notes) = crate::auto_data::find(&self.inputs, &self.data);
        req.data.extend(found);
        req.find_profile(&mut notes);
        req.find_etrecord(&mut notes);
        (req, notes)
    }

    /// Sets `etrecord` to the ETRecord beside a lone program, when none is
    /// given, with a note.
    fn find_etrecord(&mut self, notes: &mut Vec<String>) {
        if self.etrecord.is_none()
            && let [only] = &self.inputs[..]
            && let Some((found, note)) = crate::auto_data::find_etrecord(only)
        {
            self.etrecord = Some(found);
            notes.push(note);
        }
    }

    /// Sets `profile` to the only `.etdp` beside a lone program that
    /// profiles it, when none is given, with a note.
    fn find_profile(&mut self, notes: &mut Vec<String>) {
        if self.profile.is_none()
            && let [only] = &self.inputs[..]
            && let Some((found, note)) = crate::auto_data::find_profile(only)
        {
            self.profile = Some(found);
            notes.push(note);
        }
    }
}

/// Files opened and mapped for a [`Request`], not yet parsed.
#[derive(Debug)]
pub struct Opened {
    /// The files shown, then the attached data files, the debug buffers
    /// of the ETDumps shown, the profile and its debug buffer.
    pub sources: Vec<Source>,
    /// How many of `sources` are shown (the rest are attached).
    shown: usize,
    /// For each shown source, whether it was found in a directory (and so
    /// may be skipped when it turns out invalid).
    found: Vec<bool>,
    /// Files skipped while expanding directories, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    /// The first path requested, for messages about them all.
    first: PathBuf,
    /// The debug buffers of ETDumps, given or found beside them: (the
    /// ETDump's source, the buffer's source), the profile's included.
    debug: Vec<(usize, usize)>,
    /// The source of the profile joined with the programs (after the
    /// debug buffers of the files shown).
    profile: Option<usize>,
    /// The source of the ETRecord joined with the programs.
    etrecord: Option<usize>,
}

/// The parsed files of an [`Opened`] request.
#[derive(Debug)]
pub struct Inputs<'a> {
    /// The files to show.
    pub shown: Vec<Input<'a>>,
    /// The data files attached to every program.
    pub attached: Vec<Input<'a>>,
    /// Files found in a directory that turned out invalid, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    /// The debug buffers of the ETDumps shown and of the profile.
    pub debug: Vec<tree::DebugBuffer>,
    /// The profile joined with the programs shown.
    pub profile: Option<Input<'a>>,
    /// The ETRecord joined with the programs shown.
    pub etrecord: Option<Input<'a>>,
}

/// Reads the `--names` checkpoint at `path`.
pub fn load_checkpoint(path: &Path) -> Result<Checkpoint, OpenError> {
    let error = |error: String| OpenError::Names {
        path: path.to_owned(),
        error,
    };
    let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    Checkpoint::parse(&bytes).map_err(|e| error(e.to_string()))
}

/// A tree built, and the files skipped with why.
type Built = (Arc<Tree>, Vec<(PathBuf, String)>);

impl<'a> Inputs<'a> {
    /// The data files attached to every program.
    pub fn attached_data(&self) -> Vec<&format::DataFile<'a>> {
        self.attached
            .iter()
            .filter_map(|i| match &i.parsed {
                Parsed::Data(d) => Some(d),
                _ => None,
            })
            .collect()
    }
}

impl Opened {
    /// `req` with the data files and profile found beside its programs
    /// (see [`Request::with_found_data`]), for the programs as `parsed`
    /// here, and one note per file found.
    fn found_data(&self, req: &Request, parsed: &Inputs<'_>) -> (Request, Vec<String>) {
        let mut with = req.clone();
        if !req.auto_data {
            return (with, Vec::new());
        }
        // Files named as inputs: a directory's files are left alone.
        let programs: Vec<(&Path, &format::ProgramFile<'_>)> = (parsed.shown.iter())
            .filter_map(|i| {
                let Parsed::Program(p) = &i.parsed else {
                    return None;
                };
                let s = self.sources.get(i.source)?;
                let named = !self.found.get(i.source).copied().unwrap_or(true);
                (named && !s.is_remote() && s.path.is_file()).then_some((s.path.as_path(), p))
            })
            .collect();
        let given = parsed.attached_data();
        let (found, mut notes) = crate::auto_data::find_among(&programs, &given, &req.data);
        with.data.extend(found);
        with.find_profile(&mut notes);
        with.find_etrecord(&mut notes);
        (with, notes)
    }

    /// Fetches remote sources whole, for work that reads every byte of
    /// them (comparing tensors, hashing them for `--names`).
    pub fn fetch_whole(&mut self) -> Result<(), OpenError> {
        for s in &mut self.sources {
            s.fetch_whole()?;
        }
        Ok(())
    }

    /// Parses everything and builds the tree (see [`View::open`]), with
    /// the files skipped.
    fn build(&self, names: Option<&Checkpoint>) -> Result<Built, OpenError> {
        Ok(self.build_from(self.parse()?, names))
    }

    /// Builds the tree of what [`Opened::parse`] made of these files.
    fn build_from(&self, parsed: Inputs<'_>, names: Option<&Checkpoint>) -> Built {
        // A directory source shows each file in a directory of its own,
        // however many it holds.
        let one_dir_each = parsed.shown.len() > 1 || self.found.contains(&true);
        // The report's numbers need every byte of its files, which a
        // remote source's image holds only where its fetch plan fetched:
        // the `report/` of a URL's tree says to run `ptefs report URL`
        // (which fetches the file whole) instead.
        let maker: tree::report_files::ReportMaker = if self.sources.iter().any(Source::is_remote) {
            crate::report::summary::remote_tree_files
        } else {
            crate::report::summary::tree_files
        };
        let options = tree::Options {
            one_dir_each,
            names,
            debug: &parsed.debug,
            profile: parsed.profile.as_ref(),
            etrecord: parsed.etrecord.as_ref(),
            reports: Some(maker),
        };
        let tree = tree::build_with(&parsed.shown, &parsed.attached, &options);
        (tree, parsed.skipped)
    }

    /// Closes remote sources' connections (reads reopen them): a process
    /// about to fork holds none.
    pub fn disconnect(&self) {
        self.sources.iter().for_each(Source::disconnect);
    }

    /// Opens and maps everything `req` names: its files, the model files
    /// in its directories, and the data files to attach; then the debug
    /// buffers, the profile and the ETRecord joined with them. The sources
    /// keep that order.
    pub fn open(req: &Request) -> Result<Opened, OpenError> {
        let listed = Listed::of(req)?;
        let mut sources = listed.open_with(&req.data)?;
        let given = match &req.debug_buffer {
            Some(buffer) => Some(push(&mut sources, Source::open(buffer)?)),
            None => None,
        };
        let mut debug = debug_buffers(&listed.files, given, &mut sources)?;
        let profile = match &req.profile {
            Some(path) => Some(open_profile(path, given, &mut sources, &mut debug)?),
            None => None,
        };
        let etrecord = match &req.etrecord {
            Some(path) => Some(push(&mut sources, Source::open(path)?)),
            None => None,
        };
        Ok(Opened {
            sources,
            shown: listed.files.len(),
            found: listed.found,
            skipped: listed.skipped,
            first: req.inputs.first().cloned().unwrap_or_default(),
            debug,
            profile,
            etrecord,
        })
    }

    /// Parses and validates every file. Any invalid file given by name is
    /// an error, and so is a data file to attach that is not one; invalid
    /// files found by expanding a directory are skipped.
    pub fn parse(&self) -> Result<Inputs<'_>, OpenError> {
        let mut skipped = self.skipped.clone();
        let mut shown = Vec::new();
        let mut attached = Vec::new();
        let buffers: std::collections::HashSet<usize> =
            self.debug.iter().map(|&(_, b)| b).collect();
        let mut profile = None;
        let mut etrecord = None;
        for (id, s) in self.sources.iter().enumerate() {
            if buffers.contains(&id) {
                continue;
            }
            if self.etrecord == Some(id) {
                let not = |why: String| OpenError::NotEtRecord {
                    path: s.path.clone(),
                    why,
                };
                match format::parse(s.bytes()) {
                    Ok(parsed @ Parsed::EtRecord(_)) => {
                        etrecord = Some(Input {
                            name: s.name.clone(),
                            source: id,
                            bytes: Arc::new(s.shared()),
                            parsed,
                        });
                    }
                    Ok(_) => return Err(not("it is another kind of file".into())),
                    Err(e) => return Err(not(e.to_string())),
                }
                continue;
            }
            if self.profile == Some(id) {
                let not = |why: String| OpenError::NotProfile {
                    path: s.path.clone(),
                    why,
                };
                match format::parse(s.bytes()) {
                    Ok(parsed @ Parsed::Profile(_)) => {
                        profile = Some(Input {
                            name: s.name.clone(),
                            source: id,
                            bytes: Arc::new(s.shared()),
                            parsed,
                        });
                    }
                    Ok(_) => return Err(not("it is another kind of ExecuTorch file".into())),
                    Err(e) => return Err(not(e.to_string())),
                }
                continue;
            }
            let parsed = match format::parse(s.bytes()) {
                Ok(p) => p,
                Err(e) if self.found.get(id) == Some(&true) => {
                    // Its source stays open but nothing refers to it.
                    skipped.push((s.path.clone(), e.to_string()));
                    continue;
                }
                Err(error) => {
                    return Err(OpenError::Format {
                        path: s.path.clone(),
                        error,
                    });
                }
            };
            let is_shown = id < self.shown;
            if !is_shown && !matches!(parsed, Parsed::Data(_)) {
                return Err(OpenError::NotData {
                    path: s.path.clone(),
                });
            }
            let input = Input {
                name: s.name.clone(),
                source: id,
                bytes: Arc::new(s.shared()),
                parsed,
            };
            if is_shown {
                shown.push(input);
            } else {
                attached.push(input);
            }
        }
        if shown.is_empty() {
            return Err(OpenError::NoneValid {
                path: self.first.clone(),
            });
        }
        // A buffer goes with its ETDump only when that parsed as one.
        let etdumps: std::collections::HashSet<usize> = (shown.iter().chain(&profile))
            .filter(|i| matches!(i.parsed, Parsed::Profile(_)))
            .map(|i| i.source)
            .collect();
        let debug = self
            .debug
            .iter()
            .filter(|&&(of, _)| etdumps.contains(&of))
            .map(|&(of, b)| tree::DebugBuffer {
                of,
                source: b,
                bytes: Arc::new(self.sources[b].shared()),
                name: crate::source::base_name(&self.sources[b].path),
            })
            .collect();
        Ok(Inputs {
            shown,
            attached,
            skipped,
            debug,
            profile,
            etrecord,
        })
    }
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
            let same = with.data.len() == req.data.len() && with.profile == req.profile;
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

/// The files a request shows, its directories expanded.
struct Listed {
    files: Vec<PathBuf>,
    /// For each file, whether it was found in a directory: files found
    /// there may be skipped when invalid, files named may not.
    found: Vec<bool>,
    /// The name each file is shown under: its base name, or its path
    /// relative to the directory it was found in (`a/m.pte`), so that
    /// files of one name in different subdirectories stay apart.
    names: Vec<String>,
    /// Files skipped while expanding directories, with the reason.
    skipped: Vec<(PathBuf, String)>,
}

impl Listed {
    /// The files `req` shows: URLs and files as named, and the model files
    /// of its directories. None, or two shown under one name, is an error.
    fn of(req: &Request) -> Result<Listed, OpenError> {
        let mut listed = Listed {
            files: Vec::new(),
            found: Vec::new(),
            names: Vec::new(),
            skipped: Vec::new(),
        };
        for p in &req.inputs {
            let url = p.to_str().is_some_and(remote::is_url);
            let meta = |error| SourceError::Io {
                path: p.clone(),
                error,
            };
            if !url && std::fs::metadata(p).map_err(meta)?.is_dir() {
                let from = listed.files.len();
                expand_dir(p, req.recursive, &mut listed.files, &mut listed.skipped)?;
                listed.found.resize(listed.files.len(), true);
                for f in &listed.files[from..] {
                    listed.names.push(relative_name(p, f));
                }
            } else {
                listed.files.push(p.clone());
                listed.found.push(false);
                listed.names.push(crate::source::base_name(p));
            }
        }
        if listed.files.is_empty() {
            return Err(OpenError::Empty {
                path: req.inputs.first().cloned().unwrap_or_default(),
            });
        }
        let mut seen = std::collections::HashMap::new();
        for (f, name) in listed.files.iter().zip(&listed.names) {
            if let Some(prev) = seen.insert(name.clone(), f.clone()) {
                return Err(OpenError::SameName {
                    path: f.clone(),
                    other: prev,
                });
            }
        }
        Ok(listed)
    }

    /// Opens the files shown, under their names, then the data files to
    /// attach, each with what its fetch plan reads.
    fn open_with(&self, data: &[PathBuf]) -> Result<Vec<Source>, OpenError> {
        let mut sources = Vec::new();
        for (i, f) in self.files.iter().chain(data).enumerate() {
            let mut source = Source::open(f)?;
            if let Some(name) = self.names.get(i) {
                source.name = name.clone();
            }
            source.prefetch(tree::fetch_plan)?;
            sources.push(source);
        }
        Ok(sources)
    }
}

/// Adds `source` to `sources`; its index there.
fn push(sources: &mut Vec<Source>, source: Source) -> usize {
    sources.push(source);
    sources.len() - 1
}

/// The debug buffers of the files shown (the first `files` of `sources`),
/// as (file, buffer) source pairs: the one `given` for every file (for
/// each that turns out to be an ETDump), else the one the runtime writes
/// beside each, opened and added to `sources`.
fn debug_buffers(
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
fn open_profile(
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

/// `<stem>.debug.bin` beside `path` when `path` is a local `<stem>.etdp`
/// and that file is there.
fn debug_buffer_beside(path: &Path) -> Option<PathBuf> {
    if path.to_str().is_some_and(remote::is_url) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".etdp")?;
    let buffer = path.with_file_name(format!("{stem}.debug.bin"));
    buffer.is_file().then_some(buffer)
}

/// `file`'s path relative to `dir` (where it was found), `/`-separated.
fn relative_name(dir: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(dir).unwrap_or(file);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        crate::source::base_name(file)
    } else {
        parts.join("/")
    }
}

fn expand_dir(
    dir: &Path,
    recursive: bool,
    files: &mut Vec<PathBuf>,
    skipped: &mut Vec<(PathBuf, String)>,
) -> Result<(), OpenError> {
    let listing = |error| OpenError::Dir {
        path: dir.to_owned(),
        error,
    };
    let mut entries = Vec::new();
    for e in std::fs::read_dir(dir).map_err(listing)? {
        entries.push(e.map_err(listing)?.path());
    }
    entries.sort();
    for p in entries {
        // Symbolic links are followed: a link to a model is a model. Links
        // to directories are not descended into, so no cycle can form.
        let is_real_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
        if is_real_dir {
            if recursive {
                expand_dir(&p, recursive, files, skipped)?;
            } else {
                skipped.push((
                    p,
                    "is a subdirectory (mount --subdirs descends into them)".into(),
                ));
            }
            continue;
        }
        match sniff_file(&p) {
            Ok(_) => files.push(p),
            Err(why) => skipped.push((p, why)),
        }
    }
    Ok(())
}

/// The kind of the file at `path`, from its first twelve bytes; never
/// blocks on a FIFO or device.
fn sniff_file(path: &Path) -> Result<Kind, String> {
    let (file, _) = open_regular(path).map_err(|e| match e {
        SourceError::NotRegular { what, .. } => format!("is {what}"),
        e => e.to_string(),
    })?;
    // Twelve: an ETDump's identifier is at bytes 8..12.
    let mut head = Vec::with_capacity(12);
    file.take(12)
        .read_to_end(&mut head)
        .map_err(|e| e.to_string())?;
    format::sniff(&head).map_err(|e| e.to_string())
}
