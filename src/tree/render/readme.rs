//! The `README.txt` at the root of each file's tree.

/// For a program.
pub const PROGRAM: &str = "\
This directory shows an ExecuTorch program (.pte), read-only.

header.json          the file header and extended header
program.json         schema version, methods, segments, constant and mutable
                     segment tables, named data keys (no bulk bytes)
methods/<m>/         one directory per method (execution plan)
  plan.json          the whole ExecutionPlan as flatc prints it; tensor values
                     with stored bytes gain \"ptefs_path\"
  code.txt           the instructions, one per line
  tensors/           <value>[.<name>].bin raw bytes, .npy the same with a NumPy
                     header, index.json what each one is and where it lives
  delegates/<i>-<id>/processed.bin and compile_specs.json
    xnnpack/         for XNNPACK: header.json, graph.json, code.txt, and
                     weights/ (each constant as .bin/.npy, index.json)
constants/<i>.bin    constant buffer i (index 0 is reserved)
named/<key>.bin      named data blobs; index.json
segments/<i>.bin     each raw segment

Raw files are byte ranges of the source file. Names are percent-encoded
where a key holds '/', NUL, '%', '~' or a leading '.'; index.json keeps
the originals.
";

/// For a data file.
pub const DATA: &str = "\
This directory shows an ExecuTorch data file (.ptd), read-only.

header.json          the file header
flat_tensor.json     version, segments and named data with tensor layouts
tensors/             <key>.bin per named blob; <key>.npy where a tensor
                     layout is recorded; index.json what each one is
segments/<i>.bin     each raw segment

Raw files are byte ranges of the source file. Names are percent-encoded
where a key holds '/', NUL, '%', '~' or a leading '.'; index.json keeps
the originals.
";

/// For a bundled program.
pub const BUNDLED: &str = "\
This directory shows an ExecuTorch bundled program (.bpte), read-only.

header.json                  identifier, version, where the program lies
program/                     the embedded program's whole tree
testsets/<method>/<case>/    each test case: input_<i> and expected_<i> as
                             .bin and .npy, index.json for every value
";
