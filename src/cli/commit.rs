//! `ptefs commit` and `ptefs edits`: what a writable mount's daemon holds,
//! asked through extended attributes of the mount's root (the daemon has
//! the edits; these commands only pass the request and print the answer).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use clap::Args;

use super::{OK, TROUBLE, error, print};
use crate::fs::{COMMIT_ATTR, EDITS_ATTR, EditRow};
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  ptefs mount --writable model.pte /tmp/m\n  \
    cp fixed.npy /tmp/m/methods/forward/tensors/0.npy\n  ptefs commit /tmp/m -o fixed.pte")]
pub(super) struct CommitArgs {
    /// The mount point of a `ptefs mount --writable`.
    mountpoint: PathBuf,
    /// The file to write (replaced atomically).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
}

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  ptefs edits /tmp/m\n  ptefs edits --json /tmp/m")]
pub(super) struct EditsArgs {
    /// The mount point of a `ptefs mount --writable`.
    mountpoint: PathBuf,
    /// One JSON array of the ranges.
    #[arg(long)]
    json: bool,
}

fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn c_name(n: &[u8]) -> CString {
    CString::new(n).expect("attribute names hold no NUL")
}

/// The value of attribute `name` of `path`.
fn get(path: &Path, name: &[u8]) -> io::Result<Vec<u8>> {
    let (p, n) = (c_path(path)?, c_name(name));
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
    let (p, n) = (c_path(path)?, c_name(name));
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

fn not_writable(dir: &Path, e: &io::Error) {
    error(format_args!(
        "{}: not a writable ptefs mount ({e}); mount with ptefs mount --writable",
        shown(dir)
    ));
}

pub(super) fn commit(args: &CommitArgs) -> Result<i32, i32> {
    // The daemon runs elsewhere: it is given the absolute path, the user
    // is shown the path as given.
    let out = std::path::absolute(&args.output).unwrap_or_else(|_| args.output.clone());
    let done = set(&args.mountpoint, COMMIT_ATTR, out.as_os_str().as_bytes());
    let said = get(&args.mountpoint, COMMIT_ATTR);
    let said: serde_json::Value = match (&done, &said) {
        (_, Ok(s)) if !s.is_empty() => serde_json::from_slice(s).unwrap_or_default(),
        (Err(e), _) | (Ok(()), Err(e)) => {
            not_writable(&args.mountpoint, e);
            return Err(TROUBLE);
        }
        (Ok(()), Ok(_)) => serde_json::Value::Null,
    };
    if done.is_err() || said["ok"] != true {
        let why = said["error"]
            .as_str()
            .unwrap_or("the daemon did not say why");
        error(format_args!("{}: {why}", shown(&args.output)));
        return Err(TROUBLE);
    }
    print(&format!(
        "{}: {} bytes; {} changed range(s), {} bytes\n",
        shown(&args.output),
        said["size"],
        said["ranges"],
        said["bytes"]
    ))?;
    Ok(OK)
}

pub(super) fn edits(args: &EditsArgs) -> Result<i32, i32> {
    let raw = get(&args.mountpoint, EDITS_ATTR).map_err(|e| {
        not_writable(&args.mountpoint, &e);
        TROUBLE
    })?;
    let rows: Vec<EditRow> = serde_json::from_slice(&raw).map_err(|e| {
        error(format_args!("{}: {e}", shown(&args.mountpoint)));
        TROUBLE
    })?;
    if args.json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| {
            error(e);
            TROUBLE
        })?;
        return print(&format!("{text}\n")).map(|()| OK);
    }
    let mut text = String::new();
    for r in &rows {
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\n",
            r.path, r.source, r.offset, r.length, r.old_sha256, r.new_sha256
        ));
    }
    print(&text).map(|()| OK)
}
