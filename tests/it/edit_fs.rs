//! The write path of the filesystem core, without FUSE: what a writable
//! mount does, called directly.

use ptefs::fs::{Fs, FsError, Writable};

use crate::common::*;

fn writable(name: &str, memory: u64, work: Option<&std::path::Path>) -> Fs {
    let v = view_of(&[fixture("edit").join(name)], &[]);
    Fs::new_writable(v, Writable::new(memory, work, None))
}

#[test]
fn a_write_through_one_name_reads_through_every_name_and_commits() {
    let work = tempfile::tempdir().unwrap();
    // Less memory than a page: every edit goes to the work directory.
    for fs in [
        writable("portable.pte", 1 << 20, None),
        writable("portable.pte", 1, Some(work.path())),
    ] {
        let ino = |p: &str| fs.resolve(p).unwrap();
        let bin = ino("methods/forward/tensors/0.bin");
        let size = fs.getattr(bin).unwrap().size;
        let new: Vec<u8> = (0..size).map(|i| i as u8).collect();
        assert_eq!(fs.write(bin, 0, &new).unwrap() as u64, size);
        for alias in [
            "methods/forward/tensors/0.permute_copy.self.bin",
            "methods/forward/tensors/0.bin",
        ] {
            assert_eq!(fs.read_copy(ino(alias), 0, size).unwrap(), new, "{alias}");
        }
        let npy = fs
            .read_copy(ino("methods/forward/tensors/0.npy"), 0, 1 << 20)
            .unwrap();
        assert_eq!(npy_payload(&npy), &new[..]);
        let rows = fs.edits().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].length, rows[0].new_sha256.clone()),
            (size, sha256(&new))
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.pte");
        fs.commit(&out).unwrap();
        let saved = view_of(&[out], &[]);
        assert_eq!(read(&saved, "methods/forward/tensors/0.bin"), new);
    }
}

#[test]
fn refused_writes_are_typed_errors_with_their_errno() {
    let fs = writable("portable.pte", 1 << 20, None);
    let ino = |p: &str| fs.resolve(p).unwrap();
    let bin = ino("methods/forward/tensors/0.bin");
    let size = fs.getattr(bin).unwrap().size;
    let cases: Vec<(FsError, i32)> = vec![
        (
            fs.write(ino("methods/forward/code.txt"), 0, b"x")
                .unwrap_err(),
            libc::EROFS,
        ),
        (fs.write(bin, size - 1, b"xy").unwrap_err(), libc::EFBIG),
        (fs.set_size(bin, 3).unwrap_err(), libc::EINVAL),
        (
            fs.write(ino("methods/forward/tensors/0.npy"), 0, b"X")
                .unwrap_err(),
            libc::EINVAL,
        ),
        (fs.refuse_names("create", b"x"), libc::EPERM),
        (
            fs.open(ino("segments/0.bin"), true).unwrap_err(),
            libc::EROFS,
        ),
    ];
    for (e, errno) in cases {
        assert_eq!(e.errno(), errno, "{e}");
    }
    assert!(fs.edits().unwrap().is_empty());
    // Memory for one page and no work directory: a write over two pages
    // is refused whole.
    let v = view_of(&[fixture("mlp.pte")], &[]);
    let small = Fs::new_writable(v, Writable::new(4096, None, None));
    let f = small.resolve("methods/forward/tensors/0.bin").unwrap();
    let n = small.getattr(f).unwrap().size;
    assert!(n > 4096 - 2176, "the weight crosses a page boundary");
    let e = small.write(f, 0, &vec![1; n as usize]).unwrap_err();
    assert_eq!(e.errno(), libc::ENOSPC, "{e}");
    assert!(small.edits().unwrap().is_empty());
    small.write(f, 0, b"a").unwrap();
    assert_eq!(small.edits().unwrap().len(), 1);
    // A read-only core refuses every write.
    let ro = Fs::new(view_of(&[fixture("edit").join("portable.pte")], &[]));
    assert_eq!(ro.write(bin, 0, b"x").unwrap_err().errno(), libc::EROFS);
}
