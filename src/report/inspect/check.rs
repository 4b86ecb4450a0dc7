//! The check section `inspect --runtime` adds after the summary: the
//! program's check as [`crate::report::check`] makes it for `ptefs check`.

use serde::Serialize;

use super::Inspection;
use crate::report::check::spec::RuntimeSpec;
use crate::report::check::{Check, Limits, NotAProgram, check_input};

/// An inspection with the check of its program.
#[derive(Debug, Serialize)]
pub struct Checked<'a> {
    /// The summary, its fields at the top level as without a check.
    #[serde(flatten)]
    pub inspection: &'a Inspection,
    /// The check against the runtime asked for.
    pub check: Check,
}

/// `inspection` of `input` with the check of its program, with the data
/// files of `attached`, against `runtime`.
pub fn checked<'a>(
    inspection: &'a Inspection,
    input: &crate::tree::Input<'_>,
    attached: &[crate::tree::Input<'_>],
    runtime: &RuntimeSpec,
) -> Result<Checked<'a>, NotAProgram> {
    let check = check_input(input, attached, runtime, Limits::default())?;
    Ok(Checked { inspection, check })
}

impl Checked<'_> {
    /// The summary's text, then the check's, indented under `check:`.
    pub fn text(&self) -> String {
        let mut out = self.inspection.text();
        out.push_str("\ncheck:\n");
        for line in self.check.text().lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}
