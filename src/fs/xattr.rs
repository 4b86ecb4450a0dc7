//! Extended attributes: where each file's bytes come from
//! (`user.ptefs.*`), and the control attributes of a writable mount.

use super::{Fs, FsError, Result};
use crate::tree::Ino;

impl Fs {
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
}
