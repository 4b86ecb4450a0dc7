//! Data files found by themselves: the `.ptd` files beside a program that
//! hold its missing external tensors are attached, whatever their names;
//! `--no-auto-data` turns it off.

use crate::common;
use crate::writer;

use std::path::PathBuf;

use common::*;
use ptefs::schema::ScalarType;
use ptefs::view::{Request, View};
use writer::{Bytes, Data, DataFile, Program, Tensor, Value as V};

fn open(input: PathBuf, auto_data: bool) -> View {
    View::open(&Request {
        inputs: vec![input],
        auto_data,
        ..Request::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_ptd_beside_the_program_is_attached_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(
        dir.path(),
        "model.pte",
        &std::fs::read(fixture("mlp_external.pte")).unwrap(),
    );
    let ptd = std::fs::read(fixture("mlp_external.ptd")).unwrap();
    write_file(dir.path(), "foundation_weights.ptd", &ptd);
    // Neither a data file nor one with these keys: left alone.
    write_file(dir.path(), "notes.txt", b"not a model");
    std::fs::copy(
        fixture("xnnpack_external.ptd"),
        dir.path().join("other.ptd"),
    )
    .unwrap();
    let v = open(pte.clone(), true);
    assert_eq!(v.notes.len(), 1, "{:?}", v.notes);
    assert!(
        v.notes[0].starts_with("model.pte: attached foundation_weights.ptd (found beside it) for 4 external tensors: fc1.weight"),
        "{}",
        v.notes[0]
    );
    let given = view_of(
        &[fixture("mlp_external.pte")],
        &[fixture("mlp_external.ptd")],
    );
    for name in ["0.fc1.weight.bin", "3.fc2.bias.bin"] {
        let path = format!("methods/forward/tensors/{name}");
        assert_eq!(read(&v, &path), read(&given, &path), "{path}");
    }
    assert!(v.tree.warnings.is_empty(), "{:?}", v.tree.warnings);
    // Off: the tensors are missing, as before.
    let off = open(pte.clone(), false);
    assert!(off.notes.is_empty());
    assert!(
        off.tree
            .resolve("methods/forward/tensors/0.fc1.weight.bin")
            .is_none()
    );
    let out = ptefs()
        .args(["ls", "--no-auto-data"])
        .arg(&pte)
        .arg("methods/forward/tensors")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "index.json\n");
    let out = ptefs()
        .arg("ls")
        .arg(&pte)
        .arg("methods/forward/tensors")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("0.fc1.weight.bin"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ptefs: note: model.pte: attached foundation_weights.ptd"),
        "{err}"
    );
}

#[test]
fn several_shards_in_one_directory_each_supply_their_keys() {
    let tensor =
        |key: &str| V::Tensor(Tensor::new(ScalarType::FLOAT, &[2], Data::External(1)).named(key));
    let p = Program::forward(vec![tensor("a.w"), tensor("b.w"), tensor("c.w")]);
    let shard = |entries: &[(&str, u8)]| {
        DataFile {
            entries: entries
                .iter()
                .map(|(k, b)| (k.to_string(), None, Bytes::Owned(vec![*b; 8])))
                .collect(),
        }
        .to_bytes()
    };
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "m.pte", &p.to_bytes());
    write_file(
        dir.path(),
        "vulkan_constants_1f2e.ptd",
        &shard(&[("a.w", 1), ("b.w", 2)]),
    );
    write_file(
        dir.path(),
        "vulkan_constants_9c0d.ptd",
        &shard(&[("c.w", 3)]),
    );
    let v = open(pte, true);
    assert_eq!(v.notes.len(), 2, "{:?}", v.notes);
    assert!(
        v.notes[0].contains("vulkan_constants_1f2e.ptd")
            && v.notes[0].contains("2 external tensors: a.w, b.w")
    );
    assert!(
        v.notes[1].contains("vulkan_constants_9c0d.ptd")
            && v.notes[1].contains("1 external tensor: c.w")
    );
    assert_eq!(read(&v, "methods/forward/tensors/0.a.w.bin"), vec![1; 8]);
    assert_eq!(read(&v, "methods/forward/tensors/2.c.w.bin"), vec![3; 8]);
    assert!(v.tree.warnings.is_empty(), "{:?}", v.tree.warnings);
}

/// Two data files beside the program holding the same keys (its weights
/// and fine-tuned ones packed beside them): the program's own
/// `<stem>.ptd` is taken, never the first by name; without one neither
/// is, and a note names both and says `--data` chooses. A shard holding
/// keys no other file holds is attached either way.
#[test]
fn of_several_ptd_holding_the_same_keys_the_programs_own_is_taken_or_none() {
    let tensor =
        |key: &str| V::Tensor(Tensor::new(ScalarType::FLOAT, &[2], Data::External(1)).named(key));
    let p = Program::forward(vec![tensor("a.w"), tensor("b.w"), tensor("c.w")]);
    let file = |entries: &[(&str, u8)]| {
        DataFile {
            entries: entries
                .iter()
                .map(|(k, b)| (k.to_string(), None, Bytes::Owned(vec![*b; 8])))
                .collect(),
        }
        .to_bytes()
    };
    let dir = tempfile::tempdir().unwrap();
    let pte = write_file(dir.path(), "xnnpack.pte", &p.to_bytes());
    write_file(dir.path(), "xnnpack.ptd", &file(&[("a.w", 1), ("b.w", 2)]));
    write_file(
        dir.path(),
        "finetuned.ptd",
        &file(&[("a.w", 7), ("b.w", 8)]),
    );
    write_file(dir.path(), "shard.ptd", &file(&[("c.w", 3)]));
    let v = open(pte.clone(), true);
    assert_eq!(read(&v, "methods/forward/tensors/0.a.w.bin"), vec![1; 8]);
    assert_eq!(read(&v, "methods/forward/tensors/1.b.w.bin"), vec![2; 8]);
    assert_eq!(read(&v, "methods/forward/tensors/2.c.w.bin"), vec![3; 8]);
    assert_eq!(v.notes.len(), 2, "{:?}", v.notes);
    assert!(
        v.notes[0].starts_with("xnnpack.pte: attached xnnpack.ptd (found beside it)"),
        "{:?}",
        v.notes
    );
    // Without its own: neither rival, and a note saying so.
    let model = dir.path().join("model.pte");
    std::fs::rename(&pte, &model).unwrap();
    let v = open(model.clone(), true);
    assert!(
        v.tree
            .resolve("methods/forward/tensors/0.a.w.bin")
            .is_none()
    );
    assert_eq!(read(&v, "methods/forward/tensors/2.c.w.bin"), vec![3; 8]);
    assert!(
        v.notes.iter().any(|n| n.starts_with(
            "model.pte: attached none of finetuned.ptd, xnnpack.ptd (found beside it): \
             each holds 2 external tensors: a.w, b.w, and none is named model.ptd; \
             --data names the one to attach"
        )),
        "{:?}",
        v.notes
    );
    // --data chooses.
    let chosen = View::open(&Request {
        inputs: vec![model],
        data: vec![dir.path().join("finetuned.ptd")],
        auto_data: true,
        ..Request::default()
    })
    .unwrap();
    assert_eq!(
        read(&chosen, "methods/forward/tensors/0.a.w.bin"),
        vec![7; 8]
    );
    assert_eq!(
        read(&chosen, "methods/forward/tensors/2.c.w.bin"),
        vec![3; 8]
    );
}
