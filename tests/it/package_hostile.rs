//! Hostile packages the project's writer makes (bad central directories,
//! overlapping members, lying safetensors headers, corrupt graphs,
//! compressed members, aliases without owners): each gives a clear error
//! (exit 2 from the CLI) or a partial tree with ERROR.txt, never wrong
//! bytes.

use crate::common;
use crate::writer;

use common::packages::{pattern, small, st};
use common::*;
use ptefs::schema::native_graph as ng;
use ptefs::view::{Request, View};
use writer::package::*;

fn open_err(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "bad.ptn", bytes);
    View::open(&Request {
        inputs: vec![p],
        ..Request::default()
    })
    .map(|_| ())
    .expect_err("a hostile package opened")
    .to_string()
}

fn error_txt(v: &View) -> String {
    String::from_utf8(read(v, "ERROR.txt")).unwrap()
}

#[test]
fn a_central_directory_past_the_end_is_refused() {
    let mut bytes = small().to_bytes();
    let n = bytes.len();
    // The end record's central directory offset.
    bytes[n - 6..n - 2].copy_from_slice(&(n as u32 * 2).to_le_bytes());
    let e = open_err(&bytes);
    assert!(
        e.contains("central directory") && e.contains("past the end"),
        "{e}"
    );
}

#[test]
fn a_member_count_beyond_the_directory_is_refused() {
    let mut bytes = small().to_bytes();
    let n = bytes.len();
    bytes[n - 12..n - 10].copy_from_slice(&5000u16.to_le_bytes());
    bytes[n - 14..n - 12].copy_from_slice(&5000u16.to_le_bytes());
    let e = open_err(&bytes);
    assert!(e.contains("claims 5000 members"), "{e}");
}

#[test]
fn overlapping_members_are_refused() {
    // The second member's local header and data lie inside the first
    // member's data: the central directory points into it.
    let inner = Zip {
        members: vec![Member::stored("aliases.json", b"{}".to_vec())],
        zip64: false,
    };
    let inner_bytes = inner.to_bytes();
    let local_len = 30 + "aliases.json".len() + 2;
    let mut outer = small();
    let mut ptg = program(&[constants_method(&[])]);
    let at = ptg.len();
    ptg.extend_from_slice(&inner_bytes[..local_len]);
    outer.members[0] = Member::stored("program.ptg", ptg);
    let mut bytes = outer.to_bytes();
    // Append a central entry for the hidden member by rewriting the end.
    let layout_data = 30 + "program.ptg".len();
    let hidden_header = (layout_data + at) as u32;
    let n = bytes.len();
    let cd_start = u32::from_le_bytes(bytes[n - 6..n - 2].try_into().unwrap()) as usize;
    let cd_len = u32::from_le_bytes(bytes[n - 10..n - 6].try_into().unwrap()) as usize;
    let mut entry = inner_bytes[local_len..local_len + 46 + "aliases.json".len()].to_vec();
    entry[42..46].copy_from_slice(&hidden_header.to_le_bytes());
    let mut end = bytes.split_off(cd_start + cd_len);
    bytes.extend(&entry);
    let count = u16::from_le_bytes([end[10], end[11]]) + 1;
    end[8..10].copy_from_slice(&count.to_le_bytes());
    end[10..12].copy_from_slice(&count.to_le_bytes());
    end[12..16].copy_from_slice(&((cd_len + entry.len()) as u32).to_le_bytes());
    bytes.extend(end);
    let e = open_err(&bytes);
    assert!(e.contains("overlaps") && e.contains("program.ptg"), "{e}");
}

#[test]
fn a_safetensors_header_lying_about_offsets_gives_a_partial_tree() {
    // The header says 16 bytes of data for a [2] F32 tensor (8 bytes).
    let mut zip = small();
    let header = br#"{"a.w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}}"#;
    let mut st = (header.len() as u64 + 6).to_le_bytes().to_vec();
    st.extend_from_slice(header);
    st.extend_from_slice(b"      ");
    st.extend(pattern(16, 1));
    zip.members[1] = Member::stored("program.safetensors", st);
    let (_d, v) = view_bytes("lie.ptn", &zip.to_bytes());
    let e = error_txt(&v);
    assert!(e.contains("program.safetensors"), "{e}");
    assert!(v.tree.resolve("methods/forward/code.txt").is_some());
    assert!(
        v.tree.resolve("tensors/a.w.bin").is_none(),
        "bytes served from a lying header"
    );
    // Offsets past the member's end.
    let mut zip = small();
    let header = br#"{"a.w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
    let mut st = (header.len() as u64 + 6).to_le_bytes().to_vec();
    st.extend_from_slice(header);
    st.extend_from_slice(b"      ");
    st.extend(pattern(8, 1));
    zip.members[1] = Member::stored("program.safetensors", st);
    let (_d, v) = view_bytes("short.ptn", &zip.to_bytes());
    assert!(error_txt(&v).contains("program.safetensors"));
    assert!(
        json(&v, "tensors/index.json")
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e.get("name").is_none())
    );
}

#[test]
fn a_corrupt_graph_gives_a_partial_tree_with_the_tensors() {
    let mut zip = small();
    let Chunk::Bytes(ptg) = &mut zip.members[0].chunks[0] else {
        unreachable!()
    };
    // The root offset points past the end.
    ptg[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
    let (_d, v) = view_bytes("corrupt.ptn", &zip.to_bytes());
    let e = error_txt(&v);
    assert!(
        e.contains("program.ptg") && e.contains("does not verify"),
        "{e}"
    );
    assert!(v.tree.resolve("program.json").is_none());
    assert_eq!(read(&v, "tensors/b.bin"), pattern(16, 2));
    assert_eq!(ls(&v, "methods"), Vec::<String>::new());

    let mut zip = small();
    let Chunk::Bytes(ptg) = &mut zip.members[0].chunks[0] else {
        unreachable!()
    };
    ptg[4..8].copy_from_slice(b"ET12");
    let (_d, v) = view_bytes("ident.ptn", &zip.to_bytes());
    assert!(error_txt(&v).contains("file identifier is \"ET12\", expected \"NPTG\""));
}

#[test]
fn compressed_members_are_refused_not_inflated() {
    let mut zip = small();
    zip.members[1].method = 8;
    let (_d, v) = view_bytes("deflated.ptn", &zip.to_bytes());
    let e = error_txt(&v);
    assert!(
        e.contains("program.safetensors is compressed (method 8, deflate)"),
        "{e}"
    );
    assert!(v.tree.resolve("members/program.safetensors").is_none());
    assert!(v.tree.resolve("tensors/a.w.bin").is_none());
    let pkg = json(&v, "package.json");
    assert_eq!(pkg["members"][1]["compression"], "deflate");
}

#[test]
fn an_alias_to_a_missing_owner_is_an_error() {
    let zip = package(
        &[constants_method(&[("a.w", ng::ScalarType::FLOAT, &[4])])],
        &[st("a.w", "F32", &[4], pattern(16, 1))],
        &[("ghost", "nobody"), ("a.w2", "a.w")],
    );
    let (_d, v) = view_bytes("ghost.ptn", &zip.to_bytes());
    assert!(
        error_txt(&v).contains("alias ghost names owner nobody"),
        "{}",
        error_txt(&v)
    );
    let zip = package(
        &[constants_method(&[("a.w", ng::ScalarType::FLOAT, &[4])])],
        &[st("a.w", "F32", &[4], pattern(16, 1))],
        &[("a.w2", "a.w")],
    );
    let (_d, v) = view_bytes("ok.ptn", &zip.to_bytes());
    assert_eq!(read(&v, "tensors/a.w2.bin"), pattern(16, 1));
    assert_eq!(read(&v, "tensors/a.w2.npy"), read(&v, "tensors/a.w.npy"));
}

#[test]
fn the_cli_exits_2_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = small().to_bytes();
    let cut = write_file(dir.path(), "cut.ptn", &bytes[..bytes.len() - 30]);
    let out = ptefs().arg("ls").arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cut.ptn") && err.contains("zip"), "{err}");
    // A partial tree still lists, and says why it is partial.
    let mut zip = small();
    zip.members[1].method = 8;
    let partial = write_file(dir.path(), "partial.ptn", &zip.to_bytes());
    let out = ptefs()
        .args(["cat"])
        .arg(&partial)
        .arg("ERROR.txt")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("compressed"));
}

#[test]
fn a_zip_without_a_graph_is_not_a_package() {
    let other = Zip {
        members: vec![Member::stored("notes.txt", b"hello".to_vec())],
        zip64: false,
    };
    let e = open_err(&other.to_bytes());
    assert!(
        e.contains("not a native program package") && e.contains("notes.txt"),
        "{e}"
    );
    // In a directory source it is skipped with that reason, beside a package.
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "archive.zip", &other.to_bytes());
    write_file(dir.path(), "small.ptn", &small().to_bytes());
    let v = view_of(&[dir.path().to_owned()], &[]);
    assert_eq!(v.skipped.len(), 1, "{:?}", v.skipped);
    assert!(v.skipped[0].1.contains("not a native program package"));
    let path = ["tensors/b.bin", "small.ptn/tensors/b.bin"]
        .into_iter()
        .find(|p| v.tree.resolve(p).is_some())
        .expect("the package is shown");
    assert_eq!(read(&v, path), pattern(16, 2));
}
