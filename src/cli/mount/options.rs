//! Mount options: those of FUSE, and the generic ones mount(8) passes.

use fuser::{MountOption, SessionACL};

use crate::source::redact::redact;

/// Options as fuser takes them.
#[derive(Debug)]
pub(super) struct Options {
    pub(super) mount: Vec<MountOption>,
    pub(super) acl: SessionACL,
    /// The option given that lets others than the owner in (`allow_other`,
    /// `allow_root`, or `auto_unmount`, which needs root let in): fuser
    /// asks fusermount3 for `allow_other` in every case, and its refusal
    /// must name what the user wrote.
    pub(super) lets_others_in: Option<&'static str>,
    /// `cache_size=`: the block cache bound of each remote source, bytes.
    pub(super) cache_size: Option<u64>,
}

/// A mount option ptefs does not take.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(super) enum OptionError {
    #[error("mount option \"rw\" is not supported: ptefs mounts are read-only")]
    ReadWrite,
    #[error("unknown mount option \"{}\"", redact(.0))]
    Unknown(String),
    #[error(
        "mount option \"{0}\": give a size in bytes, optionally with K, M or G (cache_size=512M)"
    )]
    BadSize(String),
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

/// Parses `-o` options. `source` names the mount (its fsname) unless
/// `fsname=` is given; `root` says whether the mounting user is root.
pub(super) fn parse_options(
    given: &[String],
    source: &str,
    root: bool,
) -> Result<Options, OptionError> {
    let mut fsname = source.to_owned();
    // Kernel permission checks on the modes the tree gives: without this
    // option FUSE leaves access to the filesystem, and with allow_other
    // everyone could read what the modes deny.
    let mut mount = vec![MountOption::RO, MountOption::DefaultPermissions];
    let mut acl = SessionACL::Owner;
    let mut lets_others_in = None;
    let mut subtype = "ptefs".to_owned();
    let mut auto_unmount = false;
    let mut cache_size = None;
    for opt in given
        .iter()
        .flat_map(|o| o.split(','))
        .filter(|o| !o.is_empty())
    {
        match opt {
            "rw" => return Err(OptionError::ReadWrite),
            "allow_other" => {
                acl = SessionACL::All;
                lets_others_in = Some("allow_other");
            }
            "allow_root" => {
                if acl == SessionACL::Owner {
                    acl = SessionACL::RootAndOwner;
                }
                lets_others_in = lets_others_in.or(Some("allow_root"));
            }
            "auto_unmount" => auto_unmount = true,
            "default_permissions" => {}
            "nosuid" => mount.push(MountOption::NoSuid),
            "suid" => mount.push(MountOption::Suid),
            "nodev" => mount.push(MountOption::NoDev),
            "dev" => mount.push(MountOption::Dev),
            "noexec" => mount.push(MountOption::NoExec),
            "exec" => mount.push(MountOption::Exec),
            "noatime" => mount.push(MountOption::NoAtime),
            "atime" => mount.push(MountOption::Atime),
            o if o.starts_with("cache_size=") => {
                cache_size = Some(
                    crate::cli::size::parse(&o["cache_size=".len()..])
                        .ok_or_else(|| OptionError::BadSize(o.to_owned()))?,
                );
            }
            // Both are in /proc/mounts, which every user may read.
            o if o.starts_with("fsname=") => fsname = redact(&o["fsname=".len()..]),
            o if o.starts_with("subtype=") => subtype = redact(&o["subtype=".len()..]),
            o if ACCEPTED.contains(&o) || o.starts_with("x-") || o.starts_with("comment=") => {}
            o => return Err(OptionError::Unknown(o.to_owned())),
        }
    }
    if auto_unmount {
        // Unmounting after the daemon dies is fusermount's job, and it only
        // takes it on with allow_root or allow_other.
        mount.push(MountOption::AutoUnmount);
        if acl == SessionACL::Owner {
            acl = SessionACL::RootAndOwner;
        }
        lets_others_in = lets_others_in.or(Some("auto_unmount"));
    }
    // fuser mounts with mount(2) as root, through fusermount3 otherwise and
    // always for auto_unmount; only fusermount3 reads escapes.
    if !root || auto_unmount {
        fsname = escape_for_fusermount(&fsname);
    }
    mount.push(MountOption::FSName(fsname));
    // A kernel option too, so that mounts made by root through mount(2)
    // show as fuse.ptefs just as those made by fusermount3 do.
    mount.push(MountOption::CUSTOM(format!("subtype={subtype}")));
    Ok(Options {
        mount,
        acl,
        lets_others_in,
        cache_size,
    })
}

/// fusermount3 splits its options at commas and reads a backslash as
/// "take the next character as it is"; mount(2), which root uses, takes
/// the name unescaped.
fn escape_for_fusermount(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c == ',' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_size_takes_bytes_with_a_binary_suffix() {
        let size = |o: &str| parse_options(&[o.into()], "x", true).map(|o| o.cache_size);
        assert_eq!(size("cache_size=512M"), Ok(Some(512 << 20)));
        assert_eq!(size("cache_size=2g"), Ok(Some(2 << 30)));
        assert_eq!(size("cache_size=65536"), Ok(Some(65536)));
        assert_eq!(size("ro"), Ok(None));
        for bad in [
            "cache_size=",
            "cache_size=0",
            "cache_size=1T",
            "cache_size=-1M",
        ] {
            let e = size(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("512M"), "{e}");
        }
        assert!(size("cache_size=99999999999G").is_err());
    }

    #[test]
    fn options_are_checked_by_name() {
        let given = ["ro,nosuid".into(), "allow_other,fsname=m".into()];
        let o = parse_options(&given, "/x.pte", true).unwrap();
        assert_eq!(o.acl, SessionACL::All);
        assert_eq!(o.lets_others_in, Some("allow_other"));
        assert!(o.mount.contains(&MountOption::NoSuid));
        assert!(o.mount.contains(&MountOption::DefaultPermissions));
        assert!(o.mount.contains(&MountOption::FSName("m".into())));
        assert!(!o.mount.contains(&MountOption::FSName("/x.pte".into())));
        assert!(
            o.mount
                .contains(&MountOption::CUSTOM("subtype=ptefs".into()))
        );
        let e = parse_options(&["ro,rw".into()], "x", true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mount option \"rw\" is not supported: ptefs mounts are read-only"
        );
        let e = parse_options(&["big_writes".into()], "x", true).unwrap_err();
        assert_eq!(e.to_string(), "unknown mount option \"big_writes\"");
        let o = parse_options(&["auto_unmount".into()], "x", true).unwrap();
        assert_eq!(o.acl, SessionACL::RootAndOwner);
        assert_eq!(o.lets_others_in, Some("auto_unmount"));
        assert!(o.mount.contains(&MountOption::AutoUnmount));
        let o = parse_options(&["allow_root,auto_unmount".into()], "x", true).unwrap();
        assert_eq!(o.lets_others_in, Some("allow_root"));
        let o = parse_options(&["allow_root,allow_other".into()], "x", true).unwrap();
        assert_eq!(
            (o.acl, o.lets_others_in),
            (SessionACL::All, Some("allow_other"))
        );
        assert_eq!(parse_options(&[], "x", true).unwrap().lets_others_in, None);
        // What mount.fuse3 passes for `mount -t fuse.ptefs ... -o ro`.
        assert!(parse_options(&["ro,dev,suid".into()], "x", true).is_ok());
    }

    #[test]
    fn fusermount_gets_the_name_escaped_and_mount_2_as_it_is() {
        let name = |root, opts: &str| {
            let o = parse_options(&[opts.into()], r"/m/a,b\c.pte", root).unwrap();
            o.mount.into_iter().find_map(|m| match m {
                MountOption::FSName(n) => Some(n),
                _ => None,
            })
        };
        assert_eq!(name(false, "").unwrap(), r"/m/a\,b\\c.pte");
        assert_eq!(name(true, "auto_unmount").unwrap(), r"/m/a\,b\\c.pte");
        assert_eq!(name(true, "ro").unwrap(), r"/m/a,b\c.pte");
    }
}
