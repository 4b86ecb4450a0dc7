//! `diff` of two local files when either is an ETRecord, for the command
//! and the Python module alike: two ETRecords are compared graph by graph;
//! an ETRecord paired with a file of another kind is refused, as the
//! sections of a program say nothing about an ETRecord.

use std::path::{Path, PathBuf};

use super::OpenError;
use crate::format::etrecord::is_etrecord;
use crate::format::{self, EtRecordFile, Parsed};
use crate::report::diff::Tolerance;
use crate::report::diff::etrecord::{Report, compare};
use crate::source::Source;
use crate::source::redact::shown;

/// Why two files were not compared as ETRecords.
#[derive(Debug, thiserror::Error)]
pub enum EtRecordDiffError {
    /// One of the two ETRecords cannot be read.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// One is an ETRecord and the other a valid file of another kind.
    #[error(
        "{} is {a_kind} and {} is {b_kind}: an ETRecord is compared only with another ETRecord",
        shown(a),
        shown(b)
    )]
    Mismatch {
        /// The first file.
        a: PathBuf,
        /// What it is (`an ETRecord`, `a program`, ...).
        a_kind: &'static str,
        /// The second file.
        b: PathBuf,
        /// What it is.
        b_kind: &'static str,
    },
}

/// The report of ETRecord `b` against ETRecord `a`, or `None` when
/// neither is an ETRecord, either is no local file, or one is an ETRecord
/// and either cannot be parsed (the comparison of other files names those
/// troubles as it names them for any file).
pub fn compare_etrecords(
    a: &Path,
    b: &Path,
    tolerance: Tolerance,
) -> Result<Option<Report>, EtRecordDiffError> {
    let open = |p: &Path| Source::open(p).ok().filter(|_| p.is_file());
    let (Some(sa), Some(sb)) = (open(a), open(b)) else {
        return Ok(None);
    };
    match (is_etrecord(sa.bytes()), is_etrecord(sb.bytes())) {
        (false, false) => Ok(None),
        (true, true) => {
            fn parse<'s>(p: &Path, s: &'s Source) -> Result<EtRecordFile<'s>, OpenError> {
                EtRecordFile::parse(s.bytes()).map_err(|error| OpenError::Format {
                    path: p.to_owned(),
                    error,
                })
            }
            let (ra, rb) = (parse(a, &sa)?, parse(b, &sb)?);
            Ok(Some(compare(&ra, &rb, (&shown(a), &shown(b)), tolerance)))
        }
        _ => {
            // Either is invalid: the comparison of files names its trouble.
            let (Ok(pa), Ok(pb)) = (format::parse(sa.bytes()), format::parse(sb.bytes())) else {
                return Ok(None);
            };
            Err(EtRecordDiffError::Mismatch {
                a: a.to_owned(),
                a_kind: kind(&pa),
                b: b.to_owned(),
                b_kind: kind(&pb),
            })
        }
    }
}

/// What a file is, with its article, for the message of a mismatched pair.
fn kind(p: &Parsed<'_>) -> &'static str {
    match p {
        Parsed::Program(_) => "a program",
        Parsed::Data(_) => "a data file",
        Parsed::Bundled(_) => "a bundled program",
        Parsed::Package(_) => "a package",
        Parsed::Profile(_) => "an ETDump",
        Parsed::EtRecord(_) => "an ETRecord",
    }
}
