//! The files a request shows: its files as named, and the model files
//! found by listing its directories, each under the name it is shown by.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::OpenError;
use crate::format::{self, Kind};
use crate::source::{Source, SourceError, open_regular, remote};
use crate::tree;

/// The files a request shows, its directories expanded.
pub(super) struct Listed {
    pub(super) files: Vec<PathBuf>,
    /// For each file, whether it was found in a directory: files found
    /// there may be skipped when invalid, files named may not.
    pub(super) found: Vec<bool>,
    /// The name each file is shown under: its base name, or its path
    /// relative to the directory it was found in (`a/m.pte`), so that
    /// files of one name in different subdirectories stay apart.
    pub(super) names: Vec<String>,
    /// Files skipped while expanding directories, with the reason.
    pub(super) skipped: Vec<(PathBuf, String)>,
}

impl Listed {
    /// The files `inputs` show: URLs and files as named, and the model
    /// files of its directories (and of their subdirectories when
    /// `recursive`). None, or two shown under one name, is an error.
    pub(super) fn of(inputs: &[PathBuf], recursive: bool) -> Result<Listed, OpenError> {
        let mut listed = Listed {
            files: Vec::new(),
            found: Vec::new(),
            names: Vec::new(),
            skipped: Vec::new(),
        };
        for p in inputs {
            let url = p.to_str().is_some_and(remote::is_url);
            let meta = |error| SourceError::Io {
                path: p.clone(),
                error,
            };
            if !url && std::fs::metadata(p).map_err(meta)?.is_dir() {
                let from = listed.files.len();
                expand_dir(p, recursive, &mut listed.files, &mut listed.skipped)?;
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
                path: inputs.first().cloned().unwrap_or_default(),
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
    pub(super) fn open_with(&self, data: &[PathBuf]) -> Result<Vec<Source>, OpenError> {
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
