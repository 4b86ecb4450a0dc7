//! `weights.safetensors`: read by the safetensors crate and by Python's
//! `safetensors` (offline, from `ptefs cat`, through a mount and its
//! memory map) to the bytes of the tree's own tensor files, for every
//! program and data fixture; `pack` and `set --from` round trips; and
//! what happens with odd input.

use crate::common;
use crate::writer;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::mounted::{Mounted, fuse_or_skip};
use common::required::skip_unless;
use common::*;
use ptefs::fs::{Data as Read, Fs};
use ptefs::schema::ScalarType;
use serde_json::Value;
use writer::{Bytes, Data, Method, Program, Tensor, Value as V};

const WEIGHTS: &str = "weights.safetensors";

/// Every program and data file among the fixtures, delegated ones and
/// those with external data included (not the deliberately broken inputs
/// of `edit/` and `check/`).
fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                if name != "edit" && name != "check" {
                    walk(&p, out);
                }
            } else if name.ends_with(".pte") || name.ends_with(".ptd") || name.ends_with(".bpte") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&fixture(""), &mut out);
    out.sort();
    assert!(out.len() >= 30, "{out:?}");
    out
}

/// The whole file, read through the filesystem core in pieces of `chunk`
/// bytes (odd sizes straddle the header and several tensors).
fn read_weights(fs: &Fs, chunk: u64) -> Vec<u8> {
    let ino = fs.resolve(WEIGHTS).unwrap();
    let len = fs.getattr(ino).unwrap().size;
    let mut out = Vec::new();
    while (out.len() as u64) < len {
        let got = fs.read(ino, out.len() as u64, chunk).unwrap();
        assert!(!got.is_empty(), "nothing read at {}", out.len());
        match got {
            Read::Rendered(b) | Read::Mapped(b) => out.extend_from_slice(b),
            Read::Owned(v) => out.extend(v),
        }
    }
    assert_eq!(out.len() as u64, len);
    out
}

/// Checks `bytes` (a `weights.safetensors` of the tree `fs`) with the
/// safetensors crate: every tensor is the bytes of its first tree path,
/// and every tensor file of the tree is in it or left out by name.
/// Returns how many tensors it holds.
fn check_with_crate(fs: &Fs, bytes: &[u8], what: &str) -> usize {
    let st = safetensors::SafeTensors::deserialize(bytes)
        .unwrap_or_else(|e| panic!("{what}: the safetensors crate refuses it: {e}"));
    let (_, header) = safetensors::SafeTensors::read_metadata(bytes).unwrap();
    let meta = header.metadata().as_ref().expect("__metadata__");
    let json = |k: &str| -> Value { serde_json::from_str(&meta[k]).unwrap() };
    let paths = json("ptefs.paths");
    assert_eq!(meta["ptefs.version"], env!("CARGO_PKG_VERSION"));
    // Every fixture has its data files beside it: nothing is missing but
    // the weight vendor/aoti.pte names and its data file lacks on purpose.
    let missing = json("ptefs.missing");
    let missing = missing.as_array().unwrap();
    assert_eq!(meta["ptefs.missing_count"], missing.len().to_string());
    let ghost = what.ends_with("vendor/aoti.pte");
    assert_eq!(missing.len(), usize::from(ghost), "{what}: {missing:?}");
    if ghost {
        assert_eq!(missing[0]["file"], "ghost.bin", "{what}");
    }
    let left_out = json("ptefs.left_out");
    assert_eq!(
        meta["ptefs.left_out_count"],
        left_out.as_array().unwrap().len().to_string()
    );
    let mut listed = BTreeSet::new();
    for (name, view) in st.tensors() {
        let own = paths[&name]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: {name} has no paths"));
        for p in own {
            let p = p.as_str().unwrap();
            listed.insert(p.to_owned());
            let file = fs.read_copy(fs.resolve(p).unwrap(), 0, u64::MAX).unwrap();
            assert!(
                file == view.data(),
                "{what}: {name} is not the bytes of {p}"
            );
        }
        let path = own[0].as_str().unwrap();
        // A bfloat16 `.npy` is widened to float32: the `.bin` is the bytes.
        let npy = (path.strip_suffix(".bin"))
            .filter(|_| view.dtype() != safetensors::Dtype::BF16)
            .map(|s| format!("{s}.npy"));
        if let Some(ino) = npy.and_then(|p| fs.resolve(&p).ok()) {
            let npy = fs.read_copy(ino, 0, u64::MAX).unwrap();
            assert!(npy_payload(&npy) == view.data(), "{what}: {name}'s .npy");
        }
    }
    for l in left_out.as_array().unwrap() {
        listed.insert(l["path"].as_str().unwrap().to_owned());
    }
    // Every tensor file with bytes that an index.json lists is in the file
    // or left out by path.
    for (path, ino) in fs.walk(ptefs::tree::ROOT) {
        if !path.ends_with("tensors/index.json") || path.contains("testsets/") {
            continue;
        }
        let dir = path.trim_end_matches("index.json");
        let index: Value =
            serde_json::from_slice(&fs.read_copy(ino, 0, u64::MAX).unwrap()).unwrap();
        for e in index.as_array().unwrap() {
            let (Some(name), Some(n)) = (e["name"].as_str(), e["nbytes"].as_u64()) else {
                continue;
            };
            if n == 0 || e["location"] == "named" || e["scalar_type"].is_null() {
                continue;
            }
            let file = format!("{dir}{name}");
            assert!(
                listed.contains(&file),
                "{what}: {file} is neither in {WEIGHTS} nor left out"
            );
        }
    }
    st.len()
}

#[test]
fn every_fixture_reads_with_the_safetensors_crate() {
    let mut total = 0;
    let mut named = 0;
    for p in fixtures() {
        let what = p.display().to_string();
        let fs = Fs::new(view_of(std::slice::from_ref(&p), &[]));
        let whole = read_weights(&fs, u64::MAX);
        assert_eq!(read_weights(&fs, 4093), whole, "{what}: reads in pieces");
        let n = check_with_crate(&fs, &whole, &what);
        let st = safetensors::SafeTensors::deserialize(&whole).unwrap();
        named += st.names().iter().filter(|n| !n.contains('/')).count();
        total += n;
    }
    assert!(total > 160, "{total} tensors in all");
    assert!(named > 80, "{named} tensors named by key or FQN");
}

#[test]
fn weights_that_share_one_blob_list_every_path_of_it() {
    // mv2_xnnpack.pte's XNNPACK weights keep equal biases as one blob of
    // named data: one file of the tree under several names.
    let model = fixture("mv2_xnnpack.pte");
    let meta = weights_metadata(&[], &model);
    let paths: std::collections::BTreeMap<String, Vec<String>> =
        serde_json::from_value(meta["ptefs.paths"].clone()).unwrap();
    let listed: BTreeSet<&str> = paths.values().flatten().map(String::as_str).collect();
    let fs = Fs::new(view_of(std::slice::from_ref(&model), &[]));
    let weights: Vec<String> = (fs.walk(ptefs::tree::ROOT))
        .map(|(path, _)| path)
        .filter(|p| p.contains("/xnnpack/weights/") && p.ends_with(".bin"))
        .collect();
    assert!(weights.len() > 100, "{}", weights.len());
    for w in &weights {
        assert!(listed.contains(w.as_str()), "{w} is in no tensor's paths");
    }
    // The shared blob: each of its weights, its named data file and its
    // segment are paths of one tensor.
    let shared = paths
        .iter()
        .filter(|(_, p)| p.iter().filter(|p| p.contains("/weights/")).count() > 1)
        .count();
    assert!(shared >= 10, "{shared} tensors with several weights");
    let (key, of) = (paths.iter())
        .find(|(_, p)| {
            p.iter()
                .any(|p| p.ends_with("/008-depthwise_conv2d.bias.bin"))
        })
        .unwrap();
    let named = format!("named/{key}.bin");
    for p in ["007-conv2d.bias.bin", "011-conv2d.bias.bin"] {
        let p = format!("methods/forward/delegates/0-XnnpackBackend/xnnpack/weights/{p}");
        assert!(of.contains(&p), "{key}: {of:?}");
    }
    assert!(of.contains(&named), "{key}: {of:?}");
}

#[test]
fn every_tensor_starts_at_a_multiple_of_its_element_size() {
    let mut checked = 0;
    for p in fixtures() {
        let what = p.display().to_string();
        let fs = Fs::new(view_of(std::slice::from_ref(&p), &[]));
        let bytes = read_weights(&fs, u64::MAX);
        let (n, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        assert_eq!(
            (8 + n) % 8,
            0,
            "{what}: the data section starts at {}",
            8 + n
        );
        let mut tensors: Vec<_> = header.tensors().into_iter().collect();
        tensors.sort_by_key(|(_, t)| t.data_offsets);
        for (i, (name, t)) in tensors.iter().enumerate() {
            let size = (t.dtype.bitsize() / 8).max(1);
            let start = t.data_offsets.0;
            assert_eq!(start % size, 0, "{what}: {name} ({:?}) at {start}", t.dtype);
            // Back to back: no holes.
            let end = i.checked_sub(1).map_or(0, |j| tensors[j].1.data_offsets.1);
            assert_eq!(
                start, end,
                "{what}: {name} does not follow the tensor before it"
            );
            checked += usize::from(i > 0 && size > 1);
        }
    }
    assert!(checked > 50, "{checked} tensors checked");
}

#[test]
fn keys_fqns_and_delegate_weights_name_the_tensors() {
    let names = |name: &str| -> Vec<String> {
        let fs = Fs::new(view(name));
        let bytes = read_weights(&fs, u64::MAX);
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let mut n: Vec<String> = st.names().into_iter().map(str::to_owned).collect();
        n.sort();
        n
    };
    // External tensors by FQN, from the data file found beside the program.
    let external = names("mlp_external.pte");
    assert_eq!(
        external,
        ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    );
    assert_eq!(names("mlp_external.ptd"), external);
    // XNNPACK weights kept as named data: typed by the decoder, named by key.
    let xnn = names("xnnpack_external.pte");
    assert_eq!(xnn.len(), 4);
    assert!(xnn.iter().all(|n| n.len() == 64), "{xnn:?}");
    // No FQN recorded: the tree path.
    assert_eq!(names("mlp.pte")[0], "methods/forward/tensors/0.bin");
}

/// Checks a `weights.safetensors` at `st` with Python's `safetensors`
/// (NumPy flavour: `safe_open` and `load_file`) against the `.npy` (or
/// `.bin`) files of the tree at `root`; prints `checked N`.
const PY_CHECK: &str = r#"
import json, pathlib, sys
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file
st, root = sys.argv[1], pathlib.Path(sys.argv[2])
numpy_types = {"F64", "F32", "F16", "I64", "U64", "I32", "U32", "I16", "U16", "I8", "U8", "BOOL", "C64"}
checked = other = 0
with safe_open(st, "np") as f:
    paths = json.loads(f.metadata()["ptefs.paths"])
    keys = list(f.keys())
    for k in keys:
        s = f.get_slice(k)
        if s.get_dtype() not in numpy_types:
            other += 1
            continue
        t = f.get_tensor(k)
        path = root / paths[k][0]
        npy = path.with_suffix(".npy")
        if npy.exists():
            want = np.load(npy)
            assert t.dtype == want.dtype and t.shape == want.shape, (k, t.dtype, t.shape, want.dtype, want.shape)
            assert np.array_equal(t, want, equal_nan=t.dtype.kind == "f"), k
        else:
            assert t.tobytes() == path.read_bytes(), k
        checked += 1
if other == 0:
    loaded = load_file(st)
    assert sorted(loaded) == sorted(keys)
print("checked", checked, "other", other)
"#;

/// Whether python3 has `safetensors` and NumPy (scripts/setup.sh installs
/// them); skips `test` loudly when not.
fn python_safetensors_or_skip(test: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import safetensors, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    skip_unless(
        test,
        (!ok).then_some("python3 lacks safetensors or numpy (scripts/setup.sh installs them)"),
    )
}

#[test]
fn python_safetensors_reads_the_cat_output_as_the_tree_npy() {
    if !python_safetensors_or_skip("python_safetensors_reads_the_cat_output_as_the_tree_npy") {
        return;
    }
    let mut checked = 0;
    for p in fixtures() {
        let dir = tempfile::tempdir().unwrap();
        let st = dir.path().join("w.safetensors");
        let run = ptefs().arg("cat").arg(&p).arg(WEIGHTS).output().unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        std::fs::write(&st, &run.stdout).unwrap();
        let tree = dir.path().join("tree");
        extract(&view_of(std::slice::from_ref(&p), &[]), &tree);
        let out = python(PY_CHECK, &[&st, &tree]);
        let n: usize = out.split_whitespace().nth(1).unwrap().parse().unwrap();
        checked += n;
    }
    assert!(checked > 160, "{checked}");
}

#[test]
fn python_safetensors_and_mmap_read_it_through_a_mount() {
    if !fuse_or_skip("python_safetensors_and_mmap_read_it_through_a_mount")
        || !python_safetensors_or_skip("python_safetensors_and_mmap_read_it_through_a_mount")
    {
        return;
    }
    for model in [
        "mv2_xnnpack.pte",
        "mlp_external.pte",
        "dtypes.pte",
        "backends/coreml_mlp.pte",
    ] {
        let m = Mounted::new(&[fixture(model).as_os_str()]);
        let out = python(PY_CHECK, &[&m.path(WEIGHTS), &m.dir]);
        assert!(!out.contains("checked 0 "), "{model}: {out}");
        // Mapped, as safetensors' own loaders map files.
        let file = std::fs::File::open(m.path(WEIGHTS)).unwrap();
        // SAFETY: the file is read-only and nothing truncates it while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let fs = Fs::new(view(model));
        assert!(map[..] == read_weights(&fs, u64::MAX)[..], "{model}");
        check_with_crate(&fs, &map, model);
    }
}

#[test]
fn pack_of_the_weights_gives_the_data_file_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (program, of, data) in [
        ("mlp_external.pte", "mlp_external.ptd", "mlp_external.ptd"),
        ("mlp_external.pte", "mlp_external.pte", "mlp_external.ptd"),
        (
            "xnnpack_external.pte",
            "xnnpack_external.pte",
            "xnnpack_external.ptd",
        ),
    ] {
        let st = dir.path().join("w.safetensors");
        std::fs::write(&st, read_weights(&Fs::new(view(of)), u64::MAX)).unwrap();
        let out = dir.path().join("out.ptd");
        ptefs_stdout([
            "pack".as_ref(),
            "--for".as_ref(),
            fixture(program).as_os_str(),
            st.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(fixture(data)).unwrap(),
            "pack --for {program} of {of}'s weights"
        );
    }
}

/// `ptefs set FILE --from ST -o OUT`.
fn set_from(file: &Path, st: &Path, out: &Path) -> Run {
    ptefs_run([
        "set".as_ref(),
        file.as_os_str(),
        "--from".as_ref(),
        st.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ])
}

#[test]
fn set_from_unchanged_weights_writes_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    for model in [
        "mlp.pte",
        "mv2_xnnpack.pte",
        "quant_xnnpack.pte",
        "mlp_external.ptd",
        "dtypes.pte",
    ] {
        let st = dir.path().join("w.safetensors");
        std::fs::write(&st, read_weights(&Fs::new(view(model)), u64::MAX)).unwrap();
        // Named as the model: an existing output of another kind is refused.
        let out = dir.path().join(model);
        let run = set_from(&fixture(model), &st, &out);
        assert_eq!(run.code, 0, "{model}: {}", run.err);
        assert!(run.out.contains(", 0 changed;"), "{}", run.out);
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(fixture(model)).unwrap(),
            "{model}"
        );
    }
}

#[test]
fn set_from_replaces_exactly_the_tensors_whose_bytes_differ() {
    let dir = tempfile::tempdir().unwrap();
    let model = fixture("mv2_xnnpack.pte");
    let original = read_weights(&Fs::new(view("mv2_xnnpack.pte")), u64::MAX);
    let st = safetensors::SafeTensors::deserialize(&original).unwrap();
    let mut names: Vec<String> = st.names().into_iter().map(str::to_owned).collect();
    names.sort();
    // Two tensors changed, the others as they are; in another order.
    let changed: Vec<String> = vec![names[3].clone(), names[10].clone()];
    let mut data: Vec<(String, Vec<u8>, Vec<usize>, safetensors::Dtype)> = names
        .iter()
        .rev()
        .map(|n| {
            let v = st.tensor(n).unwrap();
            let mut bytes = v.data().to_vec();
            if changed.contains(n) {
                for b in bytes.iter_mut().take(8) {
                    *b ^= 0x5a;
                }
            }
            (n.clone(), bytes, v.shape().to_vec(), v.dtype())
        })
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = data
        .iter_mut()
        .map(|(n, b, s, d)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap(),
            )
        })
        .collect();
    let given = dir.path().join("given.safetensors");
    safetensors::serialize_to_file(views, None, &given).unwrap();
    let out = dir.path().join("q.pte");
    let run = set_from(&model, &given, &out);
    assert_eq!(run.code, 0, "{}", run.err);
    assert!(run.out.contains("2 changed"), "{}", run.out);
    let (a, b) = (std::fs::read(&model).unwrap(), std::fs::read(&out).unwrap());
    assert_eq!(a.len(), b.len());
    assert_eq!(a.iter().zip(&b).filter(|(x, y)| x != y).count(), 16);
    // The new file's weights are the given ones.
    let (_d, v) = view_bytes("q.pte", &b);
    let fs = Fs::new(v);
    let now = read_weights(&fs, u64::MAX);
    let now = safetensors::SafeTensors::deserialize(&now).unwrap();
    let given = std::fs::read(&given).unwrap();
    let given = safetensors::SafeTensors::deserialize(&given).unwrap();
    for n in &names {
        assert_eq!(
            now.tensor(n).unwrap().data(),
            given.tensor(n).unwrap().data(),
            "{n}"
        );
    }
}

#[test]
fn set_from_takes_every_tree_path_listed_with_or_without_bin() {
    let dir = tempfile::tempdir().unwrap();
    let weights = "methods/forward/delegates/0-XnnpackBackend/xnnpack/weights";
    let shared = format!("{weights}/008-depthwise_conv2d.bias.bin");
    let cases = [
        ("mv2_xnnpack.pte", shared.clone()),
        (
            "mv2_xnnpack.pte",
            shared.trim_end_matches(".bin").to_owned(),
        ),
        ("mv2_xnnpack.pte", format!("{weights}/033-conv2d.filter")),
        ("mlp.pte", "methods/forward/tensors/0".to_owned()),
    ];
    for (model, name) in cases {
        let fs = Fs::new(view(model));
        let original = read_weights(&fs, u64::MAX);
        let st = safetensors::SafeTensors::deserialize(&original).unwrap();
        let meta = weights_metadata(&[], &fixture(model));
        let paths: std::collections::BTreeMap<String, Vec<String>> =
            serde_json::from_value(meta["ptefs.paths"].clone()).unwrap();
        let whole = format!("{}.bin", name.trim_end_matches(".bin"));
        let (target, _) = (paths.iter())
            .find(|(_, p)| p.contains(&whole))
            .unwrap_or_else(|| panic!("{model}: {whole} is in no tensor's paths"));
        let t = st.tensor(target).unwrap();
        let mut bytes = t.data().to_vec();
        for b in bytes.iter_mut().take(8) {
            *b ^= 0x5a;
        }
        let view =
            safetensors::tensor::TensorView::new(t.dtype(), t.shape().to_vec(), &bytes).unwrap();
        let given = dir.path().join("given.safetensors");
        safetensors::serialize_to_file([(name.as_str(), view)], None, &given).unwrap();
        let out = dir.path().join(model);
        let run = set_from(&fixture(model), &given, &out);
        assert_eq!(run.code, 0, "{model} {name}: {}", run.err);
        assert!(run.out.contains(", 1 changed;"), "{}", run.out);
        let (_d, v) = view_bytes(model, &std::fs::read(&out).unwrap());
        let now = read_weights(&Fs::new(v), u64::MAX);
        let now = safetensors::SafeTensors::deserialize(&now).unwrap();
        assert!(
            now.tensor(target).unwrap().data() == &bytes[..],
            "{model} {name}"
        );
    }
}

#[test]
fn set_from_with_o_and_data_out_writes_both_when_only_the_data_changes() {
    let dir = tempfile::tempdir().unwrap();
    let model = fixture("mlp_external.pte");
    let original = read_weights(&Fs::new(view("mlp_external.pte")), u64::MAX);
    let st = safetensors::SafeTensors::deserialize(&original).unwrap();
    let t = st.tensor("fc1.bias").unwrap();
    let mut bytes = t.data().to_vec();
    bytes[..4].copy_from_slice(&1.5f32.to_le_bytes());
    let view = safetensors::tensor::TensorView::new(t.dtype(), t.shape().to_vec(), &bytes).unwrap();
    let given = dir.path().join("given.safetensors");
    safetensors::serialize_to_file([("fc1.bias", view)], None, &given).unwrap();
    let (pte, ptd) = (dir.path().join("both.pte"), dir.path().join("both.ptd"));
    let run = ptefs_run([
        "set".as_ref(),
        model.as_os_str(),
        "--from".as_ref(),
        given.as_os_str(),
        "-o".as_ref(),
        pte.as_os_str(),
        "--data-out".as_ref(),
        ptd.as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{}", run.err);
    // The program as it was, said so; the data file with the new bias.
    assert!(
        std::fs::read(&pte).unwrap() == std::fs::read(&model).unwrap(),
        "both.pte is mlp_external.pte"
    );
    assert!(run.out.contains("both.pte: "), "{}", run.out);
    assert!(
        run.out.contains("0 bytes set in 0 range(s), 0 changed"),
        "{}",
        run.out
    );
    let (a, b) = (
        std::fs::read(fixture("mlp_external.ptd")).unwrap(),
        std::fs::read(&ptd).unwrap(),
    );
    assert_eq!(a.len(), b.len());
    assert!(run.out.contains("both.ptd: "), "{}", run.out);
    assert!(a.iter().zip(&b).filter(|(x, y)| x != y).count() > 0);
}

#[test]
fn set_from_refuses_unknown_names_and_other_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let model = fixture("mlp_external.ptd");
    let out = dir.path().join("out.ptd");
    let cases: [(&str, Vec<usize>, &str); 2] = [
        (
            "fc9.weight",
            vec![2],
            "fc9.weight: names no tensor of the tree's weights.safetensors",
        ),
        (
            "fc1.bias",
            vec![3],
            "fc1.bias: is F32 [3], but the tensor it names is F32",
        ),
    ];
    for (name, shape, says) in cases {
        let bytes = vec![0u8; 4 * shape.iter().product::<usize>()];
        let view =
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape, &bytes).unwrap();
        let st = dir.path().join("bad.safetensors");
        safetensors::serialize_to_file([(name, view)], None, &st).unwrap();
        let run = set_from(&model, &st, &out);
        assert_ne!(run.code, 0);
        assert!(run.err.contains(says), "{}", run.err);
        assert!(run.err.contains("bad.safetensors"), "{}", run.err);
        assert!(!out.exists());
    }
}

#[test]
fn colliding_names_zero_size_tensors_and_dim_orders() {
    let f32s = |n: usize, seed: u8| -> Bytes {
        Bytes::Owned((0..4 * n).map(|i| (i as u8).wrapping_mul(seed)).collect())
    };
    let method = |name: &str, seed: u8| {
        Method::new(
            name,
            vec![
                V::Tensor(
                    Tensor::new(ScalarType::FLOAT, &[2, 3], Data::Constant(f32s(6, seed)))
                        .named("w"),
                ),
                V::Tensor(
                    Tensor::new(
                        ScalarType::FLOAT,
                        &[0, 3],
                        Data::Constant(Bytes::Owned(Vec::new())),
                    )
                    .named("empty"),
                ),
                V::Tensor(
                    Tensor::new(
                        ScalarType::FLOAT,
                        &[2, 3, 4, 5],
                        Data::Constant(f32s(120, seed + 1)),
                    )
                    .named("nhwc")
                    .dim_order(&[0, 2, 3, 1]),
                ),
            ],
        )
    };
    let program = Program {
        methods: vec![method("a", 3), method("b", 5)],
        ..Program::default()
    };
    let (_d, v) = view_bytes("c.pte", &program.to_bytes());
    let fs = Fs::new(v);
    let bytes = read_weights(&fs, u64::MAX);
    check_with_crate(&fs, &bytes, "c.pte");
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names: Vec<&str> = st.names();
    names.sort();
    assert_eq!(names, ["empty", "empty~2", "nhwc", "nhwc~2", "w", "w~2"]);
    assert_eq!(st.tensor("empty").unwrap().shape(), [0, 3]);
    assert!(st.tensor("empty~2").unwrap().data().is_empty());
    // Stored as it is: the shape in storage order, the dim order beside it.
    assert_eq!(st.tensor("nhwc").unwrap().shape(), [2, 4, 5, 3]);
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let meta = header.metadata().as_ref().unwrap();
    let orders: Value = serde_json::from_str(&meta["ptefs.dim_order"]).unwrap();
    assert_eq!(orders["nhwc~2"], serde_json::json!([0, 2, 3, 1]));
    let aliases: Value = serde_json::from_str(&meta["ptefs.aliases"]).unwrap();
    assert_eq!(aliases["w~2"], serde_json::json!(["w"]));
    let paths: Value = serde_json::from_str(&meta["ptefs.paths"]).unwrap();
    assert_eq!(paths["w~2"][0], "methods/b/tensors/0.w.bin");
}

#[test]
fn a_source_truncated_while_read_fails_with_eio_not_wrong_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.pte");
    std::fs::copy(fixture("mv2_xnnpack.pte"), &p).unwrap();
    let fs = Fs::new(view_of(std::slice::from_ref(&p), &[]));
    let ino = fs.resolve(WEIGHTS).unwrap();
    let len = fs.getattr(ino).unwrap().size;
    let head = fs.read_copy(ino, 0, 8).unwrap();
    let header_end = 8 + u64::from_le_bytes(head.try_into().unwrap());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(1000)
        .unwrap();
    for (at, size) in [
        (header_end, 64),
        (header_end - 4, 64),
        (len - 10, 10),
        (0, len),
    ] {
        let e = fs.read(ino, at, size).unwrap_err();
        assert_eq!(e.errno(), libc::EIO, "{e}");
        assert!(e.to_string().contains("changed size"), "{e}");
        assert_eq!(fs.read_copy(ino, at, size).unwrap_err().errno(), libc::EIO);
    }
}

/// The `__metadata__` of the `weights.safetensors` `ptefs cat` gives of
/// `file` (with `args` before it), its JSON-text values parsed.
fn weights_metadata(args: &[&std::ffi::OsStr], file: &Path) -> serde_json::Map<String, Value> {
    let mut cmd: Vec<&std::ffi::OsStr> = vec!["cat".as_ref()];
    cmd.extend_from_slice(args);
    cmd.extend([file.as_os_str(), WEIGHTS.as_ref()]);
    let out = ptefs().args(&cmd).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = out.stdout;
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let meta = meta.metadata().clone().unwrap_or_default();
    meta.into_iter()
        .map(|(k, v)| {
            let v = serde_json::from_str(&v).unwrap_or(Value::String(v));
            (k, v)
        })
        .collect()
}

#[test]
fn a_data_files_layout_less_blobs_are_listed_and_counted_as_untyped() {
    for data in ["edit/xnnpack.ptd", "xnnpack_external.ptd"] {
        let meta = weights_metadata(&[], &fixture(data));
        let blobs: BTreeSet<String> =
            ptefs_stdout(["ls".as_ref(), fixture(data).as_os_str(), "tensors".as_ref()])
                .lines()
                .filter(|n| n.ends_with(".bin"))
                .map(|n| format!("tensors/{n}"))
                .collect();
        assert_eq!(blobs.len(), 4, "{data}");
        let untyped: BTreeSet<String> =
            serde_json::from_value(meta["ptefs.untyped"].clone()).unwrap();
        assert_eq!(untyped, blobs, "{data}");
        assert_eq!(meta["ptefs.untyped_count"], 4, "{data}");
    }
}

#[test]
fn external_tensors_without_their_data_file_are_listed_and_counted_as_missing() {
    let program = fixture("mlp_external.pte");
    let meta = weights_metadata(&["--no-auto-data".as_ref()], &program);
    assert_eq!(meta["ptefs.paths"], serde_json::json!({}));
    assert_eq!(meta["ptefs.missing_count"], 4);
    let missing = meta["ptefs.missing"].as_array().unwrap();
    let keys: BTreeSet<&str> = missing.iter().map(|m| m["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        BTreeSet::from(["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"])
    );
    let values: BTreeSet<u64> = missing
        .iter()
        .map(|m| m["value"].as_u64().unwrap())
        .collect();
    assert_eq!(values.len(), 4);
    for m in missing {
        assert_eq!(m["dir"], "methods/forward/tensors", "{m}");
        assert_eq!(m["why"], "no data file is attached (--data)", "{m}");
    }
    // Attached (found beside it), nothing is missing.
    let meta = weights_metadata(&[], &program);
    assert_eq!(meta["ptefs.missing_count"], 0);
    assert_eq!(meta["ptefs.missing"], serde_json::json!([]));
}

#[test]
fn delegate_weights_without_their_data_file_are_listed_and_counted_as_missing() {
    let program = fixture("xnnpack_external.pte");
    let weights = "methods/forward/delegates/0-XnnpackBackend/xnnpack/weights";
    let meta = weights_metadata(&["--no-auto-data".as_ref()], &program);
    assert_eq!(meta["ptefs.missing_count"], 4);
    let missing = meta["ptefs.missing"].as_array().unwrap();
    let files: BTreeSet<String> = (missing.iter())
        .map(|m| {
            assert_eq!(m["dir"], weights, "{m}");
            let why = m["why"].as_str().unwrap();
            assert!(
                why.contains("is in neither the program nor an attached data file"),
                "{m}"
            );
            m["file"].as_str().unwrap().to_owned()
        })
        .collect();
    // The very files the weights have once their data file is attached.
    let attached: BTreeSet<String> =
        ptefs_stdout(["ls".as_ref(), program.as_os_str(), weights.as_ref()])
            .lines()
            .filter(|n| n.ends_with(".bin"))
            .map(str::to_owned)
            .collect();
    assert_eq!(files, attached);
    assert_eq!(weights_metadata(&[], &program)["ptefs.missing_count"], 0);
}

#[test]
fn aliases_are_every_checkpoint_key_of_the_bytes_once() {
    let ckpt = fixture("edit/xnnpack.original.safetensors");
    let meta = weights_metadata(
        &["--names".as_ref(), ckpt.as_os_str()],
        &fixture("edit/xnnpack.pte"),
    );
    let aliases: std::collections::BTreeMap<String, Vec<String>> =
        serde_json::from_value(meta["ptefs.aliases"].clone()).unwrap();
    // Each tensor is named by its blob's key; its checkpoint key is the
    // one other name its bytes have.
    let mut keys: Vec<&str> = aliases.values().flatten().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]);
    assert!(aliases.values().all(|a| a.len() == 1), "{aliases:?}");
}

/// `ptefs set --names CKPT FILE --from ST -o OUT`.
fn set_named_from(ckpt: &Path, file: &Path, st: &Path, out: &Path) -> Run {
    ptefs_run([
        "set".as_ref(),
        "--names".as_ref(),
        ckpt.as_os_str(),
        file.as_os_str(),
        "--from".as_ref(),
        st.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ])
}

#[test]
fn set_from_takes_a_checkpoint_key_that_is_an_alias() {
    let dir = tempfile::tempdir().unwrap();
    let original = fixture("edit/xnnpack.original.safetensors");
    let finetuned = fixture("edit/xnnpack.finetuned.safetensors");
    let program = fixture("edit/xnnpack.pte");
    // The checkpoint it was exported from: every key an alias of a blob
    // key, every tensor as stored.
    let out = dir.path().join("same.pte");
    let run = set_named_from(&original, &program, &original, &out);
    assert_eq!(run.code, 0, "{}", run.err);
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&program).unwrap());
    // The fine-tuned one writes the data file, whose blobs then hold its
    // tensors.
    let out = dir.path().join("tuned.ptd");
    let run = set_named_from(&original, &program, &finetuned, &out);
    assert_eq!(run.code, 0, "{}", run.err);
    let tuned = std::fs::read(&finetuned).unwrap();
    let tuned = safetensors::SafeTensors::deserialize(&tuned).unwrap();
    let written = std::fs::read(&out).unwrap();
    let mut changed = 0;
    for (name, t) in tuned.tensors() {
        assert!(
            written.windows(t.data().len()).any(|w| w == t.data()),
            "{name} is not in the written data file"
        );
        changed += usize::from(
            !std::fs::read(fixture("edit/xnnpack.ptd"))
                .unwrap()
                .windows(t.data().len())
                .any(|w| w == t.data()),
        );
    }
    assert!(changed > 0, "the fine-tuned checkpoint changes nothing");
}

#[test]
fn set_from_refuses_two_names_of_the_same_bytes_with_different_values() {
    let dir = tempfile::tempdir().unwrap();
    let original = fixture("edit/xnnpack.original.safetensors");
    let bytes = std::fs::read(&original).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let bias = st.tensor("fc2.bias").unwrap();
    let key = sha256(bias.data());
    let other: Vec<u8> = bias.data().iter().map(|b| b ^ 1).collect();
    let view = |data| {
        safetensors::tensor::TensorView::new(bias.dtype(), bias.shape().to_vec(), data).unwrap()
    };
    let both = dir.path().join("both.safetensors");
    safetensors::serialize_to_file(
        [
            ("fc2.bias", view(bias.data())),
            (key.as_str(), view(&other)),
        ],
        None,
        &both,
    )
    .unwrap();
    let out = dir.path().join("out.pte");
    let run = set_named_from(&original, &fixture("edit/xnnpack.pte"), &both, &out);
    assert_ne!(run.code, 0);
    assert!(
        run.err.contains("name the same stored bytes") && run.err.contains("fc2.bias"),
        "{}",
        run.err
    );
    assert!(!out.exists());
}

#[test]
fn set_from_a_checkpoint_without_names_says_names_may_be_needed() {
    let dir = tempfile::tempdir().unwrap();
    let original = fixture("edit/xnnpack.original.safetensors");
    let out = dir.path().join("out.pte");
    let run = set_from(&fixture("edit/xnnpack.pte"), &original, &out);
    assert_ne!(run.code, 0);
    assert!(
        run.err.contains("names no tensor") && run.err.contains("--names"),
        "{}",
        run.err
    );
}
