//! The FUSE adapter: converts kernel requests into calls of the filesystem
//! core ([`Fs`]) and its answers into replies. It holds no logic of its own.
//!
//! Content never changes while mounted, so replies carry long timeouts and
//! the kernel's page cache serves re-reads without asking again. Opening
//! needs nothing from the daemon, so the kernel is told so once (ENOSYS) and
//! opens and closes files by itself, keeping their cached pages. Source
//! bytes go from the memory map into the reply's `writev` without a copy in
//! this process.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyXattr, Request,
};

use crate::fs::{Attr, BLOCK, Data, FileKind, Fs, FsError};

/// How long the kernel may cache entries and attributes: the tree is
/// immutable for the life of the mount.
const TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// An [`Fs`] served over FUSE.
#[derive(Debug)]
pub struct PtefsFs {
    fs: Fs,
}

impl PtefsFs {
    /// Serves `fs`.
    pub fn new(fs: Fs) -> PtefsFs {
        PtefsFs { fs }
    }
}

fn errno(e: &FsError) -> Errno {
    Errno::from_i32(e.errno())
}

fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::Directory => FileType::Directory,
        FileKind::RegularFile => FileType::RegularFile,
    }
}

fn file_attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.blocks(),
        atime: a.mtime,
        mtime: a.mtime,
        ctime: a.mtime,
        crtime: a.mtime,
        kind: file_type(a.kind),
        perm: a.perm,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        flags: 0,
        blksize: BLOCK,
    }
}

/// Answers a size probe (`size == 0`) or the value itself.
fn xattr_reply(value: &[u8], size: u32, reply: ReplyXattr) {
    if size == 0 {
        reply.size(value.len() as u32);
    } else if value.len() > size as usize {
        reply.error(Errno::ERANGE);
    } else {
        reply.data(value);
    }
}

impl Filesystem for PtefsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Ask for what helps a read-only tree; a kernel without a capability
        // simply works without it.
        for cap in [
            InitFlags::FUSE_DO_READDIRPLUS,
            InitFlags::FUSE_READDIRPLUS_AUTO,
            InitFlags::FUSE_PARALLEL_DIROPS,
            InitFlags::FUSE_CACHE_SYMLINKS,
        ] {
            let _ = config.add_capabilities(cap);
        }
        let _ = config
            .set_max_readahead(u32::MAX)
            .or_else(|max| config.set_max_readahead(max));
        let _ = config.set_max_background(64);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.fs.lookup(parent.0, name.as_bytes()) {
            Ok(a) => reply.entry(&TTL, &file_attr(&a), Generation(0)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.fs.getattr(ino.0) {
            Ok(a) => reply.attr(&TTL, &file_attr(&a)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let write = flags.acc_mode() != OpenAccMode::O_RDONLY;
        match self.fs.open(ino.0, write) {
            // ENOSYS to a valid open: the kernel stops sending OPEN and
            // RELEASE for good and opens with KEEP_CACHE itself (fuse's
            // "default for no-open"); with FLUSH below, three round trips
            // fewer per file. The mount is read-only and the kernel knows
            // each inode's type, so it refuses what `open` checks by itself.
            Ok(()) => reply.error(Errno::ENOSYS),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.fs.read(ino.0, offset, u64::from(size)) {
            // The kernel copies mapped bytes straight from the map.
            Ok(Data::Rendered(b) | Data::Mapped(b)) => reply.data(b),
            Ok(Data::Owned(v)) => reply.data(&v),
            Err(e) => {
                if let FsError::Read { .. } = e {
                    log::error!("{e}");
                }
                reply.error(errno(&e))
            }
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Nothing is ever written, so there is nothing to flush on close;
        // ENOSYS tells the kernel not to ask again.
        reply.error(Errno::ENOSYS);
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.fs.opendir(ino.0) {
            // As for `open`: without OPENDIR the kernel opens directories
            // with KEEP_CACHE and CACHE_DIR, and sends no RELEASEDIR.
            Ok(()) => reply.error(Errno::ENOSYS),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let entries = match self.fs.readdir(ino.0, offset) {
            Ok(e) => e,
            Err(e) => return reply.error(errno(&e)),
        };
        for e in entries {
            if reply.add(INodeNo(e.ino), e.next, file_type(e.kind), &*e.name) {
                break;
            }
        }
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let entries = match self.fs.readdir(ino.0, offset) {
            Ok(e) => e,
            Err(e) => return reply.error(errno(&e)),
        };
        for e in entries {
            let Ok(a) = self.fs.getattr(e.ino) else {
                continue;
            };
            if reply.add(
                INodeNo(e.ino),
                e.next,
                &*e.name,
                &TTL,
                &file_attr(&a),
                Generation(0),
            ) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let s = self.fs.statfs();
        reply.statfs(s.blocks, 0, 0, s.files, 0, BLOCK, s.name_max, BLOCK);
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        match self.fs.getxattr(ino.0, name.as_bytes()) {
            Ok(v) => xattr_reply(&v, size, reply),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        match self.fs.listxattr(ino.0) {
            Ok(names) => xattr_reply(&names, size, reply),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let write = mask.contains(AccessFlags::W_OK);
        let exec = mask.contains(AccessFlags::X_OK);
        match self.fs.access(ino.0, write, exec) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }
}
