//! Any bytes: open as a program, data file, bundled program, package or
//! ETDump, build the tree, and read every file through the same calls the
//! mount uses. Every failure must be an error value; every byte range must
//! lie in the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptefs::tree::{ROOT, Tree};

fuzz_target!(|bytes: &[u8]| {
    let Ok(tree) = Tree::from_bytes("fuzz.pte", bytes) else {
        return;
    };
    let mut sum = 0u64;
    for (_, ino) in tree.walk(ROOT) {
        for (name, value) in tree.xattrs(ino) {
            if name == "user.ptefs.offset" {
                let offset: u64 = String::from_utf8(value).unwrap().parse().unwrap();
                assert!(
                    offset <= bytes.len() as u64,
                    "offset {offset} beyond {} bytes",
                    bytes.len()
                );
            }
        }
        let Some(f) = tree.file(ino) else { continue };
        let len = f.content.len();
        for (offset, size) in [
            (0, len),
            (len / 3, 4096),
            (len.saturating_sub(1), 2),
            (len, 1),
        ] {
            let piece = f.content.read(offset, size);
            sum = sum.wrapping_add(piece.head.iter().map(|&b| u64::from(b)).sum::<u64>());
            let mut tail: &[u8] = &[];
            if let Some((_, span)) = piece.tail {
                assert!(
                    span.end() <= bytes.len() as u64,
                    "span {span:?} beyond {} bytes",
                    bytes.len()
                );
                tail = &bytes[span.offset as usize..span.end() as usize];
                sum = sum.wrapping_add(tail.first().copied().unwrap_or(0).into());
                sum = sum.wrapping_add(tail.last().copied().unwrap_or(0).into());
            }
            assert_eq!(
                piece.len(),
                size.min(len.saturating_sub(offset)),
                "short read"
            );
            // Widened pieces render exactly the bytes they promise.
            let mut out = Vec::new();
            piece.assemble(tail, &mut out);
            assert_eq!(out.len() as u64, piece.len(), "assembled read");
        }
    }
    std::hint::black_box(sum);
});
