//! Trees over a file's bytes held in memory (`Tree::from_bytes`), and the
//! bytes of their files, for tests of payloads the writer makes.

use ptefs::tree::Tree;
use serde_json::Value;

/// The tree of the program or data file `bytes`.
pub fn tree(bytes: &[u8]) -> Tree {
    Tree::from_bytes("x.pte", bytes).unwrap_or_else(|e| panic!("{e}"))
}

/// The bytes of the file at `path` of `tree` (over `bytes`); `None` when
/// there is no such file.
pub fn bytes_at(tree: &Tree, bytes: &[u8], path: &str) -> Option<Vec<u8>> {
    let f = tree.file(tree.resolve(path)?)?;
    let len = f.content.len();
    let mut out = Vec::new();
    // Piece after piece: an assembled file gives one part at a time.
    while (out.len() as u64) < len {
        let piece = f.content.read(out.len() as u64, len - out.len() as u64);
        if piece.is_empty() {
            break;
        }
        let tail = piece.tail.map_or(&[][..], |(_, span)| span.bytes(bytes));
        piece.assemble(tail, &mut out);
    }
    Some(out)
}

/// The bytes of the file at `path`, which must be there.
pub fn cat(tree: &Tree, bytes: &[u8], path: &str) -> Vec<u8> {
    bytes_at(tree, bytes, path).unwrap_or_else(|| panic!("no file {path}"))
}

/// The file at `path` parsed as JSON.
pub fn json_at(tree: &Tree, bytes: &[u8], path: &str) -> Value {
    serde_json::from_slice(&cat(tree, bytes, path)).unwrap()
}

/// The file at `path` as text (invalid UTF-8 replaced); `None` when there
/// is no such file.
pub fn text_at(tree: &Tree, bytes: &[u8], path: &str) -> Option<String> {
    bytes_at(tree, bytes, path).map(|b| String::from_utf8_lossy(&b).into_owned())
}
