//! Offline and mounted answers agree: for every fixture (with its data
//! files), the paths, each path's type, mode, size, link count and
//! `user.ptefs.*` attributes, and each file's bytes are the same whether
//! read through the filesystem core, through a real mount, or printed by
//! `ptefs stat --json`.

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use common::mounted::*;
use common::*;
use ptefs::fs::{FileKind, Fs};
use ptefs::tree::ROOT;
use serde_json::{Value, json};

/// Each fixture shown alone, and the programs with their data files.
fn cases() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let mut cases: Vec<_> = models()
        .into_iter()
        .map(|m| (fixture(&m), Vec::new()))
        .collect();
    for (pte, ptd) in [
        ("mlp_external.pte", "mlp_external.ptd"),
        ("xnnpack_external.pte", "xnnpack_external.ptd"),
    ] {
        cases.push((fixture(pte), vec![fixture(ptd)]));
    }
    cases
}

/// What the core says of every path, in the form the other two give.
fn offline(fs: &Fs) -> BTreeMap<String, Value> {
    fs.walk(ROOT)
        .skip(1)
        .map(|(path, ino)| {
            let a = fs.getattr(ino).unwrap();
            let xattrs: BTreeMap<&str, String> = fs
                .xattrs(ino)
                .unwrap()
                .into_iter()
                .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
                .collect();
            let sha = match a.kind {
                FileKind::RegularFile => json!(sha256(&fs.read_copy(ino, 0, a.size).unwrap())),
                FileKind::Directory => Value::Null,
            };
            let kind = match a.kind {
                FileKind::RegularFile => "regular_file",
                FileKind::Directory => "directory",
            };
            let v = json!({
                "type": kind,
                "mode": format!("{:04o}", a.perm),
                "size": a.size,
                "nlink": a.nlink,
                "ino": a.ino,
                "xattrs": xattrs,
                "sha256": sha,
            });
            (path, v)
        })
        .collect()
}

/// The same, as the kernel answers through a mount.
const MOUNTED: &str = r#"
import hashlib, json, os, stat, sys
root = sys.argv[1]
out = {}
for d, dirs, files in os.walk(root):
    for n in dirs + files:
        p = os.path.join(d, n)
        st = os.lstat(p)
        is_dir = stat.S_ISDIR(st.st_mode)
        x = {k: os.getxattr(p, k).decode() for k in os.listxattr(p)}
        sha = None if is_dir else hashlib.sha256(open(p, "rb").read()).hexdigest()
        out[os.path.relpath(p, root)] = {
            "type": "directory" if is_dir else "regular_file",
            "mode": "%04o" % stat.S_IMODE(st.st_mode),
            "size": 0 if is_dir else st.st_size,
            "nlink": st.st_nlink,
            "ino": st.st_ino,
            "xattrs": x,
            "sha256": sha,
        }
print(json.dumps(out))
"#;

#[test]
fn offline_mounted_and_stat_agree_on_every_fixture() {
    if !fuse_or_skip("offline_mounted_and_stat_agree_on_every_fixture") {
        return;
    }
    for (file, data) in cases() {
        let view = view_of(std::slice::from_ref(&file), &data);
        let fs = Fs::new(view);
        let want = offline(&fs);
        let what = file.display();

        let mut args: Vec<OsString> = vec![file.clone().into()];
        for d in &data {
            args.push("--data".into());
            args.push(d.clone().into());
        }
        let arg_refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let m = Mounted::new(&arg_refs);
        let got: BTreeMap<String, Value> =
            serde_json::from_str(&python(MOUNTED, &[&m.dir])).unwrap();
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{what}: paths"
        );
        for (path, w) in &want {
            assert_eq!(&got[path], w, "{what}: {path}, mounted vs core");
        }

        // `ptefs stat --json` on every path, in one run.
        let mut cmd = ptefs();
        cmd.arg("stat").arg("--json").arg(&file);
        for d in &data {
            cmd.arg("--data").arg(d);
        }
        cmd.args(want.keys());
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), want.len(), "{what}");
        for line in lines {
            let path = line["path"].as_str().unwrap();
            let w = &want[path];
            for key in ["type", "mode", "size", "nlink", "ino", "xattrs"] {
                assert_eq!(line[key], w[key], "{what}: {path}: stat's {key}");
            }
        }
    }
}

#[test]
fn directories_are_sized_zero_and_searchable_where_readable() {
    let fs = Fs::new(view("mlp.pte"));
    for (path, ino) in fs.walk(ROOT) {
        let a = fs.getattr(ino).unwrap();
        match a.kind {
            FileKind::Directory => {
                assert_eq!(a.size, 0, "{path}");
                assert_eq!(a.perm, 0o555, "{path}");
                let subdirs = fs
                    .readdir(ino, 2)
                    .unwrap()
                    .filter(|e| e.kind == FileKind::Directory)
                    .count();
                assert_eq!(a.nlink as usize, 2 + subdirs, "{path}");
            }
            FileKind::RegularFile => assert_eq!(a.perm, 0o444, "{path}"),
        }
    }
}
