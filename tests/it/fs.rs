//! The filesystem core without a mount: errors and their errno, listings
//! resumed at any offset, reads, attributes, and sources that change.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::*;
use ptefs::fs::{Data, FileKind, Fs, FsError};
use ptefs::tree::ROOT;

fn fs_of(name: &str) -> Fs {
    Fs::new(view(name))
}

#[test]
fn every_failure_has_its_errno() {
    let fs = fs_of("mlp.pte");
    let file = fs.resolve("header.json").unwrap();
    let dir = fs.resolve("methods").unwrap();
    let cases: Vec<(FsError, i32)> = vec![
        (fs.lookup(ROOT, b"nope").unwrap_err(), libc::ENOENT),
        (fs.lookup(file, b"x").unwrap_err(), libc::ENOTDIR),
        (fs.getattr(1 << 40).unwrap_err(), libc::ENOENT),
        (fs.open(dir, false).unwrap_err(), libc::EISDIR),
        (fs.open(file, true).unwrap_err(), libc::EROFS),
        (fs.opendir(file).unwrap_err(), libc::ENOTDIR),
        (fs.read(dir, 0, 10).unwrap_err(), libc::EISDIR),
        (fs.access(file, true, false).unwrap_err(), libc::EROFS),
        (fs.access(file, false, true).unwrap_err(), libc::EACCES),
        (
            fs.getxattr(file, b"user.ptefs.dtype").unwrap_err(),
            libc::ENODATA,
        ),
        (
            fs.getxattr(file, b"security.selinux").unwrap_err(),
            libc::EOPNOTSUPP,
        ),
        (
            fs.getxattr(file, b"system.posix_acl_access").unwrap_err(),
            libc::EOPNOTSUPP,
        ),
        (fs.getxattr(file, b"user.other").unwrap_err(), libc::ENODATA),
        (fs.readdir(file, 0).err().unwrap(), libc::ENOTDIR),
    ];
    for (e, errno) in cases {
        assert_eq!(e.errno(), errno, "{e}");
    }
    assert!(fs.access(dir, false, true).is_ok());
}

#[test]
fn listings_resume_at_any_offset() {
    let fs = fs_of("mv2_xnnpack.pte");
    // Stored entries, computed ones (tensors, value indices, constant
    // buffers) and both in one directory.
    for path in [
        "named",
        "methods/forward/tensors",
        "methods/forward/values",
        "constants",
    ] {
        let dir = fs.resolve(path).unwrap();
        let all: Vec<(u64, u64, String)> = fs
            .readdir(dir, 0)
            .unwrap()
            .map(|e| (e.next, e.ino, e.name.into_owned()))
            .collect();
        assert!(all.len() > 2, "{path}: {all:?}");
        assert_eq!(all[0].2, ".");
        assert_eq!(all[1].2, "..");
        assert_eq!(all[1].1, fs.resolve(&format!("{path}/..")).unwrap());
        let names: Vec<&str> = all[2..].iter().map(|e| e.2.as_str()).collect();
        assert!(names.is_sorted(), "{path}: not in name order");
        for (i, (next, ino, name)) in all.iter().enumerate() {
            assert!(i == 0 || *next > all[i - 1].0, "{path}: offsets must grow");
            if i >= 2 {
                assert_eq!(
                    fs.lookup(dir, name.as_bytes()).unwrap().ino,
                    *ino,
                    "{path}/{name}"
                );
            }
            let rest: Vec<String> = fs
                .readdir(dir, *next)
                .unwrap()
                .map(|e| e.name.into_owned())
                .collect();
            let want: Vec<String> = all[i + 1..].iter().map(|e| e.2.clone()).collect();
            assert_eq!(rest, want, "{path} from {next}");
        }
        assert_eq!(fs.readdir(dir, 1 << 40).unwrap().count(), 0);
    }
    let dir = fs.resolve("named").unwrap();
    assert_eq!(fs.readdir(dir, 1 << 40).unwrap().count(), 0);
}

#[test]
fn reads_agree_however_they_are_cut() {
    let fs = fs_of("mlp.pte");
    let v = view("mlp.pte");
    for (path, ino) in fs.walk(ROOT) {
        let a = fs.getattr(ino).unwrap();
        if a.kind == FileKind::Directory {
            continue;
        }
        let whole = read(&v, &path);
        assert_eq!(whole.len() as u64, a.size);
        for (off, size) in [
            (0, a.size),
            (1, 7),
            (a.size / 2, 100),
            (a.size, 5),
            (a.size + 9, 1),
        ] {
            let want = whole
                .get(off as usize..(off + size).min(a.size) as usize)
                .unwrap_or_default();
            let data = fs.read(ino, off, size).unwrap();
            let got = match &data {
                Data::Rendered(b) | Data::Mapped(b) => b.to_vec(),
                Data::Owned(v) => v.clone(),
            };
            assert_eq!(got, want, "{path} @{off}+{size}");
            assert_eq!(fs.read_copy(ino, off, size).unwrap(), want, "{path}");
        }
    }
}

#[test]
fn modes_and_owner_follow_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(
        dir.path(),
        "m.pte",
        &std::fs::read(fixture("mlp.pte")).unwrap(),
    );
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    let fs = Fs::new(view_of(std::slice::from_ref(&p), &[]));
    let meta = std::fs::metadata(&p).unwrap();
    use std::os::unix::fs::MetadataExt;
    let root = fs.getattr(ROOT).unwrap();
    assert_eq!((root.uid, root.gid), (meta.uid(), meta.gid()));
    assert_eq!(root.perm, 0o550);
    let f = fs.getattr(fs.resolve("header.json").unwrap()).unwrap();
    assert_eq!(f.perm, 0o440);
}

fn copy_of(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    write_file(dir, name, &std::fs::read(fixture(name)).unwrap())
}

#[test]
fn a_same_size_rewrite_with_its_old_time_is_noticed() {
    let dir = tempfile::tempdir().unwrap();
    let p = copy_of(dir.path(), "mlp.pte");
    let fs = Fs::new(view_of(std::slice::from_ref(&p), &[]));
    let seg = fs.resolve("segments/0.bin").unwrap();
    assert!(fs.read(seg, 0, 16).is_ok());
    // Rewrite one byte in place, then put the modification time back.
    let stamp = dir.path().join("stamp");
    std::fs::write(&stamp, b"").unwrap();
    let ok = Command::new("touch")
        .arg("-r")
        .arg(&p)
        .arg(&stamp)
        .status()
        .unwrap();
    assert!(ok.success());
    let mut bytes = std::fs::read(&p).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .and_then(|f| std::os::unix::fs::FileExt::write_all_at(&f, &bytes[last..], last as u64))
        .unwrap();
    let ok = Command::new("touch")
        .arg("-r")
        .arg(&stamp)
        .arg(&p)
        .status()
        .unwrap();
    assert!(ok.success());
    let e = fs.read(seg, 0, 16).unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{e}");
    assert!(e.to_string().contains("mlp.pte"), "{e}");
    // Rendered files do not depend on the source any more.
    let header = fs.resolve("header.json").unwrap();
    assert!(fs.read(header, 0, 10).is_ok());
}

#[test]
fn a_deleted_source_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let p = copy_of(dir.path(), "mlp.pte");
    let fs = Fs::new(view_of(std::slice::from_ref(&p), &[]));
    std::fs::remove_file(&p).unwrap();
    let seg = fs.resolve("segments/0.bin").unwrap();
    let want = read(&view("mlp.pte"), "segments/0.bin");
    assert_eq!(fs.read_copy(seg, 0, want.len() as u64).unwrap(), want);
}

#[test]
fn a_truncated_source_fails_reads_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let p = copy_of(dir.path(), "mlp.pte");
    let fs = Fs::new(view_of(std::slice::from_ref(&p), &[]));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(100)
        .unwrap();
    let seg = fs.resolve("segments/0.bin").unwrap();
    let e = fs.read(seg, 0, 16).unwrap_err();
    assert_eq!(e.errno(), libc::EIO);
    assert!(e.to_string().contains("changed size"), "{e}");
    let e = fs.read_copy(seg, 0, 16).unwrap_err();
    assert_eq!(e.errno(), libc::EIO);
}

/// The large rendered files (a method's plan.json, code.txt, memory.json,
/// graph.dot, program.json, a delegate's graph.json and code.txt) are
/// rendered when first looked at, not when the tree is built; their size
/// is exact before their bytes are kept, and reads in any pieces give the
/// bytes of one whole read.
#[test]
fn large_rendered_files_wait_until_looked_at() {
    use ptefs::tree::Content;
    for model in ["mv2_xnnpack.pte", "multi_method.pte", "mlp.pte"] {
        let fs = fs_of(model);
        let tree = &fs.view().tree;
        let lazy: Vec<(String, u64)> = fs
            .walk(ROOT)
            .filter(|(_, ino)| {
                tree.file(*ino)
                    .is_some_and(|f| matches!(*f.content, Content::Lazy(_)))
            })
            .collect();
        let names: Vec<&str> = lazy.iter().map(|(p, _)| p.as_str()).collect();
        assert!(names.contains(&"program.json"), "{model}: {names:?}");
        assert!(
            names.iter().any(|n| n.ends_with("/plan.json")),
            "{model}: {names:?}"
        );
        if model.contains("xnnpack") {
            assert!(
                names.iter().any(|n| n.ends_with("xnnpack/graph.json")),
                "{model}: {names:?}"
            );
        }
        for (path, ino) in &lazy {
            let Some(f) = tree.file(*ino) else {
                unreachable!()
            };
            let Content::Lazy(l) = &*f.content else {
                unreachable!()
            };
            assert_eq!(l.known_len(), None, "{model}: {path} rendered at build");
            let size = fs.getattr(*ino).unwrap().size;
            let whole = fs.read_copy(*ino, 0, size + 100).unwrap();
            assert_eq!(whole.len() as u64, size, "{model}: {path}");
            let mut pieces = Vec::new();
            loop {
                let d = fs.read(*ino, pieces.len() as u64, 777).unwrap();
                if d.is_empty() {
                    break;
                }
                pieces.extend_from_slice(&fs.read_copy(*ino, pieces.len() as u64, 777).unwrap());
            }
            assert_eq!(pieces, whole, "{model}: {path}");
        }
    }
}
