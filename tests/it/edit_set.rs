//! `ptefs set`: a new file with stored tensors replaced. Every byte
//! outside the tensors set equals the input's, every name of the same
//! stored bytes reads the new ones, and what is not a stored tensor is
//! refused with a message naming it.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common::*;

fn set(file: &Path, edits: &[String], out: &Path) -> Output {
    ptefs()
        .arg("set")
        .arg(file)
        .args(edits)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Byte ranges where `a` and `b` differ (equal lengths).
fn differing(a: &[u8], b: &[u8]) -> Vec<(usize, usize)> {
    assert_eq!(a.len(), b.len());
    let mut out: Vec<(usize, usize)> = Vec::new();
    for i in (0..a.len()).filter(|&i| a[i] != b[i]) {
        match out.last_mut() {
            Some((_, end)) if *end == i => *end = i + 1,
            _ => out.push((i, i + 1)),
        }
    }
    out
}

/// The value of user.ptefs.offset of `path` in `v`.
fn offset_of(v: &ptefs::view::View, path: &str) -> usize {
    let ino = v.tree.resolve(path).unwrap();
    let x = v.tree.xattrs(ino);
    let o = x.iter().find(|(k, _)| *k == "user.ptefs.offset").unwrap();
    std::str::from_utf8(&o.1).unwrap().parse().unwrap()
}

#[test]
fn every_tensor_set_to_its_own_bytes_gives_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    for (name, glob_dir) in [
        ("mlp.pte", "methods/forward/tensors"),
        ("mlp_external.ptd", "tensors"),
        (
            "quant_xnnpack.pte",
            "methods/forward/delegates/0-XnnpackBackend/xnnpack/weights",
        ),
    ] {
        let v = view(name);
        let mut edits = Vec::new();
        for entry in ls(&v, glob_dir) {
            let path = format!("{glob_dir}/{entry}");
            if !(entry.ends_with(".npy") || entry.ends_with(".bin")) {
                continue;
            }
            let bytes = read(&v, &path);
            let src = write_file(dir.path(), &format!("{}.{entry}", edits.len()), &bytes);
            edits.push(format!("{path}={}", src.display()));
        }
        assert!(edits.len() >= 2, "{name}: {edits:?}");
        let out = dir.path().join(format!("same.{name}"));
        let o = set(&fixture(name), &edits, &out);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(fixture(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn a_changed_tensor_changes_only_its_bytes_and_every_alias_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let v = view("mlp.pte");
    let path = "methods/forward/tensors/0.npy";
    let npy = read(&v, path);
    let header = npy.len() - npy_payload(&npy).len();
    let mut new = npy.clone();
    // Every float of the weight negated: each value's sign byte flips.
    for f in new[header..].chunks_exact_mut(4) {
        f[3] ^= 0x80;
    }
    let src = write_file(dir.path(), "neg.npy", &new);
    let out = dir.path().join("neg.pte");
    let o = set(
        &fixture("mlp.pte"),
        &[format!("{path}={}", src.display())],
        &out,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let old = std::fs::read(fixture("mlp.pte")).unwrap();
    let got = std::fs::read(&out).unwrap();
    let at = offset_of(&v, path);
    let n = new.len() - header;
    // The sign byte of each of the 512 floats, and nothing else.
    let want: Vec<(usize, usize)> = (0..n / 4)
        .map(|i| (at + 4 * i + 3, at + 4 * i + 4))
        .collect();
    assert_eq!(differing(&old, &got), want);
    let w = view_of(std::slice::from_ref(&out), &[]);
    assert_eq!(read(&w, path), new);
    // The same stored bytes through the tensor's other names.
    assert_eq!(read(&w, "methods/forward/tensors/0.bin"), &new[header..]);
    let alias = ls(&w, "methods/forward/tensors")
        .into_iter()
        .find(|n| n.starts_with("0.") && n.ends_with(".bin") && n != "0.bin")
        .unwrap();
    assert_eq!(
        read(&w, &format!("methods/forward/tensors/{alias}")),
        &new[header..]
    );
    assert_eq!(read(&w, "constants/1.bin"), &new[header..]);
}

#[test]
fn raw_bytes_from_stdin_set_a_data_file_entry() {
    let dir = tempfile::tempdir().unwrap();
    let v = view("mlp_external.ptd");
    let raw: Vec<u8> = (0..read(&v, "tensors/fc1.bias.bin").len())
        .map(|i| i as u8)
        .collect();
    let out = dir.path().join("new.ptd");
    let mut child = ptefs()
        .arg("set")
        .arg(fixture("mlp_external.ptd"))
        .arg("tensors/fc1.bias.bin=-")
        .arg("-o")
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&raw).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let at = offset_of(&v, "tensors/fc1.bias.bin");
    let old = std::fs::read(fixture("mlp_external.ptd")).unwrap();
    let got = std::fs::read(&out).unwrap();
    assert_eq!(&got[at..at + raw.len()], &raw[..]);
    assert_eq!(&got[..at], &old[..at]);
    assert_eq!(&got[at + raw.len()..], &old[at + raw.len()..]);
    // The program beside it reads the new bias through its external tensor.
    let p = view_of(&[fixture("mlp_external.pte")], &[out]);
    assert_eq!(read(&p, "methods/forward/tensors/1.fc1.bias.bin"), raw);
}

#[test]
fn what_is_not_a_stored_tensor_or_does_not_fit_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let v = view("mlp.pte");
    let w0 = write_file(
        dir.path(),
        "w0.npy",
        &read(&v, "methods/forward/tensors/0.npy"),
    );
    let short = write_file(dir.path(), "short.bin", &[0; 12]);
    let mut fortran = read(&v, "methods/forward/tensors/0.npy");
    let at = fortran.windows(5).position(|w| w == b"False").unwrap();
    fortran[at..at + 5].copy_from_slice(b"True ");
    let fortran = write_file(dir.path(), "fortran.npy", &fortran);
    let mut other = read(&v, "methods/forward/tensors/0.bin");
    other[0] ^= 1;
    let other = write_file(dir.path(), "other.bin", &other);
    let out = dir.path().join("out.pte");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![format!("methods/forward/code.txt={}", w0.display())],
            "is rendered",
        ),
        (
            vec![format!(
                "methods/forward/tensors/index.json={}",
                w0.display()
            )],
            "is rendered",
        ),
        (
            vec![format!("segments/0.bin={}", w0.display())],
            "not one tensor",
        ),
        (
            vec![format!("methods/forward={}", w0.display())],
            "is a directory",
        ),
        (
            vec![format!("methods/forward/tensors/1.npy={}", w0.display())],
            "is dtype <f4 shape (32, 16); methods/forward/tensors/1.npy is dtype <f4 shape (32,)",
        ),
        (
            vec![format!("methods/forward/tensors/1.bin={}", w0.display())],
            "is dtype <f4 shape (32, 16); methods/forward/tensors/1.bin is FLOAT [32]",
        ),
        (
            vec![format!("methods/forward/tensors/0.bin={}", short.display())],
            "holds 12 bytes of data; methods/forward/tensors/0.bin holds 2048",
        ),
        (
            vec![format!(
                "methods/forward/tensors/0.npy={}",
                fortran.display()
            )],
            "differs byte for byte",
        ),
        (
            vec![
                format!("methods/forward/tensors/0.bin={}", w0.display()),
                format!("constants/1.bin={}", other.display()),
            ],
            "are the same stored bytes",
        ),
    ];
    for (edits, says) in cases {
        let o = set(&fixture("mlp.pte"), &edits, &out);
        assert_eq!(o.status.code(), Some(2), "{edits:?}");
        assert!(stderr(&o).contains(says), "{edits:?}: {}", stderr(&o));
        assert!(!out.exists(), "{edits:?}");
    }
    let o = set(&fixture("mlp.pte"), &["no/such.bin=x".into()], &out);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no such file in the tree"),
        "{}",
        stderr(&o)
    );
    // No temporary file is left beside the output either.
    let left: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".out.pte.")
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_packages_member_checksums_follow_its_edited_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let v = view("mlp.ptn");
    let path = "tensors/fc1.bias.bin";
    let new: Vec<u8> = read(&v, path).iter().map(|b| b ^ 0x5a).collect();
    let src = write_file(dir.path(), "bias.bin", &new);
    let out = dir.path().join("new.ptn");
    let o = set(
        &fixture("mlp.ptn"),
        &[format!("{path}={}", src.display())],
        &out,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&out).unwrap();
    let ptefs::format::Parsed::Package(p) = ptefs::format::parse(&bytes).unwrap() else {
        panic!("not a package");
    };
    // Every stored member's recorded CRC-32 is that of its bytes now.
    for m in &p.members {
        let crc = crc32fast::hash(m.data.bytes(&bytes));
        assert_eq!(crc, m.crc32, "{}", m.name);
        let local = m.header_offset as usize + 14;
        assert_eq!(&bytes[local..local + 4], &crc.to_le_bytes(), "{}", m.name);
    }
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let w = view_of(std::slice::from_ref(&out), &[]);
    assert_eq!(read(&w, path), new);
}
