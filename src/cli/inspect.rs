//! `ptefs inspect`.
use clap::Args;
#[derive(Args, Debug)]
pub(super) struct InspectArgs {}
pub(super) fn run(_: &InspectArgs) -> Result<i32, i32> {
    Ok(0)
}
