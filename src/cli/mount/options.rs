//! Mount options: those of FUSE, and the generic ones mount(8) passes.

use fuser::{MountOption, SessionACL};

/// Options as fuser takes them.
#[derive(Debug)]
pub(super) struct Options {
    pub(super) mount: Vec<MountOption>,
    pub(super) acl: SessionACL,
}

/// Generic options mount(8) passes that mean nothing to a read-only FUSE
/// filesystem, or that mount(8) itself acts on.
const ACCEPTED: &[&str] = &[
    "ro",
    "defaults",
    "relatime",
    "norelatime",
    "strictatime",
    "lazytime",
    "nolazytime",
    "diratime",
    "nodiratime",
    "auto",
    "noauto",
    "user",
    "nouser",
    "users",
    "owner",
    "group",
    "nofail",
    "_netdev",
    "silent",
    "loud",
    "sync",
    "async",
    "dirsync",
];

pub(super) fn parse_options(given: &[String], source: &str) -> Result<Options, String> {
    let mut mount = vec![MountOption::RO, MountOption::FSName(source.to_owned())];
    let mut acl = SessionACL::Owner;
    let mut subtype = "ptefs".to_owned();
    let mut auto_unmount = false;
    for opt in given
        .iter()
        .flat_map(|o| o.split(','))
        .filter(|o| !o.is_empty())
    {
        match opt {
            "rw" => return Err("ptefs is read-only: the option \"rw\" is not supported".into()),
            "allow_other" => acl = SessionACL::All,
            "allow_root" if acl == SessionACL::Owner => acl = SessionACL::RootAndOwner,
            "allow_root" => {}
            "auto_unmount" => auto_unmount = true,
            "default_permissions" => mount.push(MountOption::DefaultPermissions),
            "nosuid" => mount.push(MountOption::NoSuid),
            "suid" => mount.push(MountOption::Suid),
            "nodev" => mount.push(MountOption::NoDev),
            "dev" => mount.push(MountOption::Dev),
            "noexec" => mount.push(MountOption::NoExec),
            "exec" => mount.push(MountOption::Exec),
            "noatime" => mount.push(MountOption::NoAtime),
            "atime" => mount.push(MountOption::Atime),
            o if o.starts_with("fsname=") => {
                mount.retain(|m| !matches!(m, MountOption::FSName(_)));
                mount.push(MountOption::FSName(o["fsname=".len()..].to_owned()));
            }
            o if o.starts_with("subtype=") => subtype = o["subtype=".len()..].to_owned(),
            o if ACCEPTED.contains(&o) || o.starts_with("x-") || o.starts_with("comment=") => {}
            o => return Err(format!("unknown mount option \"{o}\"")),
        }
    }
    if auto_unmount {
        // Unmounting after the daemon dies is fusermount's job, and it only
        // takes it on with allow_root or allow_other.
        mount.push(MountOption::AutoUnmount);
        if acl == SessionACL::Owner {
            acl = SessionACL::RootAndOwner;
        }
    }
    // A kernel option too, so that mounts made by root through mount(2)
    // show as fuse.ptefs just as those made by fusermount3 do.
    mount.push(MountOption::CUSTOM(format!("subtype={subtype}")));
    Ok(Options { mount, acl })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_by_name() {
        let o = parse_options(
            &["ro,nosuid".into(), "allow_other,fsname=m".into()],
            "/x.pte",
        )
        .unwrap();
        assert_eq!(o.acl, SessionACL::All);
        assert!(o.mount.contains(&MountOption::NoSuid));
        assert!(o.mount.contains(&MountOption::FSName("m".into())));
        assert!(!o.mount.contains(&MountOption::FSName("/x.pte".into())));
        assert!(
            o.mount
                .contains(&MountOption::CUSTOM("subtype=ptefs".into()))
        );
        let e = parse_options(&["ro,rw".into()], "x").unwrap_err();
        assert!(e.contains("\"rw\" is not supported"), "{e}");
        let e = parse_options(&["big_writes".into()], "x").unwrap_err();
        assert_eq!(e, "unknown mount option \"big_writes\"");
        let o = parse_options(&["auto_unmount".into()], "x").unwrap();
        assert_eq!(o.acl, SessionACL::RootAndOwner);
        assert!(o.mount.contains(&MountOption::AutoUnmount));
        // What mount.fuse3 passes for `mount -t fuse.ptefs ... -o ro`.
        assert!(parse_options(&["ro,dev,suid".into()], "x").is_ok());
    }
}
