//! The filesystem core: every question a mount answers (lookup, getattr,
//! readdir, open, read, extended attributes, statfs) as a plain call that
//! returns a [`Result`] with a typed [`FsError`]. The FUSE adapter converts
//! these to kernel replies and the offline commands (`ls`, `cat`, `stat`)
//! print them, so mounted and offline answers agree by construction.

mod attr;
mod error;
mod read_mode;
mod write;

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

pub use attr::{Attr, BLOCK, FileKind, Owner};
pub use error::{FsError, Result};
pub use read_mode::{
    DEFAULT_DIRECT_FROM, DEFAULT_MAX_REQUEST, MAX_MAX_REQUEST, MIN_MAX_REQUEST, Opening, ReadMode,
    ReadPolicy,
};
pub use write::{COMMIT_ATTR, EDITS_ATTR, EditRow, Writable};

use crate::format::Span;
use crate::source::Source;
use crate::tree::{Content, Contents, Ino, Piece, ROOT};
use crate::view::View;

/// A [`View`] served as a filesystem.
#[derive(Debug)]
pub struct Fs {
    view: View,
    owner: Owner,
    mtime: SystemTime,
    /// Whether each source's change was already logged.
    change_logged: Vec<AtomicBool>,
    /// The overlay of a writable mount.
    writable: Option<Writable>,
    /// Page cache or direct I/O, and the request size.
    read_policy: ReadPolicy,
}

/// One entry of a directory listing.
#[derive(Debug, Clone)]
pub struct DirEntry<'a> {
    /// The position to ask for to continue after this entry.
    pub next: u64,
    /// The inode named.
    pub ino: Ino,
    /// The name (`.` and `..` included).
    pub name: Cow<'a, str>,
    /// Directory or file.
    pub kind: FileKind,
}

/// Bytes of a read.
#[derive(Debug)]
pub enum Data<'a> {
    /// Rendered bytes held in memory.
    Rendered(&'a [u8]),
    /// Bytes of a source's memory map. Hand them to the kernel (a reply's
    /// or a file's `write`), which reports a page the source lost since as
    /// `EFAULT`; copying them in this process would fault instead.
    Mapped(&'a [u8]),
    /// Bytes assembled in memory (read with `pread`).
    Owned(Vec<u8>),
}

impl Data<'_> {
    /// The number of bytes.
    pub fn len(&self) -> usize {
        match self {
            Data::Rendered(b) | Data::Mapped(b) => b.len(),
            Data::Owned(v) => v.len(),
        }
    }

    /// True when nothing was read (at or past the end).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What `statfs` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFs {
    /// Blocks of [`BLOCK`] bytes holding every file once.
    pub blocks: u64,
    /// Inodes.
    pub files: u64,
    /// Longest name.
    pub name_max: u32,
}

impl Fs {
    /// Serves `view`, owned by its first source's owner, with modes that
    /// grant no more than its sources do.
    pub fn new(view: View) -> Fs {
        let first = view.sources.first();
        let owner = Owner::of_sources(
            first.map_or(0, |s| s.opened.uid),
            first.map_or(0, |s| s.opened.gid),
            view.sources.iter().map(|s| s.opened.mode),
        );
        let mtime = view
            .sources
            .iter()
            .map(|s| s.opened.mtime())
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let change_logged = view
            .sources
            .iter()
            .map(|_| AtomicBool::new(false))
            .collect();
        Fs {
            view,
            owner,
            mtime,
            change_logged,
            writable: None,
            read_policy: ReadPolicy::default(),
        }
    }

    /// Serves `view` with stored tensors' files writable into `writable`.
    pub fn new_writable(view: View, writable: Writable) -> Fs {
        Fs {
            writable: Some(writable),
            ..Fs::new(view)
        }
    }

    /// The view served.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// Attributes of `ino`.
    pub fn getattr(&self, ino: Ino) -> Result<Attr> {
        let tree = &self.view.tree;
        let (kind, size, perm) = match tree.file(ino) {
            Some(f) => {
                self.renderable(&f.content, false)?;
                let size = f.content.len();
                self.rendered_intact(&f.content)?;
                let perm = match self.takes_writes(ino) {
                    true => self.owner.file_perm | 0o200,
                    false => self.owner.file_perm,
                };
                (FileKind::RegularFile, size, perm)
            }
            None if tree.is_dir(ino) => {
                // A writable mount's owner sets the root's attributes that
                // save and list its edits, which the kernel allows only to
                // whoever may write the directory.
                let perm = match self.is_writable() && ino == ROOT {
                    true => self.owner.dir_perm() | 0o200,
                    false => self.owner.dir_perm(),
                };
                (FileKind::Directory, 0, perm)
            }
            None => return Err(FsError::NotFound),
        };
        Ok(Attr {
            ino,
            kind,
            size,
            perm,
            nlink: self.view.tree.nlink(ino),
            uid: self.owner.uid,
            gid: self.owner.gid,
            mtime: self.mtime,
        })
    }

    /// Whether `ino` is a directory or a file, without its attributes
    /// (which for a file rendered when first read means rendering it).
    pub fn kind(&self, ino: Ino) -> Result<FileKind> {
        let tree = &self.view.tree;
        match tree.file(ino) {
            Some(_) => Ok(FileKind::RegularFile),
            None if tree.is_dir(ino) => Ok(FileKind::Directory),
            None => Err(FsError::NotFound),
        }
    }

    /// Attributes of the entry `name` of directory `parent`.
    pub fn lookup(&self, parent: Ino, name: &[u8]) -> Result<Attr> {
        self.getattr(self.child(parent, name)?)
    }

    /// The entry `name` of directory `parent`, without its attributes
    /// (which for a file rendered when first read means rendering it).
    fn child(&self, parent: Ino, name: &[u8]) -> Result<Ino> {
        let tree = &self.view.tree;
        if !tree.is_dir(parent) {
            return Err(match tree.exists(parent) {
                true => FsError::NotDir(parent),
                false => FsError::NotFound,
            });
        }
        tree.lookup(parent, name).ok_or(FsError::NotFound)
    }

    /// The inode at `path` (`a/b/c` from the root; `.` and `..` work, and
    /// so does the empty path).
    pub fn resolve(&self, path: &str) -> Result<Ino> {
        path.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .try_fold(ROOT, |ino, c| match c {
                ".." => self.view.tree.parent(ino).ok_or(FsError::NotFound),
                c => self.child(ino, c.as_bytes()),
            })
    }

    /// Every path under `from` (itself first), depth first in name order,
    /// each with its inode; a file with several names appears once per name.
    pub fn walk(&self, from: Ino) -> crate::tree::Walk<'_> {
        self.view.tree.walk(from)
    }

    /// Checks that directory `ino` can be opened.
    pub fn opendir(&self, ino: Ino) -> Result<()> {
        match self.getattr(ino)?.kind {
            FileKind::Directory => Ok(()),
            FileKind::RegularFile => Err(FsError::NotDir(ino)),
        }
    }

    /// Checks that file `ino` can be opened, for writing or not.
    pub fn open(&self, ino: Ino, write: bool) -> Result<()> {
        if write {
            return self.open_write(ino);
        }
        match self.getattr(ino)?.kind {
            FileKind::RegularFile => Ok(()),
            FileKind::Directory => Err(FsError::IsDir(ino)),
        }
    }

    /// Checks access to `ino`: writing never, executing a file never.
    pub fn access(&self, ino: Ino, write: bool, exec: bool) -> Result<()> {
        let attr = self.getattr(ino)?;
        if write && !self.takes_writes(ino) {
            return Err(FsError::ReadOnly);
        }
        if exec && attr.kind == FileKind::RegularFile {
            return Err(FsError::NotExecutable);
        }
        Ok(())
    }

    /// The entries of directory `ino` from position `offset` on, as the
    /// kernel lists them: `.`, `..`, then the entries in name order. A large
    /// directory is asked for a bufferful at a time, so this does not walk
    /// what precedes `offset` (positions past the dots are the tree's own).
    pub fn readdir(&self, ino: Ino, offset: u64) -> Result<impl Iterator<Item = DirEntry<'_>>> {
        let tree = &self.view.tree;
        let entries =
            tree.entries_from(ino, offset.saturating_sub(2))
                .ok_or(if tree.exists(ino) {
                    FsError::NotDir(ino)
                } else {
                    FsError::NotFound
                })?;
        let parent = tree.parent(ino).unwrap_or(ino);
        let dots = [
            (ino, Cow::Borrowed("."), 1),
            (parent, Cow::Borrowed(".."), 2),
        ];
        let named = entries.map(|e| (e.ino, e.name, e.next + 2));
        Ok(dots
            .into_iter()
            .skip(offset.min(2) as usize)
            .chain(named)
            .map(move |(ino, name, next)| DirEntry {
                next,
                ino,
                name,
                kind: if tree.is_dir(ino) {
                    FileKind::Directory
                } else {
                    FileKind::RegularFile
                },
            }))
    }

    /// Up to `size` bytes of file `ino` from `offset`. Bytes of a source
    /// that changed since the tree was built are refused (logged once per
    /// source), never served mixed with the old tree.
    pub fn read(&self, ino: Ino, offset: u64, size: u64) -> Result<Data<'_>> {
        let content = self.content(ino)?;
        let piece = content.read(offset, size);
        self.rendered_intact(&content)?;
        let Some((id, span)) = piece.tail else {
            return Ok(match piece.head {
                Cow::Borrowed(b) => Data::Rendered(b),
                Cow::Owned(v) => Data::Owned(v),
            });
        };
        let source = self.source(id)?;
        if piece.head.is_empty()
            && piece.widen.is_none()
            && !write::edited(self, id, span)
            && let Some(mapped) = source.mapped(span)
        {
            return Ok(Data::Mapped(mapped));
        }
        // Straddling a rendered prefix and source bytes, widened source
        // bytes, or a remote source: assemble them, reading a local source
        // with pread rather than touching the map.
        let mut buf = Vec::with_capacity(piece.len() as usize);
        self.assemble(&piece, (id, source), span, source_end(&content), &mut buf)?;
        Ok(Data::Owned(buf))
    }

    /// Appends `piece`, whose tail is `span` of `source`, to `out`.
    fn assemble(
        &self,
        piece: &Piece<'_>,
        (id, source): (usize, &Source),
        span: Span,
        end: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if piece.widen.is_none() {
            out.extend_from_slice(&piece.head);
            return self.pread(id, source, span, end, out);
        }
        let mut tail = Vec::with_capacity(span.len as usize);
        self.pread(id, source, span, end, &mut tail)?;
        piece.assemble(&tail, out);
        Ok(())
    }

    /// Like [`Fs::read`], but always a copy in memory, read with `pread`:
    /// for callers that process the bytes themselves.
    pub fn read_copy(&self, ino: Ino, offset: u64, size: u64) -> Result<Vec<u8>> {
        let content = self.content(ino)?;
        let piece = content.read(offset, size);
        self.rendered_intact(&content)?;
        let mut buf = Vec::with_capacity(piece.len() as usize);
        match piece.tail {
            Some((id, span)) => {
                let source = self.source(id)?;
                self.assemble(&piece, (id, source), span, source_end(&content), &mut buf)?
            }
            None => buf.extend_from_slice(&piece.head),
        }
        Ok(buf)
    }

    /// The value of extended attribute `name` of `ino`.
    pub fn getxattr(&self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        self.getattr(ino)?;
        if let Some(value) = self.control_attr(ino, name) {
            return value;
        }
        // `ls -l` asks every file for security.selinux and its ACL
        // (system.posix_acl_*). "Not supported" (rather than "no such
        // attribute") is what a filesystem without labels or ACLs says, and
        // `ls` then stops asking for the rest of the listing: one round
        // trip per listing instead of one per file. ENOSYS would stop the
        // kernel asking, but for every name, user.ptefs.* included.
        if !name.starts_with(b"user.") {
            return Err(FsError::UnsupportedAttribute);
        }
        if !name.starts_with(b"user.ptefs.") {
            return Err(FsError::NoAttribute);
        }
        self.view
            .tree
            .xattrs(ino)
            .into_iter()
            .find(|(k, _)| k.as_bytes() == name)
            .map(|(_, v)| v)
            .ok_or(FsError::NoAttribute)
    }

    /// The names of `ino`'s extended attributes, each followed by a NUL.
    pub fn listxattr(&self, ino: Ino) -> Result<Vec<u8>> {
        self.getattr(ino)?;
        let mut names = Vec::new();
        for (k, _) in self.view.tree.xattrs(ino) {
            names.extend_from_slice(k.as_bytes());
            names.push(0);
        }
        Ok(names)
    }

    /// Every extended attribute of `ino`, sorted by name.
    pub fn xattrs(&self, ino: Ino) -> Result<Vec<(&'static str, Vec<u8>)>> {
        self.getattr(ino)?;
        Ok(self.view.tree.xattrs(ino))
    }

    /// Sizes for `statfs`.
    pub fn statfs(&self) -> StatFs {
        StatFs {
            blocks: self.view.tree.total_bytes().div_ceil(u64::from(BLOCK)),
            files: self.view.tree.len() as u64,
            name_max: 255,
        }
    }

    /// The content of file `ino`, ready to be read.
    fn content(&self, ino: Ino) -> Result<Contents<'_>> {
        let tree = &self.view.tree;
        let Some(f) = tree.file(ino) else {
            return Err(match tree.is_dir(ino) {
                true => FsError::IsDir(ino),
                false => FsError::NotFound,
            });
        };
        self.renderable(&f.content, true)?;
        Ok(f.content)
    }

    /// Refuses to render a lazy file (to read it, or to learn its size
    /// when `reading` is false and the size is not yet known) from a
    /// source that changed since the tree was built: rendering parses the
    /// source's mapped bytes, which must still be the ones the tree was
    /// built from.
    fn renderable(&self, content: &Content, reading: bool) -> Result<()> {
        match content {
            Content::Lazy(l) if reading || l.known_len().is_none() => {
                self.source(l.source).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    /// Checks, after a lazy file was sized or read, that its source did
    /// not change while it was rendered: a render over pages that vanished
    /// meanwhile read zeros, not the file.
    fn rendered_intact(&self, content: &Content) -> Result<()> {
        match content {
            Content::Lazy(l) => self.source(l.source).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// Source `id`, if it is unchanged since it was opened.
    fn source(&self, id: usize) -> Result<&Source> {
        let source = &self.view.sources[id];
        self.check_unchanged(id)?;
        Ok(source)
    }

    /// `Ok` while source `id` is unchanged; its change is logged once.
    fn check_unchanged(&self, id: usize) -> Result<()> {
        if let Err(why) = self.view.sources[id].check_unchanged() {
            if !self.change_logged[id].swap(true, Ordering::Relaxed) {
                log::error!("{why}; reads of its bytes fail with EIO until it is remounted");
            }
            return Err(why.into());
        }
        Ok(())
    }

    /// Reads `span` of `source` (source `id`, checked unchanged) into
    /// `out`, part of a file whose bytes end at `end`.
    fn pread(
        &self,
        id: usize,
        source: &Source,
        span: Span,
        end: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let before = out.len();
        let mut read = source.read_span_within(span, end, out);
        if read.is_ok()
            && let Some(o) = self.overlay()
        {
            read = o.apply(id, span, &mut out[before..]);
        }
        // A remote source finds out it changed only by reading.
        if read.is_err() {
            self.check_unchanged(id)?;
        }
        read.map_err(|error| FsError::Read {
            source_name: source.name.clone(),
            offset: span.offset,
            end: span.end(),
            error,
        })
    }
}

/// Where the source bytes of a file end (0 for rendered bytes).
fn source_end(content: &Content) -> u64 {
    match content {
        Content::Source { span, .. }
        | Content::Prefixed { span, .. }
        | Content::Widened { span, .. } => span.end(),
        Content::Generated(_) | Content::Lazy(_) => 0,
    }
}
