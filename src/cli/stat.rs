//! `ptefs stat`: what stat(1) and `getfattr -d -m user.ptefs` show of a
//! path on the mount, without mounting.

use std::collections::BTreeMap;
use std::io::Write;

use clap::Args;
use serde::Serialize;

use super::{NOT_FOUND, OK, Sources, error, output_error};
use crate::escape::escape;
use crate::fs::{Attr, FileKind, Fs};
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    ptefs stat model.pte methods/forward/tensors/0.bin\n  \
    ptefs stat --json model.pte header.json constants")]
pub(super) struct StatArgs {
    /// One JSON object per path, on a line of its own.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    sources: Sources,
    /// Paths in the tree.
    #[arg(required = true)]
    paths: Vec<String>,
}

/// The JSON form of one path's attributes.
#[derive(Serialize)]
struct Stat<'a> {
    path: &'a str,
    #[serde(rename = "type")]
    kind: FileKind,
    /// Permission bits in octal, as stat's `%a` with a leading zero.
    mode: String,
    size: u64,
    blocks: u64,
    ino: u64,
    nlink: u32,
    uid: u32,
    gid: u32,
    /// Extended attributes, name → value (values are UTF-8 text).
    xattrs: BTreeMap<&'static str, String>,
}

pub(super) fn run(args: &StatArgs) -> Result<i32, i32> {
    let fs = args.sources.open()?;
    let mut out = std::io::stdout().lock();
    let mut status = OK;
    for path in &args.paths {
        let Some((attr, xattrs)) = look(&fs, path) else {
            error(format_args!(
                "{}: no such file or directory in the tree of {}",
                escape(path),
                shown(&args.sources.file)
            ));
            status = NOT_FOUND;
            continue;
        };
        let text = if args.json {
            let s = Stat {
                path,
                kind: attr.kind,
                mode: format!("{:04o}", attr.perm),
                size: attr.size,
                blocks: attr.blocks(),
                ino: attr.ino,
                nlink: attr.nlink,
                uid: attr.uid,
                gid: attr.gid,
                xattrs,
            };
            let mut line = serde_json::to_string(&s).map_err(|e| {
                error(format_args!("{}: {e}", escape(path)));
                super::TROUBLE
            })?;
            line.push('\n');
            line
        } else {
            render(path, &attr, &xattrs)
        };
        out.write_all(text.as_bytes()).map_err(output_error)?;
    }
    out.flush().map_err(output_error)?;
    Ok(status)
}

fn look(fs: &Fs, path: &str) -> Option<(Attr, BTreeMap<&'static str, String>)> {
    let ino = fs.resolve(path).ok()?;
    let attr = fs.getattr(ino).ok()?;
    let xattrs = fs
        .xattrs(ino)
        .ok()?
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    Some((attr, xattrs))
}

/// stat(1)'s layout, then the attributes as `getfattr -d` prints them.
fn render(path: &str, a: &Attr, xattrs: &BTreeMap<&'static str, String>) -> String {
    let mut s = format!(
        "  File: {}\n  Size: {:<10} Blocks: {:<6} {}\n Inode: {:<10} Links: {}\nAccess: ({:04o}/{})  Uid: {}  Gid: {}\n",
        escape(path),
        a.size,
        a.blocks(),
        a.kind.describe(),
        a.ino,
        a.nlink,
        a.perm,
        a.mode_string(),
        a.uid,
        a.gid
    );
    for (k, v) in xattrs {
        s.push_str(&format!("{k}={:?}\n", escape(v)));
    }
    s
}
