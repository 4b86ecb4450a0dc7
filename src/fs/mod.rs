//! The filesystem core: every question a mount answers (lookup, getattr,
//! readdir, open, read, extended attributes, statfs) as a plain call that
//! returns a [`Result`] with a typed [`FsError`]. The FUSE adapter converts
//! these to kernel replies and the offline commands (`ls`, `cat`, `stat`)
//! print them, so mounted and offline answers agree by construction.

mod attr;
mod error;
mod read;
mod read_mode;
mod write;
mod xattr;

use std::borrow::Cow;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

pub use attr::{Attr, BLOCK, FileKind, Owner};
pub use error::{FsError, Result};
pub use read_mode::{
    CACHED_MAX_REQUEST, DEFAULT_DIRECT_FROM, DIRECT_MAX_REQUEST, MAX_MAX_REQUEST, MIN_MAX_REQUEST,
    Opening, ReadMode, ReadPolicy,
};
pub use write::{
    COMMITTED_ATTR, EditRow, JOURNAL_ATTR, JournalInfo, Opened, Writable, commit_overlay,
    edit_rows, header_of, journal_dir,
};

use crate::tree::{Ino, ROOT};
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
            io_size: self.read_policy.io_size(size),
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
            // getattr rendered it: a file that cannot be made is refused
            // here, since the kernel reads nothing of an empty file.
            FileKind::RegularFile => match self.view.tree.file(ino) {
                Some(f) => read::rendered_whole(&f.content),
                None => Ok(()),
            },
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

    /// Sizes for `statfs`.
    pub fn statfs(&self) -> StatFs {
        StatFs {
            blocks: self.view.tree.total_bytes().div_ceil(u64::from(BLOCK)),
            files: self.view.tree.len() as u64,
            name_max: 255,
        }
    }
}
