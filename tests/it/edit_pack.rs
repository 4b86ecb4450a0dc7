//! `ptefs pack`: the data file a program expects. Packing a data file's
//! own tensors for its program gives it back byte for byte; new values from
//! safetensors land in exactly the tensors' bytes; what does not fit the
//! program's declarations is refused, naming both sides.

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

use crate::common::*;

fn pack(program: &str, sources: &[&Path], extra: &[&str], out: &Path) -> Output {
    ptefs()
        .arg("pack")
        .arg("--for")
        .arg(fixture(program))
        .args(sources)
        .args(extra)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const MLP_KEYS: [&str; 4] = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"];

/// The float32 values of `mlp_external.ptd`'s tensor `key`.
fn floats(v: &ptefs::view::View, key: &str) -> Vec<f32> {
    read(v, &format!("tensors/{key}.bin"))
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A safetensors file of `tensors` (name, dtype, shape, bytes).
fn safetensors(path: &Path, tensors: &[(String, safetensors::Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| {
            let v = safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap();
            (n.clone(), v)
        })
        .collect();
    safetensors::serialize_to_file(views, None::<HashMap<String, String>>, path).unwrap();
}

#[test]
fn a_data_files_own_tensors_pack_to_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["mlp_external", "xnnpack_external"] {
        let ptd = fixture(&format!("{name}.ptd"));
        let out = dir.path().join(format!("{name}.ptd"));
        let o = pack(&format!("{name}.pte"), &[&ptd], &[], &out);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&ptd).unwrap(),
            "{name}"
        );
    }
    // The tree's .npy files, extracted to a directory, pack to it too.
    let v = view("mlp_external.ptd");
    let npys = dir.path().join("npys");
    std::fs::create_dir(&npys).unwrap();
    for k in MLP_KEYS {
        write_file(
            &npys,
            &format!("{k}.npy"),
            &read(&v, &format!("tensors/{k}.npy")),
        );
    }
    let out = dir.path().join("from_npys.ptd");
    let o = pack("mlp_external.pte", &[&npys], &[], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(fixture("mlp_external.ptd")).unwrap()
    );
}

#[test]
fn a_checkpoints_values_fill_exactly_the_tensors_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let v = view("mlp_external.ptd");
    // New values under the checkpoint's own names (a `model.` prefix), in
    // another order than the program's.
    let mut tensors = Vec::new();
    for k in MLP_KEYS.iter().rev() {
        let new: Vec<u8> = floats(&v, k)
            .iter()
            .flat_map(|x| (x * 2.0 + 1.0).to_le_bytes())
            .collect();
        let shape = json(&v, "tensors/index.json")
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == *k)
            .map(|e| serde_json::from_value::<Vec<usize>>(e["sizes"].clone()).unwrap())
            .unwrap();
        tensors.push((format!("model.{k}"), safetensors::Dtype::F32, shape, new));
    }
    let st = dir.path().join("ft.safetensors");
    safetensors(&st, &tensors);
    let out = dir.path().join("ft.ptd");
    let o = pack("mlp_external.pte", &[&st], &[], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let old = std::fs::read(fixture("mlp_external.ptd")).unwrap();
    let new = std::fs::read(&out).unwrap();
    assert_eq!(old.len(), new.len());
    let w = view_of(std::slice::from_ref(&out), &[]);
    let mut covered = vec![false; old.len()];
    for (name, _, _, bytes) in &tensors {
        let k = name.strip_prefix("model.").unwrap();
        assert_eq!(&read(&w, &format!("tensors/{k}.bin")), bytes, "{k}");
        let ino = w.tree.resolve(&format!("tensors/{k}.bin")).unwrap();
        let at: usize = w
            .tree
            .xattrs(ino)
            .into_iter()
            .find(|(n, _)| *n == "user.ptefs.offset")
            .map(|(_, o)| String::from_utf8(o).unwrap().parse().unwrap())
            .unwrap();
        covered[at..at + bytes.len()]
            .iter_mut()
            .for_each(|c| *c = true);
    }
    // Every byte outside the tensors is the exporter's.
    for (i, (a, b)) in old.iter().zip(&new).enumerate() {
        assert!(covered[i] || a == b, "byte {i} differs outside the tensors");
    }
    // The program reads the new values through its external tensors.
    let p = view_of(&[fixture("mlp_external.pte")], &[out]);
    assert_eq!(
        read(&p, "methods/forward/tensors/0.fc1.weight.bin"),
        tensors[3].3
    );
}

#[test]
fn another_dtype_needs_cast_and_a_missing_key_or_shape_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let v = view("mlp_external.ptd");
    let half = |x: f32| ptefs::edit::cast::f32_to_f16(x).to_le_bytes();
    let shapes: [Vec<usize>; 4] = [vec![32, 16], vec![32], vec![8, 32], vec![8]];
    let tensors: Vec<_> = MLP_KEYS
        .iter()
        .zip(&shapes)
        .map(|(k, s)| {
            let b: Vec<u8> = floats(&v, k).into_iter().flat_map(half).collect();
            (k.to_string(), safetensors::Dtype::F16, s.clone(), b)
        })
        .collect();
    let st = dir.path().join("half.safetensors");
    safetensors(&st, &tensors);
    let out = dir.path().join("out.ptd");
    let o = pack("mlp_external.pte", &[&st], &[], &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("fc1.weight: ")
            && stderr(&o).contains(
                "is HALF [32, 16]; the program declares FLOAT [32, 16] (--cast converts it)"
            ),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    let o = pack("mlp_external.pte", &[&st], &["--cast"], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    // Widening float16 to float32 is exact: no value changes.
    assert!(
        stderr(&o).contains("fc1.weight: cast from HALF to FLOAT: 0 of 512 values changed"),
        "{}",
        stderr(&o)
    );
    let w = view_of(std::slice::from_ref(&out), &[]);
    for (k, _, _, b) in &tensors {
        let want: Vec<f32> = b
            .chunks_exact(2)
            .map(|c| ptefs::format::scalar::f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
            .collect();
        assert_eq!(floats(&w, k), want, "{k}");
    }
    std::fs::remove_file(&out).unwrap();
    // A key missing, and a shape that is not the declared one.
    let short = dir.path().join("short.safetensors");
    safetensors(&short, &tensors[..3]);
    let o = pack("mlp_external.pte", &[&short], &["--cast"], &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("fc2.bias: the program needs this key and no input holds it"),
        "{}",
        stderr(&o)
    );
    let mut bad = tensors.clone();
    bad[1].2 = vec![16, 2];
    let bad_st = dir.path().join("bad.safetensors");
    safetensors(&bad_st, &bad);
    let o = pack("mlp_external.pte", &[&bad_st], &["--cast"], &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("fc1.bias: ")
            && stderr(&o).contains("is HALF [16, 2]; the program declares FLOAT [32]"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

/// docs/edit.md packs `tests/fixtures/edit/checkpoints/finetuned.safetensors`
/// and `finetuned-fp16.safetensors` for `edit/external.pte`: its data file's
/// values plus one, as float32 and as float16, under `model.`-prefixed
/// names (`PTEFS_DOCS_WRITE=1` writes them again).
#[test]
fn the_documented_checkpoints_are_these() {
    let v = view("edit/external.ptd");
    let index = json(&v, "tensors/index.json");
    let shape = |k: &str| -> Vec<usize> {
        let e = index.as_array().unwrap().iter().find(|e| e["key"] == k);
        serde_json::from_value(e.unwrap()["sizes"].clone()).unwrap()
    };
    let half = |x: f32| ptefs::edit::cast::f32_to_f16(x).to_le_bytes();
    let of = |dtype, cast: &dyn Fn(f32) -> Vec<u8>| -> Vec<_> {
        MLP_KEYS
            .iter()
            .map(|k| {
                let b = floats(&v, k).into_iter().flat_map(|x| cast(x + 1.0));
                (format!("model.{k}"), dtype, shape(k), b.collect())
            })
            .collect()
    };
    let dir = fixture("edit/checkpoints");
    let files = [
        (
            "finetuned.safetensors",
            of(safetensors::Dtype::F32, &|x| x.to_le_bytes().to_vec()),
        ),
        (
            "finetuned-fp16.safetensors",
            of(safetensors::Dtype::F16, &|x| half(x).to_vec()),
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    for (name, tensors) in files {
        let made = tmp.path().join(name);
        safetensors(&made, &tensors);
        let want = std::fs::read(&made).unwrap();
        if std::env::var("PTEFS_DOCS_WRITE").as_deref() == Ok("1") {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), &want).unwrap();
        }
        assert!(
            std::fs::read(dir.join(name)).unwrap() == want,
            "{name} is not the checkpoint this test makes"
        );
    }
}
