//! Any bytes as an ETDump joined with a program (the portable MLP and the
//! XNNPACK net the ETDump fixtures profile): build the tree with
//! `methods/<m>/profile/` and read every file. Events naming no
//! instruction, delegate ids of any kind and tensors of any size must
//! give tables, never a panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use ptefs::tree::{Input, Options, ROOT, build_with};

const PROGRAMS: [&[u8]; 2] = [
    include_bytes!("../../tests/fixtures/etdump/portable_mlp.pte"),
    include_bytes!("../../tests/fixtures/etdump/xnnpack_mobilenetish.pte"),
];

fuzz_target!(|bytes: &[u8]| {
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
            ..Options::default()
        };
        let tree = build_with(&inputs, &[], &options);
        for (_, ino) in tree.walk(ROOT) {
            if let Some(f) = tree.file(ino) {
                let len = f.content.len();
                assert_eq!(f.content.read(0, len).len(), len, "short read");
            }
        }
    }
});
