//! What listing a mount costs the daemon: the kernel answers repeated
//! long listings from its caches, and `ls -l` does not ask every file for
//! a security label.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::mounted::*;
use common::*;

fn ls_lr(dir: &Path) {
    let ok = Command::new("ls")
        .arg("-lR")
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
}

fn paths_under(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        n += 1;
        if e.file_type().unwrap().is_dir() {
            n += paths_under(&e.path());
        }
    }
    n
}

/// The daemon's request lines logged after byte `from` of `log`.
fn requests_since(log: &Path, from: usize) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    text[from..]
        .lines()
        .filter(|l| l.contains("fuser::request") && l.contains(" FUSE("))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_warm_long_listing_costs_less_than_a_request_per_file() {
    if !fuse_or_skip("a_warm_long_listing_costs_less_than_a_request_per_file") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mnt, log) = Mounted::logged(
        &fixture("mv2_xnnpack.pte"),
        tmp.path(),
        Some("fuser::request=debug"),
    );
    // Every path under the root, which the walk includes.
    let paths = view("mv2_xnnpack.pte").tree.walk(ptefs::tree::ROOT).count() - 1;
    assert!(paths > 300, "{paths} paths");
    // The first listing: entries with their attributes come in batches
    // (readdirplus); labels and ACLs are asked for once.
    let from = std::fs::metadata(&log).unwrap().len() as usize;
    ls_lr(&mnt);
    let first = requests_since(&log, from);
    assert!(
        first.len() < paths / 4,
        "{} requests for a first listing of {paths} paths",
        first.len()
    );
    assert_eq!(paths_under(&mnt), paths);
    let from = std::fs::metadata(&log).unwrap().len() as usize;
    let listings = 3;
    for _ in 0..listings {
        ls_lr(&mnt);
    }
    let requests = requests_since(&log, from);
    let named = |what: &str| requests.iter().filter(|l| l.contains(what)).count();
    // `ls` asks the first file for its label and its ACL and, told neither
    // is supported here, no other file in the listing.
    for name in ["\"security.selinux\"", "\"system.posix_acl_access\""] {
        let n = named(name);
        assert!(n <= listings, "{n} {name} requests in {listings} listings");
    }
    // Entries, attributes and directory contents come from the kernel's
    // caches: what is left is opening each directory and the first label.
    assert!(
        requests.len() < paths,
        "{} requests for {listings} listings of {paths} paths:\n{}",
        requests.len(),
        requests[..requests.len().min(20)].join("\n")
    );
    let out = ptefs().arg("umount").arg(&mnt).output().unwrap();
    assert!(out.status.success());
}

#[test]
fn security_labels_are_not_supported_and_ptefs_attributes_still_read() {
    if !fuse_or_skip("security_labels_are_not_supported_and_ptefs_attributes_still_read") {
        return;
    }
    let m = Mounted::new(&[fixture("mlp.pte").as_os_str()]);
    let out = python(
        r#"
import json, os, sys
p = sys.argv[1]
try:
    os.getxattr(p, "security.selinux")
    label = "present"
except OSError as e:
    label = e.errno
try:
    os.getxattr(p, "user.other")
    other = "present"
except OSError as e:
    other = e.errno
print(json.dumps({"label": label, "other": other,
                  "ptefs": {k: os.getxattr(p, k).decode() for k in os.listxattr(p)}}))
"#,
        &[&m.path("methods/forward/tensors/0.npy")],
    );
    let got: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(got["label"], libc::EOPNOTSUPP, "{got}");
    assert_eq!(got["other"], libc::ENODATA, "{got}");
    // The same attributes the offline tree gives.
    let v = view("mlp.pte");
    let ino = v.tree.resolve("methods/forward/tensors/0.npy").unwrap();
    let want: serde_json::Map<String, serde_json::Value> = v
        .tree
        .xattrs(ino)
        .into_iter()
        .map(|(k, val)| (k.to_owned(), String::from_utf8(val).unwrap().into()))
        .collect();
    assert_eq!(want.len(), 4, "{want:?}");
    assert_eq!(got["ptefs"], serde_json::Value::Object(want));
}

#[test]
fn files_open_and_close_without_the_daemon_and_rereads_cost_nothing() {
    if !fuse_or_skip("files_open_and_close_without_the_daemon_and_rereads_cost_nothing") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mnt, log) = Mounted::logged(
        &fixture("mv2_xnnpack.pte"),
        tmp.path(),
        Some("fuser::request=debug"),
    );
    let v = view("mv2_xnnpack.pte");
    let want = files(&v);
    assert!(want.len() > 100, "{} files", want.len());
    let read_all = || {
        for (path, bytes) in &want {
            assert_eq!(&std::fs::read(mnt.join(path)).unwrap(), bytes, "{path}");
        }
    };
    let from = std::fs::metadata(&log).unwrap().len() as usize;
    read_all();
    let first = requests_since(&log, from);
    let named = |reqs: &[String], op: &str| reqs.iter().filter(|l| l.contains(op)).count();
    // The first open and close tell the kernel it needs no daemon for them.
    for op in [" OPEN ", " FLUSH ", " RELEASE "] {
        assert!(named(&first, op) <= 1, "{op}: {}", named(&first, op));
    }
    assert!(named(&first, " READ ") > 0);
    let from = std::fs::metadata(&log).unwrap().len() as usize;
    read_all();
    let again = requests_since(&log, from);
    assert!(
        again.len() < want.len() / 10,
        "{} requests reading {} files again:\n{}",
        again.len(),
        want.len(),
        again[..again.len().min(20)].join("\n")
    );
    // Writing is still refused, by the kernel now: the mount is read-only.
    let err = std::fs::OpenOptions::new()
        .write(true)
        .open(mnt.join("header.json"))
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    let out = ptefs().arg("umount").arg(&mnt).output().unwrap();
    assert!(out.status.success());
}
