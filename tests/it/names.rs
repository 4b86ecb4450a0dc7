//! Served names: at most 255 bytes and unique within their directory,
//! however many entries share one long key.

use crate::common;
use crate::writer;

use std::collections::HashSet;

use common::*;
use ptefs::tree::{ROOT, Tree};
use writer::{Bytes, Program};

/// A program with `n` named blobs under one key of 300 bytes.
fn colliding(n: usize) -> Vec<u8> {
    Program {
        named: (0..n)
            .map(|i| ("k".repeat(300), Bytes::Owned(vec![i as u8])))
            .collect(),
        ..Program::default()
    }
    .to_bytes()
}

#[test]
fn a_thousand_repeats_of_a_long_key_get_short_unique_names() {
    let bytes = colliding(1_010);
    let tree = Tree::from_bytes("long.pte", &bytes).unwrap();
    let dir = tree.resolve("named").unwrap();
    let entries: Vec<_> = tree.entries(dir).unwrap().collect();
    assert_eq!(entries.len(), 1_011, "every blob and index.json");
    let mut seen = HashSet::new();
    for e in &entries {
        let name = &*e.name;
        assert!(name.len() <= 255, "{} bytes: {name}", name.len());
        assert!(seen.insert(name), "{name} twice");
    }
    for (path, _) in tree.walk(ROOT) {
        assert!(path.split('/').all(|c| c.len() <= 255), "{path}");
    }
    // index.json maps each blob to its name and keeps the whole key.
    let d = tempfile::tempdir().unwrap();
    let (_d, v) = view_bytes("long.pte", &bytes);
    let index = json(&v, "named/index.json");
    let index = index.as_array().unwrap();
    assert_eq!(index.len(), 1_010);
    for (i, e) in index.iter().enumerate() {
        assert_eq!(e["key"], "k".repeat(300));
        assert_eq!(
            read(&v, &format!("named/{}", e["name"].as_str().unwrap())),
            [i as u8]
        );
    }
    // Copying the tree out works name by name.
    extract(&v, d.path());
    assert_eq!(
        std::fs::read_dir(d.path().join("named")).unwrap().count(),
        1_011
    );
}

/// The fuzz and mutation seed for this case (fewer repeats, same path).
#[test]
fn stored_seed_matches_its_generator() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions/long-colliding-names.pte");
    if std::env::var_os("PTEFS_WRITE_SEEDS").is_some() {
        std::fs::write(&path, colliding(20)).unwrap();
    }
    assert!(std::fs::read(&path).unwrap() == colliding(20), "stale seed");
}
