//! What a writer may replace. Every output is looked at before a byte of
//! it is written, and refused when it lies inside a ptefs mount (the
//! daemon serving it would wait on itself), when it exists and is not a
//! regular file (a device, a FIFO, a directory, a socket; a symbolic link
//! is replaced, never followed), when it is one of the command's inputs
//! other than the one being rewritten, or when it is another kind of file
//! than the one written, by its contents or by its extension.

use std::ffi::OsString;
use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::{EditError, Result};
use crate::format::Kind;
use crate::source::Source;
use crate::source::redact::shown;

/// The files a write reads, by role: the output may be the one being
/// rewritten, and no other.
#[derive(Debug, Default)]
pub struct Inputs<'s> {
    rewritten: Option<&'s Source>,
    sources: Vec<&'s Source>,
    paths: Vec<PathBuf>,
}

impl<'s> Inputs<'s> {
    /// No inputs yet.
    pub fn new() -> Inputs<'s> {
        Inputs::default()
    }

    /// The same inputs, of a write that rewrites `source`: the output may
    /// be it.
    pub(super) fn rewriting(mut self, source: &'s Source) -> Inputs<'s> {
        self.rewritten = Some(source);
        self
    }

    /// Adds an input held open and mapped while the output is written:
    /// the output may not be it (unless it is the one rewritten), and it
    /// must not change before the output is complete.
    pub fn source(mut self, source: &'s Source) -> Inputs<'s> {
        self.sources.push(source);
        self
    }

    /// Adds every source of `sources` (a view's) as [`Inputs::source`].
    pub fn sources(self, sources: &'s [Source]) -> Inputs<'s> {
        sources.iter().fold(self, Inputs::source)
    }

    /// Adds an input read whole before the output is written (a value
    /// file, a checkpoint, a directory of them): the output may not be it.
    pub fn path(mut self, path: impl Into<PathBuf>) -> Inputs<'s> {
        self.paths.push(path.into());
        self
    }

    /// The input being rewritten.
    pub fn rewritten(&self) -> Option<&'s Source> {
        self.rewritten
    }

    /// Every input held open, the one rewritten first.
    pub fn mapped(&self) -> impl Iterator<Item = &'s Source> + '_ {
        let rewritten = self.rewritten;
        let others = self.sources.iter().copied();
        let others = others.filter(move |s| !rewritten.is_some_and(|r| std::ptr::eq(r, *s)));
        rewritten.into_iter().chain(others)
    }

    /// The permission bits every input has: a new output is no more open
    /// to its group and others than the least open input.
    pub fn common_mode(&self) -> u32 {
        let local = self
            .mapped()
            .filter(|s| !s.is_remote())
            .map(|s| s.opened.mode);
        let read = self.paths.iter().filter_map(|p| std::fs::metadata(p).ok());
        local
            .chain(read.map(|m| m.mode()))
            .fold(0o777, |all, m| all & m)
    }

    /// The inputs other than the one being rewritten, each with its device
    /// and inode when it is a local file that exists.
    fn others(&self) -> Vec<(PathBuf, Option<(u64, u64)>)> {
        let sources = (self.mapped().skip(usize::from(self.rewritten.is_some())))
            .filter(|s| !s.is_remote())
            .map(|s| (s.path.clone(), Some((s.opened.dev, s.opened.ino))));
        let paths = self.paths.iter().map(|p| {
            let id = std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
            (p.clone(), id)
        });
        sources.chain(paths).collect()
    }
}

/// The kind of file, as messages name it.
pub fn describe(kind: Kind) -> String {
    let what = match kind {
        Kind::Program => "a program",
        Kind::Data => "a data file",
        Kind::Bundled => "a bundled program",
        Kind::Package => "a program package",
        Kind::Profile => "an ETDump",
    };
    format!("{what} (.{})", kind.extension())
}

/// What an extension says a file is: `Ok` for an ExecuTorch file's,
/// `Err` naming another format a checkpoint or tensor is kept in.
fn kind_of_extension(path: &Path) -> Option<std::result::Result<Kind, &'static str>> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "pte" => Ok(Kind::Program),
        "ptd" => Ok(Kind::Data),
        "bpte" => Ok(Kind::Bundled),
        "ptn" => Ok(Kind::Package),
        "etdp" => Ok(Kind::Profile),
        "safetensors" => Err("a safetensors checkpoint"),
        "npy" | "npz" => Err("a NumPy array"),
        "pt" | "pth" | "pt2" | "ckpt" => Err("a PyTorch checkpoint"),
        "gguf" => Err("a GGUF model"),
        "onnx" => Err("an ONNX model"),
        "tflite" => Err("a TensorFlow Lite model"),
        "json" => Err("a JSON file"),
        _ => return None,
    })
}

/// Checks that `out` may be replaced by a new file of `kind` written from
/// `inputs`. Returns the status of the regular file it replaces, if any
/// (`None` for a new name or a symbolic link, which is replaced).
pub fn check(out: &Path, kind: Kind, inputs: &Inputs<'_>) -> Result<Option<Metadata>> {
    let refuse = |why: String| EditError::Refused {
        path: out.to_owned(),
        why,
    };
    // First, before anything looks at the output: looking up a name
    // inside a mount asks its daemon, which may be this very process.
    if let Some(mount) = ptefs_mount_holding(out) {
        return Err(refuse(format!(
            "lies inside the ptefs mount {}; write it outside the mount",
            shown(&mount)
        )));
    }
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(EditError::io(out)(e)),
    };
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let out_abs = abs(out);
    let is_input = |(path, id): &(PathBuf, Option<(u64, u64)>)| {
        let same_file = meta
            .as_ref()
            .filter(|m| m.is_file())
            .is_some_and(|m| Some((m.dev(), m.ino())) == *id);
        same_file || abs(path) == out_abs
    };
    if let Some((path, _)) = inputs.others().iter().find(|i| is_input(i)) {
        let rewritten = match inputs.rewritten() {
            Some(r) => format!("; only {} is rewritten", r.name),
            None => String::new(),
        };
        let given = match shown(path) {
            p if p == shown(out) => String::new(),
            p => format!(" (given as {p})"),
        };
        return Err(refuse(format!(
            "is an input of this command{given}{rewritten}: write the new file elsewhere"
        )));
    }
    let written = describe(kind);
    match kind_of_extension(out) {
        Some(Ok(k)) if k != kind => {
            return Err(refuse(format!(
                "is named as {}, and the file written is {written}; give it the extension .{}",
                describe(k),
                kind.extension()
            )));
        }
        Some(Err(what)) => {
            return Err(refuse(format!(
                "is named as {what}, and the file written is {written}; give it the extension .{}",
                kind.extension()
            )));
        }
        _ => {}
    }
    let Some(meta) = meta else {
        return Ok(None);
    };
    let t = meta.file_type();
    if t.is_symlink() {
        return Ok(None);
    }
    if !t.is_file() {
        return Err(refuse(format!(
            "is {}, not a regular file; only a regular file is replaced",
            crate::source::describe_type(t)
        )));
    }
    let rewritten = inputs
        .rewritten()
        .is_some_and(|r| (r.opened.dev, r.opened.ino) == (meta.dev(), meta.ino()));
    if meta.len() > 0 && !rewritten {
        let mut head = Vec::with_capacity(16);
        let opened = crate::source::open_regular(out).map_err(EditError::Source)?;
        (&opened.0)
            .take(16)
            .read_to_end(&mut head)
            .map_err(EditError::io(out))?;
        match crate::format::sniff(&head) {
            Ok(k) if k == kind => {}
            Ok(k) => {
                return Err(refuse(format!(
                    "is {}, and the file written is {written}",
                    describe(k)
                )));
            }
            Err(e) => {
                return Err(refuse(format!(
                    "holds {} bytes of another kind of file ({e}), and the file written is {written}",
                    meta.len()
                )));
            }
        }
    }
    Ok(Some(meta))
}

/// The mount point of the ptefs mount that `path` lies in (or is), found
/// from the mount table alone: no name inside a ptefs mount is looked up
/// on the way, and symbolic links outside them are followed (but not
/// `path`'s last component, which a writer replaces).
pub fn ptefs_mount_holding(path: &Path) -> Option<PathBuf> {
    let mounts = ptefs_mounts();
    if mounts.is_empty() {
        return None;
    }
    let names = |p: &Path| -> Vec<OsString> {
        let names = p.components().filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        });
        names.rev().collect()
    };
    let mut todo = names(&std::path::absolute(path).ok()?);
    let mut at = PathBuf::from("/");
    let mut hops = 0;
    while let Some(name) = todo.pop() {
        match name.to_str() {
            Some("..") => {
                at.pop();
            }
            _ => at.push(&name),
        }
        if let Some(m) = mounts.iter().find(|m| **m == at) {
            return Some(m.clone());
        }
        if todo.is_empty() || name == ".." {
            continue;
        }
        let Ok(target) = std::fs::read_link(&at) else {
            continue;
        };
        hops += 1;
        if hops > 40 {
            return None;
        }
        at.pop();
        if target.is_absolute() {
            at = PathBuf::from("/");
        }
        // The link's target is walked before what followed the link.
        todo.extend(names(&target));
    }
    None
}

/// The mount points of every ptefs mount this process sees.
fn ptefs_mounts() -> Vec<PathBuf> {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    table
        .lines()
        .filter_map(|line| {
            let (fields, after) = line.split_once(" - ")?;
            let fstype = after.split(' ').next()?;
            let point = fields.split(' ').nth(4)?;
            (fstype == "fuse.ptefs").then(|| PathBuf::from(unescape(point)))
        })
        .collect()
}

/// A mount table field with its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |v, c| v.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    OsString::from_vec(out)
}
