//! Invalid files: each gives exit status 2 and one line on stderr naming
//! the file and what is wrong, never a panic or a hang.

use crate::common;
use crate::writer;

use std::path::Path;

use common::*;
use ptefs::schema::ScalarType;
use writer::{Data, Program, Tensor, Value as V};

/// Runs `ptefs ls FILE` and checks the failure: exit 2, one line that
/// names the file and contains every one of `says`.
fn refused(path: &Path, says: &[&str]) {
    let out = ptefs().arg("ls").arg(path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", path.display());
    assert!(
        out.stdout.is_empty(),
        "printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let prefix = format!("ptefs: {}: ", path.display());
    assert!(err.starts_with(&prefix), "{err}");
    for s in says {
        assert!(err.contains(s), "{err:?} lacks {s:?}");
    }
}

fn mlp() -> Vec<u8> {
    std::fs::read(fixture("mlp.pte")).unwrap()
}

#[test]
fn not_a_model() {
    let d = tempfile::tempdir().unwrap();
    refused(
        &write_file(d.path(), "empty.pte", b""),
        &["0 bytes, too short"],
    );
    refused(
        &write_file(d.path(), "three.pte", b"ET1"),
        &["3 bytes, too short"],
    );
    refused(
        &write_file(d.path(), "notes.txt", b"hello, this is text\n"),
        &["not an ExecuTorch file", "\"o, t\""],
    );
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    refused(
        &write_file(d.path(), "pic.png", png),
        &["not an ExecuTorch file", "0x0d0a1a0a"],
    );
    refused(d.path(), &["holds no program"]);
}

/// Files of other formats are named, with what to do where there is
/// something to do.
#[test]
fn lookalikes_are_named() {
    let d = tempfile::tempdir().unwrap();
    let mut vgf = b"VGF1".to_vec();
    vgf.extend_from_slice(&[0; 60]);
    refused(
        &write_file(d.path(), "m.vgf", &vgf),
        &["it looks like a VGF file", "VgfBackend"],
    );
    let mut st = 16u64.to_le_bytes().to_vec();
    st.extend_from_slice(b"{\"a\":{}}        ");
    refused(
        &write_file(d.path(), "w.safetensors", &st),
        &["it looks like a safetensors file", "--names"],
    );
    refused(
        &write_file(d.path(), "m.gguf", b"GGUF\x03\0\0\0\0\0\0\0"),
        &["it looks like a GGUF model"],
    );
    let etrecord = writer::package::Zip {
        members: vec![writer::package::Member::stored(
            "etrecord/debug_handle_map",
            b"{}".to_vec(),
        )],
        zip64: false,
    };
    refused(
        &write_file(d.path(), "etrecord.bin", &etrecord.to_bytes()),
        &["not a native program package", "it looks like an ETRecord"],
    );
}

#[test]
fn truncated_programs() {
    let d = tempfile::tempdir().unwrap();
    let f = mlp();
    refused(
        &write_file(d.path(), "header.pte", &f[..20]),
        &["extended header at byte 8 is cut off"],
    );
    refused(
        &write_file(d.path(), "header2.pte", &f[..36]),
        &[
            "extended header length (bytes 12..16) is 32, so it would end at byte 40 past the end of the file at 36",
        ],
    );
    refused(
        &write_file(d.path(), "flatbuffer.pte", &f[..1000]),
        &["program size (bytes 16..24) is 2152, past the end of the file at 1000"],
    );
    let last = f.len() - 10;
    refused(
        &write_file(d.path(), "segment.pte", &f[..last]),
        &[
            "segment data size",
            &format!("past the end of the file at {last}"),
        ],
    );
}

fn patched(at: usize, value: u64) -> Vec<u8> {
    let mut f = mlp();
    f[at..at + 8].copy_from_slice(&value.to_le_bytes());
    f
}

#[test]
fn extended_header_fields_out_of_range() {
    let d = tempfile::tempdir().unwrap();
    refused(
        &write_file(d.path(), "size.pte", &patched(16, 1 << 40)),
        &["program size (bytes 16..24) is 1099511627776, past the end"],
    );
    refused(
        &write_file(d.path(), "base.pte", &patched(24, 1 << 40)),
        &["segment base offset (bytes 24..32) is 1099511627776, past the end"],
    );
    refused(
        &write_file(d.path(), "overflow.pte", &patched(32, u64::MAX - 100)),
        &["segment data size", "overflows"],
    );
    let mut small = mlp();
    small[12..16].copy_from_slice(&8u32.to_le_bytes());
    refused(
        &write_file(d.path(), "len.pte", &small),
        &["extended header length (bytes 12..16) is 8, below the minimum 24"],
    );
    let mut ptd = std::fs::read(fixture("mlp_external.ptd")).unwrap();
    ptd[16..24].copy_from_slice(&(u64::MAX - 4).to_le_bytes());
    refused(
        &write_file(d.path(), "x.ptd", &ptd),
        &["flatbuffer end", "overflows"],
    );
}

#[test]
fn flatbuffer_that_fails_verification() {
    let d = tempfile::tempdir().unwrap();
    let mut f = mlp();
    f[0..4].copy_from_slice(&0xfff0u32.to_le_bytes());
    refused(
        &write_file(d.path(), "root.pte", &f),
        &["program flatbuffer (bytes 0..2152) fails verification"],
    );
    let mut g = mlp();
    for b in &mut g[64..400] {
        *b = 0xff;
    }
    refused(
        &write_file(d.path(), "garbled.pte", &g),
        &["fails verification"],
    );
}

fn one_tensor(t: Tensor) -> Program {
    Program::forward(vec![V::Tensor(t)])
}

#[test]
fn sizes_that_overflow_a_byte_count() {
    let d = tempfile::tempdir().unwrap();
    let t = Tensor::new(
        ScalarType::LONG,
        &[i32::MAX, i32::MAX, i32::MAX],
        Data::Constant(vec![0; 8].into()),
    );
    refused(
        &write_file(d.path(), "huge.pte", &one_tensor(t).to_bytes()),
        &["method 0 (\"forward\")", "value 0", "overflow a 64-bit"],
    );
    let t = Tensor::new(
        ScalarType::FLOAT,
        &[4, -1],
        Data::Constant(vec![0; 8].into()),
    );
    refused(
        &write_file(d.path(), "neg.pte", &one_tensor(t).to_bytes()),
        &["negative dimension"],
    );
    let t = Tensor::new(
        ScalarType::FLOAT,
        &[1000],
        Data::Constant(vec![0; 8].into()),
    );
    refused(
        &write_file(d.path(), "long.pte", &one_tensor(t).to_bytes()),
        &[
            "value 0",
            "constant buffer 1 holding 4000 bytes",
            "extend past",
        ],
    );
}

#[test]
fn segment_index_out_of_range() {
    let d = tempfile::tempdir().unwrap();
    let mut p = one_tensor(Tensor::new(
        ScalarType::FLOAT,
        &[2],
        Data::Constant(vec![1; 8].into()),
    ));
    p.constant_segment_index = Some(7);
    refused(
        &write_file(d.path(), "seg.pte", &p.to_bytes()),
        &[
            "constant_segment",
            "segment index 7 is out of range (1 segments)",
        ],
    );
}

#[test]
fn a_missing_file_and_a_bad_data_attachment() {
    let out = ptefs().args(["ls", "/nonexistent/x.pte"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("ptefs: /nonexistent/x.pte: No such file")
    );
    let out = ptefs()
        .arg("ls")
        .arg(fixture("mlp_external.pte"))
        .arg("--data")
        .arg(fixture("mlp.pte"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("is given with --data but is not a data file")
    );
}

/// Every input the fuzzer ever crashed on (`tests/fuzz-regressions/`),
/// through the offline tree and the CLI: a tree or a clean error.
#[test]
fn fuzz_findings_open_or_fail_cleanly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if let Err(e) = ptefs::tree::Tree::from_bytes("f", &bytes) {
            assert!(!e.to_string().contains('\n'));
        }
        let out = ptefs().arg("ls").arg("-R").arg(&path).output().unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 2)),
            "{}: {:?}",
            path.display(),
            out
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
        n += 1;
    }
    assert!(n > 0);
}
