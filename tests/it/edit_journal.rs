//! What a writable mount keeps when things go wrong: every acknowledged
//! write is in the journal, so a killed daemon loses nothing and the next
//! mount of the same source takes the edits up; a file opened with
//! `O_TRUNC` counts only once written whole; a full work directory fails a
//! write with ENOSPC and keeps none of it; `ptefs umount` saves to
//! `--commit OUT` before it unmounts, and stays mounted when it cannot.

use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::mounted::*;
use crate::common::*;
use crate::writer::{Bytes, Data, Program, Tensor, Value};
use ptefs::schema::ScalarType;

/// A copy of edit fixture `name` in `dir`.
fn copy(name: &str, dir: &Path) -> PathBuf {
    let p = dir.join(name);
    std::fs::copy(fixture("edit").join(name), &p).unwrap();
    p
}

/// A mount made in a test's own directory, unmounted at the end however
/// the test ends.
struct Mount(PathBuf);

impl Mount {
    /// `ptefs mount ARGS DIR`; returns the mount and what it said on
    /// stderr, or panics saying why it failed.
    fn new(args: &[&OsStr], dir: &Path) -> (Mount, String) {
        std::fs::create_dir_all(dir).unwrap();
        let out = ptefs().arg("mount").args(args).arg(dir).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "mount failed: {err}");
        (Mount(dir.to_owned()), err)
    }

    /// `ptefs mount --writable --work-dir WORK SOURCE DIR`.
    fn writable(source: &Path, work: &Path, dir: &Path) -> (Mount, String) {
        let args = [
            "--writable".as_ref(),
            "--work-dir".as_ref(),
            work.as_os_str(),
            source.as_os_str(),
        ];
        Mount::new(&args, dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if is_mounted(&self.0) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Ends the daemon of `dir` with SIGKILL and detaches the dead mount.
fn kill_daemon(dir: &Path) {
    let pid = daemon_pid(dir).expect("the daemon runs");
    // SAFETY: kill with a pid found in /proc; SIGKILL ends it at once.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    wait_for("the daemon to die", || daemon_pid(dir).is_none());
}

/// The journal files under `work`.
fn journals(work: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(work).into_iter().flatten().flatten() {
        let j = e.path().join("journal");
        if j.exists() {
            found.push(j);
        }
    }
    found
}

#[test]
fn an_acknowledged_write_outlives_a_killed_daemon_and_the_next_mount_takes_it_up() {
    if !fuse_or_skip(
        "an_acknowledged_write_outlives_a_killed_daemon_and_the_next_mount_takes_it_up",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("portable.pte", tmp.path());
    let before = std::fs::read(&pte).unwrap();
    let work = tmp.path().join("work");
    let args = [
        "--writable".as_ref(),
        "--work-dir".as_ref(),
        work.as_os_str(),
        pte.as_os_str(),
    ];
    let (m, _) = Mount::new(&args, &tmp.path().join("m1"));
    let bin0 = m.path("methods/forward/tensors/0.bin");
    let size = std::fs::metadata(&bin0).unwrap().len() as usize;
    let new0 = vec![0xA5; size];
    let f = OpenOptions::new().write(true).open(&bin0).unwrap();
    f.write_all_at(&new0, 0).unwrap();
    f.sync_all().unwrap();
    // A write never synced is in the journal as well once answered: only
    // the machine's crash could lose it, not the daemon's.
    let bin1 = m.path("methods/forward/tensors/1.bin");
    let g = OpenOptions::new().write(true).open(&bin1).unwrap();
    g.write_all_at(b"abc", 0).unwrap();
    // Half of a file opened to be written whole: it never counts.
    let npy2 = m.path("methods/forward/tensors/2.npy");
    let npy2_before = std::fs::read(&npy2).unwrap();
    let h = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&npy2)
        .unwrap();
    h.write_all_at(&npy2_before[..npy2_before.len() / 2], 0)
        .unwrap();
    kill_daemon(&m.0);
    drop((f, g, h));
    // The dead daemon is named as such.
    let r = ptefs_run([OsStr::new("edits"), m.0.as_os_str()]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("is not answering"), "{}", r.err);
    let r = ptefs_run([
        "commit".as_ref(),
        m.0.as_os_str(),
        "-o".as_ref(),
        tmp.path().join("x.pte").as_os_str(),
    ]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("is not answering"), "{}", r.err);
    drop(m);
    // A record torn at the journal's end, as a crash in an append leaves it.
    let journal = journals(&work).pop().expect("a journal is kept");
    let mut torn = std::fs::read(&journal).unwrap();
    let whole = torn.len();
    torn.extend_from_slice(b"RJTP\x01\x00\x00\x00\x07");
    std::fs::write(&journal, &torn).unwrap();
    let (m, said) = Mount::new(&args, &tmp.path().join("m2"));
    assert!(
        said.contains("2 write(s) kept from an earlier mount"),
        "{said}"
    );
    assert_eq!(std::fs::metadata(&journal).unwrap().len() as usize, whole);
    assert_eq!(
        std::fs::read(m.path("methods/forward/tensors/0.bin")).unwrap(),
        new0
    );
    assert_eq!(
        &std::fs::read(m.path("methods/forward/tensors/1.bin")).unwrap()[..3],
        b"abc"
    );
    assert_eq!(
        std::fs::read(m.path("methods/forward/tensors/2.npy")).unwrap(),
        npy2_before
    );
    let rows = ptefs_json([OsStr::new("edits"), OsStr::new("--json"), m.0.as_os_str()]);
    // Tensors 0 and 1 lie end to end: one range.
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["length"], size as u64 + 3, "{rows}");
    let out = tmp.path().join("out.pte");
    let r = ptefs_run([
        "commit".as_ref(),
        m.0.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    let saved = view_of(&[out], &[]);
    assert_eq!(read(&saved, "methods/forward/tensors/0.bin"), new0);
    assert_eq!(
        std::fs::read(&pte).unwrap(),
        before,
        "the source is untouched"
    );
    // What is not a writable mount is named for what it is.
    let r = ptefs_run([OsStr::new("edits"), tmp.path().as_os_str()]);
    assert!(r.err.contains("not a ptefs mount"), "{}", r.err);
    drop(m);
    let (ro, _) = Mount::new(&[pte.as_os_str()], &tmp.path().join("m3"));
    let r = ptefs_run([OsStr::new("edits"), ro.0.as_os_str()]);
    assert!(r.err.contains("a read-only ptefs mount"), "{}", r.err);
}

#[test]
fn a_tensor_opened_with_o_trunc_is_written_whole_or_left_as_it_was() {
    if !fuse_or_skip("a_tensor_opened_with_o_trunc_is_written_whole_or_left_as_it_was") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("portable.pte", tmp.path());
    let npy = copy("portable.fc1.weight.npy", tmp.path());
    let short = tmp.path().join("short.npy");
    std::fs::write(&short, &std::fs::read(&npy).unwrap()[..300]).unwrap();
    let work = tmp.path().join("work");
    let (m, _) = Mount::writable(&pte, &work, &tmp.path().join("m"));
    let t = m.path("methods/forward/tensors/0.npy");
    let before = std::fs::read(&t).unwrap();
    // cp of a file cut short: the close fails, and the tensor is as it was.
    let out = Command::new("cp").arg(&short).arg(&t).output().unwrap();
    assert!(!out.status.success(), "cp of a short file succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Invalid argument"), "{err}");
    assert_eq!(std::fs::read(&t).unwrap(), before);
    // The shell does not hear the failed close of a redirection, but the
    // tensor is as it was all the same.
    Command::new("sh")
        .arg("-c")
        .arg(format!(": > '{}'", t.display()))
        .status()
        .unwrap();
    assert_eq!(std::fs::read(&t).unwrap(), before);
    let r = ptefs_run([OsStr::new("edits"), m.0.as_os_str()]);
    assert_eq!((r.code, r.out.as_str()), (0, ""), "{}", r.err);
    // The whole file: it counts.
    let st = Command::new("cp").arg(&npy).arg(&t).status().unwrap();
    assert!(st.success());
    assert_eq!(std::fs::read(&t).unwrap(), std::fs::read(&npy).unwrap());
}

#[test]
fn umount_saves_to_commit_out_first_and_stays_mounted_when_it_cannot() {
    if !fuse_or_skip("umount_saves_to_commit_out_first_and_stays_mounted_when_it_cannot") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("portable.pte", tmp.path());
    let work = tmp.path().join("work");
    let mnt = tmp.path().join("m");
    std::fs::create_dir(&mnt).unwrap();
    // An OUT that cannot be written is refused before anything is mounted.
    for (bad, says) in [
        (tmp.path().join("missing/x.pte"), "missing"),
        (tmp.path().to_owned(), "is a directory"),
    ] {
        let r = ptefs_run([
            "mount".as_ref(),
            "--writable".as_ref(),
            "--work-dir".as_ref(),
            work.as_os_str(),
            "--commit".as_ref(),
            bad.as_os_str(),
            pte.as_os_str(),
            mnt.as_os_str(),
        ]);
        assert_eq!(r.code, 2, "{}", r.err);
        assert!(r.err.contains(says), "{}", r.err);
        assert!(!is_mounted(&mnt));
    }
    let outdir = tmp.path().join("out");
    std::fs::create_dir(&outdir).unwrap();
    let saved = outdir.join("saved.pte");
    let (m, _) = Mount::new(
        &[
            "--writable".as_ref(),
            "--work-dir".as_ref(),
            work.as_os_str(),
            "--commit".as_ref(),
            saved.as_os_str(),
            pte.as_os_str(),
        ],
        &mnt,
    );
    let bin = m.path("methods/forward/tensors/0.bin");
    let new = vec![0x3C; std::fs::metadata(&bin).unwrap().len() as usize];
    std::fs::OpenOptions::new()
        .write(true)
        .open(&bin)
        .unwrap()
        .write_all_at(&new, 0)
        .unwrap();
    // The directory of OUT is gone by the time of the unmount.
    std::fs::remove_dir(&outdir).unwrap();
    let r = ptefs_run([OsStr::new("umount"), mnt.as_os_str()]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("not unmounted"), "{}", r.err);
    assert!(is_mounted(&mnt), "the mount stays");
    assert_eq!(std::fs::read(&bin).unwrap(), new, "with its edits");
    std::fs::create_dir(&outdir).unwrap();
    let r = ptefs_run([OsStr::new("umount"), mnt.as_os_str()]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out
            .starts_with(&format!("{}: 3024 bytes", saved.display())),
        "{}",
        r.out
    );
    // OUT is whole when umount returns, and the journal has gone with the
    // edits it held.
    let v = view_of(&[saved], &[]);
    assert_eq!(read(&v, "methods/forward/tensors/0.bin"), new);
    assert!(!is_mounted(&mnt));
    // The daemon has let the journal go (and removed it) by then: the same
    // source mounts again at once.
    assert!(journals(&work).is_empty(), "{:?}", journals(&work));
    let (again, said) = Mount::writable(&pte, &work, &mnt);
    assert_eq!(said, "");
    assert_eq!(
        ptefs_run([OsStr::new("umount"), again.0.as_os_str()]).code,
        0
    );
}

/// A tmpfs of `size` at `dir`, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_write_the_journal_has_no_room_for_fails_with_enospc_and_leaves_no_trace() {
    if !root_fuse_or_skip(
        "a_write_the_journal_has_no_room_for_fails_with_enospc_and_leaves_no_trace",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // One tensor of 64 KiB, more than a page of the journal.
    let len = 64 << 10;
    let t = Tensor::new(
        ScalarType::FLOAT,
        &[(len / 4) as i32],
        Data::Constant(Bytes::Pattern { len, seed: 3 }),
    );
    let pte = tmp.path().join("big.pte");
    std::fs::write(&pte, Program::forward(vec![Value::Tensor(t)]).to_bytes()).unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&work)
        .status()
        .unwrap();
    assert!(st.success(), "mount -t tmpfs");
    let _tmpfs = Tmpfs(work.clone());
    let (m, _) = Mount::writable(&pte, &work, &tmp.path().join("m"));
    let journal = journals(&work).pop().expect("a journal");
    let kept = std::fs::metadata(&journal).unwrap().len();
    // Every block of the tmpfs taken.
    let fill = work.join("fill");
    {
        let f = std::fs::File::create(&fill).unwrap();
        let block = vec![0u8; 4096];
        let mut at = 0;
        while f.write_all_at(&block, at).is_ok() {
            at += 4096;
        }
    }
    let bin = m.path("methods/forward/tensors/0.bin");
    let before = std::fs::read(&bin).unwrap();
    assert_eq!(before.len() as u64, len);
    let f = OpenOptions::new().write(true).open(&bin).unwrap();
    let e = f.write_all_at(&vec![1; len as usize], 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        before,
        "no byte of it is kept"
    );
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), kept);
    let r = ptefs_run([OsStr::new("edits"), m.0.as_os_str()]);
    assert_eq!((r.code, r.out.as_str()), (0, ""), "{}", r.err);
    // With room again, the same write is kept.
    std::fs::remove_file(&fill).unwrap();
    f.write_all_at(&vec![1; len as usize], 0).unwrap();
    assert_eq!(std::fs::read(&bin).unwrap(), vec![1; len as usize]);
}

/// What `ptefs ARGS`, which must succeed, held at its peak, in bytes:
/// the most anonymous memory (heap, stacks) seen, and its own high-water
/// mark of everything resident, mapped file pages included.
///
/// Both are read from `/proc/PID/status` while it runs, every 2 ms:
/// `ru_maxrss` would not do, as a child starts from the high-water mark of
/// the process it was forked from, here a test binary running other tests
/// (one such run reported 133 MiB for a command holding 30).
struct Peak {
    anon: u64,
    resident: u64,
}

fn peak_of(args: &[&OsStr]) -> Peak {
    let mut child = ptefs()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut stderr = child.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let mut peak = Peak {
        anon: 0,
        resident: 0,
    };
    let status = loop {
        // Read before reaping, so the last sample is of the live process.
        peak.anon = peak.anon.max(status_kb(&pid, "RssAnon:") * 1024);
        peak.resident = peak.resident.max(status_kb(&pid, "VmHWM:") * 1024);
        match child.try_wait().unwrap() {
            Some(status) => break status,
            None => std::thread::sleep(std::time::Duration::from_millis(2)),
        }
    };
    let said = said.join().unwrap();
    assert!(status.success(), "ptefs {args:?} failed ({status}): {said}");
    peak
}

/// A process's anonymous resident memory (heap, stacks), in bytes.
fn anon_rss(pid: i32) -> u64 {
    status_kb(&pid.to_string(), "RssAnon:") * 1024
}

#[test]
fn a_gibibyte_of_edits_is_listed_and_committed_in_bounded_memory() {
    if !fuse_or_skip("a_gibibyte_of_edits_is_listed_and_committed_in_bounded_memory")
        || !crate::common::required::slow_or_skip(
            "a_gibibyte_of_edits_is_listed_and_committed_in_bounded_memory",
        )
    {
        return;
    }
    const MIB: u64 = 1 << 20;
    let (n, each) = (8u64, 128 * MIB);
    let tmp = tempfile::tempdir().unwrap();
    let pte = tmp.path().join("big.pte");
    let values = (0..n)
        .map(|i| {
            let t = Tensor::new(
                ScalarType::FLOAT,
                &[(each / 4) as i32],
                Data::Constant(Bytes::Pattern { len: each, seed: i }),
            );
            Value::Tensor(t)
        })
        .collect();
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&pte).unwrap());
        Program::forward(values).write(&mut w).unwrap();
        std::io::Write::flush(&mut w).unwrap();
    }
    let work = tmp.path().join("work");
    let (m, _) = Mount::writable(&pte, &work, &tmp.path().join("m"));
    // Every byte of every tensor, 8 MiB at a time.
    for i in 0..n {
        let f = OpenOptions::new()
            .write(true)
            .open(m.path(&format!("methods/forward/tensors/{i}.bin")))
            .unwrap();
        let chunk = vec![0x5A ^ i as u8; (8 * MIB) as usize];
        for j in 0..each / (8 * MIB) {
            f.write_all_at(&chunk, j * 8 * MIB).unwrap();
        }
    }
    let listed = peak_of(&["edits".as_ref(), m.0.as_os_str()]);
    let out = tmp.path().join("out.pte");
    let committed = peak_of(&[
        "commit".as_ref(),
        m.0.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    let daemon = anon_rss(daemon_pid(&m.0).expect("the daemon runs"));
    let figures = format!(
        "1 GiB of edits: `edits` peaked at {} MiB anonymous ({} MiB resident), \
         `commit` at {} MiB ({} MiB); the daemon holds {} MiB anonymous",
        listed.anon / MIB,
        listed.resident / MIB,
        committed.anon / MIB,
        committed.resident / MIB,
        daemon / MIB
    );
    eprintln!("{figures}");
    // Bounds far below the gibibyte edited (30-40 MiB is usual; the debug
    // binary alone maps up to 120 MiB of its own file).
    assert!(listed.anon < 128 * MIB, "{figures}");
    // The writer takes the changed bytes a piece at a time from the
    // journal, and reads them back through the file, not a map.
    assert!(committed.anon < 128 * MIB, "{figures}");
    assert!(listed.resident < 384 * MIB, "{figures}");
    assert!(committed.resident < 384 * MIB, "{figures}");
    assert!(daemon < 64 * MIB, "{figures}");
    let v = view_of(&[out], &[]);
    let tail = read(&v, "methods/forward/tensors/5.bin");
    assert_eq!(tail.len() as u64, each);
    assert!(tail.iter().all(|&b| b == 0x5A ^ 5));
}

#[test]
fn edits_kept_in_a_work_dir_are_found_by_the_command_the_unmount_names() {
    if !fuse_or_skip("edits_kept_in_a_work_dir_are_found_by_the_command_the_unmount_names") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("portable.pte", tmp.path());
    let (state, work) = (tmp.path().join("state"), tmp.path().join("work"));
    let run = |args: &[&OsStr]| {
        let out = ptefs()
            .env("XDG_STATE_HOME", &state)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), err)
    };
    let mnt = tmp.path().join("m");
    std::fs::create_dir(&mnt).unwrap();
    let w: &[&OsStr] = &["--work-dir".as_ref(), work.as_os_str()];
    run(&[
        &["mount".as_ref(), "--writable".as_ref()],
        w,
        &[pte.as_os_str(), mnt.as_os_str()],
    ]
    .concat());
    let _m = Mount(mnt.clone());
    let bin = mnt.join("methods/forward/tensors/1.bin");
    let f = OpenOptions::new().write(true).open(&bin).unwrap();
    f.write_all_at(b"abcd", 0).unwrap();
    drop(f);
    let (_, said) = run(&["umount".as_ref(), mnt.as_os_str()]);
    let hint = format!(
        "`ptefs commit {} --work-dir {} -o OUT`",
        pte.display(),
        work.display()
    );
    assert!(said.contains(&hint), "{said}");
    let (listed, _) = run(&[&["edits".as_ref(), pte.as_os_str()], w].concat());
    assert!(
        listed.starts_with("methods/forward/tensors/1.bin\t"),
        "{listed}"
    );
    let saved = tmp.path().join("saved.pte");
    run(&[
        &["commit".as_ref(), pte.as_os_str()],
        w,
        &["-o".as_ref(), saved.as_os_str()],
    ]
    .concat());
    let v = view_of(&[saved], &[]);
    assert_eq!(&read(&v, "methods/forward/tensors/1.bin")[..4], b"abcd");
}

#[test]
fn edits_a_mount_left_are_listed_and_committed_from_the_source_without_mounting() {
    if !fuse_or_skip("edits_a_mount_left_are_listed_and_committed_from_the_source_without_mounting")
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pte = copy("portable.pte", tmp.path());
    let state = tmp.path().join("state");
    let run = |args: &[&OsStr]| {
        let out = ptefs()
            .env("XDG_STATE_HOME", &state)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = run(&[OsStr::new("edits"), pte.as_os_str()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no edits are kept for it"), "{err}");
    let mnt = tmp.path().join("m");
    std::fs::create_dir(&mnt).unwrap();
    let (code, _, err) = run(&[
        "mount".as_ref(),
        "--writable".as_ref(),
        pte.as_os_str(),
        mnt.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let _m = Mount(mnt.clone());
    let bin = mnt.join("methods/forward/tensors/1.bin");
    OpenOptions::new()
        .write(true)
        .open(&bin)
        .unwrap()
        .write_all_at(b"abcd", 0)
        .unwrap();
    let (code, _, err) = run(&["umount".as_ref(), mnt.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = run(&[OsStr::new("edits"), pte.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("methods/forward/tensors/1.bin\tportable.pte\t2688\t4\t"),
        "{out}"
    );
    let saved = tmp.path().join("saved.pte");
    let (code, out, err) = run(&[
        "commit".as_ref(),
        pte.as_os_str(),
        "-o".as_ref(),
        saved.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        format!(
            "{}: 3024 bytes; 1 changed range(s), 4 bytes\n",
            saved.display()
        )
    );
    let v = view_of(&[saved], &[]);
    assert_eq!(&read(&v, "methods/forward/tensors/1.bin")[..4], b"abcd");
}
