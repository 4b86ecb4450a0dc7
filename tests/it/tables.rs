//! `tensors/`, `values/` and `constants/` are computed from rows rather
//! than stored: listed in name order from any offset, looked up by name,
//! linked across methods and directories, the same through a mount.

use crate::common;
use crate::writer;

use std::collections::{BTreeSet, HashMap};

use common::mounted::*;
use common::*;
use ptefs::schema::ScalarType;
use ptefs::tree::ROOT;
use writer::{Chain, Data, Instr, Method, Program, Tensor, Value as V};

/// Two methods over many constants: values interleaved with integers (so
/// value indices are sparse), every fifth tensor anonymous and used by a
/// kernel (so it gets an alias), one name of 300 bytes, and the second
/// method sharing some of the first's bytes.
fn program() -> Vec<u8> {
    let tensor = |i: usize| {
        let mut bytes = vec![i as u8, (i >> 8) as u8];
        bytes.extend((2..16).map(|j| (i + j) as u8));
        let t = Tensor::new(ScalarType::FLOAT, &[2, 2], Data::Constant(bytes.into()));
        match i {
            _ if i.is_multiple_of(5) => t,
            7 => t.named(&"w".repeat(300)),
            _ => t.named(&format!("layers.{i}.weight")),
        }
    };
    let mut values = Vec::new();
    for i in 0..600 {
        values.push(V::Tensor(tensor(i)));
        if i.is_multiple_of(3) {
            values.push(V::Int(i as i64));
        }
    }
    let uses: Vec<i32> = (0..values.len() as i32)
        .filter(|&v| matches!(&values[v as usize], V::Tensor(t) if t.fqn.is_none()))
        .collect();
    let first = Method {
        chains: vec![Chain {
            inputs: vec![],
            outputs: vec![],
            instructions: uses
                .iter()
                .map(|&v| Instr::Kernel {
                    op: 0,
                    args: vec![v],
                })
                .collect(),
            stacktrace: None,
        }],
        operators: vec![("aten::relu".into(), "out".into())],
        ..Method::new("forward", values)
    };
    let shared: Vec<V> = (0..40).map(|i| V::Tensor(tensor(i * 3))).collect();
    Program {
        methods: vec![first, Method::new("second", shared)],
        ..Program::default()
    }
    .to_bytes()
}

#[test]
fn computed_directories_list_look_up_and_link() {
    let (_d, v) = view_bytes("many.pte", &program());
    for method in ["forward", "second"] {
        let base = format!("methods/{method}");
        let listed = ls(&v, &format!("{base}/tensors"));
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(listed, sorted, "{base}/tensors in name order");
        // index.json names every file of the directory, and nothing else.
        let index = json(&v, &format!("{base}/tensors/index.json"));
        let mut named = BTreeSet::from(["index.json".to_owned()]);
        for e in index.as_array().unwrap() {
            for key in ["name", "npy"] {
                named.extend(e[key].as_str().map(str::to_owned));
            }
            named.extend(e["alias"].as_str().map(str::to_owned));
            let bin = e["name"].as_str().unwrap();
            let ino = v.tree.resolve(&format!("{base}/tensors/{bin}")).unwrap();
            let value = e["value_index"].as_u64().unwrap();
            assert_eq!(
                v.tree.resolve(&format!("{base}/values/{value}")),
                Some(ino),
                "{base}/values/{value}"
            );
            assert_eq!(
                v.tree.resolve(&format!("{base}/values/0{value}")),
                None,
                "a value index is not padded"
            );
            assert_eq!(
                read(&v, &format!("{base}/tensors/{bin}")).len() as u64,
                e["nbytes"].as_u64().unwrap()
            );
        }
        assert_eq!(named, listed.iter().cloned().collect(), "{base}");
        for name in &listed {
            assert!(name.len() <= 255, "{name}");
            assert!(v.tree.resolve(&format!("{base}/tensors/{name}")).is_some());
        }
        let values = ls(&v, &format!("{base}/values"));
        let mut by_text = values.clone();
        by_text.sort();
        assert_eq!(values, by_text, "{base}/values in name order");
    }
    let forward = json(&v, "methods/forward/tensors/index.json");
    let aliases = forward
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["alias"].is_string())
        .count();
    assert_eq!(aliases, 120, "every anonymous tensor used by a kernel");
    // The second method's tensors are the first's bytes: one file each,
    // named in both methods, in values/ and in constants/.
    let a = v
        .tree
        .resolve("methods/second/tensors/01.layers.3.weight.bin")
        .unwrap();
    let b = v
        .tree
        .resolve("methods/forward/tensors/004.layers.3.weight.bin")
        .unwrap();
    assert_eq!(a, b);
    let mut names: HashMap<u64, u32> = HashMap::new();
    for (_, ino) in v.tree.walk(ROOT) {
        if !v.tree.is_dir(ino) {
            *names.entry(ino).or_default() += 1;
        }
    }
    assert_eq!(names[&a], v.tree.nlink(a));
    assert_eq!(
        v.tree.nlink(a),
        5,
        "forward: tensors, values; second: both; constants"
    );
    for (ino, n) in names {
        assert_eq!(v.tree.nlink(ino), n, "{}", v.tree.path(ino));
    }
    // A file per buffer, and index.json.
    assert_eq!(ls(&v, "constants").len(), 601);
}

#[test]
fn a_mount_lists_computed_directories_in_full() {
    if !fuse_or_skip("a_mount_lists_computed_directories_in_full") {
        return;
    }
    let bytes = program();
    let (d, v) = view_bytes("many.pte", &bytes);
    let m = Mounted::new(&[d.path().join("many.pte").as_os_str()]);
    for dir in [
        "methods/forward/tensors",
        "methods/forward/values",
        "methods/second/values",
        "constants",
    ] {
        let mut mounted: Vec<String> = std::fs::read_dir(m.path(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        mounted.sort();
        let mut offline = ls(&v, dir);
        offline.sort();
        assert_eq!(mounted, offline, "{dir}");
        for name in offline.iter().step_by(37) {
            let path = format!("{dir}/{name}");
            assert_eq!(
                std::fs::read(m.path(&path)).unwrap(),
                read(&v, &path),
                "{path}"
            );
        }
    }
}
