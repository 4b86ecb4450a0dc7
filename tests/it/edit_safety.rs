//! What the writers (`set`, `pack`, `commit`) refuse to replace, and what
//! they leave: never an input in another role, another kind of file, a
//! device, FIFO or directory, nor a file inside a ptefs mount; a replaced
//! file keeps its mode and owner, and a new one is no more open than its
//! inputs.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::mounted::*;
use crate::common::required::report_skip;
use crate::common::*;

fn edit_fixture(name: &str) -> PathBuf {
    fixture("edit").join(name)
}

/// Copies of fixtures `names` (of tests/fixtures/edit/) in `dir`.
fn copies(dir: &Path, names: &[&str]) {
    for n in names {
        std::fs::copy(edit_fixture(n), dir.join(Path::new(n).file_name().unwrap())).unwrap();
    }
}

/// `ptefs ARGS...` run in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    ptefs().current_dir(dir).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that `o` failed with exit status 2 saying `says`.
fn refused(o: &Output, says: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert!(
        stderr(o).contains(says),
        "wanted {says:?} in: {}",
        stderr(o)
    );
    assert!(stderr(o).contains("nothing was written"), "{}", stderr(o));
}

/// Every file of `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::symlink_metadata(p).unwrap().is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

const SET_DATA: &[&str] = &[
    "set",
    "external.pte",
    "methods/forward/tensors/0.fc1.weight.npy=external.fc1.weight.npy",
];

#[test]
fn a_program_is_never_replaced_by_a_data_file_nor_an_input_by_the_output() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    copies(
        d,
        &[
            "external.pte",
            "external.ptd",
            "external.fc1.weight.npy",
            "checkpoints/finetuned.safetensors",
        ],
    );
    std::fs::copy(d.join("external.pte"), d.join("program")).unwrap();
    let before = snapshot(d);
    fn with<'a>(out: &[&'a str]) -> Vec<&'a str> {
        [SET_DATA, out].concat()
    }
    fn pack(out: &str) -> [&str; 6] {
        [
            "pack",
            "--for",
            "external.pte",
            "finetuned.safetensors",
            "-o",
            out,
        ]
    }
    for (args, says) in [
        // The edited bytes are in the data file: what is written is one.
        (
            with(&["-o", "external.pte"]),
            "is an input of this command; only external.ptd is rewritten",
        ),
        (with(&["-o", "new.pte"]), "is named as a program (.pte)"),
        (
            with(&["--data-out", "external.pte"]),
            "is an input of this command",
        ),
        (with(&["-o", "program"]), "is a program (.pte)"),
        (
            with(&["-o", "external.fc1.weight.npy"]),
            "is an input of this command",
        ),
        (with(&["-o", "w.npy"]), "is named as a NumPy array"),
        (pack("external.pte").to_vec(), "is an input of this command"),
        (pack("new.pte").to_vec(), "is named as a program (.pte)"),
        (
            pack("finetuned.safetensors").to_vec(),
            "is an input of this command",
        ),
        (
            pack("ck.safetensors").to_vec(),
            "is named as a safetensors checkpoint",
        ),
        (pack("program").to_vec(), "is a program (.pte)"),
    ] {
        refused(&run_in(d, &args), says);
    }
    // The input a pack reads keys from, though it is a data file too.
    let o = run_in(
        d,
        &[
            "pack",
            "--for",
            "external.pte",
            "finetuned.safetensors",
            "external.ptd",
            "-o",
            "external.ptd",
        ],
    );
    refused(&o, "is an input of this command");
    // A value file without an extension, and the same file by another path.
    std::fs::copy(d.join("external.fc1.weight.npy"), d.join("w")).unwrap();
    let o = run_in(
        d,
        &[
            SET_DATA[0],
            SET_DATA[1],
            "methods/forward/tensors/0.fc1.weight.npy=w",
            "-o",
            "./w",
        ],
    );
    refused(&o, "is an input of this command");
    let mut after = snapshot(d);
    after.retain(|(n, _)| n != "w");
    assert_eq!(after, before, "no file changed");
    // The data file in place, or under a new name, is written.
    let o = run_in(d, &with(&["--data-out", "external.ptd"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_in(d, &with(&["-o", "new.ptd"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(d.join("new.ptd")).unwrap(),
        std::fs::read(d.join("external.ptd")).unwrap()
    );
    assert_eq!(
        std::fs::read(d.join("external.pte")).unwrap(),
        std::fs::read(edit_fixture("external.pte")).unwrap()
    );
}

#[test]
fn an_edit_of_a_program_and_its_data_file_writes_both_to_their_own_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    copies(
        d,
        &[
            "portable.pte",
            "portable.fc1.weight.npy",
            "external.ptd",
            "external.fc1.weight.npy",
        ],
    );
    // A weight stored in the program, and a blob of the data file given
    // with --data (named/<key>.bin of the program's tree).
    let v = view_of(&[edit_fixture("portable.pte")], &[]);
    let dir = "methods/forward/tensors";
    let program_weight = ls(&v, dir)
        .into_iter()
        .filter(|n| n.ends_with(".npy"))
        .find(|n| read(&v, &format!("{dir}/{n}")).len() == 640)
        .map(|n| format!("{dir}/{n}"))
        .unwrap();
    let raw =
        npy_payload(&std::fs::read(edit_fixture("external.fc1.weight.npy")).unwrap()).to_vec();
    write_file(d, "raw.bin", &raw);
    let edits = [
        format!("{program_weight}=portable.fc1.weight.npy"),
        "named/fc1.weight.bin=raw.bin".to_owned(),
    ];
    let base = ["set", "--data", "external.ptd", "portable.pte"];
    let args = |outs: &[&str]| -> Vec<String> {
        base.iter()
            .map(|s| s.to_string())
            .chain(edits.iter().cloned())
            .chain(outs.iter().map(|s| s.to_string()))
            .collect()
    };
    let o = ptefs()
        .current_dir(d)
        .args(args(&["-o", "new.pte"]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("give -o for the new portable.pte and --data-out for the new external.ptd"),
        "{}",
        stderr(&o)
    );
    let o = ptefs()
        .current_dir(d)
        .args(args(&["-o", "new", "--data-out", "./new"]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("-o and --data-out name the same file"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("new").exists());
    let o = ptefs()
        .current_dir(d)
        .args(args(&["-o", "new.pte", "--data-out", "new.ptd"]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("new.ptd: 1424 bytes; 512 bytes set"), "{out}");
    assert!(out.contains("new.pte: 3024 bytes; 512 bytes set"), "{out}");
    let v = view_of(&[d.join("new.pte")], &[]);
    assert_eq!(
        read(&v, &program_weight),
        std::fs::read(edit_fixture("portable.fc1.weight.npy")).unwrap()
    );
    let v = view_of(&[d.join("new.ptd")], &[]);
    assert_eq!(read(&v, "tensors/fc1.weight.bin"), raw);
}

/// Makes a character device like /dev/null at `path` (as root).
fn mknod_null(path: &Path) -> bool {
    Command::new("mknod")
        .arg(path)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_device_fifo_directory_or_socket_is_refused_and_a_symlink_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    copies(d, &["external.ptd", "external.fc1.weight.npy"]);
    nix::unistd::mkfifo(
        &d.join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    std::fs::create_dir(d.join("dir")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(d.join("socket")).unwrap();
    let mut kinds = vec![
        ("fifo", "is a FIFO"),
        ("dir", "is a directory"),
        ("socket", "is a socket"),
    ];
    if is_root() && mknod_null(&d.join("null")) {
        kinds.push(("null", "is a character device"));
    } else {
        report_skip(
            "a_device_fifo_directory_or_socket_is_refused_and_a_symlink_replaced",
            "not root: no device node made",
        );
    }
    let set = [
        "set",
        "external.ptd",
        "tensors/fc1.weight.npy=external.fc1.weight.npy",
        "-o",
    ];
    for (name, says) in kinds {
        let t = std::fs::symlink_metadata(d.join(name)).unwrap().file_type();
        refused(&run_in(d, &[&set[..], &[name]].concat()), says);
        assert_eq!(
            std::fs::symlink_metadata(d.join(name)).unwrap().file_type(),
            t,
            "{name} is left as it was"
        );
    }
    // A symbolic link is replaced by the new file; what it points at stays.
    std::os::unix::fs::symlink("external.ptd", d.join("link.ptd")).unwrap();
    let o = run_in(d, &[&set[..], &["link.ptd"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::symlink_metadata(d.join("link.ptd"))
            .unwrap()
            .is_file()
    );
    assert_eq!(
        std::fs::read(d.join("external.ptd")).unwrap(),
        std::fs::read(edit_fixture("external.ptd")).unwrap()
    );
}

#[test]
fn an_output_inside_a_ptefs_mount_is_refused_without_asking_the_mount() {
    if !fuse_or_skip("an_output_inside_a_ptefs_mount_is_refused_without_asking_the_mount") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    copies(d, &["external.ptd", "external.fc1.weight.npy"]);
    let m = Mounted::new(&["--writable".as_ref(), d.join("external.ptd").as_os_str()]);
    std::os::unix::fs::symlink(&m.dir, d.join("into")).unwrap();
    let set = [
        "set",
        "external.ptd",
        "tensors/fc1.weight.npy=external.fc1.weight.npy",
        "-o",
    ];
    let inside = [
        m.path("new.ptd"),
        m.path("tensors/new.ptd"),
        d.join("into/tensors/../new.ptd"),
    ];
    for out in &inside {
        let out = out.to_str().unwrap();
        refused(
            &run_in(d, &[&set[..], &[out]].concat()),
            "lies inside the ptefs mount",
        );
    }
    // The mount's own commit, which would wait on the daemon it runs in.
    let cp = Command::new("cp")
        .arg(d.join("external.fc1.weight.npy"))
        .arg(m.path("tensors/fc1.weight.npy"))
        .status()
        .unwrap();
    assert!(cp.success());
    for out in &inside {
        let mut child = ptefs()
            .arg("commit")
            .arg(&m.dir)
            .arg("-o")
            .arg(out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let status = child.wait().unwrap();
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            tx.send((status, err)).unwrap();
        });
        // A deadlocked commit never returns: this only keeps the test
        // from hanging with it.
        let (status, err) = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("commit into its own mount hangs");
        waiter.join().unwrap();
        assert_eq!(status.code(), Some(2), "{err}");
        assert!(err.contains("lies inside the ptefs mount"), "{err}");
    }
    let o = Command::new(ptefs_bin())
        .arg("commit")
        .arg(&m.dir)
        .arg("-o")
        .arg(d.join("committed.ptd"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the mount still answers: {}",
        stderr(&o)
    );
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().mode() & 0o7777
}

/// `ptefs ARGS...` in `dir` under umask `umask`.
fn run_umask(dir: &Path, umask: &str, args: &[&str]) -> Output {
    let script = format!("umask {umask}; exec \"$0\" \"$@\"");
    Command::new("sh")
        .current_dir(dir)
        .args(["-c", &script, ptefs_bin()])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_replaced_output_keeps_its_mode_and_owner_and_a_new_one_is_no_more_open_than_its_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    copies(
        d,
        &[
            "external.pte",
            "external.ptd",
            "external.fc1.weight.npy",
            "checkpoints/finetuned.safetensors",
        ],
    );
    let chmod = |n: &str, m: u32| {
        std::fs::set_permissions(d.join(n), std::fs::Permissions::from_mode(m)).unwrap()
    };
    let set = |out: &str| {
        [
            "set",
            "external.ptd",
            "tensors/fc1.weight.npy=external.fc1.weight.npy",
            "-o",
            out,
        ]
        .map(str::to_owned)
    };
    let ok = |o: Output| assert!(o.status.success(), "{}", stderr(&o));
    // New files: the umask, and no more than the inputs allow.
    chmod("external.ptd", 0o644);
    ok(run_umask(
        d,
        "077",
        &set("a.ptd").each_ref().map(String::as_str),
    ));
    assert_eq!(mode(&d.join("a.ptd")), 0o600, "the umask holds");
    chmod("external.ptd", 0o600);
    ok(run_umask(
        d,
        "022",
        &set("b.ptd").each_ref().map(String::as_str),
    ));
    assert_eq!(mode(&d.join("b.ptd")), 0o600, "as closed as the source");
    chmod("external.ptd", 0o644);
    for n in ["external.pte", "finetuned.safetensors"] {
        chmod(n, 0o600);
    }
    let pack = [
        "pack",
        "--for",
        "external.pte",
        "finetuned.safetensors",
        "-o",
        "c.ptd",
    ];
    ok(run_umask(d, "077", &pack));
    assert_eq!(mode(&d.join("c.ptd")), 0o600);
    std::fs::remove_file(d.join("c.ptd")).unwrap();
    ok(run_umask(d, "022", &pack));
    assert_eq!(mode(&d.join("c.ptd")), 0o600, "as closed as the inputs");
    // A file replaced keeps its mode, and its owner where that can be given.
    std::fs::copy(d.join("external.ptd"), d.join("kept.ptd")).unwrap();
    chmod("kept.ptd", 0o640);
    let owner = if is_root() {
        std::os::unix::fs::chown(d.join("kept.ptd"), Some(1234), Some(2345)).unwrap();
        (1234, 2345)
    } else {
        let m = std::fs::metadata(d.join("kept.ptd")).unwrap();
        (m.uid(), m.gid())
    };
    ok(run_umask(
        d,
        "077",
        &[
            "set",
            "kept.ptd",
            "tensors/fc1.weight.npy=external.fc1.weight.npy",
            "-o",
            "kept.ptd",
        ],
    ));
    let m = std::fs::metadata(d.join("kept.ptd")).unwrap();
    assert_eq!(
        (m.mode() & 0o7777, m.uid(), m.gid()),
        (0o640, owner.0, owner.1)
    );
    ok(run_umask(d, "022", &pack));
    chmod("c.ptd", 0o604);
    ok(run_umask(d, "077", &pack));
    assert_eq!(mode(&d.join("c.ptd")), 0o604, "pack keeps it too");
    let names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn a_writable_mount_of_xnnpacks_data_file_takes_a_blobs_raw_bytes() {
    if !fuse_or_skip("a_writable_mount_of_xnnpacks_data_file_takes_a_blobs_raw_bytes") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    copies(d, &["xnnpack.ptd", "xnnpack.fc1.weight.npy"]);
    let o: serde_json::Value =
        serde_json::from_slice(&std::fs::read(edit_fixture("xnnpack.oracle.json")).unwrap())
            .unwrap();
    let key = o["edited"]["fc1.weight"]["original_sha256"]
        .as_str()
        .unwrap();
    let raw = npy_payload(&std::fs::read(d.join("xnnpack.fc1.weight.npy")).unwrap()).to_vec();
    let raw_file = write_file(d, "raw.bin", &raw);
    let blob = format!("tensors/{key}.bin");
    let m = Mounted::new(&["--writable".as_ref(), d.join("xnnpack.ptd").as_os_str()]);
    let st = Command::new("cp")
        .arg(&raw_file)
        .arg(m.path(&blob))
        .status()
        .unwrap();
    assert!(st.success(), "cp into {blob}");
    assert_eq!(std::fs::read(m.path(&blob)).unwrap(), raw);
    let edits = ptefs_stdout(["edits".as_ref(), m.dir.as_os_str()]);
    assert!(
        edits.starts_with(&format!("{blob}\txnnpack.ptd\t")),
        "{edits}"
    );
    // Past its end: the blob keeps its size.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path(&blob))
        .unwrap();
    let past = std::os::unix::fs::FileExt::write_at(&f, b"x", raw.len() as u64);
    assert_eq!(past.err().and_then(|e| e.raw_os_error()), Some(libc::EFBIG));
    drop(f);
    let committed = d.join("committed.ptd");
    ptefs_stdout([
        "commit".as_ref(),
        m.dir.as_os_str(),
        "-o".as_ref(),
        committed.as_os_str(),
    ]);
    let set = d.join("set.ptd");
    let arg = format!("{blob}={}", raw_file.display());
    let xnn = d.join("xnnpack.ptd");
    ptefs_stdout([
        "set".as_ref(),
        xnn.as_os_str(),
        arg.as_ref(),
        "-o".as_ref(),
        set.as_os_str(),
    ]);
    assert_eq!(
        std::fs::read(&committed).unwrap(),
        std::fs::read(&set).unwrap()
    );
    assert_eq!(
        std::fs::read(&xnn).unwrap(),
        std::fs::read(edit_fixture("xnnpack.ptd")).unwrap(),
        "the source is untouched"
    );
}
