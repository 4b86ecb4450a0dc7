//! `set` and `pack` against ExecuTorch's own files: each fixture of
//! tests/fixtures/edit/ was exported by ExecuTorch 1.5.1, then exported
//! again with edited weights (scripts/make-edit-fixtures.py); the oracle
//! holds the sha256 of what ExecuTorch wrote the second time. ptefs,
//! given only the first file and the edited weights, must write that very
//! file. The oracle also holds what ExecuTorch's runtime computed running
//! those files: a file of the same digest gives the same outputs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

fn edit_fixture(name: &str) -> PathBuf {
    fixture("edit").join(name)
}

fn oracle(name: &str) -> Value {
    let text = std::fs::read_to_string(edit_fixture(&format!("{name}.oracle.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every number of a JSON value of nested lists, in order.
fn numbers(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().flat_map(numbers).collect(),
        v => vec![v.as_f64().unwrap()],
    }
}

/// The runtime's outputs that `o` records for the file ExecuTorch wrote
/// with the edited weights (the file ptefs must write): the edit shows in
/// them, and they are PyTorch's up to float rounding.
fn runtime_ran_the_edit(name: &str, o: &Value) {
    let ran = numbers(&o["edited_runtime_outputs"]);
    let eager = numbers(&o["edited_eager_outputs"]);
    assert_eq!(ran.len(), eager.len(), "{name}");
    assert!(!ran.is_empty(), "{name}");
    for (r, e) in ran.iter().zip(&eager) {
        assert!(
            (r - e).abs() < 1e-5,
            "{name}: the runtime gave {r}, PyTorch {e}"
        );
    }
    assert_ne!(
        ran,
        numbers(&o["runtime_outputs"]),
        "{name}: the edit changes no output"
    );
}

/// The tree path (under `dir`) of the `.npy` whose tensor's stored bytes
/// have digest `sha`.
fn npy_with_digest(v: &ptefs::view::View, dir: &str, sha: &str) -> String {
    ls(v, dir)
        .into_iter()
        .filter(|n| n.ends_with(".npy"))
        .map(|n| format!("{dir}/{n}"))
        .find(|p| sha256(npy_payload(&read(v, p))) == sha)
        .unwrap_or_else(|| panic!("no tensor under {dir} holds bytes with sha256 {sha}"))
}

fn file_sha(p: &Path) -> String {
    sha256(&std::fs::read(p).unwrap())
}

/// `PATH=SOURCE` for each edited weight of `name`, its path found by `path`.
fn set_args(name: &str, path: impl Fn(&str, &Value) -> String) -> Vec<String> {
    let o = oracle(name);
    o["edited"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(fqn, e)| {
            let npy = edit_fixture(e["npy"].as_str().unwrap());
            format!("{}={}", path(fqn, e), npy.display())
        })
        .collect()
}

fn set(file: &Path, edits: &[String], out: &Path) {
    let mut args: Vec<&std::ffi::OsStr> = vec!["set".as_ref(), file.as_os_str()];
    args.extend(edits.iter().map(std::ffi::OsStr::new));
    args.extend(["-o".as_ref(), out.as_os_str()]);
    ptefs_stdout(&args);
}

#[test]
fn set_writes_executorchs_own_file_for_the_portable_programs() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["portable", "constmethod"] {
        let pte = edit_fixture(&format!("{name}.pte"));
        let o = oracle(name);
        assert_eq!(file_sha(&pte), o["original_sha256"].as_str().unwrap());
        let v = view_of(std::slice::from_ref(&pte), &[]);
        let edits = set_args(name, |_, e| {
            let sha = e["original_sha256"].as_str().unwrap();
            npy_with_digest(&v, "methods/forward/tensors", sha)
        });
        let out = dir.path().join(format!("{name}.pte"));
        set(&pte, &edits, &out);
        assert_eq!(
            file_sha(&out),
            o["edited_sha256"].as_str().unwrap(),
            "{name}"
        );
        runtime_ran_the_edit(name, &o);
    }
}

#[test]
fn set_and_pack_write_executorchs_own_data_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = oracle("external");
    let (pte, ptd) = (edit_fixture("external.pte"), edit_fixture("external.ptd"));
    assert_eq!(file_sha(&ptd), o["original_ptd_sha256"].as_str().unwrap());
    let want = o["edited_ptd_sha256"].as_str().unwrap();
    // Through the data file's own tree.
    let edits = set_args("external", |fqn, _| format!("tensors/{fqn}.npy"));
    let out = dir.path().join("set.ptd");
    set(&ptd, &edits, &out);
    assert_eq!(file_sha(&out), want);
    runtime_ran_the_edit("external", &o);
    // Packed from a checkpoint holding every weight under its own names:
    // the edited ones from their .npy, the rest from the data file.
    let v = view_of(std::slice::from_ref(&ptd), &[]);
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for entry in json(&v, "tensors/index.json").as_array().unwrap() {
        let key = entry["key"].as_str().unwrap();
        let shape: Vec<usize> = serde_json::from_value(entry["sizes"].clone()).unwrap();
        let bytes = match o["edited"].get(key) {
            Some(e) => {
                npy_payload(&std::fs::read(edit_fixture(e["npy"].as_str().unwrap())).unwrap())
                    .to_vec()
            }
            None => read(&v, &format!("tensors/{key}.bin")),
        };
        tensors.push((format!("model.{key}"), shape, bytes));
    }
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(n, s, b)| {
            let t = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b);
            (n.clone(), t.unwrap())
        })
        .collect();
    let st = dir.path().join("edited.safetensors");
    safetensors::serialize_to_file(views, None::<HashMap<String, String>>, &st).unwrap();
    let out = dir.path().join("packed.ptd");
    ptefs_stdout([
        "pack".as_ref(),
        "--for".as_ref(),
        pte.as_os_str(),
        st.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(file_sha(&out), want);
}

#[test]
fn set_and_pack_of_delegate_weights_write_executorchs_data_file_but_for_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let o = oracle("xnnpack");
    let pte = edit_fixture("xnnpack.pte");
    assert_eq!(file_sha(&pte), o["original_sha256"].as_str().unwrap());
    // XNNPACK names each weight by the sha256 of its bytes, so ExecuTorch's
    // edited export also renamed the edited weights (and rewrote the
    // program to match). With the keys renamed back, the bytes are the same.
    let renamed = |path: &Path| {
        let mut b = std::fs::read(path).unwrap();
        for e in o["edited"].as_object().unwrap().values() {
            let (old, new) = (
                e["original_sha256"].as_str().unwrap().as_bytes(),
                e["edited_sha256"].as_str().unwrap().as_bytes(),
            );
            let at = b.windows(old.len()).position(|w| w == old).unwrap();
            b[at..at + old.len()].copy_from_slice(new);
        }
        sha256(&b)
    };
    let want = o["edited_ptd_sha256"].as_str().unwrap();
    let v = view_of(std::slice::from_ref(&pte), &[]);
    let weights = "methods/forward/delegates/0-XnnpackBackend/xnnpack/weights";
    let edits = set_args("xnnpack", |_, e| {
        npy_with_digest(&v, weights, e["original_sha256"].as_str().unwrap())
    });
    let out = dir.path().join("set.ptd");
    set(&pte, &edits, &out);
    assert_eq!(renamed(&out), want);
    // Packed from raw bytes named by key, the rest from the data file.
    let raw = dir.path().join("raw");
    std::fs::create_dir(&raw).unwrap();
    for e in o["edited"].as_object().unwrap().values() {
        let npy = std::fs::read(edit_fixture(e["npy"].as_str().unwrap())).unwrap();
        let key = e["original_sha256"].as_str().unwrap();
        write_file(&raw, &format!("{key}.bin"), npy_payload(&npy));
    }
    let out = dir.path().join("packed.ptd");
    ptefs_stdout([
        "pack".as_ref(),
        "--for".as_ref(),
        pte.as_os_str(),
        raw.as_os_str(),
        edit_fixture("xnnpack.ptd").as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(renamed(&out), want);
}

#[test]
fn a_constant_methods_value_set_in_place_gives_executorchs_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = oracle("constmethod");
    let pte = edit_fixture("constmethod.pte");
    let (method, value) = o["edited_constant_methods"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    let given = write_file(dir.path(), "value.json", value.to_string().as_bytes());
    let out = dir.path().join("doubled.pte");
    let path = format!("methods/{method}/value.json");
    set(&pte, &[format!("{path}={}", given.display())], &out);
    assert_eq!(
        file_sha(&out),
        o["edited_constants_sha256"].as_str().unwrap()
    );
    let v = view_of(std::slice::from_ref(&out), &[]);
    assert_eq!(json(&v, &path), *value);
    // What the runtime's method returned, run on the file of that digest.
    assert_eq!(
        o["edited_constants_runtime_outputs"][method],
        Value::Array(vec![value.clone()])
    );
    // The default is not stored, so it has no place to be written; a float
    // is not the integer the method returns.
    for (bad, says) in [("0", "0 is the default"), ("1.5", "is not an integer")] {
        let given = write_file(dir.path(), "bad.json", bad.as_bytes());
        let o = ptefs()
            .arg("set")
            .arg(&pte)
            .arg(format!("{path}={}", given.display()))
            .arg("-o")
            .arg(dir.path().join("bad.pte"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains(says));
    }
}

/// XNNPACK's data file names each weight by the sha256 of its bytes and
/// keeps no layout. Opened alone it takes raw bytes of each blob's size,
/// and with the original checkpoint (`--names`) its blobs are found, set
/// and packed by the checkpoint's names: ExecuTorch's runtime, run on the
/// very file `pack --names` writes (recorded by the fixture generator),
/// gives the outputs of ExecuTorch's own fine-tuned export.
#[test]
fn xnnpacks_data_file_alone_is_set_and_packed_by_a_checkpoints_names() {
    let dir = tempfile::tempdir().unwrap();
    let o = oracle("xnnpack");
    let by = &o["packed_by_names"];
    let (pte, ptd) = (edit_fixture("xnnpack.pte"), edit_fixture("xnnpack.ptd"));
    let original = edit_fixture(by["original"].as_str().unwrap());
    let finetuned = edit_fixture(by["finetuned"].as_str().unwrap());
    let out = dir.path().join("packed.ptd");
    let packed = ptefs_stdout([
        "pack".as_ref(),
        "--for".as_ref(),
        pte.as_os_str(),
        "--names".as_ref(),
        original.as_os_str(),
        finetuned.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(
        packed.contains("4 keys (0 tensors, 4 named blobs)"),
        "{packed}"
    );
    assert_eq!(file_sha(&out), by["ptd_sha256"].as_str().unwrap());
    assert_eq!(by["runtime_outputs"], o["edited_runtime_outputs"]);
    assert_ne!(by["runtime_outputs"], o["runtime_outputs"]);
    // With the keys renamed as the exporter renamed them, it is the data
    // file of ExecuTorch's own fine-tuned export, byte for byte.
    let mut renamed = std::fs::read(&out).unwrap();
    for e in o["edited"].as_object().unwrap().values() {
        let (old, new) = (
            e["original_sha256"].as_str().unwrap().as_bytes(),
            e["edited_sha256"].as_str().unwrap().as_bytes(),
        );
        let at = renamed.windows(old.len()).position(|w| w == old).unwrap();
        renamed[at..at + old.len()].copy_from_slice(new);
    }
    assert_eq!(sha256(&renamed), o["edited_ptd_sha256"].as_str().unwrap());
    // Without --names the digests name nothing in the checkpoint.
    let run = ptefs_run([
        "pack".as_ref(),
        "--for".as_ref(),
        pte.as_os_str(),
        finetuned.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(run.code, 2);
    assert!(run.err.contains("no input holds it"), "{}", run.err);

    // `set` of the data file alone: a blob takes raw bytes of its size,
    // by its key or by the checkpoint's name for it.
    let (fqn, e) = o["edited"].as_object().unwrap().iter().next().unwrap();
    let key = e["original_sha256"].as_str().unwrap();
    let npy = std::fs::read(edit_fixture(e["npy"].as_str().unwrap())).unwrap();
    let raw = write_file(dir.path(), "raw.bin", npy_payload(&npy));
    let short = write_file(dir.path(), "short.bin", &npy_payload(&npy)[4..]);
    let by_key = dir.path().join("by-key.ptd");
    set(
        &ptd,
        &[format!("tensors/{key}.bin={}", raw.display())],
        &by_key,
    );
    let by_name = dir.path().join("by-name.ptd");
    let mut args: Vec<std::ffi::OsString> = vec!["set".into(), "--names".into()];
    args.extend([
        original.clone().into_os_string(),
        ptd.clone().into_os_string(),
    ]);
    args.push(format!("by-name/{fqn}={}", raw.display()).into());
    args.extend(["-o".into(), by_name.clone().into_os_string()]);
    ptefs_stdout(&args);
    assert_eq!(file_sha(&by_key), file_sha(&by_name));
    let v = view_of(std::slice::from_ref(&by_key), &[]);
    assert_eq!(read(&v, &format!("tensors/{key}.bin")), npy_payload(&npy));
    let run = ptefs_run([
        "set".as_ref(),
        ptd.as_os_str(),
        format!("tensors/{key}.bin={}", short.display()).as_ref(),
        "-o".as_ref(),
        dir.path().join("short.ptd").as_os_str(),
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.err.contains("holds 508 bytes of data; tensors/"),
        "{}",
        run.err
    );
    // Rendered files stay refused.
    let run = ptefs_run([
        "set".as_ref(),
        ptd.as_os_str(),
        format!("flat_tensor.json={}", raw.display()).as_ref(),
        "-o".as_ref(),
        dir.path().join("json.ptd").as_os_str(),
    ]);
    assert_eq!(run.code, 2, "{}", run.err);
}

/// A convolution's filter, which XNNPACK keeps in its data file OHWI (and
/// keys by the digest of those bytes): `pack --names` finds it through
/// the checkpoint's filter laid out so, and lays the fine-tuned filter
/// out the same way. ExecuTorch's runtime, run on the very file written,
/// gives the outputs of ExecuTorch's own fine-tuned export.
#[test]
fn pack_by_names_lays_a_fine_tuned_convolution_filter_out_as_xnnpack_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let o = oracle("xnnconv");
    let by = &o["packed_by_names"];
    let pte = edit_fixture("xnnconv.pte");
    assert_eq!(file_sha(&pte), o["original_sha256"].as_str().unwrap());
    let original = edit_fixture(by["original"].as_str().unwrap());
    let finetuned = edit_fixture(by["finetuned"].as_str().unwrap());
    let out = dir.path().join("packed.ptd");
    let run = ptefs_run([
        "pack".as_ref(),
        "--for".as_ref(),
        pte.as_os_str(),
        "--names".as_ref(),
        original.as_os_str(),
        finetuned.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{}", run.err);
    let key = o["permuted_keys"][0].as_str().unwrap();
    assert!(
        run.err.contains(&format!("{key}: ")) && run.err.contains("(conv.weight) laid out OHWI"),
        "{}",
        run.err
    );
    assert_eq!(file_sha(&out), by["ptd_sha256"].as_str().unwrap());
    assert_eq!(by["runtime_outputs"], o["edited_runtime_outputs"]);
    assert_ne!(by["runtime_outputs"], o["runtime_outputs"]);
    // The blob is the fine-tuned filter, OHWI.
    let st_bytes = std::fs::read(&finetuned).unwrap();
    let st = safetensors::SafeTensors::deserialize(&st_bytes).unwrap();
    let w = st.tensor("conv.weight").unwrap();
    let sizes: [usize; 4] = w.shape().try_into().unwrap();
    let v = view_of(std::slice::from_ref(&out), &[]);
    let blob = read(&v, &format!("tensors/{key}.bin"));
    assert_ne!(blob, w.data());
    assert_eq!(
        ptefs::meta::checkpoint::ohwi_to_oihw(&blob, sizes, 4).unwrap(),
        w.data()
    );
}
