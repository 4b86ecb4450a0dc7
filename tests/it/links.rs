//! The same source bytes seen at several paths are one file with several
//! names (hard links), so `du`, `find -samefile` and `diff -r` see one file.

use crate::common;

use std::collections::HashMap;

use common::*;
use ptefs::tree::{Content, ROOT};

#[test]
fn every_name_of_a_file_is_counted() {
    for name in models() {
        let v = view(&name);
        let mut names: HashMap<u64, u32> = HashMap::new();
        for (_, ino) in v.tree.walk(ROOT) {
            if !v.tree.is_dir(ino) {
                *names.entry(ino).or_default() += 1;
            }
        }
        for (ino, n) in names {
            assert_eq!(v.tree.nlink(ino), n, "{name}: {}", v.tree.path(ino));
        }
    }
}

#[test]
fn equal_source_ranges_are_one_file() {
    for name in models() {
        let v = view(&name);
        // (source, offset, len, prefix) -> the inodes serving exactly that.
        let mut by_range: HashMap<(usize, u64, u64, Vec<u8>), Vec<u64>> = HashMap::new();
        for (_, ino) in v.tree.walk(ROOT) {
            let Some(f) = v.tree.file(ino) else {
                continue;
            };
            let key = match &*f.content {
                Content::Source { source, span } => (*source, span.offset, span.len, Vec::new()),
                Content::Prefixed {
                    prefix,
                    source,
                    span,
                } => (*source, span.offset, span.len, prefix.to_vec()),
                // Rendered from the range, so never one file with the above.
                Content::Widened {
                    prefix,
                    source,
                    span,
                } => (
                    *source,
                    span.offset,
                    span.len,
                    [b"widened", &prefix[..]].concat(),
                ),
                Content::Generated(_) | Content::Lazy(_) | Content::Assembled(_) => continue,
            };
            if key.2 > 0 {
                by_range.entry(key).or_default().push(ino);
            }
        }
        for (key, mut inos) in by_range {
            inos.sort();
            inos.dedup();
            // Several files may share a range only where their tensor types
            // differ, which the extended attributes then tell apart.
            if inos.len() > 1 {
                let xattrs: Vec<_> = inos.iter().map(|&i| v.tree.xattrs(i)).collect();
                for (a, b) in xattrs.iter().zip(&xattrs[1..]) {
                    assert_ne!(a, b, "{name}: {key:?} served by {inos:?}");
                }
            }
        }
    }
}

#[test]
fn a_constant_and_its_tensor_are_one_file() {
    let v = view("mlp.pte");
    for (constant, tensor) in [
        ("constants/1.bin", "methods/forward/tensors/0.bin"),
        ("constants/4.bin", "methods/forward/tensors/3.bin"),
    ] {
        let a = v.tree.resolve(constant).unwrap();
        let b = v.tree.resolve(tensor).unwrap();
        assert_eq!(a, b, "{constant} and {tensor}");
        // Also its alias from its first use and `values/<id>`.
        assert_eq!(v.tree.nlink(a), 4);
        assert_eq!(read(&v, constant), read(&v, tensor));
        // The constant's name carries the tensor's type too.
        let x = v.tree.xattrs(a);
        assert!(
            x.iter()
                .any(|(k, v)| *k == "user.ptefs.dtype" && v == b"FLOAT"),
            "{x:?}"
        );
    }
    // A .npy is a different file from its .bin.
    assert_ne!(
        v.tree.resolve("methods/forward/tensors/0.npy"),
        v.tree.resolve("methods/forward/tensors/0.bin")
    );
}
