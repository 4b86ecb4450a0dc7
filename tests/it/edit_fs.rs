//! The write path of the filesystem core, without FUSE: what a writable
//! mount does, called directly.

use ptefs::fs::{Fs, FsError, Writable};

use crate::common::*;

/// A writable core of fixture `name`, its journal under `work`.
fn writable(name: &str, work: &std::path::Path) -> Fs {
    let v = view_of(&[fixture("edit").join(name)], &[]);
    let w = Writable::open(&v, work, None, false).unwrap();
    Fs::new_writable(v, w.writable)
}

#[test]
fn a_write_through_one_name_reads_through_every_name_and_commits() {
    let work = tempfile::tempdir().unwrap();
    {
        let fs = writable("portable.pte", work.path());
        let ino = |p: &str| fs.resolve(p).unwrap();
        let bin = ino("methods/forward/tensors/0.bin");
        let size = fs.getattr(bin).unwrap().size;
        let new: Vec<u8> = (0..size).map(|i| i as u8).collect();
        assert_eq!(fs.write(bin, 0, 0, &new).unwrap() as u64, size);
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
    // Another core of the same source takes the edits up from the journal.
    let v = view_of(&[fixture("edit").join("portable.pte")], &[]);
    let w = Writable::open(&v, work.path(), None, false).unwrap();
    assert_eq!(w.replayed, 1);
    let fs = Fs::new_writable(v, w.writable);
    let bin = fs.resolve("methods/forward/tensors/0.bin").unwrap();
    let size = fs.getattr(bin).unwrap().size;
    let new: Vec<u8> = (0..size).map(|i| i as u8).collect();
    assert_eq!(fs.read_copy(bin, 0, size).unwrap(), new);
    drop(fs);
    // Unless they are discarded.
    let v = view_of(&[fixture("edit").join("portable.pte")], &[]);
    let w = Writable::open(&v, work.path(), None, true).unwrap();
    assert_eq!(w.replayed, 0);
    assert!(Fs::new_writable(v, w.writable).edits().unwrap().is_empty());
}

#[test]
fn a_file_opened_to_be_written_whole_counts_only_once_it_was() {
    let work = tempfile::tempdir().unwrap();
    let fs = writable("portable.pte", work.path());
    let bin = fs.resolve("methods/forward/tensors/0.bin").unwrap();
    let size = fs.getattr(bin).unwrap().size;
    let old = fs.read_copy(bin, 0, size).unwrap();
    let half = size / 2;
    // Half a file, then closed: EINVAL, and no trace of it.
    let fh = fs.open_rewrite(bin).unwrap();
    fs.write(bin, fh, 0, &vec![7; half as usize]).unwrap();
    assert_eq!(
        fs.read_copy(bin, 0, size).unwrap(),
        old,
        "not seen before whole"
    );
    let e = fs.flush(fh).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    assert!(
        e.to_string()
            .contains(&format!("{half} of its {size} bytes")),
        "{e}"
    );
    assert_eq!(fs.read_copy(bin, 0, size).unwrap(), old);
    assert!(fs.edits().unwrap().is_empty());
    // Both halves, in any order: the whole counts at the close.
    let fh = fs.open_rewrite(bin).unwrap();
    fs.write(bin, fh, half, &vec![9; (size - half) as usize])
        .unwrap();
    fs.write(bin, fh, 0, &vec![9; half as usize]).unwrap();
    fs.flush(fh).unwrap();
    assert_eq!(fs.read_copy(bin, 0, size).unwrap(), vec![9; size as usize]);
    assert_eq!(fs.edits().unwrap().len(), 1);
    fs.fsync().unwrap();
    drop(fs);
    // The journal gives back the whole file, not the half dropped.
    let v = view_of(&[fixture("edit").join("portable.pte")], &[]);
    let w = Writable::open(&v, work.path(), None, false).unwrap();
    assert_eq!(w.replayed, 2);
    let fs = Fs::new_writable(v, w.writable);
    assert_eq!(fs.read_copy(bin, 0, size).unwrap(), vec![9; size as usize]);
}

#[test]
fn refused_writes_are_typed_errors_with_their_errno() {
    let work = tempfile::tempdir().unwrap();
    let fs = writable("portable.pte", work.path());
    let ino = |p: &str| fs.resolve(p).unwrap();
    let bin = ino("methods/forward/tensors/0.bin");
    let size = fs.getattr(bin).unwrap().size;
    let cases: Vec<(FsError, i32)> = vec![
        (
            fs.write(ino("methods/forward/code.txt"), 0, 0, b"x")
                .unwrap_err(),
            libc::EROFS,
        ),
        (fs.write(bin, 0, size - 1, b"xy").unwrap_err(), libc::EFBIG),
        (fs.set_size(bin, 3).unwrap_err(), libc::EINVAL),
        (
            fs.write(ino("methods/forward/tensors/0.npy"), 0, 0, b"X")
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
    // A read-only core refuses every write.
    let ro = Fs::new(view_of(&[fixture("edit").join("portable.pte")], &[]));
    assert_eq!(ro.write(bin, 0, 0, b"x").unwrap_err().errno(), libc::EROFS);
}
