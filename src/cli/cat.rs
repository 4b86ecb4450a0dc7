//! `ptefs cat`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsFd;

use clap::Args;

use super::{NOT_FOUND, OK, Sources, TROUBLE, error, output_error};
use crate::fs::{Data, Fs, FsError};
use crate::source::redact;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    ptefs cat model.pte methods/forward/code.txt\n  \
    ptefs cat model.pte --data weights.ptd methods/forward/tensors/0.npy > w.npy")]
pub(super) struct CatArgs {
    #[command(flatten)]
    sources: Sources,
    /// Paths in the tree.
    #[arg(required = true)]
    paths: Vec<String>,
}

/// Bytes asked of the core at a time, as a mount's reads would be.
const CHUNK: u64 = 1 << 20;

pub(super) fn run(args: &CatArgs) -> Result<i32, i32> {
    let fs = args.sources.open()?;
    // Mapped bytes must reach the kernel without being copied here, so
    // that a source truncated meanwhile makes the write fail (EFAULT)
    // rather than this process fault: write them straight to a descriptor.
    let stdout = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(File::from)
        .map_err(output_error)?;
    let mut out = BufWriter::with_capacity(CHUNK as usize, &stdout);
    let mut status = OK;
    for path in &args.paths {
        let shown = crate::escape::escape(path);
        let ino = match fs.resolve(path) {
            Ok(ino) => ino,
            Err(_) => {
                error(format_args!(
                    "{shown}: no such file in the tree of {}",
                    redact::shown(&args.sources.file)
                ));
                status = status.max(NOT_FOUND);
                continue;
            }
        };
        match copy(&fs, ino, &mut out) {
            Ok(()) => {}
            Err(Failure::Fs(FsError::IsDir(_))) => {
                error(format_args!("{shown}: is a directory"));
                status = TROUBLE;
            }
            Err(Failure::Fs(e)) => {
                error(format_args!("{shown}: {e}"));
                return Err(TROUBLE);
            }
            Err(Failure::Write(e)) if e.raw_os_error() == Some(libc::EFAULT) => {
                // The kernel could not copy mapped pages: the source lost them.
                error(format_args!(
                    "{shown}: {} changed while it was being read",
                    redact::shown(&args.sources.file)
                ));
                return Err(TROUBLE);
            }
            Err(Failure::Write(e)) => return Err(output_error(e)),
        }
    }
    out.flush().map_err(output_error)?;
    Ok(status)
}

enum Failure {
    Fs(FsError),
    Write(io::Error),
}

/// Writes file `ino` to `out`, mapped bytes straight to its descriptor.
fn copy(fs: &Fs, ino: u64, out: &mut BufWriter<&File>) -> Result<(), Failure> {
    let size = fs.getattr(ino).map_err(Failure::Fs)?.size;
    fs.open(ino, false).map_err(Failure::Fs)?;
    let mut offset = 0;
    while offset < size {
        let data = fs.read(ino, offset, CHUNK).map_err(Failure::Fs)?;
        if data.is_empty() {
            break;
        }
        offset += data.len() as u64;
        match data {
            Data::Rendered(b) => out.write_all(b),
            Data::Owned(v) => out.write_all(&v),
            Data::Mapped(b) => out.flush().and_then(|()| {
                let mut fd: &File = out.get_ref();
                fd.write_all(b)
            }),
        }
        .map_err(Failure::Write)?;
    }
    Ok(())
}
