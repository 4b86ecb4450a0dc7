//! Any bytes as an ETDump joined with a program (the portable MLP and the
//! XNNPACK net the ETDump fixtures profile), with the debug fixture's
//! buffer: build the tree with `methods/<m>/profile/` and read every
//! file. Events naming no instruction, delegate ids of any kind and
//! logged tensors of any size must give tables and files within the
//! buffer, never a panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use ptefs::tree::{DebugBuffer, Input, Options, ROOT, build_with};

const PROGRAMS: [&[u8]; 2] = [
    include_bytes!("../../tests/fixtures/etdump/portable_mlp.pte"),
    include_bytes!("../../tests/fixtures/etdump/xnnpack_mobilenetish.pte"),
];

const BUFFER: &[u8] =
    include_bytes!("../../tests/fixtures/etdump/xnnpack_mobilenetish_debug.debug.bin");

fuzz_target!(|bytes: &[u8]| {
    let debug = [DebugBuffer {
        of: 1,
        source: 2,
        bytes: Arc::new(BUFFER),
        name: "run.debug.bin".into(),
    }];
    for program in PROGRAMS {
        let Ok(parsed) = ptefs::format::parse(bytes) else {
            return;
        };
        let Ok(p) = ptefs::format::parse(program) else {
            return;
        };
        let inputs = [Input {
            name: "m.pte".into(),
            source: 0,
            bytes: Arc::new(program),
            parsed: p,
        }];
        let profile = Input {
            name: "run.etdp".into(),
            source: 1,
            bytes: Arc::new(bytes.to_vec()),
            parsed,
        };
        let options = Options {
            profile: Some(&profile),
            debug: &debug,
            ..Options::default()
        };
        let tree = build_with(&inputs, &[], &options);
        let sources = [program, bytes, BUFFER];
        for (_, ino) in tree.walk(ROOT) {
            if let Some(f) = tree.file(ino) {
                let len = f.content.len();
                let piece = f.content.read(0, len);
                assert_eq!(piece.len(), len, "short read");
                if let Some((source, span)) = piece.tail {
                    assert!(
                        span.end() <= sources[source].len() as u64,
                        "read past a source"
                    );
                }
            }
        }
    }
});
