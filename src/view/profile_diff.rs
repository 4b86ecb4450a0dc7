//! `diff` of two local ETDumps as a speed report, for the command and the
//! Python module alike: the pair is recognised by content, then compared
//! per instruction and per operator, joined with the program that ran when
//! one is given.

use std::path::{Path, PathBuf};

use super::OpenError;
use crate::format::{self, Kind, Parsed, ProfileFile};
use crate::report::diff::profile::{ProfileDiff, compare};
use crate::source::redact::shown;
use crate::source::{Source, base_name};

/// Why two ETDumps were not compared.
#[derive(Debug, thiserror::Error)]
pub enum ProfileDiffError {
    /// An ETDump or the program cannot be opened or is not valid.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The program given to name the operators is no program.
    #[error("{}: is not a program (.pte)", shown(path))]
    NotProgram {
        /// The file given as the program.
        path: PathBuf,
    },
}

/// Two local files that are both ETDumps, opened.
#[derive(Debug)]
pub struct ProfilePair {
    a: (PathBuf, Source),
    b: (PathBuf, Source),
}

impl ProfilePair {
    /// `a` and `b` when both are local files whose content is an ETDump,
    /// else `None` (they are then compared as any other files are, which
    /// names what cannot be opened).
    pub fn of(a: &Path, b: &Path) -> Option<ProfilePair> {
        let open = |p: &Path| {
            Source::open(p)
                .ok()
                .filter(|s| p.is_file() && format::sniff(s.bytes()).ok() == Some(Kind::Profile))
                .map(|s| (p.to_owned(), s))
        };
        Some(ProfilePair {
            a: open(a)?,
            b: open(b)?,
        })
    }

    /// The speed report of B against A (the baseline), its instructions
    /// named by the operators of `program` when given (a `.pte` or
    /// `.bpte`); `threshold` is the slowdown, a fraction of A's time
    /// (0.1 for 10 %), beyond which a row exceeds it.
    pub fn compare(
        &self,
        program: Option<&Path>,
        threshold: f64,
    ) -> Result<ProfileDiff, ProfileDiffError> {
        let sp = program
            .map(Source::open)
            .transpose()
            .map_err(OpenError::from)?;
        fn parse((path, s): &(PathBuf, Source)) -> Result<ProfileFile<'_>, OpenError> {
            ProfileFile::parse(s.bytes()).map_err(|error| OpenError::Format {
                path: path.clone(),
                error,
            })
        }
        let (a, b) = (parse(&self.a)?, parse(&self.b)?);
        let program = match (program, &sp) {
            (Some(path), Some(s)) => {
                let parsed = format::parse(s.bytes()).map_err(|error| OpenError::Format {
                    path: path.to_owned(),
                    error,
                })?;
                Some(match parsed {
                    Parsed::Program(p) => (base_name(path), p),
                    Parsed::Bundled(b) => (base_name(path), b.program),
                    _ => {
                        return Err(ProfileDiffError::NotProgram {
                            path: path.to_owned(),
                        });
                    }
                })
            }
            _ => None,
        };
        Ok(compare(
            (&a, &b),
            (&shown(&self.a.0), &shown(&self.b.0)),
            program.as_ref().map(|(n, p)| (n.as_str(), p)),
            threshold,
        ))
    }
}
