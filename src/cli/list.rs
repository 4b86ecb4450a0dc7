//! `ptefs ls`.

use std::io::{self, Write};

use clap::Args;

use super::{NOT_FOUND, OK, Sources, error, output_error};
use crate::escape::escape;
use crate::fs::{Attr, FileKind, Fs};
use crate::source::redact::shown;
use crate::tree::Ino;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    ptefs ls model.pte methods/forward/tensors\n  \
    ptefs ls -l model.pte\n  \
    ptefs ls -R model.pte --data weights.ptd")]
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
    let fs = args.sources.open()?;
    let path = args.path.as_deref().unwrap_or("");
    let Ok(ino) = fs.resolve(path) else {
        error(format_args!(
            "{}: no such file or directory in the tree of {}",
            escape(path),
            shown(&args.sources.file)
        ));
        return Ok(NOT_FOUND);
    };
    // The long format aligns sizes, so it needs every line first; the short
    // one streams, however large the tree, and never asks a size (which
    // for a file rendered when first read means rendering it).
    let lines = listing(&fs, ino, path, args.recursive, args.long);
    let width = if args.long {
        let lines = listing(&fs, ino, path, args.recursive, true);
        lines
            .filter_map(|(e, _)| e.attr.map(|a| a.size.to_string().len()))
            .max()
            .unwrap_or(1)
    } else {
        1
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for (entry, name) in lines {
        let slash = if entry.kind == FileKind::Directory {
            "/"
        } else {
            ""
        };
        let name = escape(&name);
        let line = match entry.attr.filter(|_| args.long) {
            Some(attr) => {
                let mode = attr.mode_string();
                format!("{mode} {:>width$} {name}{slash}\n", attr.size)
            }
            None => format!("{name}{slash}\n"),
        };
        out.write_all(line.as_bytes()).map_err(output_error)?;
    }
    out.flush().map_err(output_error)?;
    Ok(OK)
}

/// One entry of a listing: its kind, and its attributes when asked for.
struct Listed {
    kind: FileKind,
    attr: Option<Attr>,
}

/// What `ls` shows of `ino`: the entries of a directory (every path below
/// it with `recursive`), or the file itself; with their attributes when
/// `sized`. Entries whose attributes cannot be had are left out.
fn listing<'f>(
    fs: &'f Fs,
    ino: Ino,
    path: &str,
    recursive: bool,
    sized: bool,
) -> Box<dyn Iterator<Item = (Listed, String)> + 'f> {
    let listed = move |ino| match sized {
        true => fs.getattr(ino).ok().map(|a| Listed {
            kind: a.kind,
            attr: Some(a),
        }),
        false => fs.kind(ino).ok().map(|kind| Listed { kind, attr: None }),
    };
    let Some(top) = listed(ino) else {
        return Box::new(std::iter::empty());
    };
    if top.kind == FileKind::RegularFile {
        return Box::new(std::iter::once((
            top,
            path.trim_end_matches('/').to_owned(),
        )));
    }
    if recursive {
        return Box::new(
            fs.walk(ino)
                .skip(1)
                .filter_map(move |(p, i)| Some((listed(i)?, p))),
        );
    }
    match fs.readdir(ino, 2) {
        Ok(entries) => {
            Box::new(entries.filter_map(move |e| Some((listed(e.ino)?, e.name.into_owned()))))
        }
        Err(_) => Box::new(std::iter::empty()),
    }
}
