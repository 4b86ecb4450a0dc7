//! `ptefs set`: a new file with some stored tensors replaced.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use super::{NOT_FOUND, OK, Sources, TROUBLE, error};
use crate::edit::{self, Edit, EditError, Edits};
use crate::escape::escape;
use crate::fs::Fs;
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(
    after_help = "SOURCE is a .npy of the tensor's dtype and shape (for a .npy path, \
    with the very header that path serves), a raw file of exactly the tensor's size, or - \
    for standard input. Only stored tensors' .bin and .npy files can be set, and a constant \
    method's methods/<m>/value.json (a JSON number or boolean, stored where the program's \
    flatbuffer holds the value); every other byte of the output equals the input's.\n\n\
    Examples:\n  \
    ptefs set model.pte constants/3.npy=fixed.npy -o fixed.pte\n  \
    ptefs set weights.ptd tensors/fc1.weight.bin=- -o new.ptd < w.raw"
)]
pub(super) struct SetArgs {
    #[command(flatten)]
    sources: Sources,
    /// Tree paths of stored tensors and what to store in them.
    #[arg(required_unless_present = "from", value_name = "PATH=SOURCE")]
    edits: Vec<String>,
    /// A safetensors file: each of its tensors replaces, by name, the
    /// tensor of the tree's weights.safetensors it names, where the bytes
    /// differ.
    #[arg(long, value_name = "SAFETENSORS")]
    from: Option<PathBuf>,
    /// The file to write (replaced atomically; may be FILE itself, never
    /// another input nor another kind of file).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "OUT",
        required_unless_present = "data_out"
    )]
    output: Option<PathBuf>,
    /// The new data file, for paths stored in the .ptd beside FILE (or
    /// given with --data); with -o, both files are written (-o a copy of
    /// FILE when nothing given is stored in it).
    #[arg(long = "data-out", value_name = "PTD")]
    data_out: Option<PathBuf>,
}

pub(super) fn run(args: &SetArgs) -> Result<i32, i32> {
    let fs = args.sources.open()?;
    let view = fs.view();
    let mut by_source: BTreeMap<usize, Edits> = BTreeMap::new();
    let mut stdin_used = false;
    // The files the new values are read from: no output may replace one.
    let mut values = Vec::new();
    for arg in &args.edits {
        let Some((path, ino, what)) = split(&fs, arg) else {
            error(format_args!(
                "{}: no such file in the tree of {} (expected PATH=SOURCE)",
                escape(arg),
                shown(&args.sources.file)
            ));
            return Err(NOT_FOUND);
        };
        let fail = |e: EditError| {
            error(e);
            TROUBLE
        };
        let scalar = edit::scalar::method_of(path);
        let to = match scalar {
            Some(_) => None,
            None => Some(edit::stored(&view.tree, ino, path).map_err(fail)?),
        };
        let id = to.as_ref().map_or(0, |t| t.source);
        let source = &view.sources[id];
        if source.is_remote() {
            return Err(fail(EditError::NotStored {
                path: path.to_owned(),
                why: format!(
                    "is stored in {}, a remote source; copy it here and set the local file",
                    source.name
                ),
            }));
        }
        if what != "-" {
            values.push(what);
        }
        let given = if what == "-" {
            if std::mem::replace(&mut stdin_used, true) {
                error("standard input (-) can be given only once");
                return Err(TROUBLE);
            }
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut buf)
                .map_err(|e| fail(EditError::io("standard input")(e)))?;
            buf
        } else {
            std::fs::read(what).map_err(|e| fail(EditError::io(what)(e)))?
        };
        let edit = match (&to, scalar) {
            (Some(to), _) => Edit {
                offset: to.span.offset,
                bytes: edit::value::new_bytes(to, path, what, &given).map_err(fail)?,
                path: path.to_owned(),
            },
            (None, Some(method)) => {
                edit::scalar::set(source.bytes(), method, &given, path).map_err(fail)?
            }
            (None, None) => unreachable!("a path is a stored tensor or a constant"),
        };
        by_source
            .entry(id)
            .or_default()
            .add(edit, &source.name)
            .map_err(fail)?;
    }
    if let Some(from) = &args.from {
        add_from_weights(&fs, from, &mut by_source)?;
    }
    // Nothing differs: the output is FILE, byte for byte.
    if by_source.is_empty() {
        by_source.insert(0, Edits::default());
    }
    let outputs = outputs(args, &view.sources, by_source)?;
    let inputs = || {
        let given =
            (values.iter()).fold(edit::Inputs::new().sources(&view.sources), |i, w| i.path(w));
        (args.from.iter()).fold(given, |i, f| i.path(f))
    };
    // Every file written and checked before any is put in place; the data
    // file first, as the program needs it.
    let mut ready = Vec::new();
    for (id, edits, out) in outputs {
        let source = &view.sources[id];
        let differ = edits
            .iter()
            .filter(|e| source.mapped(e.span()).is_none_or(|old| old != e.bytes))
            .count();
        let (ranges, set) = (
            edits.len(),
            edits.iter().map(|e| e.bytes.len()).sum::<usize>(),
        );
        let r = edit::output::prepare(source, edits, out, inputs()).map_err(|e| {
            error(e);
            TROUBLE
        })?;
        if id != 0 && args.data_out.is_none() {
            eprintln!(
                "ptefs: note: the paths given are stored in {}: {} is a new {}",
                source.name,
                shown(out),
                source.name
            );
        }
        ready.push((r, source, set, ranges, differ));
    }
    for (r, source, set, ranges, differ) in ready {
        let written = r.place().map_err(|e| {
            error(e);
            TROUBLE
        })?;
        println!(
            "{}: {} bytes; {} bytes set in {} range(s), {} changed; every other byte as in {}",
            shown(&written.path),
            written.len,
            set,
            ranges,
            differ,
            source.name
        );
    }
    Ok(OK)
}

/// Where each file edited is written: FILE (source 0) to `-o`, the one
/// other file the paths given may be stored in (a program's data file) to
/// `--data-out`, or to `-o` when FILE itself is not edited and no
/// `--data-out` is given; with both, both are written, FILE as it is if
/// nothing given is stored in it. The data file comes first.
fn outputs<'a>(
    args: &'a SetArgs,
    sources: &[crate::source::Source],
    by_source: BTreeMap<usize, Edits>,
) -> Result<Vec<(usize, Edits, &'a std::path::Path)>, i32> {
    let name = |id: usize| sources[id].name.as_str();
    let (mut file, others): (Vec<_>, Vec<_>) = by_source.into_iter().partition(|(id, _)| *id == 0);
    // `-o` with `--data-out` writes both, FILE unchanged when nothing
    // given is stored in it: the two are used together, and an OUT left
    // missing (or stale from an earlier run) beside the new data file
    // would be run with it.
    if file.is_empty() && !others.is_empty() && args.output.is_some() && args.data_out.is_some() {
        file.push((0, Edits::default()));
    }
    if let [(a, _), (b, _), ..] = &others[..] {
        error(format_args!(
            "the paths given are stored in {} and in {}; set writes one data file: run it once for each",
            name(*a),
            name(*b)
        ));
        return Err(TROUBLE);
    }
    let mut out = Vec::new();
    if let Some((id, edits)) = others.into_iter().next() {
        let to = match (&args.data_out, &args.output, file.is_empty()) {
            (Some(d), _, _) => d,
            (None, Some(o), true) => o,
            (None, _, _) => {
                error(format_args!(
                    "the paths given are stored in {} and in {}: give -o for the new {} and --data-out for the new {}",
                    name(0),
                    name(id),
                    name(0),
                    name(id)
                ));
                return Err(TROUBLE);
            }
        };
        out.push((id, edits, to.as_path()));
    } else if args.data_out.is_some() {
        error(format_args!(
            "--data-out is given, but no path given is stored in a file other than {}",
            name(0)
        ));
        return Err(TROUBLE);
    }
    if let Some((id, edits)) = file.into_iter().next() {
        let Some(o) = &args.output else {
            error(format_args!(
                "paths given are stored in {} itself: give -o for the new file",
                name(id)
            ));
            return Err(TROUBLE);
        };
        let abs = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
        if let Some((_, _, data)) = out.first()
            && abs(data) == abs(o)
        {
            error(format_args!(
                "-o and --data-out name the same file ({}); give each its own",
                shown(o)
            ));
            return Err(TROUBLE);
        }
        out.push((id, edits, o.as_path()));
    }
    Ok(out)
}

/// Adds the edits of safetensors file `from` (`--from`) to `by_source`.
fn add_from_weights(
    fs: &Fs,
    from: &std::path::Path,
    by_source: &mut BTreeMap<usize, Edits>,
) -> Result<(), i32> {
    let fail = |e: EditError| {
        error(e);
        TROUBLE
    };
    let view = fs.view();
    let given = std::fs::read(from).map_err(|e| fail(EditError::io(from)(e)))?;
    let stored = |id: usize, span| view.sources[id].mapped(span).map(<[u8]>::to_vec);
    let found = edit::from_weights::edits(&view.tree, crate::tree::ROOT, (from, &given), stored)
        .map_err(fail)?;
    eprintln!(
        "ptefs: note: {}: {} tensor(s) differ, {} as stored",
        shown(from),
        found.edits.len(),
        found.unchanged
    );
    for (id, e) in found.edits {
        let name = &view.sources[id].name;
        by_source
            .entry(id)
            .or_default()
            .add(e, name)
            .map_err(fail)?;
    }
    Ok(())
}

/// Splits `PATH=SOURCE` at the first `=` whose left side is a path of
/// the tree (tree names may hold `=` themselves).
fn split<'a>(fs: &Fs, arg: &'a str) -> Option<(&'a str, u64, &'a str)> {
    arg.match_indices('=').find_map(|(i, _)| {
        let (path, what) = (&arg[..i], &arg[i + 1..]);
        let ino = fs.resolve(path).ok()?;
        (!what.is_empty()).then_some((path, ino, what))
    })
}
