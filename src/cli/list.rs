//! `ptefs ls`.

use std::cell::RefCell;
use std::io::{self, Write};

use clap::Args;

use super::{NOT_FOUND, OK, Sources, TROUBLE, error, output_error};
use crate::escape::escape;
use crate::fs::{Attr, FileKind, Fs, FsError};
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
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let failed = write_listing(&fs, (ino, path), args.long, args.recursive, &mut out)
        .and_then(|failed| out.flush().map(|()| failed))
        .map_err(output_error)?;
    match failed {
        None => Ok(OK),
        Some(Failure {
            path,
            error: e,
            more,
        }) => {
            let more = match more {
                0 => String::new(),
                n => format!(" (and {n} more entries)"),
            };
            match path {
                Some(p) => error(format_args!(
                    "{}: {}: {e}; the listing leaves it out{more}",
                    shown(&args.sources.file),
                    escape(&p)
                )),
                None => error(format_args!("{e}; the listing is of the file as opened")),
            }
            Ok(TROUBLE)
        }
    }
}

/// An entry the listing could not show (the first one, and how many
/// more), or a source that changed while it was listed.
#[derive(Debug)]
struct Failure {
    /// The entry left out; `None` for a source that changed.
    path: Option<String>,
    error: FsError,
    more: usize,
}

/// Writes the listing of `ino` (at `path`), long or not, recursive or
/// not, to `out`, and says which entry it could not show (a read failed,
/// the source changed): the listing goes on without it, and the command
/// fails. A source that changed while listing fails it too, though
/// nothing was read from it: the listing is of what it was.
fn write_listing(
    fs: &Fs,
    (ino, path): (Ino, &str),
    long: bool,
    recursive: bool,
    out: &mut impl Write,
) -> io::Result<Option<Failure>> {
    let failed: RefCell<Option<Failure>> = RefCell::new(None);
    let keep = |entry: ListedOrFailed| match entry {
        Ok(e) => Some(e),
        Err((path, error)) => {
            let mut f = failed.borrow_mut();
            match &mut *f {
                Some(first) => first.more += 1,
                None => {
                    *f = Some(Failure {
                        path: Some(path),
                        error,
                        more: 0,
                    })
                }
            }
            None
        }
    };
    // The long format aligns sizes, so it needs every line first; the short
    // one streams, however large the tree, and never asks a size (which
    // for a file rendered when first read means rendering it).
    let width = if long {
        listing(fs, ino, path, recursive, true)
            .filter_map(|e| e.ok())
            .filter_map(|(e, _)| e.attr.map(|a| a.size.to_string().len()))
            .max()
            .unwrap_or(1)
    } else {
        1
    };
    for (entry, name) in listing(fs, ino, path, recursive, long).filter_map(keep) {
        let slash = if entry.kind == FileKind::Directory {
            "/"
        } else {
            ""
        };
        let name = escape(&name);
        let line = match entry.attr.filter(|_| long) {
            Some(attr) => {
                let mode = attr.mode_string();
                format!("{mode} {:>width$} {name}{slash}\n", attr.size)
            }
            None => format!("{name}{slash}\n"),
        };
        out.write_all(line.as_bytes())?;
    }
    let mut failed = failed.into_inner();
    if failed.is_none() {
        failed = fs.view().sources.iter().find_map(|s| {
            let e = s.check_unchanged().err()?;
            Some(Failure {
                path: None,
                error: e.into(),
                more: 0,
            })
        });
    }
    Ok(failed)
}

/// One entry of a listing: its kind, and its attributes when asked for.
struct Listed {
    kind: FileKind,
    attr: Option<Attr>,
}

/// One entry of a listing, or the path that could not be shown and why.
type ListedOrFailed = Result<(Listed, String), (String, FsError)>;

/// What `ls` shows of `ino`: the entries of a directory (every path below
/// it with `recursive`), or the file itself; with their attributes when
/// `sized`.
fn listing<'f>(
    fs: &'f Fs,
    ino: Ino,
    path: &str,
    recursive: bool,
    sized: bool,
) -> Box<dyn Iterator<Item = ListedOrFailed> + 'f> {
    let listed = move |ino, p: String| {
        let entry = match sized {
            true => fs.getattr(ino).map(|a| Listed {
                kind: a.kind,
                attr: Some(a),
            }),
            false => fs.kind(ino).map(|kind| Listed { kind, attr: None }),
        };
        match entry {
            Ok(e) => Ok((e, p)),
            Err(e) => Err((p, e)),
        }
    };
    let top = match listed(ino, path.trim_end_matches('/').to_owned()) {
        Ok(top) => top,
        Err(e) => return Box::new(std::iter::once(Err(e))),
    };
    if top.0.kind == FileKind::RegularFile {
        return Box::new(std::iter::once(Ok(top)));
    }
    if recursive {
        return Box::new(fs.walk(ino).skip(1).map(move |(p, i)| listed(i, p)));
    }
    match fs.readdir(ino, 2) {
        Ok(entries) => Box::new(entries.map(move |e| listed(e.ino, e.name.into_owned()))),
        Err(e) => Box::new(std::iter::once(Err((path.to_owned(), e)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Request, View};

    /// Listings of a program whose file changed after opening: each fails,
    /// the long one naming an entry it left out (a file whose size needs
    /// the source), the short one the source.
    #[test]
    fn a_source_changed_before_listing_fails_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("m.pte");
        let fixture =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mlp.pte");
        let open = || {
            std::fs::copy(&fixture, &copy).unwrap();
            let view = View::open(&Request {
                inputs: vec![copy.clone()],
                data: Vec::new(),
                recursive: false,
                names: None,
                auto_data: false,
                debug_buffer: None,
                profile: None,
                etrecord: None,
            })
            .unwrap();
            Fs::new(view)
        };
        let list = |fs: &Fs, long| {
            let mut out = Vec::new();
            let failed = write_listing(fs, (crate::tree::ROOT, ""), long, true, &mut out).unwrap();
            (String::from_utf8(out).unwrap(), failed)
        };
        for long in [false, true] {
            let (whole, failed) = list(&open(), long);
            assert!(failed.is_none(), "{failed:?}");
            assert!(whole.lines().any(|l| l.ends_with("plan.json")), "{whole}");
            let fs = open();
            // Appended to: the source is no longer what the tree was built from.
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&copy)
                .unwrap();
            f.write_all(b"\0").unwrap();
            let (shown, failed) = list(&fs, long);
            let failed = failed.expect("the change is told");
            assert!(
                matches!(failed.error, FsError::SourceChanged(_)),
                "{failed:?}"
            );
            if long {
                let left_out = failed.path.as_deref().expect("an entry is left out");
                assert!(whole.contains(left_out), "{failed:?}");
                assert!(shown.lines().count() < whole.lines().count(), "{shown}");
            } else {
                assert!(failed.path.is_none(), "{failed:?}");
                assert_eq!(shown, whole);
            }
        }
    }
}
