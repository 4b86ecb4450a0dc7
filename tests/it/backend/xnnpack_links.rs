//! XNNPACK weights stored in named data are the same file as
//! `named/<key>.bin` (one inode, several names), offline and mounted, and
//! carry their type and shape in extended attributes.

use crate::common;

use std::collections::BTreeMap;

use common::xnnpack::*;
use common::*;

/// Each weight stored in named data is one file with `named/<key>.bin`.
#[test]
fn named_blobs_and_their_weights_are_one_file() {
    for (model, v) in fixtures() {
        let index = json(&v, &format!("{DELEGATE}/xnnpack/weights/index.json"));
        let mut linked = 0;
        for e in index.as_array().unwrap() {
            let key = e["key"].as_str().unwrap();
            let Some(named) = v.tree.resolve(&format!("named/{key}.bin")) else {
                continue;
            };
            let w = format!("{DELEGATE}/xnnpack/weights/{}", e["name"].as_str().unwrap());
            let ino = v.tree.resolve(&w).unwrap();
            assert_eq!(named, ino, "{model}: {w} and named/{key}.bin");
            assert!(v.tree.nlink(ino) >= 2, "{model}: {w}");
            let x: BTreeMap<&str, String> = v
                .tree
                .xattrs(ino)
                .into_iter()
                .map(|(k, b)| (k, String::from_utf8(b).unwrap()))
                .collect();
            assert_eq!(
                x["user.ptefs.dtype"],
                e["datatype"].as_str().unwrap(),
                "{model}: {w}"
            );
            let dims: Vec<String> = e["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.to_string())
                .collect();
            assert_eq!(
                x["user.ptefs.shape"],
                format!("[{}]", dims.join(", ")),
                "{model}: {w}"
            );
            linked += 1;
        }
        // Every weight is in named data, the program's or the .ptd's.
        assert_eq!(linked, index.as_array().unwrap().len(), "{model}");
    }
}

#[test]
fn mounted_weights_are_links_with_types() {
    use std::os::unix::fs::MetadataExt;
    if !common::mounted::fuse_or_skip("mounted_weights_are_links_with_types") {
        return;
    }
    let m = common::mounted::Mounted::new(&[fixture("mv2_xnnpack.pte").as_os_str()]);
    let v = view("mv2_xnnpack.pte");
    let index = json(&v, &format!("{DELEGATE}/xnnpack/weights/index.json"));
    let first = &index[0];
    assert_eq!(first["name"], "001-conv2d.filter.bin");
    let w = m.path(&format!("{DELEGATE}/xnnpack/weights/001-conv2d.filter.bin"));
    let named = m.path(&format!("named/{}.bin", first["key"].as_str().unwrap()));
    let (a, b) = (
        std::fs::metadata(&w).unwrap(),
        std::fs::metadata(&named).unwrap(),
    );
    assert_eq!(a.ino(), b.ino());
    assert!(
        a.nlink() >= 2 && a.nlink() == b.nlink(),
        "nlink {}",
        a.nlink()
    );
    let out = std::process::Command::new("find")
        .arg(&m.dir)
        .arg("-samefile")
        .arg(&named)
        .output()
        .unwrap();
    let found: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.strip_prefix(&format!("{}/", m.dir.display()))
                .unwrap()
                .to_owned()
        })
        .collect();
    // The blob is also its whole segment's file.
    let named_rel = format!("named/{}.bin", first["key"].as_str().unwrap());
    let weight_rel = format!("{DELEGATE}/xnnpack/weights/001-conv2d.filter.bin");
    assert!(
        found.contains(&named_rel) && found.contains(&weight_rel),
        "{found:?}"
    );
    assert_eq!(found.len() as u64, a.nlink(), "{found:?}");
    let out = python(
        "import os,sys\nprint(os.getxattr(sys.argv[1], 'user.ptefs.dtype').decode(), os.getxattr(sys.argv[1], 'user.ptefs.shape').decode())",
        &[&w],
    );
    assert_eq!(out.trim(), "xnn_datatype_fp32 [32, 3, 3, 3]");
    // Every file of xnnpack/ reads through the kernel as offline.
    let x = format!("{DELEGATE}/xnnpack");
    for (path, bytes) in files(&v).into_iter().filter(|(p, _)| p.starts_with(&x)) {
        assert_eq!(std::fs::read(m.path(&path)).unwrap(), bytes, "{path}");
    }
}

#[test]
fn a_mounted_program_with_its_data_file_serves_the_ptd_weights() {
    if !common::mounted::fuse_or_skip("a_mounted_program_with_its_data_file_serves_the_ptd_weights")
    {
        return;
    }
    let ptd = fixture("xnnpack_external.ptd");
    let m = common::mounted::Mounted::new(&[
        fixture("xnnpack_external.pte").as_os_str(),
        std::ffi::OsStr::new("--data"),
        ptd.as_os_str(),
    ]);
    let v = &fixtures()[2].1;
    let x = format!("{DELEGATE}/xnnpack");
    let mut n = 0;
    for (path, bytes) in files(v).into_iter().filter(|(p, _)| p.starts_with(&x)) {
        assert_eq!(std::fs::read(m.path(&path)).unwrap(), bytes, "{path}");
        n += 1;
    }
    assert_eq!(
        n,
        4 + 1 + 4 * 2,
        "header, graph.json, code, graph.dot, index and 4 weights"
    );
}
