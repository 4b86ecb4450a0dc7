//! Delegate payloads put into programs, and every truncation and byte flip
//! of a payload checked: the tree must still build, every file of it read
//! within its size, the rest of the program stay intact, and a payload the
//! backend cannot decode must say so in `ERROR.txt`.

use ptefs::tree::{ROOT, Tree};

use super::{Bytes, Delegate, Method, Program};

/// A program whose one method `forward` has one delegate of `backend`
/// with `payload` (in a segment), `specs` as its compile specs, and
/// `named` as the program's named data.
pub fn one_delegate(
    backend: &str,
    payload: Vec<u8>,
    specs: Vec<(String, Vec<u8>)>,
    named: Vec<(String, Vec<u8>)>,
) -> Vec<u8> {
    let mut m = Method::new("forward", Vec::new());
    m.delegates.push(Delegate {
        id: backend.into(),
        blob: Bytes::Owned(payload),
        inline: false,
        compile_specs: specs,
    });
    Program {
        methods: vec![m],
        named: named
            .into_iter()
            .map(|(k, b)| (k, Bytes::Owned(b)))
            .collect(),
        ..Program::default()
    }
    .to_bytes()
}

/// Reads every file of `tree` (over `bytes`) whole, checking each read
/// gives exactly the size `stat` said. Returns the number of files.
pub fn read_all(tree: &Tree, bytes: &[u8]) -> usize {
    let mut stack = vec![ROOT];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for e in tree.entries(dir).into_iter().flatten() {
            if tree.is_dir(e.ino) {
                stack.push(e.ino);
                continue;
            }
            let Some(f) = tree.file(e.ino) else { continue };
            let len = f.content.len();
            let mut out = Vec::new();
            // Piece after piece: an assembled file gives one part at a time.
            while (out.len() as u64) < len {
                let piece = f.content.read(out.len() as u64, len - out.len() as u64);
                if piece.is_empty() {
                    break;
                }
                let tail = piece.tail.map_or(&[][..], |(_, span)| {
                    let end = span.offset + span.len;
                    assert!(end <= bytes.len() as u64, "a read past the file: {span:?}");
                    span.bytes(bytes)
                });
                piece.assemble(tail, &mut out);
            }
            assert_eq!(out.len() as u64, len, "{}: read != size", e.name);
            files += 1;
        }
    }
    files
}

/// Every truncation of `payload` and every byte of it inverted, each in a
/// program of its own made by `program`: the tree builds, every file
/// reads, `processed.bin` is the mutated payload, and where the backend's
/// folder `folder` exists without `header.json` and `weights/`, it says
/// what is wrong in `ERROR.txt`. Returns how many mutations left an
/// `ERROR.txt`.
pub fn mutate_payload(
    backend: &str,
    folder: &str,
    payload: &[u8],
    program: impl Fn(Vec<u8>) -> Vec<u8>,
) -> usize {
    let dir = format!("methods/forward/delegates/0-{backend}");
    let mut mutations: Vec<Vec<u8>> = (0..payload.len()).map(|n| payload[..n].to_vec()).collect();
    for i in 0..payload.len() {
        let mut m = payload.to_vec();
        m[i] ^= 0xff;
        mutations.push(m);
    }
    let mut errors = 0;
    for (case, m) in mutations.into_iter().enumerate() {
        let bytes = program(m.clone());
        let tree = Tree::from_bytes("x.pte", &bytes)
            .unwrap_or_else(|e| panic!("case {case}: the program no longer opens: {e}"));
        read_all(&tree, &bytes);
        let processed = tree
            .resolve(&format!("{dir}/processed.bin"))
            .and_then(|ino| tree.file(ino))
            .map(|f| f.content.len());
        assert_eq!(
            processed,
            Some(m.len() as u64),
            "case {case}: processed.bin"
        );
        if tree.resolve(&format!("{dir}/{folder}/ERROR.txt")).is_some() {
            errors += 1;
        }
    }
    errors
}
