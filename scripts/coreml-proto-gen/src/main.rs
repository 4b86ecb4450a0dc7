//! Writes the prost code for `schema/coreml.proto` to the file named by the
//! first argument. protoc is found through `PROTOC` (prost-build's own
//! convention); scripts/gen-schema.sh points it at PyPI grpcio-tools' protoc.

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(proto), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: coreml-proto-gen <schema/coreml.proto> <out.rs>");
        std::process::exit(2);
    };
    let proto = PathBuf::from(proto);
    let include = proto.parent().map(PathBuf::from).unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("coreml-proto-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let result = prost_build::Config::new()
        .out_dir(&dir)
        // Ordered maps, so that functions, arguments and attributes list the
        // same way every time.
        .btree_map(["."])
        .compile_protos(&[&proto], &[&include]);
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!("{e}");
        std::process::exit(1);
    }
    let code = std::fs::read_to_string(dir.join("coreml.rs")).expect("generated coreml.rs");
    let _ = std::fs::remove_dir_all(&dir);
    let header = "// Generated from schema/coreml.proto by scripts/gen-schema.sh (prost-build).\n";
    std::fs::write(&out, format!("{header}{code}")).expect("write output");
}
