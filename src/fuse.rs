//! The FUSE adapter: converts kernel requests into calls of the filesystem
//! core ([`Fs`]) and its answers into replies. It holds no logic of its own.
//!
//! Content never changes while mounted read-only, so replies carry long
//! timeouts and the kernel's page cache serves re-reads without asking
//! again. Opening needs nothing from the daemon, so the kernel is told so
//! once (ENOSYS) and opens and closes files by itself, keeping their cached
//! pages. Source bytes go from the memory map into the reply's `writev`
//! without a copy in this process. Which files are read by direct I/O
//! instead is the filesystem core's decision ([`Fs::opening`]).

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use std::path::Path;
use std::time::SystemTime;

use fuser::{
    AccessFlags, BsdFileFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    Generation, INodeNo, InitFlags, KernelConfig, LockOwner, OpenAccMode, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use crate::fs::{Attr, BLOCK, Data, FileKind, Fs, FsError, Opening};

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

/// The errno of `e`, logged at debug level with the operation that failed
/// (read failures of a source are logged as errors where they happen).
fn errno(op: &str, e: &FsError) -> Errno {
    let n = e.errno();
    log::debug!("{op}: {e} (errno {n})");
    Errno::from_i32(n)
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
        blksize: a.io_size,
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
        if self.fs.maps_direct_files() {
            let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        }
        let _ = config
            .set_max_readahead(u32::MAX)
            .or_else(|max| config.set_max_readahead(max));
        // fuser asks for as many pages a request as the larger of these two
        // allow; the kernel grants up to its own limit (1 MiB by default).
        let _ = config.set_max_write(self.fs.read_policy().max_request);
        let _ = config.set_max_background(64);
        if self.fs.is_writable() {
            // O_TRUNC reaches `open` instead of a truncating setattr: a
            // file is overwritten in place (`cp`, `numpy.save`).
            let _ = config.add_capabilities(InitFlags::FUSE_ATOMIC_O_TRUNC);
        }
        Ok(())
    }

    fn destroy(&mut self) {
        self.fs.commit_at_unmount();
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.fs.lookup(parent.0, name.as_bytes()) {
            Ok(a) => reply.entry(&TTL, &file_attr(&a), Generation(0)),
            Err(e) => reply.error(errno("lookup", &e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.fs.getattr(ino.0) {
            Ok(a) => reply.attr(&TTL, &file_attr(&a)),
            Err(e) => reply.error(errno("getattr", &e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let write = flags.acc_mode() != OpenAccMode::O_RDONLY;
        match self.fs.opening(ino.0, write) {
            // ENOSYS to a valid open: the kernel stops sending OPEN and
            // RELEASE for good and opens with KEEP_CACHE itself (fuse's
            // "default for no-open"); with FLUSH below, three round trips
            // fewer per file. The mount is read-only and the kernel knows
            // each inode's type, so it refuses what `open` checks by itself.
            Ok(Opening::ByKernel) => reply.error(Errno::ENOSYS),
            Ok(Opening::Cached) => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
            // A file opened to be written whole gets a handle of its own,
            // whose writes count once every byte was written.
            Ok(Opening::Direct) if write && flags.0 & libc::O_TRUNC != 0 => {
                match self.fs.open_rewrite(ino.0) {
                    Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
                    Err(e) => reply.error(errno("open", &e)),
                }
            }
            Ok(Opening::Direct) => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(errno("open", &e)),
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
                reply.error(errno("read", &e))
            }
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.fs.write(ino.0, fh.0, offset, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(errno("write", &e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if mode.is_some() || uid.is_some() || gid.is_some() || atime.is_some() || mtime.is_some() {
            return reply.error(errno("setattr", &self.fs.refuse_attributes(ino.0)));
        }
        let result = match size {
            Some(s) => self.fs.set_size(ino.0, s),
            None => self.fs.getattr(ino.0),
        };
        match result {
            Ok(a) => reply.attr(&TTL, &file_attr(&a)),
            Err(e) => reply.error(errno("setattr", &e)),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(errno(
            "mknod",
            &self.fs.refuse_names("create", name.as_bytes()),
        ));
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        reply.error(errno(
            "create",
            &self.fs.refuse_names("create", name.as_bytes()),
        ));
    }

    fn mkdir(
        &self,
        _req: &Request,
        _parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        reply.error(errno(
            "mkdir",
            &self.fs.refuse_names("mkdir", name.as_bytes()),
        ));
    }

    fn unlink(&self, _req: &Request, _parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply.error(errno(
            "unlink",
            &self.fs.refuse_names("remove", name.as_bytes()),
        ));
    }

    fn rmdir(&self, _req: &Request, _parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply.error(errno(
            "rmdir",
            &self.fs.refuse_names("rmdir", name.as_bytes()),
        ));
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        link_name: &OsStr,
        _target: &Path,
        reply: ReplyEntry,
    ) {
        reply.error(errno(
            "symlink",
            &self.fs.refuse_names("symlink", link_name.as_bytes()),
        ));
    }

    fn rename(
        &self,
        _req: &Request,
        _parent: INodeNo,
        name: &OsStr,
        _newparent: INodeNo,
        _newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(errno(
            "rename",
            &self.fs.refuse_names("rename", name.as_bytes()),
        ));
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(errno(
            "link",
            &self.fs.refuse_names("link", newname.as_bytes()),
        ));
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        match self.fs.setxattr(ino.0, name.as_bytes(), value) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("setxattr", &e)),
        }
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(errno("removexattr", &self.fs.refuse_attributes(ino.0)));
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // A read-only mount has nothing to flush on close; ENOSYS tells
        // the kernel not to ask again.
        if !self.fs.is_writable() {
            return reply.error(Errno::ENOSYS);
        }
        match self.fs.flush(fh.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("flush", &e)),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        // A handle not flushed (closed by a killed process) is settled
        // here; nobody hears the answer.
        if let Err(e) = self.fs.flush(fh.0) {
            log::debug!("release: {e}");
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.fs.fsync() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("fsync", &e)),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.fs.opendir(ino.0) {
            // As for `open`: without OPENDIR the kernel opens directories
            // with KEEP_CACHE and CACHE_DIR, and sends no RELEASEDIR.
            Ok(()) => reply.error(Errno::ENOSYS),
            Err(e) => reply.error(errno("opendir", &e)),
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
            Err(e) => return reply.error(errno("readdir", &e)),
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
            Err(e) => return reply.error(errno("readdirplus", &e)),
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
            Err(e) => reply.error(errno("getxattr", &e)),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        match self.fs.listxattr(ino.0) {
            Ok(names) => xattr_reply(&names, size, reply),
            Err(e) => reply.error(errno("listxattr", &e)),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let write = mask.contains(AccessFlags::W_OK);
        let exec = mask.contains(AccessFlags::X_OK);
        match self.fs.access(ino.0, write, exec) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("access", &e)),
        }
    }
}
