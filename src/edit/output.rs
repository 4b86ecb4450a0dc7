//! Atomic output: a new file written beside its destination, read back
//! and validated, fsynced, then renamed over the destination. A crash or a
//! refused file leaves the destination as it was.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{EditError, Edits, Result};
use crate::source::{Source, Stamp, open_regular};

/// What a write produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file written.
    pub path: PathBuf,
    /// Its size.
    pub len: u64,
    /// Separate byte ranges that differ from the source's (or that were
    /// written, for a file made whole).
    pub ranges: usize,
    /// Bytes in those ranges.
    pub changed: u64,
    /// How the unchanged bytes were copied.
    pub copy: CopiedBy,
}

/// How a file's unchanged bytes reached the new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopiedBy {
    /// In the kernel, with `copy_file_range` (a reflink where the
    /// filesystem shares extents).
    CopyFileRange,
    /// Read and written through this process.
    ReadWrite,
    /// Nothing was copied: the file was written whole.
    None,
}

/// Checks what was written: the whole new file's bytes, as the project's
/// own open maps them. Returns a description of what is wrong.
pub type Validate<'v> = &'v dyn Fn(&[u8]) -> std::result::Result<(), String>;

/// A check that a file is still a valid file of the kind `original` is
/// (program, data file, ...), as the project's own parser reads it, with
/// no warning `original` does not have (a checksum that no longer holds).
pub fn same_kind(original: &[u8]) -> impl Fn(&[u8]) -> std::result::Result<(), String> + use<> {
    let kind = crate::format::sniff(original).ok();
    let warned: Vec<String> = crate::format::parse(original)
        .map(|p| p.warnings().to_vec())
        .unwrap_or_default();
    move |bytes: &[u8]| {
        let parsed = crate::format::parse(bytes).map_err(|e| e.to_string())?;
        if crate::format::sniff(parsed.bytes()).ok() != kind {
            return Err("it is no longer the same kind of file".to_owned());
        }
        match parsed.warnings().iter().find(|w| !warned.contains(w)) {
            Some(w) => Err(w.clone()),
            None => Ok(()),
        }
    }
}

/// Writes `out` as `source` with `edits` applied, the checksums the file
/// keeps over the edited bytes brought up to date, and validated as a
/// file of the same kind.
pub fn save(source: &Source, mut edits: Edits, out: &Path) -> Result<Written> {
    super::checksums::complete(source.bytes(), &mut edits, &source.name)?;
    let validate = same_kind(source.bytes());
    write_patched(&source.path, source.opened, &edits, out, &validate)
}

/// Writes `out` as the source at `path` (which must still be as `opened`
/// describes it) with `edits` applied, then validates it with `validate`.
pub fn write_patched(
    path: &Path,
    opened: Stamp,
    edits: &Edits,
    out: &Path,
    validate: Validate<'_>,
) -> Result<Written> {
    let (src, meta) = open_regular(path)?;
    let now = Stamp::of(&meta);
    let same = (now.dev, now.ino, now.len, now.mtime)
        == (opened.dev, opened.ino, opened.len, opened.mtime);
    if !same {
        return Err(EditError::Changed {
            path: path.to_owned(),
        });
    }
    let len = now.len;
    if let Some(e) = edits.iter().find(|e| e.span().end() > len) {
        return Err(EditError::PastEnd {
            source_name: crate::source::base_name(path),
            offset: e.offset,
            end: e.span().end(),
            len,
        });
    }
    let tmp = Temp::beside(out)?;
    let copy = copy_range(&src, tmp.file(), len).map_err(EditError::io(tmp.path()))?;
    for e in edits.iter() {
        tmp.file()
            .write_all_at(&e.bytes, e.offset)
            .map_err(EditError::io(tmp.path()))?;
    }
    let mode = meta.permissions().mode() & 0o777;
    let written = tmp.finish(out, mode, validate, edits)?;
    Ok(Written {
        path: written,
        len,
        ranges: edits.len(),
        changed: edits.iter().map(|e| e.bytes.len() as u64).sum(),
        copy,
    })
}

/// Writes `out` whole from `parts` (in order) and validates it.
pub fn write_whole(
    parts: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    out: &Path,
    validate: Validate<'_>,
) -> Result<Written> {
    let tmp = Temp::beside(out)?;
    {
        let mut w = io::BufWriter::with_capacity(1 << 20, tmp.file());
        parts(&mut w)
            .and_then(|()| w.flush())
            .map_err(EditError::io(tmp.path()))?;
    }
    let len = tmp
        .file()
        .metadata()
        .map_err(EditError::io(tmp.path()))?
        .len();
    let path = tmp.finish(out, 0o644, validate, &Edits::new())?;
    Ok(Written {
        path,
        len,
        ranges: 1,
        changed: len,
        copy: CopiedBy::None,
    })
}

/// A temporary file beside the destination, removed unless renamed.
struct Temp {
    tmp: tempfile::NamedTempFile,
}

impl Temp {
    fn beside(out: &Path) -> Result<Temp> {
        let dir = match out.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = out
            .file_name()
            .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(EditError::io(out))?;
        Ok(Temp { tmp })
    }

    fn file(&self) -> &File {
        self.tmp.as_file()
    }

    fn path(&self) -> PathBuf {
        self.tmp.path().to_owned()
    }

    /// Validates the file as written (mapped afresh, as any reader would
    /// see it), checks that the edited ranges read back, fsyncs it, gives
    /// it `mode`, renames it to `out` and fsyncs the directory.
    fn finish(
        self,
        out: &Path,
        mode: u32,
        validate: Validate<'_>,
        edits: &Edits,
    ) -> Result<PathBuf> {
        let tmp_path = self.path();
        let io = EditError::io(&tmp_path);
        self.file().sync_all().map_err(io)?;
        {
            let back = Source::open(&tmp_path).map_err(|e| EditError::Invalid {
                path: out.to_owned(),
                error: e.to_string(),
            })?;
            let bytes = back.bytes();
            for e in edits.iter() {
                let span = e.span();
                if span.end() > bytes.len() as u64 || span.bytes(bytes) != &e.bytes[..] {
                    return Err(EditError::Invalid {
                        path: out.to_owned(),
                        error: format!(
                            "bytes {}..{} do not read back as written",
                            span.offset,
                            span.end()
                        ),
                    });
                }
            }
            validate(bytes).map_err(|error| EditError::Invalid {
                path: out.to_owned(),
                error,
            })?;
        }
        std::fs::set_permissions(&tmp_path, std::fs::Permissions::from_mode(mode))
            .map_err(EditError::io(&tmp_path))?;
        self.tmp.persist(out).map_err(|e| EditError::Io {
            path: out.to_owned(),
            error: e.error,
        })?;
        let dir = match out.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // The rename itself is durable only once the directory is.
        if let Ok(d) = File::open(dir) {
            d.sync_all().map_err(EditError::io(dir))?;
        }
        Ok(out.to_owned())
    }
}

/// Copies bytes `0..len` of `src` to the same place in `dst`: in the
/// kernel where it can, through a buffer where it cannot (another
/// filesystem on an old kernel, a filesystem without the call).
fn copy_range(src: &File, dst: &File, len: u64) -> io::Result<CopiedBy> {
    let (mut off_in, mut off_out) = (0i64, 0i64);
    let mut kernel = true;
    while (off_in as u64) < len {
        let want = usize::try_from(len - off_in as u64)
            .unwrap_or(usize::MAX)
            .min(1 << 30);
        if kernel {
            match nix::fcntl::copy_file_range(src, Some(&mut off_in), dst, Some(&mut off_out), want)
            {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the source ended at {off_in} of {len} bytes"),
                    ));
                }
                Ok(_) => continue,
                Err(
                    nix::errno::Errno::EXDEV
                    | nix::errno::Errno::ENOSYS
                    | nix::errno::Errno::EOPNOTSUPP
                    | nix::errno::Errno::EINVAL,
                ) if off_in == 0 => kernel = false,
                Err(e) => return Err(e.into()),
            }
        }
        let mut buf = vec![0; want.min(1 << 20)];
        let n = src.read_at(&mut buf, off_in as u64)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the source ended at {off_in} of {len} bytes"),
            ));
        }
        dst.write_all_at(&buf[..n], off_out as u64)?;
        off_in += n as i64;
        off_out += n as i64;
    }
    Ok(if kernel {
        CopiedBy::CopyFileRange
    } else {
        CopiedBy::ReadWrite
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::Edit;

    #[test]
    fn patched_copy_is_renamed_only_once_it_validates() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.bin");
        let old: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        std::fs::write(&src, &old).unwrap();
        let stamp = Stamp::of(&std::fs::metadata(&src).unwrap());
        let mut edits = Edits::new();
        let edit = |offset, bytes: &[u8]| Edit {
            offset,
            bytes: bytes.to_vec(),
            path: "t".into(),
        };
        edits.add(edit(10, b"abc"), "src.bin").unwrap();
        edits.add(edit(99_998, b"yz"), "src.bin").unwrap();
        let out = dir.path().join("out.bin");
        let refuse = |_: &[u8]| Err("no".to_owned());
        let err = write_patched(&src, stamp, &edits, &out, &refuse).unwrap_err();
        assert!(matches!(err, EditError::Invalid { .. }), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only the source is left: {names:?}");
        let accept = |b: &[u8]| match b.len() {
            100_000 => Ok(()),
            n => Err(format!("{n} bytes")),
        };
        let w = write_patched(&src, stamp, &edits, &out, &accept).unwrap();
        let mut want = old.clone();
        want[10..13].copy_from_slice(b"abc");
        want[99_998..].copy_from_slice(b"yz");
        assert_eq!(std::fs::read(&out).unwrap(), want);
        assert_eq!((w.len, w.ranges, w.changed), (100_000, 2, 5));
        assert_eq!(std::fs::read(&src).unwrap(), old, "the source is untouched");
        let past = {
            let mut e = Edits::new();
            e.add(edit(99_999, b"xy"), "src.bin").unwrap();
            e
        };
        let err = write_patched(&src, stamp, &past, &out, &accept).unwrap_err();
        assert!(
            matches!(err, EditError::PastEnd { offset: 99_999, .. }),
            "{err}"
        );
        std::fs::write(&src, b"changed").unwrap();
        let err = write_patched(&src, stamp, &edits, &out, &accept).unwrap_err();
        assert!(matches!(err, EditError::Changed { .. }), "{err}");
    }
}
