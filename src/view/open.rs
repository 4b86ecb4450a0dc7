//! What a request names, opened and mapped ([`Opened`]), then parsed
//! ([`Inputs`]) and built into a tree.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::attach::{debug_buffers, open_profile, push};
use super::error::OpenError;
use super::folder::Listed;
use crate::format::{self, Parsed};
use crate::meta::checkpoint::Checkpoint;
use crate::source::Source;
use crate::tree::{self, Input, Tree};

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
    /// given, with a note; or notes why the one found is not attached.
    fn find_etrecord(&mut self, notes: &mut Vec<String>) {
        if self.etrecord.is_none()
            && let [only] = &self.inputs[..]
        {
            self.etrecord = found(crate::auto_data::find_etrecord(only), notes);
        }
    }

    /// Sets `profile` to the only `.etdp` beside a lone program that
    /// profiles it, when none is given, with a note; or notes why what is
    /// found is not attached.
    fn find_profile(&mut self, notes: &mut Vec<String>) {
        if self.profile.is_none()
            && let [only] = &self.inputs[..]
        {
            self.profile = found(crate::auto_data::find_profile(only), notes);
        }
    }
}

/// The file to attach of what was found, its note added to `notes`.
fn found(f: Option<crate::auto_data::Found>, notes: &mut Vec<String>) -> Option<PathBuf> {
    match f? {
        crate::auto_data::Found::Attach(path, note) => {
            notes.push(note);
            Some(path)
        }
        crate::auto_data::Found::NotAttached(note) => {
            notes.push(note);
            None
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
    /// Whether the programs of directories take the data files beside
    /// them (`Request::auto_data`).
    auto_data: bool,
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
    pub(super) fn found_data(&self, req: &Request, parsed: &Inputs<'_>) -> (Request, Vec<String>) {
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

    /// For each program found in a directory, the data files shown beside
    /// it that supply what it lacks, chosen as for a program named alone
    /// (see [`Request::with_found_data`]), as (program, data file)
    /// sources. Attached to every program, they would also show under
    /// `named/` of programs that never asked for them.
    fn data_beside(&self, parsed: &Inputs<'_>) -> Vec<(tree::SourceId, tree::SourceId)> {
        let mut pairs = Vec::new();
        if !self.auto_data {
            return pairs;
        }
        let given = parsed.attached_data();
        let attached: Vec<PathBuf> = (self.sources[self.shown..].iter())
            .map(|s| s.path.clone())
            .collect();
        let identity = |p: &Path| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
        };
        for i in &parsed.shown {
            let Parsed::Program(p) = &i.parsed else {
                continue;
            };
            let Some(s) = self.sources.get(i.source) else {
                continue;
            };
            if !self.found.get(i.source).copied().unwrap_or(false) || s.is_remote() {
                continue;
            }
            let (found, notes) =
                crate::auto_data::find_among(&[(s.path.as_path(), p)], &given, &attached);
            notes.iter().for_each(|n| log::info!("{n}"));
            for f in found.iter().filter_map(|f| identity(f)) {
                let shown = (parsed.shown.iter())
                    .filter(|d| matches!(d.parsed, Parsed::Data(_)))
                    .find(|d| {
                        (self.sources.get(d.source)).and_then(|s| identity(&s.path)) == Some(f)
                    });
                if let Some(d) = shown {
                    pairs.push((i.source, d.source));
                }
            }
        }
        pairs
    }

    /// Fetches remote sources whole, for work that reads every byte of
    /// them (comparing tensors, hashing them for `--names`).
    pub fn fetch_whole(&mut self) -> Result<(), OpenError> {
        for s in &mut self.sources {
            s.fetch_whole()?;
        }
        Ok(())
    }

    /// Parses everything and builds the tree (see [`View::open`](super::View::open)), with
    /// the files skipped.
    pub(super) fn build(&self, names: Option<&Checkpoint>) -> Result<Built, OpenError> {
        Ok(self.build_from(self.parse()?, names))
    }

    /// Builds the tree of what [`Opened::parse`] made of these files.
    pub(super) fn build_from(&self, parsed: Inputs<'_>, names: Option<&Checkpoint>) -> Built {
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
        let beside = self.data_beside(&parsed);
        let options = tree::Options {
            one_dir_each,
            names,
            debug: &parsed.debug,
            profile: parsed.profile.as_ref(),
            etrecord: parsed.etrecord.as_ref(),
            reports: Some(maker),
            beside: &beside,
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
        let listed = Listed::of(&req.inputs, req.recursive)?;
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
            auto_data: req.auto_data,
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
                etrecord = Some(
                    input_of_kind(id, s, "it is another kind of file", |p| {
                        matches!(p, Parsed::EtRecord(_))
                    })
                    .map_err(|why| OpenError::NotEtRecord {
                        path: s.path.clone(),
                        why,
                    })?,
                );
                continue;
            }
            if self.profile == Some(id) {
                profile = Some(
                    input_of_kind(id, s, "it is another kind of ExecuTorch file", |p| {
                        matches!(p, Parsed::Profile(_))
                    })
                    .map_err(|why| OpenError::NotProfile {
                        path: s.path.clone(),
                        why,
                    })?,
                );
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

/// Source `s` (source `id`) parsed, if `wanted` says it is of the kind
/// asked for; else why not: its parse error, or `other`.
fn input_of_kind<'a>(
    id: usize,
    s: &'a Source,
    other: &str,
    wanted: impl Fn(&Parsed<'_>) -> bool,
) -> Result<Input<'a>, String> {
    match format::parse(s.bytes()) {
        Ok(parsed) if wanted(&parsed) => Ok(Input {
            name: s.name.clone(),
            source: id,
            bytes: Arc::new(s.shared()),
            parsed,
        }),
        Ok(_) => Err(other.to_owned()),
        Err(e) => Err(e.to_string()),
    }
}
