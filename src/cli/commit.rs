//! `ptefs commit` and `ptefs edits`: the edits of a writable mount, read
//! from its journal by this process. The daemon is asked only to make the
//! journal durable and say where it is (an extended attribute of the
//! mount's root); the output is then written here, so this command knows
//! what happened to it, a kill of it stops the write, and it reads the
//! journal and the sources with the caller's own permissions.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use clap::Args;

use super::{OK, TROUBLE, error, print};
use crate::edit::journal::{self, Identity};
use crate::edit::overlay::Overlay;
use crate::edit::{Inputs, Written};
use crate::fs::{
    COMMITTED_ATTR, EditRow, FsError, JOURNAL_ATTR, JournalInfo, commit_overlay, edit_rows,
};
use crate::source::Source;
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  ptefs mount --writable model.pte /tmp/m\n  \
    cp fixed.npy /tmp/m/methods/forward/tensors/0.npy\n  ptefs commit /tmp/m -o fixed.pte")]
pub(super) struct CommitArgs {
    /// The mount point of a `ptefs mount --writable`, or a source whose
    /// edits an earlier mount left in its journal.
    #[arg(value_name = "MOUNTPOINT|SOURCE")]
    mountpoint: PathBuf,
    /// The file to write (replaced atomically).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// For a SOURCE: the directory the mount kept its journal in (the
    /// `--work-dir` it was given).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  ptefs edits /tmp/m\n  ptefs edits --json /tmp/m")]
pub(super) struct EditsArgs {
    /// The mount point of a `ptefs mount --writable`, or a source whose
    /// edits an earlier mount left in its journal.
    #[arg(value_name = "MOUNTPOINT|SOURCE")]
    mountpoint: PathBuf,
    /// One JSON array of the ranges.
    #[arg(long)]
    json: bool,
    /// For a SOURCE: the directory the mount kept its journal in (the
    /// `--work-dir` it was given).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

fn c_string(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// The value of attribute `name` of `path`.
fn get(path: &Path, name: &[u8]) -> io::Result<Vec<u8>> {
    let (p, n) = (c_string(path.as_os_str().as_bytes())?, c_string(name)?);
    loop {
        // SAFETY: both strings are NUL-terminated and live across the call;
        // a null buffer of size 0 asks only for the value's size.
        let size = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), std::ptr::null_mut(), 0) };
        if size < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u8; size as usize];
        // SAFETY: `buf` holds `buf.len()` writable bytes.
        let got =
            unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        match got {
            n if n >= 0 => {
                buf.truncate(n as usize);
                return Ok(buf);
            }
            // The value grew between the two calls: ask again.
            _ if io::Error::last_os_error().raw_os_error() == Some(libc::ERANGE) => continue,
            _ => return Err(io::Error::last_os_error()),
        }
    }
}

/// Sets attribute `name` of `path` to `value`.
fn set(path: &Path, name: &[u8], value: &[u8]) -> io::Result<()> {
    let (p, n) = (c_string(path.as_os_str().as_bytes())?, c_string(name)?);
    // SAFETY: both strings are NUL-terminated and `value` is valid for its
    // length, all for the duration of the call.
    let r = unsafe {
        libc::setxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    match r {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The journal of `path`: a writable mount's (see [`journal_info`]), or,
/// for a source file, the one an earlier mount of it left in the default
/// state directory.
fn journal_of(path: &Path, work_dir: Option<&Path>) -> Result<JournalInfo, String> {
    if !path.is_file() {
        return journal_info(path);
    }
    let p = shown(path);
    let base = match work_dir {
        Some(dir) => std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned()),
        None => journal::default_base().ok_or_else(|| {
            format!("{p}: no state directory to look for its edits in (neither XDG_STATE_HOME nor HOME is set); give --work-dir")
        })?,
    };
    let whole = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let file = journal::file_in(&journal::dir_for(&base, &whole));
    let length = match std::fs::metadata(&file) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!(
                "{p}: no edits are kept for it (no journal in {})",
                shown(file.parent().unwrap_or(&file))
            ));
        }
        Err(e) => return Err(format!("{}: {e}", shown(&file))),
    };
    Ok(JournalInfo {
        journal: file,
        length,
        commit: None,
        source: path.to_owned(),
        saved: false,
    })
}

/// What the mount at `dir` says of its journal (made durable first), or
/// why it says nothing.
pub(super) fn journal_info(dir: &Path) -> Result<JournalInfo, String> {
    let d = shown(dir);
    let raw = get(dir, JOURNAL_ATTR).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOTCONN) => format!(
            "the daemon of {d} is not answering (it was killed or crashed); the edits it acknowledged stay in its journal: `ptefs umount {d}`, then `ptefs mount --writable` of the same source takes them up"
        ),
        Some(libc::ENODATA | libc::EOPNOTSUPP) => match super::mount::fstype(dir).as_deref() {
            Some("fuse.ptefs") => {
                format!("{d}: a read-only ptefs mount; mount with ptefs mount --writable to edit")
            }
            _ => format!("{d}: not a ptefs mount"),
        },
        _ => format!("{d}: {e}"),
    })?;
    serde_json::from_slice(&raw).map_err(|e| format!("{d}: the daemon's answer does not read: {e}"))
}

/// The overlay of the journal `info` names, as far as it is durable, and
/// the sources it edits (each still the file the edits were made to; a
/// remote source is not opened).
fn read_journal(info: &JournalInfo) -> Result<(Overlay, Vec<Option<Source>>), String> {
    let (overlay, header) =
        Overlay::read(&info.journal, Some(info.length)).map_err(|e| e.to_string())?;
    let mut sources = Vec::new();
    for was in &header.sources {
        let remote = was.path.to_str().is_some_and(crate::source::remote::is_url);
        if remote {
            sources.push(None);
            continue;
        }
        let source = Source::open(&was.path).map_err(|e| e.to_string())?;
        if let Some(why) = was.differs(&Identity::of(&source)) {
            return Err(format!(
                "{}: changed since it was mounted ({why}); the edits were made to the file as it was",
                shown(&was.path)
            ));
        }
        sources.push(Some(source));
    }
    Ok((overlay, sources))
}

fn source_of(sources: &[Option<Source>], id: usize) -> Result<&Source, FsError> {
    sources
        .get(id)
        .and_then(Option::as_ref)
        .ok_or_else(|| FsError::NotStored {
            why: "the edits touch a remote source".to_owned(),
        })
}

/// Writes the edits of the mount at `dir` (as `info` describes its
/// journal) to `out`, and tells the daemon so.
pub(super) fn commit_to(dir: &Path, info: &JournalInfo, out: &Path) -> Result<Written, String> {
    let (overlay, sources) = read_journal(info)?;
    let names = |id: usize| {
        sources
            .get(id)
            .and_then(Option::as_ref)
            .map_or_else(|| format!("source {id}"), |s| s.name.clone())
    };
    let inputs = sources.iter().flatten().fold(Inputs::new(), Inputs::source);
    let written = commit_overlay(&overlay, &|id| source_of(&sources, id), &names, out, inputs)
        .map_err(|e| match e {
            FsError::Commit { why } => why,
            e => e.to_string(),
        })?;
    // Only a hint for the unmount of a mount: a journal whose every edit
    // was saved is removed then. A daemon gone since keeps it, which loses
    // nothing.
    if dir.is_dir() {
        let _ = set(dir, COMMITTED_ATTR, info.length.to_string().as_bytes());
    }
    Ok(written)
}

/// The line `commit` prints for a file written.
pub(super) fn summary(shown_out: &str, w: &Written) -> String {
    format!(
        "{shown_out}: {} bytes; {} changed range(s), {} bytes\n",
        w.len, w.ranges, w.changed
    )
}

pub(super) fn commit(args: &CommitArgs) -> Result<i32, i32> {
    let info = journal_of(&args.mountpoint, args.work_dir.as_deref()).map_err(|e| {
        error(e);
        TROUBLE
    })?;
    let written = commit_to(&args.mountpoint, &info, &args.output).map_err(|why| {
        error(format_args!(
            "{}: not written, left as it was: {why}",
            shown(&args.output)
        ));
        TROUBLE
    })?;
    print(&summary(&shown(&args.output), &written))?;
    Ok(OK)
}

pub(super) fn edits(args: &EditsArgs) -> Result<i32, i32> {
    let fail = |e: String| {
        error(e);
        TROUBLE
    };
    let info = journal_of(&args.mountpoint, args.work_dir.as_deref()).map_err(fail)?;
    let (overlay, sources) = read_journal(&info).map_err(fail)?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut failed_output: Option<io::Error> = None;
    let mut first = true;
    // Row by row as they are found: memory holds one piece of one range.
    let listed = edit_rows(
        &overlay,
        &|id| source_of(&sources, id),
        &mut |r: EditRow| {
            let written = if args.json {
                let sep = if first { "[\n" } else { ",\n" };
                let row = serde_json::to_string(&r).expect("a row serializes");
                write!(out, "{sep}  {row}")
            } else {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    r.path, r.source, r.offset, r.length, r.old_sha256, r.new_sha256
                )
            };
            first = false;
            written.map_err(|e| {
                failed_output = Some(e);
                FsError::ReadOnly
            })
        },
    );
    if let Err(e) = listed {
        return match failed_output {
            Some(e) => Err(super::output_error(e)),
            None => Err(fail(format!("{}: {e}", shown(&args.mountpoint)))),
        };
    }
    let ended = match (args.json, first) {
        (false, _) => Ok(()),
        (true, true) => writeln!(out, "[]"),
        (true, false) => writeln!(out, "\n]"),
    };
    ended
        .and_then(|()| out.flush())
        .map(|()| OK)
        .map_err(super::output_error)
}
