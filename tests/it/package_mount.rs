//! Packages through a real mount: the kernel shows the offline tree byte
//! for byte, and an alias from `aliases.json` is another name of its
//! owner's file (one inode, two links), offline and mounted alike.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::mounted::*;
use common::*;
use ptefs::tree::ROOT;

const PACKAGES: [&str; 4] = ["conv.ptn", "kv.ptn", "mlp.ptn", "tied.ptn"];

/// Every file under `root`: relative path → bytes.
fn files_under(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn aliases_are_further_names_of_their_owner_offline() {
    let v = view("tied.ptn");
    for (alias, owner) in [("pos_b", "pos_a"), ("proj2.weight", "proj.weight")] {
        for ext in ["bin", "npy"] {
            let a = v.tree.resolve(&format!("tensors/{alias}.{ext}")).unwrap();
            let o = v.tree.resolve(&format!("tensors/{owner}.{ext}")).unwrap();
            assert_eq!(a, o, "{alias}.{ext} and {owner}.{ext}");
            assert_eq!(v.tree.nlink(a), 2, "{alias}.{ext}");
        }
    }
    // Keys with bytes of their own stay files of their own.
    let head = v.tree.resolve("tensors/head.weight.bin").unwrap();
    assert_eq!(v.tree.nlink(head), 1);
    let mut names = 0;
    for (_, ino) in v.tree.walk(ROOT) {
        if v.tree.file(ino).is_some() {
            names += 1;
        }
    }
    assert!(names > 0);
}

#[test]
fn packages_mount_to_their_offline_tree_with_aliases_as_hard_links() {
    if !fuse_or_skip("packages_mount_to_their_offline_tree_with_aliases_as_hard_links") {
        return;
    }
    for model in PACKAGES {
        let m = Mounted::new(&[fixture(model).as_os_str()]);
        let got = files_under(&m.dir);
        assert_eq!(got, files(&view(model)), "{model}");
    }
    let m = Mounted::new(&[fixture("tied.ptn").as_os_str()]);
    for (alias, owner) in [("pos_b", "pos_a"), ("proj2.weight", "proj.weight")] {
        for ext in ["bin", "npy"] {
            let a = std::fs::metadata(m.path(&format!("tensors/{alias}.{ext}"))).unwrap();
            let o = std::fs::metadata(m.path(&format!("tensors/{owner}.{ext}"))).unwrap();
            assert_eq!(a.ino(), o.ino(), "{alias}.{ext}");
            assert_eq!(a.nlink(), 2, "{alias}.{ext}");
        }
    }
    let head = std::fs::metadata(m.path("tensors/head.weight.bin")).unwrap();
    assert_eq!(head.nlink(), 1);
    assert_eq!(head.len(), 512);
}
