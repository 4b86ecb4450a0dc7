//! Any bytes as a pickle: the reader must return a value or an error, never
//! panic, overflow its stack or run away with memory; a value read must
//! render as JSON or give an error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(p) = ptefs::format::pickle::read(bytes) {
        let _ = p.to_json(p.root);
    }
});
