//! `ptefs ls`.

use std::io::{self, Write};

use clap::Args;

use super::{NOT_FOUND, OK, Sources, error, output_error};
use crate::tree::{Ino, NodeKind, Tree};

#[derive(Args, Debug)]
pub(super) struct LsArgs {
    /// Long format: type and permissions, size, name.
    #[arg(short = 'l')]
    long: bool,
    /// Every path under PATH, relative to the root, like find(1).
    #[arg(short = 'R')]
    recursive: bool,
    #[command(flatten)]
    sources: Sources,
    /// A path in the tree; the root by default.
    path: Option<String>,
}

pub(super) fn run(args: &LsArgs) -> Result<i32, i32> {
    let view = args.sources.open()?;
    let tree = &view.tree;
    let path = args.path.as_deref().unwrap_or("");
    let Some(ino) = tree.resolve(path) else {
        error(format_args!(
            "{path}: no such file or directory in the tree of {}",
            args.sources.file.display()
        ));
        return Ok(NOT_FOUND);
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let lines: Vec<(Ino, String)> = match &tree.node(ino).map(|n| &n.kind) {
        Some(NodeKind::Dir(_)) if args.recursive => tree
            .walk(ino)
            .into_iter()
            .skip(1)
            .map(|(path, i)| (i, path))
            .collect(),
        Some(NodeKind::Dir(entries)) => entries
            .iter()
            .map(|e| (e.ino, e.name.to_string()))
            .collect(),
        _ => vec![(ino, path.trim_end_matches('/').to_owned())],
    };
    let width = lines
        .iter()
        .map(|(i, _)| size(tree, *i).to_string().len())
        .max()
        .unwrap_or(1);
    for (i, name) in lines {
        let slash = if matches!(tree.node(i).map(|n| &n.kind), Some(NodeKind::Dir(_))) {
            "/"
        } else {
            ""
        };
        let line = if args.long {
            let mode = if slash.is_empty() {
                "-r--r--r--"
            } else {
                "dr-xr-xr-x"
            };
            format!("{mode} {:>width$} {name}{slash}\n", size(tree, i))
        } else {
            format!("{name}{slash}\n")
        };
        out.write_all(line.as_bytes()).map_err(output_error)?;
    }
    out.flush().map_err(output_error)?;
    Ok(OK)
}

fn size(tree: &Tree, ino: Ino) -> u64 {
    match tree.node(ino).map(|n| &n.kind) {
        Some(NodeKind::File(f)) => f.content.len(),
        Some(NodeKind::Dir(entries)) => entries.len() as u64,
        None => 0,
    }
}
