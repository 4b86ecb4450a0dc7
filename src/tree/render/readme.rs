//! The `README.txt` at the root of each file's tree.

/// `readme` followed by what of its tree was not made and why, one line
/// each.
pub fn with_not_made(readme: &str, not_made: &[String]) -> Box<[u8]> {
    let mut text = readme.to_owned();
    if !not_made.is_empty() {
        text.push_str("\nNot made:\n");
        for n in not_made {
            text.push_str(&format!("  {}\n", n.replace('\n', " ")));
        }
    }
    text.into_bytes().into()
}

/// For a program.
pub const PROGRAM: &str = "\
This directory shows an ExecuTorch program (.pte), read-only.

header.json          the file header and extended header
program.json         schema version, methods, segments, constant and mutable
                     segment tables, named data keys (no bulk bytes)
ops.txt              each operator and delegate, its call count, where it runs
ops.yaml             the operators as ExecuTorch's gen_oplist lists them
by-name/<key>        (with --names) the file holding each checkpoint key's bytes
methods/<m>/         one directory per method (execution plan)
  plan.json          the whole ExecutionPlan as flatc prints it; tensor values
                     with stored bytes gain \"ptefs_path\"
  code.txt           the instructions, one per line, with types
  io.json            inputs and outputs as the exporter recorded them
  memory.json        planned buffers and the tensors placed in each
  value.json         (constant methods) the values they return
  graph.dot          the instruction graph, for Graphviz
  values/<id>        the file of each tensor value, by id
  tensors/           <value>[.<name>].bin raw bytes, .npy the same with a NumPy
                     header, <value>.<first use>.bin another name of an unnamed
                     one, index.json what each one is, who uses it, where it lives
  delegates/<i>-<id>/processed.bin and compile_specs.json
    <backend>/       for decoded backends (xnnpack/, vulkan/, coreml/, ...):
                     header.json, graph.json, code.txt, graph.dot, weights/
                     (each weight as .bin/.npy, index.json) and the payload's
                     own parts
constants/<i>.bin    constant buffer i (index 0 is reserved): the bytes of the
                     largest tensor using it, without the alignment padding
                     its slot may hold after them; index.json gives both sizes
named/<key>.bin      named data blobs; index.json
segments/<i>.bin     each raw segment
report/              ptefs report's numbers, computed when first read:
                     size.json (bytes by file, store, layer, tensor; by dtype
                     and backend), layers.tsv, duplicates.tsv, coverage.json,
                     quantization.tsv, stats.tsv, treemap.svg
weights.safetensors  every stored tensor once (constants, attached data,
                     typed delegate weights), named by FQN or key, else by
                     tree path; __metadata__ gives each one's tree paths

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
weights.safetensors  every entry with a tensor layout, named by its key

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
report/                      ptefs report's numbers (size.json, layers.tsv,
                             duplicates.tsv, coverage.json, quantization.tsv,
                             stats.tsv, treemap.svg), computed when first read
";

/// For a native program package.
pub const PACKAGE: &str = "\
This directory shows an ExecuTorch native program package (.ptn), read-only.

package.json         zip members with offsets and sizes, the graph's
                     identifier and version, the safetensors header, aliases
program.json         the whole graph (program.ptg) as flatc prints it
members/<name>       each stored zip member, as it lies in the package
tensors/             <data key>.bin raw bytes and .npy with a NumPy header for
                     every safetensors entry and every alias; index.json what
                     each key is, where its bytes lie, which methods use it,
                     and the mutable buffers that have no bytes
methods/<m>/
  graph.json         the method's table as flatc prints it
  code.txt           one line per node: inputs, calls with named arguments,
                     mutated and alias_of marks, outputs
  io.json            user inputs, outputs and what they update, constants
                     and mutable buffers
  graph.dot          the graph for Graphviz (dot -Tsvg graph.dot)
ERROR.txt            present when a member could not be read; the rest of
                     the package is still shown
report/              ptefs report's numbers (size.json, layers.tsv,
                     duplicates.tsv, coverage.json, quantization.tsv,
                     stats.tsv, treemap.svg), computed when first read

Raw files are byte ranges of the package file (its members are stored, not
compressed). An alias is another name for its owner's bytes. Names are
percent-encoded where a key holds '/', NUL, '%', '~' or a leading '.';
index.json keeps the originals.
";

/// For an ETDump, the runtime's profile.
pub const PROFILE: &str = "\
This directory shows an ExecuTorch ETDump (.etdp), the runtime's profile,
read-only.

header.json          size prefix, version, how many run data blocks and events
runs/<n>/            one directory per run data block (\"Default\" for loading,
                     then one per execution)
  events.json        every event: profile events (name, chain, instruction,
                     delegate debug id, start and end in ticks, duration in
                     ticks and ms), allocation events, debug events (the value
                     logged; for a tensor its type, sizes, strides and offset
                     in the debug buffer)
  allocations.json   the allocators, each allocation and the total per allocator
trace.json           the profile events in Chrome's trace-event format, for
                     Perfetto (ui.perfetto.dev) or chrome://tracing: one process
                     per run data block, one thread per chain, delegate events
                     nested in the instruction that called them

The ETDump does not record how long a tick is: ms and µs take a tick to be
1 ns, as ExecuTorch's Inspector does by default.
";
