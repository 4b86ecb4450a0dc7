//! File attributes as `stat` shows them.

use std::time::SystemTime;

use crate::tree::Ino;

/// Block size reported by `stat` and `statfs`.
pub const BLOCK: u32 = 4096;

/// Directory or regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A regular file.
    RegularFile,
}

impl FileKind {
    /// As `stat -c %F` names it.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Directory => "directory",
            FileKind::RegularFile => "regular file",
        }
    }
}

/// What `stat` shows of one inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// Inode number.
    pub ino: Ino,
    /// Directory or file.
    pub kind: FileKind,
    /// Bytes (0 for directories, as on most disk filesystems' listings of
    /// virtual trees).
    pub size: u64,
    /// Permission bits.
    pub perm: u16,
    /// Number of names (files) or 2 + subdirectories (directories).
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Modification, change and access time.
    pub mtime: SystemTime,
    /// The size of reads the file asks for (`st_blksize`), which `cat`,
    /// `cp` and stdio take as their buffer's size.
    pub io_size: u32,
}

impl Attr {
    /// 512-byte blocks, as `du` counts them.
    pub fn blocks(&self) -> u64 {
        self.size.div_ceil(512)
    }

    /// `-r--r--r--` and the like, as `ls -l` prints the type and mode.
    pub fn mode_string(&self) -> String {
        let mut s = String::with_capacity(10);
        s.push(match self.kind {
            FileKind::Directory => 'd',
            FileKind::RegularFile => '-',
        });
        for shift in [6, 3, 0] {
            let bits = (self.perm >> shift) & 7;
            s.push(if bits & 4 != 0 { 'r' } else { '-' });
            s.push(if bits & 2 != 0 { 'w' } else { '-' });
            s.push(if bits & 1 != 0 { 'x' } else { '-' });
        }
        s
    }
}

/// Who owns the tree and what its files may grant: never more than the
/// sources do. Files get the read bits every source has; directories the
/// same read bits with the matching search bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// Owner of every inode.
    pub uid: u32,
    /// Group of every inode.
    pub gid: u32,
    /// Permission bits of files.
    pub file_perm: u16,
}

impl Owner {
    /// The owner of the first source; read bits common to all of `modes`.
    pub fn of_sources(uid: u32, gid: u32, modes: impl IntoIterator<Item = u32>) -> Owner {
        let read = modes.into_iter().fold(0o444, |acc, m| acc & m) & 0o444;
        Owner {
            uid,
            gid,
            file_perm: read as u16,
        }
    }

    /// Permission bits of directories: read and search where files are
    /// readable.
    pub fn dir_perm(&self) -> u16 {
        self.file_perm | (self.file_perm >> 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_never_grant_more_than_the_sources() {
        let o = Owner::of_sources(5, 6, [0o100644]);
        assert_eq!((o.file_perm, o.dir_perm()), (0o444, 0o555));
        let o = Owner::of_sources(5, 6, [0o100600, 0o100644]);
        assert_eq!((o.file_perm, o.dir_perm()), (0o400, 0o500));
        let o = Owner::of_sources(5, 6, [0o100640]);
        assert_eq!((o.file_perm, o.dir_perm()), (0o440, 0o550));
        let o = Owner::of_sources(5, 6, [0o100755]);
        assert_eq!(
            (o.file_perm, o.dir_perm()),
            (0o444, 0o555),
            "no write or exec bits"
        );
    }

    #[test]
    fn mode_strings() {
        let a = Attr {
            ino: 1,
            kind: FileKind::Directory,
            size: 0,
            perm: 0o550,
            nlink: 2,
            uid: 0,
            gid: 0,
            mtime: SystemTime::UNIX_EPOCH,
            io_size: BLOCK,
        };
        assert_eq!(a.mode_string(), "dr-xr-x---");
    }
}
