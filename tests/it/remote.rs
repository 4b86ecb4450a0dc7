//! Remote sources against real servers started here: nginx (range GETs on
//! static files) and moto's S3 server. A tree built from a URL equals the
//! tree of the local file, path by path, inode by inode and byte for byte;
//! opening reads little; a changed object and a vanished server give EIO.

use crate::common;
use crate::writer;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime};

use common::mounted::*;
use common::required::slow_or_skip;
use common::servers::*;
use common::*;
use ptefs::fs::Fs;
use ptefs::tree::ROOT;
use ptefs::view::{Request, View};

/// A view of `inputs` with `data` attached, as given (no data files found
/// by themselves, which only local programs get).
fn open(inputs: &[String], data: &[String]) -> View {
    View::open(&Request {
        inputs: inputs.iter().map(PathBuf::from).collect(),
        data: data.iter().map(PathBuf::from).collect(),
        recursive: false,
        names: None,
        auto_data: false,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    })
    .unwrap_or_else(|e| panic!("{inputs:?}: {e}"))
}

/// Every path of the tree with its inode, and for files the size and the
/// SHA-256 of the bytes the filesystem core reads.
fn summary(fs: &Fs) -> BTreeMap<String, (u64, u64, Option<String>)> {
    let tree = &fs.view().tree;
    tree.walk(ROOT)
        .map(|(path, ino)| {
            let entry = match tree.file(ino) {
                None => (ino, 0, None),
                Some(f) => {
                    let len = f.content.len();
                    let bytes = fs
                        .read_copy(ino, 0, len)
                        .unwrap_or_else(|e| panic!("{path}: {e}"));
                    assert_eq!(bytes.len() as u64, len, "{path}");
                    (ino, len, Some(sha256(&bytes)))
                }
            };
            (path, entry)
        })
        .collect()
}

/// Checks that the tree of `urls` equals that of `paths`; returns the
/// bytes the remote view fetched to build its tree.
fn same_tree(urls: (&[String], &[String]), paths: (&[String], &[String])) -> u64 {
    let remote = open(urls.0, urls.1);
    // Built from what the fetch plan fetched, not refetched whole.
    assert_eq!(remote.notes, Vec::<String>::new(), "{urls:?}");
    for s in &remote.sources {
        assert_eq!(s.unfetched_reads(), [], "{urls:?}");
    }
    let fetched: u64 = remote.sources.iter().map(|s| s.fetched_bytes()).sum();
    let local = open(paths.0, paths.1);
    assert_eq!(remote.tree.warnings, local.tree.warnings, "{urls:?}");
    let (r, l) = (summary(&Fs::new(remote)), summary(&Fs::new(local)));
    let only = |a: &BTreeMap<String, _>, b: &BTreeMap<String, _>| {
        a.keys()
            .filter(|k| !b.contains_key(*k))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (extra, missing) = (only(&r, &l), only(&l, &r));
    assert!(
        extra.is_empty() && missing.is_empty(),
        "{urls:?}: paths only in the remote tree {extra:?}, only in the local tree {missing:?}"
    );
    for (path, want) in &l {
        if is_report(path) {
            // A URL's report/ says to run `ptefs report` on the URL.
            assert_eq!(r[path].0, want.0, "{path} of {urls:?}");
            continue;
        }
        assert_eq!(&r[path], want, "{path} of {urls:?}");
    }
    fetched
}

/// A file (or the directory) of a tree's `report/`.
fn is_report(path: &str) -> bool {
    let dir = path.split('/').rev().nth(1);
    path == "report" || path.ends_with("/report") || dir == Some("report")
}

fn nginx_or_skip(test: &str) -> bool {
    server_or_skip(test, "nginx")
}

/// What a test here needs besides the slow set.
#[derive(Clone, Copy)]
enum Needs {
    Nothing,
    Nginx,
    Fuse,
    NginxAndFuse,
    Moto,
}

/// Whether `test` runs: the slow set is on and what it `needs` is here;
/// otherwise it is skipped loudly, saying what is missing.
fn runs(test: &str, needs: Needs) -> bool {
    slow_or_skip(test)
        && match needs {
            Needs::Nothing => true,
            Needs::Nginx => nginx_or_skip(test),
            Needs::Fuse => fuse_or_skip(test),
            Needs::NginxAndFuse => fuse_or_skip(test) && nginx_or_skip(test),
            Needs::Moto => server_or_skip(test, "moto_server"),
        }
}

/// Nginx serving `dir`, when `test` runs ([`runs`]: the slow set is on and
/// nginx is here).
fn nginx_for(test: &str, dir: &Path) -> Option<Nginx> {
    runs(test, Needs::Nginx).then(|| Nginx::start(dir))
}

fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| {
            [".pte", ".ptd", ".bpte", ".ptn"]
                .iter()
                .any(|x| n.ends_with(x))
        })
        .collect();
    names.sort();
    names
}

fn local(name: &str) -> String {
    fixture(name).display().to_string()
}

#[test]
fn url_trees_equal_local_trees_for_every_fixture() {
    let Some(nginx) = nginx_for(
        "url_trees_equal_local_trees_for_every_fixture",
        &fixture(""),
    ) else {
        return;
    };
    let names = fixture_names();
    assert!(names.len() >= 15, "{names:?}");
    for name in &names {
        let fetched = same_tree((&[nginx.url(name)], &[]), (&[local(name)], &[]));
        let len = std::fs::metadata(fixture(name)).unwrap().len();
        eprintln!("{name}: {fetched} of {len} bytes fetched to build the tree");
    }
    for (pte, ptd) in [
        ("mlp_external.pte", "mlp_external.ptd"),
        ("xnnpack_external.pte", "xnnpack_external.ptd"),
    ] {
        let local_pair = (&[local(pte)][..], &[local(ptd)][..]);
        same_tree((&[nginx.url(pte)], &[nginx.url(ptd)]), local_pair);
        // A local program with a remote data file.
        same_tree((&[local(pte)], &[nginx.url(ptd)]), local_pair);
    }
    // Tensor bytes are not read to build the tree: the 13.9 MB delegate
    // program needs its flatbuffer and the delegate's header and graph.
    let v = open(&[nginx.url("mv2_xnnpack.pte")], &[]);
    let fetched = v.sources[0].fetched_bytes();
    assert!(
        fetched < v.sources[0].opened.len / 100,
        "{fetched} bytes fetched"
    );
}

#[test]
fn url_trees_of_writer_made_packages_equal_local_trees() {
    use ptefs::schema::native_graph as ng;
    use writer::package::*;
    if !runs(
        "url_trees_of_writer_made_packages_equal_local_trees",
        Needs::Nginx,
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A tensor past the size whose CRC parsing checks, written as a hole,
    // and a small one after it; once with zip64 records.
    let big = 80u64 << 20;
    let tensors = [
        StTensor {
            key: "big".into(),
            dtype: "F32",
            shape: vec![big / 4],
            data: Chunk::Zeros(big),
        },
        StTensor {
            key: "tail".into(),
            dtype: "I64",
            shape: vec![2],
            data: Chunk::Bytes((0..16).collect()),
        },
    ];
    let m = constants_method(&[
        ("big", ng::ScalarType::FLOAT, &[(big / 4) as i64]),
        ("tail", ng::ScalarType::LONG, &[2]),
    ]);
    let mut zip = package(&[m], &tensors, &[]);
    for (name, zip64) in [("plain.ptn", false), ("wide.ptn", true)] {
        zip.zip64 = zip64;
        let mut f = std::fs::File::create(dir.path().join(name)).unwrap();
        zip.write(&mut f).unwrap();
    }
    let nginx = Nginx::start(dir.path());
    for name in ["plain.ptn", "wide.ptn"] {
        let path = dir.path().join(name).display().to_string();
        let fetched = same_tree((&[nginx.url(name)], &[]), (&[path], &[]));
        assert!(fetched < 1 << 20, "{name}: {fetched} bytes fetched");
    }
}

/// Runs `ptefs args` with the variables `env` added to its environment.
fn ptefs_with(args: &[&str], env: &[(&str, String)]) -> Output {
    ptefs()
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap()
}

fn stdout_of(args: &[&str], env: &[(&str, String)]) -> Vec<u8> {
    let out = ptefs_with(args, env);
    assert!(
        out.status.success(),
        "ptefs {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The largest file under `named/` of mv2_xnnpack.pte.
const BIG_BLOB: &str = "named/68976bc734ee90ce0fc94ecf8fa77ec405085ac5bb5b6726ebdeb601f20cdc16.bin";
/// A small one.
const SMALL_BLOB: &str =
    "named/0193e3af04bb31ea74e82d7214b19cc5898b7068e6bd3c0f585536a66149d3f4.bin";

#[test]
fn cat_ls_inspect_and_diff_take_urls() {
    let Some(nginx) = nginx_for("cat_ls_inspect_and_diff_take_urls", &fixture("")) else {
        return;
    };
    let (url, path) = (nginx.url("mv2_xnnpack.pte"), local("mv2_xnnpack.pte"));
    let want = read(&view("mv2_xnnpack.pte"), BIG_BLOB);
    assert_eq!(stdout_of(&["cat", &url, BIG_BLOB], &[]), want);
    assert_eq!(
        stdout_of(&["ls", "-R", &url], &[]),
        stdout_of(&["ls", "-R", &path], &[])
    );
    for args in [&["inspect"][..], &["inspect", "--json"]] {
        let remote = stdout_of(&[args, &[url.as_str()]].concat(), &[]);
        let here = stdout_of(&[args, &[path.as_str()]].concat(), &[]);
        assert_eq!(
            String::from_utf8(remote).unwrap(),
            String::from_utf8(here).unwrap()
        );
    }
    // The same file: no difference. Two different ones: the difference
    // the local files show.
    let same = ptefs_with(&["diff", &url, &path], &[]);
    assert!(same.status.success() && same.stdout.is_empty(), "{same:?}");
    let (a, b) = (nginx.url("mlp.pte"), nginx.url("dtypes.pte"));
    let remote = ptefs_with(&["diff", "--json", &a, &b], &[]);
    let here = ptefs_with(
        &["diff", "--json", &local("mlp.pte"), &local("dtypes.pte")],
        &[],
    );
    assert_eq!(remote.status.code(), Some(1));
    assert_eq!(here.status.code(), Some(1));
    let strip = |o: &Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v.as_object_mut()
            .unwrap()
            .retain(|k, _| k != "a" && k != "b");
        v
    };
    assert_eq!(strip(&remote), strip(&here));
}

/// Every regular file under `root` with its bytes.
fn mounted_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Every path under `root`, as `ls -R` lists them, without reading files.
fn list(root: &Path) -> usize {
    let out = Command::new("ls").arg("-lR").arg(root).output().unwrap();
    assert!(out.status.success());
    out.stdout.split(|&b| b == b'\n').count()
}

#[test]
fn a_mounted_url_reads_little_and_serves_every_byte() {
    if !runs(
        "a_mounted_url_reads_little_and_serves_every_byte",
        Needs::NginxAndFuse,
    ) {
        return;
    }
    let nginx = Nginx::start(&fixture(""));
    // By name: resolving it uses threads the daemon must not hold when it
    // forks.
    let url = nginx
        .url("mv2_xnnpack.pte")
        .replace("127.0.0.1", "localhost");
    let len = std::fs::metadata(fixture("mv2_xnnpack.pte")).unwrap().len();
    let m = Mounted::new(&[url.as_ref()]);
    assert!(list(&m.dir) > 500);
    let blob = std::fs::read(m.path(SMALL_BLOB)).unwrap();
    let local = view("mv2_xnnpack.pte");
    assert_eq!(blob, read(&local, SMALL_BLOB));
    let sent = nginx.bytes_sent();
    eprintln!("mount + ls -lR + cat of a 9 KiB blob: {sent} of {len} bytes sent");
    // The tree's structure, one cache block for the blob, headers.
    assert!(sent < 1_200_000, "{sent} bytes sent");
    // Every file, byte for byte (but report/, which for a URL says to run
    // `ptefs report` on it).
    let want = files(&local);
    let got = mounted_files(&m.dir);
    assert_eq!(got.len(), want.len());
    for (path, bytes) in &want {
        if is_report(path) {
            assert!(
                String::from_utf8_lossy(&got[path]).contains("run `ptefs report`"),
                "{path}"
            );
            continue;
        }
        assert!(got[path] == *bytes, "{path} differs");
    }
}

fn is_eio(r: std::io::Result<Vec<u8>>) -> bool {
    r.is_err_and(|e| e.raw_os_error() == Some(libc::EIO))
}

#[test]
fn a_changed_object_gives_eio_logged_once() {
    if !runs(
        "a_changed_object_gives_eio_logged_once",
        Needs::NginxAndFuse,
    ) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("m.pte");
    std::fs::copy(fixture("mv2_xnnpack.pte"), &file).unwrap();
    let nginx = Nginx::start(root.path());
    let url = nginx.url("m.pte");
    let (mnt, log) = Mounted::logged(Path::new(&url), root.path(), None);
    let local = view("mv2_xnnpack.pte");
    assert_eq!(
        std::fs::read(mnt.join(SMALL_BLOB)).unwrap(),
        read(&local, SMALL_BLOB)
    );
    // Rewrite it: same size, one byte and the modification time changed
    // (nginx's ETag is made of both size and time).
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 100;
    bytes[last] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let f = std::fs::File::options().write(true).open(&file).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(100))
        .unwrap();
    drop(f);
    assert!(is_eio(std::fs::read(mnt.join(BIG_BLOB))));
    assert!(is_eio(std::fs::read(mnt.join(BIG_BLOB))));
    let out = ptefs_with(&["umount", mnt.to_str().unwrap()], &[]);
    assert!(out.status.success());
    let log = std::fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("was modified")).collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains("ETag"), "{log}");
}

#[test]
fn a_server_that_stops_mid_transfer_fails_the_read_within_30_s() {
    if !runs(
        "a_server_that_stops_mid_transfer_fails_the_read_within_30_s",
        Needs::Nothing,
    ) {
        return;
    }
    let bytes = std::fs::read(fixture("mv2_xnnpack.pte")).unwrap();
    let local = view("mv2_xnnpack.pte");
    let ino = local.tree.resolve(BIG_BLOB).unwrap();
    let content = local.content(ino);
    let Some(ptefs::tree::Content::Source { span, .. }) = content.as_deref() else {
        panic!("{BIG_BLOB} is source bytes");
    };
    // Everything before the blob is served; a read of it gets 1000 bytes.
    let port = stalling_server(bytes, span.offset as usize, 1000);
    let url = format!("http://127.0.0.1:{port}/m.pte");
    let start = Instant::now();
    let out = ptefs_with(&["cat", &url, BIG_BLOB], &[]);
    let took = start.elapsed();
    eprintln!("a stalled read failed after {took:?}");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("m.pte"), "{err}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn a_vanished_server_gives_eio_within_30_s() {
    if !runs(
        "a_vanished_server_gives_eio_within_30_s",
        Needs::NginxAndFuse,
    ) {
        return;
    }
    let mut nginx = Nginx::start(&fixture(""));
    let m = Mounted::new(&[nginx.url("mv2_xnnpack.pte").as_ref()]);
    std::fs::read(m.path(SMALL_BLOB)).unwrap();
    // Gone: connections are refused.
    nginx.kill();
    let start = Instant::now();
    assert!(is_eio(std::fs::read(m.path(BIG_BLOB))));
    eprintln!("refused: EIO after {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(30));
    // Something on the port that accepts and never answers.
    let _silent = silent_listener(nginx.port);
    let start = Instant::now();
    let mut f = std::fs::File::open(m.path(BIG_BLOB)).unwrap();
    let mut buf = Vec::new();
    let r = f.read_to_end(&mut buf).map(|_| buf);
    let took = start.elapsed();
    eprintln!("silent: failed after {took:?}");
    assert!(is_eio(r));
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn s3_objects_read_like_local_files_and_changes_give_eio() {
    if !runs(
        "s3_objects_read_like_local_files_and_changes_give_eio",
        Needs::Moto,
    ) {
        return;
    }
    let moto = Moto::start("models");
    for name in ["mlp.pte", "mv2_xnnpack.pte", "mlp.ptn", "mlp_external.ptd"] {
        moto.put("models", name, &fixture(name));
    }
    let env = moto.env();
    for name in ["mlp.pte", "mv2_xnnpack.pte", "mlp.ptn", "mlp_external.ptd"] {
        let url = format!("s3://models/{name}");
        assert_eq!(
            stdout_of(&["ls", "-R", &url], &env),
            stdout_of(&["ls", "-R", &local(name)], &[]),
            "{name}"
        );
    }
    let url = "s3://models/mv2_xnnpack.pte";
    let local_view = view("mv2_xnnpack.pte");
    assert_eq!(
        stdout_of(&["cat", url, BIG_BLOB], &env),
        read(&local_view, BIG_BLOB)
    );
    if !fuse_or_skip("s3_objects_read_like_local_files_and_changes_give_eio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let out = ptefs_with(&["mount", url, mnt.to_str().unwrap()], &env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _unmount = Unmount(mnt.clone());
    assert_eq!(
        std::fs::read(mnt.join(SMALL_BLOB)).unwrap(),
        read(&local_view, SMALL_BLOB)
    );
    // A new object under the same key.
    moto.put("models", "mv2_xnnpack.pte", &fixture("mlp.pte"));
    assert!(is_eio(std::fs::read(mnt.join(BIG_BLOB))));
}

/// Unmounts on drop.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = ptefs().arg("umount").arg(&self.0).status();
    }
}

#[test]
fn names_hash_remote_tensors_as_local_ones() {
    let Some(nginx) = nginx_for("names_hash_remote_tensors_as_local_ones", &fixture("")) else {
        return;
    };
    let all: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("state_dicts.json")).unwrap()).unwrap();
    let map: BTreeMap<&String, &serde_json::Value> = all["mv2_xnnpack"]["state"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k, &v["sha256"]))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let names = write_file(dir.path(), "names.json", &serde_json::to_vec(&map).unwrap());
    let names = names.to_str().unwrap();
    let url = nginx.url("mv2_xnnpack.pte");
    let remote = stdout_of(&["ls", "-R", "--names", names, &url], &[]);
    let here = stdout_of(
        &["ls", "-R", "--names", names, &local("mv2_xnnpack.pte")],
        &[],
    );
    let by_name = String::from_utf8_lossy(&here).matches("by-name/").count();
    assert!(by_name > 100, "{by_name} keys found");
    assert_eq!(remote, here);
}

#[test]
fn reading_bytes_a_plan_left_out_is_detected() {
    let Some(nginx) = nginx_for("reading_bytes_a_plan_left_out_is_detected", &fixture("")) else {
        return;
    };
    let url = nginx.url("mv2_xnnpack.pte");
    // The container's plan without the delegate's: building the tree
    // decodes the XNNPACK payload from pages never fetched (zeros).
    let mut s = ptefs::source::Source::open(Path::new(&url)).unwrap();
    s.prefetch(|image, have| ptefs::format::fetch_plan::plan(image, have).ranges)
        .unwrap();
    assert_eq!(s.unfetched_reads(), []);
    let input = ptefs::tree::Input {
        name: "m.pte".into(),
        source: 0,
        bytes: std::sync::Arc::new(s.shared()),
        parsed: ptefs::format::parse(s.bytes()).unwrap(),
    };
    ptefs::tree::build(&[input], &[], false);
    let gaps = s.unfetched_reads();
    assert!(!gaps.is_empty(), "{gaps:?}");
    // All in the payload, which starts at 11136 (the segment base) and
    // whose flatbuffer ends at 37856.
    assert!(
        gaps[0].start > 11136 && gaps.last().unwrap().end <= 40960,
        "{gaps:?}"
    );
    // The real plan: parsing reads nothing unfetched.
    let mut s = ptefs::source::Source::open(Path::new(&url)).unwrap();
    s.prefetch(ptefs::tree::fetch_plan).unwrap();
    let input = ptefs::tree::Input {
        name: "m.pte".into(),
        source: 0,
        bytes: std::sync::Arc::new(s.shared()),
        parsed: ptefs::format::parse(s.bytes()).unwrap(),
    };
    ptefs::tree::build(&[input], &[], false);
    assert_eq!(s.unfetched_reads(), []);
}

#[test]
fn unusable_urls_are_refused_with_a_reason() {
    let Some(nginx) = nginx_for("unusable_urls_are_refused_with_a_reason", &fixture("")) else {
        return;
    };
    let refused = format!("http://127.0.0.1:{}/m.pte", free_port());
    // Python's own server answers range requests with the whole file.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("mlp.pte"), dir.path().join("mlp.pte")).unwrap();
    let port = free_port();
    let mut python = Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("python's http.server", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let no_ranges = format!("http://127.0.0.1:{port}/mlp.pte");
    for (url, why) in [
        (nginx.url("absent.pte"), "not found"),
        (refused.clone(), "error sending request"),
        (no_ranges.clone(), "Range request not supported"),
        ("s3:///m.pte".to_owned(), "did not match any known pattern"),
    ] {
        let start = Instant::now();
        let out = ptefs_with(&["ls", &url], &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert!(err.starts_with(&format!("ptefs: {url}: ")), "{err}");
        assert!(err.contains(why), "{url}: {err}");
        assert!(start.elapsed() < Duration::from_secs(20), "{url}");
    }
    let _ = python.kill();
    let _ = python.wait();
}

/// `report` reads every byte: a URL's report, of a file fetched by plan
/// for its tree and then whole, is the local file's, and a scheme in
/// upper case names the same URL.
#[test]
fn report_takes_a_url_in_any_case() {
    let Some(nginx) = nginx_for("report_takes_a_url_in_any_case", &fixture("")) else {
        return;
    };
    for name in ["mlp.pte", "mv2_xnnpack.pte"] {
        let url = nginx.url(name);
        let upper = url.replacen("http://", "HTTP://", 1);
        let here = stdout_of(&["report", "--json", &local(name)], &[]);
        for u in [&url, &upper] {
            let there = stdout_of(&["report", "--json", u], &[]);
            assert_eq!(
                String::from_utf8(there).unwrap(),
                String::from_utf8(here.clone()).unwrap(),
                "{u}"
            );
        }
    }
    let upper = nginx.url("mlp.pte").replacen("http://", "Http://", 1);
    assert_eq!(
        stdout_of(&["ls", "-R", &upper], &[]),
        stdout_of(&["ls", "-R", &local("mlp.pte")], &[])
    );
}

/// The limit the stalled-server tests set, and the bound they check: the
/// whole operation ends within 1.5 times it.
const LIMIT_S: f64 = 2.0;

fn within_the_limit(took: Duration) -> bool {
    took.as_secs_f64() < LIMIT_S * 1.5
}

/// Opening asks for the size (a presigned URL, with a query, by a ranged
/// GET and then by HEAD): a server that accepts and never answers fails
/// the open once, after the one limit for both.
#[test]
fn a_stalled_server_fails_an_open_within_the_one_limit() {
    if !runs(
        "a_stalled_server_fails_an_open_within_the_one_limit",
        Needs::Nothing,
    ) {
        return;
    }
    let port = free_port();
    let _silent = silent_listener(port);
    let limit = [("PTEFS_REMOTE_TIMEOUT", LIMIT_S.to_string())];
    for url in [
        format!("http://127.0.0.1:{port}/m.pte"),
        format!("http://127.0.0.1:{port}/m.pte?X-Amz-Signature=abc"),
    ] {
        let start = Instant::now();
        let out = ptefs_with(&["ls", &url], &limit);
        let took = start.elapsed();
        eprintln!("{url}: failed after {took:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("m.pte") && err.contains("no answer"), "{err}");
        assert!(took.as_secs_f64() >= LIMIT_S * 0.9, "{took:?}: {err}");
        assert!(within_the_limit(took), "{url}: {took:?}: {err}");
    }
}

/// A read on the mount from a server that stops mid-transfer gives EIO
/// after the one limit, though the kernel asks again for the page it
/// failed and other readers wait for the same bytes.
#[test]
fn a_stalled_read_on_the_mount_fails_within_the_one_limit() {
    if !runs(
        "a_stalled_read_on_the_mount_fails_within_the_one_limit",
        Needs::Fuse,
    ) {
        return;
    }
    let bytes = std::fs::read(fixture("mv2_xnnpack.pte")).unwrap();
    let local = view("mv2_xnnpack.pte");
    let ino = local.tree.resolve(BIG_BLOB).unwrap();
    let content = local.content(ino);
    let Some(ptefs::tree::Content::Source { span, .. }) = content.as_deref() else {
        panic!("{BIG_BLOB} is source bytes");
    };
    let port = stalling_server(bytes, span.offset as usize, 1000);
    let url = format!("http://127.0.0.1:{port}/m.pte");
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let out = ptefs()
        .args(["mount", &url])
        .arg(&mnt)
        .env("PTEFS_REMOTE_TIMEOUT", LIMIT_S.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let _unmount = Unmount(mnt.clone());
    let start = Instant::now();
    let r = std::fs::read(mnt.join(BIG_BLOB));
    let took = start.elapsed();
    eprintln!("a stalled read on the mount failed after {took:?}");
    assert!(is_eio(r));
    assert!(took.as_secs_f64() >= LIMIT_S * 0.9, "{took:?}");
    assert!(within_the_limit(took), "{took:?}");
}

#[test]
fn check_takes_urls_and_their_data_files_as_urls() {
    if !slow_or_skip("check_takes_urls_and_their_data_files_as_urls") {
        return;
    }
    if !nginx_or_skip("check_takes_urls_and_their_data_files_as_urls") {
        return;
    }
    let dir = fixture("check");
    let nginx = Nginx::start(&dir);
    let local = |n: &str| dir.join(n).display().to_string();
    // Each check of URLs gives what the same check of the files gives
    // (data files beside a remote program are not looked for, so the
    // local runs leave them out too).
    let cases: [(&[&str], i32); 5] = [
        (&["missing_ops.pte"], 1),
        (&["missing_ops.bpte"], 1),
        (&["external.pte"], 1),
        (&["external.pte", "external.ptd"], 0),
        (&["unaligned_ext.pte", "unaligned_ext.ptd"], 0),
    ];
    for (files, code) in cases {
        let args = |at: &dyn Fn(&str) -> String| {
            let mut a = vec!["check".to_owned(), "--json".to_owned()];
            a.push("--no-auto-data".to_owned());
            for d in &files[1..] {
                a.extend(["--data".to_owned(), at(d)]);
            }
            a.push(at(files[0]));
            a
        };
        let run = |a: Vec<String>| {
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            ptefs_with(&a, &[])
        };
        let remote = run(args(&|n| nginx.url(n)));
        let here = run(args(&|n| local(n)));
        assert_eq!(remote.status.code(), Some(code), "{files:?}: {remote:?}");
        assert_eq!(here.status.code(), Some(code), "{files:?}: {here:?}");
        // The same verdict, data files named by their last component.
        let strip = |o: &Output| {
            let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            v["file"].take();
            for d in v["data"].as_array_mut().unwrap() {
                *d = d.as_str().unwrap().rsplit('/').next().unwrap().into();
            }
            for w in v["warnings"].as_array_mut().unwrap() {
                let why = w["why"].as_str().unwrap();
                w["why"] = why
                    .replace(&nginx.url(""), "")
                    .replace(&local(""), "")
                    .into();
            }
            v
        };
        assert_eq!(strip(&remote), strip(&here), "{files:?}");
    }
}

/// The programs `scripts/gen-fleet.sh` writes, with the same writer:
/// `fleet-<i>.pte`, 8 float tensors of 8 KiB, the last of pattern
/// `1000 + i`.
fn fleet_program(i: u64) -> Vec<u8> {
    use ptefs::schema::ScalarType;
    use writer::{Bytes, Data, Program, Tensor, Value};
    let values = (0..8u64)
        .map(|t| {
            let seed = if t == 7 { 1000 + i } else { t };
            let data = Data::Constant(Bytes::Pattern { len: 8192, seed });
            Value::Tensor(
                Tensor::new(ScalarType::FLOAT, &[2048], data).named(&format!("layers.{t}.weight")),
            )
        })
        .collect();
    Program::forward(values).to_bytes()
}

/// `ptefs index` of a prefix of 1,000 programs in moto's S3 writes a row
/// for each, reading by ranges only: per file, the pages of its flatbuffer
/// and 1 % of the file at most; and `-o` may be a prefix as well.
#[test]
fn index_lists_a_prefix_of_a_thousand_programs_and_reads_each_by_ranges() {
    if !runs(
        "index_lists_a_prefix_of_a_thousand_programs_and_reads_each_by_ranges",
        Needs::Moto,
    ) {
        return;
    }
    const PAGE: u64 = 4096;
    let moto = Moto::start("fleet");
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("programs");
    std::fs::create_dir(&local).unwrap();
    for i in 0..1000 {
        std::fs::write(local.join(format!("fleet-{i:04}.pte")), fleet_program(i)).unwrap();
    }
    moto.boto(&format!(
        "import os\nd = {:?}\nfor n in sorted(os.listdir(d)):\n    s3.put_object(Bucket='fleet', Key='models/' + n, Body=open(os.path.join(d, n), 'rb').read())",
        local.display().to_string()
    ));
    let env = moto.env();
    let cat = dir.path().join("catalog");
    let out = ptefs_with(
        &[
            "index",
            "s3://fleet/models/",
            "-o",
            cat.to_str().unwrap(),
            "--jobs",
            "4",
        ],
        &env,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("1000 files listed, 1000 indexed (0 could not be read)"),
        "{err}"
    );
    // The same rows, read back with the Parquet reader, as the local
    // files give, but for where they came from.
    let files = crate::index::rows(&cat, "files");
    assert_eq!(files.len(), 1000);
    for f in &files {
        let source = f["source"].as_str().unwrap();
        let name = source.strip_prefix("s3://fleet/models/").unwrap();
        let bytes = std::fs::read(local.join(name)).unwrap();
        let size = bytes.len() as u64;
        assert_eq!(f["size"], size, "{source}");
        assert!(f["etag"].is_string(), "{source}");
        // The extended header: program size at bytes 16..24.
        assert_eq!(&bytes[8..12], b"eh00", "{source}");
        let program_end = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
        assert!(
            program_end < size / 4,
            "{source}: the flatbuffer ends at {program_end}"
        );
        let budget = program_end.div_ceil(PAGE) * PAGE + size / 100;
        let fetched = f["fetched"].as_u64().unwrap();
        assert!(
            fetched > 0 && fetched <= budget,
            "{source}: {fetched} of {size} bytes fetched, budget {budget}"
        );
    }
    let tensors = crate::index::rows(&cat, "tensors");
    assert_eq!(tensors.len(), 8000);
    // A second run lists the prefix again and finds nothing to do; the
    // catalog may itself be a prefix.
    let out = ptefs_with(
        &["index", "s3://fleet/models/", "-o", cat.to_str().unwrap()],
        &env,
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("1000 unchanged"));
    let some = local.join("fleet-0007.pte");
    let out = ptefs_with(
        &["index", some.to_str().unwrap(), "-o", "s3://fleet/catalog/"],
        &env,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = moto.boto("print(sorted(o['Key'] for o in s3.list_objects_v2(Bucket='fleet', Prefix='catalog/')['Contents']))");
    for table in ["files", "tensors", "operators", "delegates", "checks"] {
        assert!(
            listed.contains(&format!("'catalog/{table}/part-")),
            "{listed}"
        );
    }
    assert!(!listed.contains(".tmp"), "{listed}");
    let out = ptefs_with(
        &["index", some.to_str().unwrap(), "-o", "s3://fleet/catalog/"],
        &env,
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 unchanged"));
}

#[test]
fn index_of_urls_listed_alone_skips_what_has_not_changed_since() {
    let test = "index_of_urls_listed_alone_skips_what_has_not_changed_since";
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    for f in ["mlp.pte", "add.pte"] {
        std::fs::copy(fixture(f), served.join(f)).unwrap();
    }
    let Some(nginx) = nginx_for(test, &served) else {
        return;
    };
    let list = dir.path().join("urls.txt");
    std::fs::write(
        &list,
        format!("{}\n{}\n", nginx.url("mlp.pte"), nginx.url("add.pte")),
    )
    .unwrap();
    let cat = dir.path().join("catalog");
    let index = || {
        let list = format!("@{}", list.display());
        ptefs_run(["index", list.as_str(), "-o", cat.to_str().unwrap()])
    };
    let first = index();
    assert_eq!(first.code, 0, "{}", first.err);
    assert!(
        first.err.contains("2 files listed, 2 indexed"),
        "{}",
        first.err
    );
    // Asked by HEAD, the server says nothing changed: nothing is read again.
    let again = index();
    assert!(
        again.err.contains("2 files listed, 0 indexed"),
        "{}",
        again.err
    );
    assert!(again.err.contains("2 unchanged"), "{}", again.err);
    // A changed object is indexed again (a new size and time).
    std::fs::copy(fixture("multi_method.pte"), served.join("mlp.pte")).unwrap();
    let changed = index();
    assert!(
        changed.err.contains("2 files listed, 1 indexed"),
        "{}",
        changed.err
    );
}
