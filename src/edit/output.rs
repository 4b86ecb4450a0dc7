//! Atomic output: a new file written beside its destination (unnamed until
//! it is complete), read back and validated, fsynced, then renamed over
//! the destination. Every writer goes through here, so every output is
//! first checked against what it may replace ([`destination`]), and every
//! input held open is checked unchanged once the new file is written. A
//! crash, a signal or a refused file leaves the destination as it was.

use std::fs::{File, Metadata};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::destination::{self, Inputs};
use super::unnamed::Unnamed;
use super::{Changes, Edit, EditError, Result};
use crate::format::Kind;
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
/// file of the same kind; `inputs` are the command's other inputs, which
/// `out` may not be.
pub fn save(
    source: &Source,
    edits: impl Changes,
    out: &Path,
    inputs: Inputs<'_>,
) -> Result<Written> {
    prepare(source, edits, out, inputs)?.place()
}

/// [`save`] up to the last step: the new file complete, validated and on
/// disk, but not yet in `out`'s place (see [`Ready::place`]).
pub fn prepare(
    source: &Source,
    edits: impl Changes,
    out: &Path,
    inputs: Inputs<'_>,
) -> Result<Ready> {
    let validate = same_kind(source.bytes());
    write_patched(source, &edits, out, &inputs.rewriting(source), &validate)
}

/// Writes a new file for `out` as `source` (which must still be as it was
/// opened) with `edits` applied and the checksums it keeps over them
/// brought up to date, then validates it with `validate`. `inputs` names
/// `source` as the one rewritten. The edits are taken a piece at a time
/// (see [`Changes`]): memory holds one piece, whatever their size.
pub fn write_patched(
    source: &Source,
    edits: &dyn Changes,
    out: &Path,
    inputs: &Inputs<'_>,
    validate: Validate<'_>,
) -> Result<Ready> {
    let path = &source.path;
    let opened = source.opened;
    let (src, meta) = open_regular(path)?;
    let before = Stamp::of(&meta);
    let same = (before.dev, before.ino, before.len, before.mtime)
        == (opened.dev, opened.ino, opened.len, opened.mtime);
    if !same {
        return Err(EditError::Changed {
            path: path.to_owned(),
        });
    }
    let kind = crate::format::sniff(source.bytes()).map_err(|e| EditError::Invalid {
        path: source.path.clone(),
        error: e.to_string(),
    })?;
    let replaced = destination::check(out, kind, inputs)?;
    let len = before.len;
    let tmp = Temp::beside(out, replaced, inputs)?;
    let copy = copy_range(&src, tmp.file(), len).map_err(EditError::io(out))?;
    #[cfg(test)]
    tests::after_copy();
    // The separate ranges are counted, never held: as many as there are
    // would take memory in proportion to the edits.
    let mut members = super::checksums::Members::of(source.bytes());
    let (mut ranges, mut changed) = (0usize, 0u64);
    edits.each(&mut |e, joined| {
        let span = e.span();
        if span.end() > len {
            return Err(EditError::PastEnd {
                source_name: crate::source::base_name(path),
                offset: e.offset,
                end: span.end(),
                len,
            });
        }
        tmp.file()
            .write_all_at(&e.bytes, e.offset)
            .map_err(EditError::io(out))?;
        changed += span.len;
        ranges += usize::from(!joined);
        members.touch(span);
        Ok(())
    })?;
    let fixes = members
        .fixes(source.bytes(), tmp.file())
        .map_err(EditError::io(out))?;
    for f in &fixes {
        tmp.file()
            .write_all_at(&f.bytes, f.offset)
            .map_err(EditError::io(out))?;
    }
    // A writer that kept the times still changes the change time.
    let after = src.metadata().map(|m| Stamp::of(&m)).ok();
    let moved = |s: &Stamp| (s.dev, s.ino, s.len, s.mtime, s.ctime);
    if after.as_ref().map(moved) != Some(moved(&before)) {
        return Err(EditError::ChangedWhileCopied {
            path: path.to_owned(),
        });
    }
    unchanged(inputs)?;
    tmp.finish(
        out,
        validate,
        &[edits, &fixes],
        Written {
            path: out.to_owned(),
            len,
            ranges: ranges + fixes.len(),
            changed: changed + fixes.iter().map(|f| f.bytes.len() as u64).sum::<u64>(),
            copy,
        },
    )
}

impl Changes for Vec<Edit> {
    fn each(&self, f: &mut dyn FnMut(&Edit, bool) -> Result<()>) -> Result<()> {
        self.iter().try_for_each(|e| f(e, false))
    }
}

/// Every input held open is as it was opened.
fn unchanged(inputs: &Inputs<'_>) -> Result<()> {
    for s in inputs.mapped() {
        if s.check_unchanged().is_err() {
            return Err(EditError::ChangedWhileCopied {
                path: s.path.clone(),
            });
        }
    }
    Ok(())
}

/// Writes `out` whole, a file of `kind`, from `parts` (in order) and
/// validates it; `out` may be none of `inputs`.
pub fn write_whole(
    parts: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    out: &Path,
    kind: Kind,
    inputs: &Inputs<'_>,
    validate: Validate<'_>,
) -> Result<Written> {
    let replaced = destination::check(out, kind, inputs)?;
    let tmp = Temp::beside(out, replaced, inputs)?;
    {
        let mut w = io::BufWriter::with_capacity(1 << 20, tmp.file());
        parts(&mut w)
            .and_then(|()| w.flush())
            .map_err(EditError::io(out))?;
    }
    #[cfg(test)]
    tests::after_copy();
    unchanged(inputs)?;
    let len = tmp.file().metadata().map_err(EditError::io(out))?.len();
    let written = Written {
        path: out.to_owned(),
        len,
        ranges: 1,
        changed: len,
        copy: CopiedBy::None,
    };
    tmp.finish(out, validate, &[], written)?.place()
}

/// A new file complete, validated and on disk, to be put in its
/// destination's place.
#[derive(Debug)]
pub struct Ready {
    tmp: Unnamed,
    stem: String,
    written: Written,
}

impl Ready {
    /// Renames the new file over its destination and makes the rename
    /// durable.
    pub fn place(self) -> Result<Written> {
        let out = &self.written.path;
        self.tmp
            .place(out, &self.stem)
            .map_err(EditError::io(out))?;
        // The rename itself is durable only once the directory is.
        let dir = parent(out);
        if let Ok(d) = File::open(dir) {
            d.sync_all().map_err(EditError::io(dir))?;
        }
        Ok(self.written)
    }
}

fn parent(out: &Path) -> &Path {
    match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The new file beside the destination, and the mode and owner it is to
/// have.
struct Temp {
    tmp: Unnamed,
    stem: String,
    /// The mode and owner of the regular file replaced.
    keep: Option<(u32, u32, u32)>,
}

impl Temp {
    /// An empty file beside `out`. A new output is made with the umask
    /// and no more open to group and others than every input; one that
    /// `replaced` keeps its mode and owner (see [`Temp::finish`]).
    fn beside(out: &Path, replaced: Option<Metadata>, inputs: &Inputs<'_>) -> Result<Temp> {
        let stem = out
            .file_name()
            .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
        let mode = 0o600 | (inputs.common_mode() & 0o066);
        let tmp = Unnamed::create(parent(out), &stem, mode).map_err(EditError::io(out))?;
        let keep = replaced.map(|m| (m.mode() & 0o7777, m.uid(), m.gid()));
        Ok(Temp { tmp, stem, keep })
    }

    fn file(&self) -> &File {
        self.tmp.file()
    }

    /// Validates the file as written (mapped afresh, as any reader would
    /// see it), checks that the edited ranges read back, gives it the
    /// replaced file's owner and mode, and fsyncs it.
    fn finish(
        self,
        out: &Path,
        validate: Validate<'_>,
        edits: &[&dyn Changes],
        written: Written,
    ) -> Result<Ready> {
        let io = EditError::io(out);
        self.file().sync_all().map_err(EditError::io(out))?;
        // Read back through the file, not its map: the edited bytes are
        // then never all resident in this process at once.
        let mut back = Vec::new();
        for changes in edits {
            changes.each(&mut |e, _| {
                let span = e.span();
                back.resize(e.bytes.len(), 0);
                if self.file().read_exact_at(&mut back, span.offset).is_err() || back != e.bytes {
                    return Err(EditError::Invalid {
                        path: out.to_owned(),
                        error: format!(
                            "bytes {}..{} do not read back as written",
                            span.offset,
                            span.end()
                        ),
                    });
                }
                Ok(())
            })?;
        }
        {
            let back = Source::open(&self.tmp.reopen_path()).map_err(|e| EditError::Invalid {
                path: out.to_owned(),
                error: e.to_string(),
            })?;
            validate(back.bytes()).map_err(|error| EditError::Invalid {
                path: out.to_owned(),
                error,
            })?;
        }
        if let Some((mode, uid, gid)) = self.keep {
            // The owner where this user may give it (root always); the
            // group at least where the user is in it. Then the mode, which
            // a change of owner may have cut the set-id bits of.
            let f = self.file();
            if std::os::unix::fs::fchown(f, Some(uid), Some(gid)).is_err() {
                let _ = std::os::unix::fs::fchown(f, None, Some(gid));
            }
            f.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(EditError::io(out))?;
            f.sync_all().map_err(io)?;
        }
        Ok(Ready {
            tmp: self.tmp,
            stem: self.stem,
            written,
        })
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
    use std::cell::RefCell;

    use super::*;
    use crate::edit::{Edit, Edits};

    thread_local! {
        static AFTER_COPY: RefCell<Option<Box<dyn FnMut()>>> = RefCell::new(None);
    }

    /// Runs the hook a test set, between the copy and the check after it.
    pub(super) fn after_copy() {
        AFTER_COPY.with(|h| {
            if let Some(f) = h.borrow_mut().as_mut() {
                f();
            }
        });
    }

    /// Runs `f` with `hook` called right after each writer's copy.
    fn with_hook<T>(hook: impl FnMut() + 'static, f: impl FnOnce() -> T) -> T {
        AFTER_COPY.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
        let out = f();
        AFTER_COPY.with(|h| *h.borrow_mut() = None);
        out
    }

    fn edit(offset: u64, bytes: &[u8]) -> Edit {
        Edit {
            offset,
            bytes: bytes.to_vec(),
            path: "t".into(),
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn patched_copy_is_renamed_only_once_it_validates() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.ptd");
        data_file(&src, 100_000);
        let source = Source::open(&src).unwrap();
        let inputs = Inputs::new().rewriting(&source);
        let mut edits = Edits::new();
        edits.add(edit(10, b"abc"), "src.ptd").unwrap();
        let out = dir.path().join("out.ptd");
        let refuse = |_: &[u8]| Err("no".to_owned());
        let err = write_patched(&source, &edits, &out, &inputs, &refuse).unwrap_err();
        assert!(matches!(err, EditError::Invalid { .. }), "{err}");
        assert_eq!(names(dir.path()), ["src.ptd"], "only the source is left");
    }

    /// A data file of `len` bytes (a valid header, then filler), written
    /// at `path`.
    fn data_file(path: &Path, len: usize) -> Vec<u8> {
        let mut b: Vec<u8> = (0..len as u32).map(|i| (i * 7) as u8).collect();
        b[4..8].copy_from_slice(b"FT01");
        std::fs::write(path, &b).unwrap();
        b
    }

    fn accept(b: &[u8]) -> std::result::Result<(), String> {
        match b.len() {
            100_000 => Ok(()),
            n => Err(format!("{n} bytes")),
        }
    }

    #[test]
    fn patched_copy_reads_back_and_keeps_every_other_byte() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.ptd");
        let old = data_file(&src, 100_000);
        let source = Source::open(&src).unwrap();
        let inputs = Inputs::new().rewriting(&source);
        let mut edits = Edits::new();
        edits.add(edit(10, b"abc"), "src.ptd").unwrap();
        edits.add(edit(99_998, b"yz"), "src.ptd").unwrap();
        let out = dir.path().join("out.ptd");
        // While the new file is written it has no name: a writer killed
        // then (even by SIGKILL) leaves nothing.
        let seen = std::rc::Rc::new(RefCell::new(Vec::new()));
        let (d, s) = (dir.path().to_owned(), seen.clone());
        let ready = with_hook(
            move || *s.borrow_mut() = names(&d),
            || write_patched(&source, &edits, &out, &inputs, &accept).unwrap(),
        );
        assert_eq!(
            *seen.borrow(),
            ["src.ptd"],
            "nothing named during the write"
        );
        assert_eq!(names(dir.path()), ["src.ptd"], "nor before it is placed");
        let w = ready.place().unwrap();
        let mut want = old.clone();
        want[10..13].copy_from_slice(b"abc");
        want[99_998..].copy_from_slice(b"yz");
        assert_eq!(std::fs::read(&out).unwrap(), want);
        assert_eq!((w.len, w.ranges, w.changed), (100_000, 2, 5));
        assert_eq!(std::fs::read(&src).unwrap(), old, "the source is untouched");
        assert_eq!(names(dir.path()), ["out.ptd", "src.ptd"]);
        let source = Source::open(&src).unwrap();
        let inputs = Inputs::new().rewriting(&source);
        let past = {
            let mut e = Edits::new();
            e.add(edit(99_999, b"xy"), "src.ptd").unwrap();
            e
        };
        let err = write_patched(&source, &past, &out, &inputs, &accept).unwrap_err();
        assert!(
            matches!(err, EditError::PastEnd { offset: 99_999, .. }),
            "{err}"
        );
        std::fs::write(&src, b"changed").unwrap();
        let err = write_patched(&source, &edits, &out, &inputs, &accept).unwrap_err();
        assert!(matches!(err, EditError::Changed { .. }), "{err}");
    }

    #[test]
    fn a_source_rewritten_while_it_is_copied_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.ptd");
        let old = data_file(&src, 100_000);
        let source = Source::open(&src).unwrap();
        let inputs = Inputs::new().rewriting(&source);
        let mut edits = Edits::new();
        edits.add(edit(10, b"abc"), "src.ptd").unwrap();
        let out = dir.path().join("out.ptd");
        // A page of the source rewritten in place, its size and
        // modification time put back: only the change time says so.
        let (p, mtime) = (
            src.clone(),
            std::fs::metadata(&src).unwrap().modified().unwrap(),
        );
        let rewrite = move || {
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            f.write_all_at(&[0xAA; 4096], 8192).unwrap();
            f.set_modified(mtime).unwrap();
        };
        let err = with_hook(rewrite, || {
            write_patched(&source, &edits, &out, &inputs, &accept).unwrap_err()
        });
        assert!(matches!(err, EditError::ChangedWhileCopied { .. }), "{err}");
        assert!(
            err.to_string().contains("changed while it was copied"),
            "{err}"
        );
        assert_eq!(names(dir.path()), ["src.ptd"], "nothing is written");
        assert_ne!(std::fs::read(&src).unwrap(), old);
        // So is any input read whole from its map, as pack reads them.
        let other = dir.path().join("other.ptd");
        data_file(&other, 100_000);
        let mapped = Source::open(&other).unwrap();
        let inputs = Inputs::new().source(&mapped);
        let p = other.clone();
        let rewrite = move || {
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            f.write_all_at(&[0xAA; 16], 0).unwrap();
        };
        let err = with_hook(rewrite, || {
            let mut parts = |w: &mut dyn Write| w.write_all(mapped.bytes());
            write_whole(&mut parts, &out, Kind::Data, &inputs, &accept).unwrap_err()
        });
        assert!(matches!(err, EditError::ChangedWhileCopied { .. }), "{err}");
        assert!(!out.exists());
    }
}
