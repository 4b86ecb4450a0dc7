//! The FUSE adapter: answers kernel requests from a [`View`] and does
//! nothing else.
//!
//! Content never changes while mounted, so replies carry long timeouts and
//! files are opened with `FOPEN_KEEP_CACHE`: the kernel's page cache serves
//! re-reads without asking again. Source bytes go from the memory map into
//! the reply's `writev` without a copy in this process.

use std::ffi::OsStr;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, KernelConfig, LockOwner, OpenAccMode, OpenFlags, ReplyAttr, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyXattr,
    Request,
};

use crate::tree::{Ino, Node, NodeKind};
use crate::view::View;

/// How long the kernel may cache entries and attributes: the tree is
/// immutable for the life of the mount.
const TTL: Duration = Duration::from_secs(365 * 24 * 3600);
/// Block size reported by `stat` and `statfs`.
const BLOCK: u32 = 4096;

/// A [`View`] served over FUSE.
pub struct PtefsFs {
    view: View,
    uid: u32,
    gid: u32,
    mtime: SystemTime,
    /// Whether each source's change was already logged.
    change_logged: Vec<AtomicBool>,
}

impl std::fmt::Debug for PtefsFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtefsFs")
            .field("nodes", &self.view.tree.len())
            .finish()
    }
}

impl PtefsFs {
    /// Serves `view` as the user `uid`:`gid`.
    pub fn new(view: View, uid: u32, gid: u32) -> PtefsFs {
        let mtime = view
            .sources
            .iter()
            .map(|s| s.opened.mtime)
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH);
        // Building the tree freed more than it kept; hand that back.
        // SAFETY: malloc_trim only releases free heap memory.
        unsafe { libc::malloc_trim(0) };
        let change_logged = view
            .sources
            .iter()
            .map(|_| AtomicBool::new(false))
            .collect();
        PtefsFs {
            view,
            uid,
            gid,
            mtime,
            change_logged,
        }
    }

    fn node(&self, ino: INodeNo) -> Result<&Node, Errno> {
        self.view.tree.node(ino.0).ok_or(Errno::ENOENT)
    }

    fn attr(&self, ino: Ino, node: &Node) -> FileAttr {
        let nlink = self.view.tree.nlink(ino);
        let (kind, size, perm) = match &node.kind {
            NodeKind::Dir(_) => (FileType::Directory, 0, 0o555),
            NodeKind::File(f) => (FileType::RegularFile, f.content.len(), 0o444),
        };
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: self.mtime,
            mtime: self.mtime,
            ctime: self.mtime,
            crtime: self.mtime,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: BLOCK,
        }
    }

    /// The entries of a directory from position `offset` on, as the kernel
    /// lists them: `.`, `..`, then the children in name order. Each item is
    /// (position + 1, inode, name). The kernel asks for a large directory a
    /// bufferful at a time, so this must not walk what precedes `offset`.
    fn entries_from(
        &self,
        ino: Ino,
        offset: u64,
    ) -> Result<impl Iterator<Item = (u64, Ino, &str)>, Errno> {
        let node = self.view.tree.node(ino).ok_or(Errno::ENOENT)?;
        let NodeKind::Dir(children) = &node.kind else {
            return Err(Errno::ENOTDIR);
        };
        let dots = [(ino, "."), (node.parent, "..")].into_iter();
        let named = children.iter().map(|e| (e.ino, &*e.name));
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        let (dots_skip, named_skip) = (skip.min(2), skip.saturating_sub(2));
        Ok(dots
            .skip(dots_skip)
            .chain(named.skip(named_skip))
            .zip(offset + 1..)
            .map(|((i, n), next)| (next, i, n)))
    }

    /// Bytes of a read, with source changes turned into `EIO`.
    fn read_bytes(&self, ino: Ino, offset: u64, size: u32, reply: ReplyData) {
        let Some(content) = self.view.content(ino) else {
            return reply.error(Errno::EISDIR);
        };
        let piece = content.read(offset, u64::from(size));
        let Some((id, span)) = piece.tail else {
            return reply.data(piece.head);
        };
        let source = &self.view.sources[id];
        if let Err(why) = source.check_unchanged() {
            if !self.change_logged[id].swap(true, Ordering::Relaxed) {
                log::error!("{why}; reads of its bytes fail with EIO until it is remounted");
            }
            return reply.error(Errno::EIO);
        }
        if piece.head.is_empty() {
            // The kernel copies straight from the map.
            return reply.data(source.slice(span));
        }
        // A read straddling a rendered prefix and source bytes: assemble it,
        // reading the source with pread rather than touching the map.
        let mut buf = Vec::with_capacity(piece.len() as usize);
        buf.extend_from_slice(piece.head);
        match source.read_span(span, &mut buf) {
            Ok(()) => reply.data(&buf),
            Err(e) => {
                log::error!(
                    "{}: reading bytes {}..{}: {e}",
                    source.name,
                    span.offset,
                    span.end()
                );
                reply.error(Errno::EIO)
            }
        }
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
        use std::os::unix::ffi::OsStrExt;
        match self.view.tree.lookup(parent.0, name.as_bytes()) {
            Some(ino) => {
                let node = self
                    .view
                    .tree
                    .node(ino)
                    .expect("lookup returns live inodes");
                reply.entry(&TTL, &self.attr(ino, node), Generation(0));
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.node(ino) {
            Ok(node) => reply.attr(&TTL, &self.attr(ino.0, node)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        match self.node(ino).map(|n| &n.kind) {
            Ok(NodeKind::File(_)) => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
            Ok(NodeKind::Dir(_)) => reply.error(Errno::EISDIR),
            Err(e) => reply.error(e),
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
        self.read_bytes(ino.0, offset, size, reply);
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.node(ino).map(|n| &n.kind) {
            Ok(NodeKind::Dir(_)) => reply.opened(
                FileHandle(0),
                FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_CACHE_DIR,
            ),
            Ok(NodeKind::File(_)) => reply.error(Errno::ENOTDIR),
            Err(e) => reply.error(e),
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
        let entries = match self.entries_from(ino.0, offset) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        for (next, child, name) in entries {
            let kind = match self.view.tree.is_dir(child) {
                true => FileType::Directory,
                false => FileType::RegularFile,
            };
            if reply.add(INodeNo(child), next, kind, name) {
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
        let entries = match self.entries_from(ino.0, offset) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        for (next, child, name) in entries {
            let Some(node) = self.view.tree.node(child) else {
                continue;
            };
            if reply.add(
                INodeNo(child),
                next,
                name,
                &TTL,
                &self.attr(child, node),
                Generation(0),
            ) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = self.view.tree.total_bytes().div_ceil(u64::from(BLOCK));
        let files = self.view.tree.len() as u64;
        reply.statfs(blocks, 0, 0, files, 0, BLOCK, 255, BLOCK);
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if let Err(e) = self.node(ino) {
            return reply.error(e);
        }
        // `ls -l` asks every file for security.selinux and an ACL; answer
        // those without building the attribute list.
        if !name.as_encoded_bytes().starts_with(b"user.ptefs.") {
            return reply.error(Errno::NO_XATTR);
        }
        match self
            .view
            .tree
            .xattrs(ino.0)
            .iter()
            .find(|(k, _)| OsStr::new(k) == name)
        {
            Some((_, v)) => xattr_reply(v, size, reply),
            None => reply.error(Errno::NO_XATTR),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        if let Err(e) = self.node(ino) {
            return reply.error(e);
        }
        let mut names = Vec::new();
        for (k, _) in self.view.tree.xattrs(ino.0) {
            names.extend_from_slice(k.as_bytes());
            names.push(0);
        }
        xattr_reply(&names, size, reply);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        if mask.contains(AccessFlags::W_OK) {
            return reply.error(Errno::EROFS);
        }
        match self.node(ino) {
            Ok(Node {
                kind: NodeKind::File(_),
                ..
            }) if mask.contains(AccessFlags::X_OK) => reply.error(Errno::EACCES),
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
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
