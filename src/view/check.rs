//! `check` of what was opened, for the command, `inspect` and the Python
//! module alike: the program parsed and checked or, when it could not be
//! parsed for a reason `Program::load` refuses it for too, that refusal as
//! the check's one problem rather than an unreadable input.

use super::error::OpenError;
use super::open::Opened;
use crate::report::check::spec::RuntimeSpec;
use crate::report::check::{Check, Limits, NotAProgram, check_input, refused};

/// Why nothing could be checked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The input cannot be read, for a reason the runtime would not name.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The input is read but holds no program.
    #[error(transparent)]
    NotAProgram(#[from] NotAProgram),
    /// Nothing was opened to show.
    #[error("nothing to check")]
    Nothing,
}

/// Checks the first file shown of `opened`, with its attached data
/// files, against `runtime`.
pub fn check(opened: &Opened, runtime: &RuntimeSpec, limits: Limits) -> Result<Check, CheckError> {
    match opened.parse() {
        Ok(inputs) => {
            let input = inputs.shown.first().ok_or(CheckError::Nothing)?;
            Ok(check_input(input, &inputs.attached, runtime, limits)?)
        }
        Err(e) => refused_by_runtime(opened, &e, runtime).ok_or(CheckError::Open(e)),
    }
}

/// The check of the file shown when it could not be read for `e` and
/// `Program::load` would refuse it for the same reason.
fn refused_by_runtime(opened: &Opened, e: &OpenError, runtime: &RuntimeSpec) -> Option<Check> {
    let OpenError::Format { path, error } = e else {
        return None;
    };
    let source = opened.sources.first().filter(|s| s.path == *path)?;
    let problem = refused::unreadable(source.bytes(), error)?;
    Some(refused::refused(&source.name, runtime, problem))
}
