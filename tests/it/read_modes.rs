//! Every read mode of a mount (`--read-mode`, `--direct-from`,
//! `--max-request`) serves a tensor's stored bytes, by `read`, by `pread`
//! at odd offsets and through a shared memory map; a source changed under
//! a reader gives EIO, never other bytes.

use crate::common;
use crate::writer;

use std::ffi::OsStr;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use common::mounted::*;
use ptefs::schema::ScalarType;
use writer::{Bytes, Data, Program, Tensor, Value};

/// Larger than the mount's readahead (four requests, of 1 MiB at most), so
/// that a read near its end reaches the daemon after a read of its start.
const BIG: u64 = 12 << 20;

/// The modes compared: what each user-facing option combination gives.
const MODES: &[&[&str]] = &[
    &[],
    &["--read-mode", "cached", "--max-request", "1M"],
    &["--read-mode", "direct"],
    &[
        "--read-mode",
        "direct",
        "--direct-from",
        "4K",
        "--max-request",
        "128K",
    ],
];

/// A program with a 12 MiB tensor and a small one, written to `dir`.
fn model(dir: &Path) -> PathBuf {
    let tensor = |name: &str, len: u64, seed: u64| {
        let t = Tensor::new(
            ScalarType::FLOAT,
            &[(len / 4) as i32],
            Data::Constant(Bytes::Pattern { len, seed }),
        );
        Value::Tensor(t.named(name))
    };
    let p = Program::forward(vec![tensor("big", BIG, 3), tensor("small", 4096, 5)]);
    let path = dir.join("model.pte");
    let mut f = std::fs::File::create(&path).unwrap();
    p.write(&mut f).unwrap();
    path
}

/// The mounted path and source offset of the tensor of `nbytes` bytes.
fn tensor_file(m: &Mounted, nbytes: u64) -> (PathBuf, u64) {
    let index: serde_json::Value = serde_json::from_slice(
        &std::fs::read(m.path("methods/forward/tensors/index.json")).unwrap(),
    )
    .unwrap();
    let entry = index
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["nbytes"] == nbytes)
        .unwrap();
    let name = entry["name"].as_str().unwrap();
    let offset = entry["source"]["offset"].as_u64().unwrap();
    (m.path(&format!("methods/forward/tensors/{name}")), offset)
}

fn mount(src: &Path, mode: &[&str]) -> Mounted {
    let mut args: Vec<&OsStr> = mode.iter().map(OsStr::new).collect();
    args.push(src.as_os_str());
    Mounted::new(&args)
}

/// The bytes of `file` through a shared read-only map, as `numpy.memmap`
/// maps them.
fn mapped(file: &std::fs::File, len: usize) -> Vec<u8> {
    use std::os::fd::AsRawFd;
    // SAFETY: a fresh read-only shared mapping of `len` bytes of an open
    // file; it is copied out and unmapped before returning.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "{}", std::io::Error::last_os_error());
        let bytes = std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec();
        libc::munmap(p, len);
        bytes
    }
}

/// Pages of `file`'s first `len` bytes in the mount's page cache, seen
/// through a map that touches none of them.
fn cached_pages(file: &std::fs::File, len: usize) -> usize {
    use std::os::fd::AsRawFd;
    let pages = len.div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: a fresh read-only mapping that is never read; mincore writes
    // one byte a page of it into `vec`, which holds that many.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "{}", std::io::Error::last_os_error());
        assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0);
        libc::munmap(p, len);
    }
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

#[test]
fn every_read_mode_serves_the_stored_bytes() {
    if !fuse_or_skip("every_read_mode_serves_the_stored_bytes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = model(dir.path());
    let source = std::fs::read(&src).unwrap();
    let header = common::ptefs()
        .arg("cat")
        .arg(&src)
        .arg("header.json")
        .output()
        .unwrap()
        .stdout;
    for mode in MODES {
        let m = mount(&src, mode);
        assert_eq!(
            std::fs::read(m.path("header.json")).unwrap(),
            header,
            "{mode:?}"
        );
        for nbytes in [BIG, 4096] {
            let (path, offset) = tensor_file(&m, nbytes);
            let len = nbytes as usize;
            let want = &source[offset as usize..][..len];
            let got = std::fs::read(&path).unwrap();
            assert!(got == want, "{mode:?} {}: read", path.display());
            let f = std::fs::File::open(&path).unwrap();
            for (at, size) in [
                (0, 1),
                (1, 7),
                (4095, 131_073),
                (4097, (1 << 20) + 5),
                (len / 2 + 3, 3 << 20),
                (len - 5, 64),
            ] {
                let mut buf = vec![0u8; size];
                let n = f.read_at(&mut buf, at as u64).unwrap();
                let end = (at + size).min(len);
                assert!(
                    buf[..n] == want[at.min(len)..end],
                    "{mode:?} {}: pread of {size} at {at}",
                    path.display()
                );
                assert_eq!(n, end.saturating_sub(at), "{mode:?}: a short pread at {at}");
            }
            assert!(mapped(&f, len) == want, "{mode:?} {}: mmap", path.display());
        }
        // Direct I/O leaves the large file out of the mount's page cache:
        // the option reaches the kernel.
        let (path, _) = tensor_file(&m, BIG);
        let f = std::fs::File::open(&path).unwrap();
        std::fs::read(&path).unwrap();
        let cached = cached_pages(&f, BIG as usize);
        match mode.contains(&"direct") {
            true => assert_eq!(cached, 0, "{mode:?}: pages cached after a direct read"),
            false => assert!(cached > 0, "{mode:?}: nothing cached after a read"),
        }
    }
}

#[test]
fn a_source_changed_under_a_reader_gives_eio_in_every_mode() {
    if !fuse_or_skip("a_source_changed_under_a_reader_gives_eio_in_every_mode") {
        return;
    }
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let src = model(dir.path());
        let source = std::fs::read(&src).unwrap();
        let m = mount(&src, mode);
        let (path, offset) = tensor_file(&m, BIG);
        let want = &source[offset as usize..][..BIG as usize];
        let f = std::fs::File::open(&path).unwrap();
        let mut head = vec![0u8; 64 << 10];
        f.read_exact_at(&mut head, 0).unwrap();
        assert!(head == want[..head.len()], "{mode:?}: before the change");
        // Same size, other bytes, a later modification time.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let changed: Vec<u8> = source.iter().map(|b| !b).collect();
        std::fs::write(&src, &changed).unwrap();
        let tail_at = BIG - (64 << 10);
        let mut tail = vec![0u8; 64 << 10];
        let e = f.read_exact_at(&mut tail, tail_at).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{mode:?}: {e}");
        // Bytes read again are the stored ones (from the page cache) or
        // refused; by direct I/O always refused.
        match f.read_exact_at(&mut head, 0) {
            Ok(()) => {
                assert!(head == want[..head.len()], "{mode:?}: other bytes served");
                assert!(!mode.contains(&"direct"), "{mode:?}: a direct read served");
            }
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{mode:?}: {e}"),
        }
        let e = std::fs::read(&path).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{mode:?}: {e}");
    }
}

#[test]
fn bad_read_options_are_refused_by_name() {
    for (args, says) in [
        (&["--max-request", "1000"][..], "--max-request: 1000 bytes"),
        (
            &["--max-request", "32M"][..],
            "--max-request: 33554432 bytes",
        ),
        (&["--direct-from", "lots"][..], "--direct-from: \"lots\""),
        (&["--read-mode", "splice"][..], "invalid value 'splice'"),
    ] {
        let out = common::ptefs()
            .arg("mount")
            .args(args)
            .arg(common::fixture("add.pte"))
            .arg("/nonexistent-mountpoint")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn the_core_decides_which_files_are_read_directly() {
    use ptefs::fs::{Fs, Opening, ReadMode, ReadPolicy, Writable};
    let dir = tempfile::tempdir().unwrap();
    let src = model(dir.path());
    let fs = || Fs::new(common::view_of(std::slice::from_ref(&src), &[]));
    let ino = |fs: &Fs, nbytes: u64| {
        let index: serde_json::Value = serde_json::from_slice(
            &fs.read_copy(
                fs.resolve("methods/forward/tensors/index.json").unwrap(),
                0,
                1 << 20,
            )
            .unwrap(),
        )
        .unwrap();
        let entry = index
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["nbytes"] == nbytes)
            .unwrap();
        let name = entry["name"].as_str().unwrap();
        fs.resolve(&format!("methods/forward/tensors/{name}"))
            .unwrap()
    };
    // The default: the kernel opens every file by itself, cached.
    let cached = fs();
    assert_eq!(cached.read_policy(), ReadPolicy::default());
    assert_eq!(cached.read_policy().readahead_kb(), 1024);
    // Requests of 256 KiB through the page cache, of 1 MiB when files are
    // read directly, as on a writable mount.
    assert_eq!(cached.read_policy().max_request, 256 << 10);
    assert_eq!(ReadMode::Cached.default_max_request(false), 256 << 10);
    assert_eq!(ReadMode::Cached.default_max_request(true), 1 << 20);
    assert_eq!(ReadMode::Direct.default_max_request(false), 1 << 20);
    for nbytes in [BIG, 4096] {
        let i = ino(&cached, nbytes);
        assert_eq!(cached.opening(i, false).unwrap(), Opening::ByKernel);
    }
    // Direct from 1 MiB: the large tensor directly, the small one cached.
    let policy = ReadPolicy::new(ReadMode::Direct, 1 << 20, 128 << 10).unwrap();
    assert_eq!(policy.readahead_kb(), 512);
    let direct = fs().with_read_policy(policy);
    assert_eq!(
        direct.opening(ino(&direct, BIG), false).unwrap(),
        Opening::Direct
    );
    assert_eq!(
        direct.opening(ino(&direct, 4096), false).unwrap(),
        Opening::Cached
    );
    assert!(direct.maps_direct_files());
    // Opening a directory or writing is refused before any mode applies.
    assert!(
        direct
            .opening(direct.resolve("methods").unwrap(), false)
            .is_err()
    );
    assert!(direct.opening(ino(&direct, BIG), true).is_err());
    // A writable mount reads every file directly, and maps none shared.
    let work = tempfile::tempdir().unwrap();
    let view = common::view_of(std::slice::from_ref(&src), &[]);
    let opened = Writable::open(&view, work.path(), None, false).unwrap();
    let writable = Fs::new_writable(view, opened.writable);
    assert_eq!(
        writable.opening(ino(&writable, 4096), false).unwrap(),
        Opening::Direct
    );
    assert!(!writable.maps_direct_files());
    // Request sizes: whole pages from 4K to 16M.
    for bad in [0, 1000, 4097, 32 << 20] {
        assert!(ReadPolicy::new(ReadMode::Cached, 0, bad).is_err(), "{bad}");
    }
    assert!(ReadPolicy::new(ReadMode::Cached, 0, 16 << 20).is_ok());
}

/// `stat` asks readers of a file that fills a read request for a whole
/// request at a time (`st_blksize`, which `cat` and `cp` size their buffers
/// by), and for a page otherwise; a request is 256 KiB through the page
/// cache by default, 1 MiB when files are read directly.
#[test]
fn files_ask_to_be_read_a_whole_request_at_a_time() {
    use std::os::unix::fs::MetadataExt;
    if !fuse_or_skip("files_ask_to_be_read_a_whole_request_at_a_time") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = model(dir.path());
    for (mode, request) in [
        (MODES[0], 256 << 10),
        (MODES[1], 1 << 20),
        (MODES[2], 1 << 20),
        (MODES[3], 128 << 10),
        (&["--writable"][..], 1 << 20),
    ] {
        let m = mount(&src, mode);
        let blksize = |nbytes| {
            std::fs::metadata(tensor_file(&m, nbytes).0)
                .unwrap()
                .blksize()
        };
        assert_eq!(blksize(BIG), request, "{mode:?}");
        assert_eq!(blksize(4096), 4096, "{mode:?}");
        assert_eq!(
            std::fs::metadata(m.path("header.json")).unwrap().blksize(),
            4096,
            "{mode:?}"
        );
    }
}
