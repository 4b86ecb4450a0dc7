//! `ptefs diff`.
use clap::Args;
#[derive(Args, Debug)]
pub(super) struct DiffArgs {}
pub(super) fn run(_: &DiffArgs) -> Result<i32, i32> {
    Ok(0)
}
