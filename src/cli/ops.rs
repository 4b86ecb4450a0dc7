//! `ptefs ops`: the operator union of several programs, as one
//! `selected_operators.yaml`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clap::Args;

use super::{OK, TROUBLE, error, open_inputs};
use crate::index::listing;
use crate::index::ops::{Union, program};
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(
    after_help = "The operators of every program given, with the kernel keys of \
    every call merged, in the format of ExecuTorch's gen_oplist (a selective build's \
    selected_operators.yaml, as the tree's ops.yaml). `ptefs check F --runtime` that file \
    passes for each program F given, with the backends it delegates to registered: \
    selective build does not list backends, so they are named on stderr.\n\n\
    Exit status: 0 written, 2 a file cannot be read or holds no program.\n\n\
    Examples:\n  \
    ptefs ops a.pte b.pte c.bpte -o selected_operators.yaml\n  \
    ptefs ops models/*.pte > selected_operators.yaml\n  \
    ptefs ops exports/ -o selected_operators.yaml"
)]
pub(super) struct OpsArgs {
    /// Write the YAML to this file (replaced whole, atomically) instead
    /// of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    http: super::HttpHeaders,
    /// Programs (.pte, .bpte), http(s)://, s3://, gs:// or az:// URLs of
    /// them, or directories, whose programs (by extension, recursively)
    /// are taken.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// The files `args` name, a directory's programs in its place.
fn programs(args: &[PathBuf]) -> Result<Vec<PathBuf>, i32> {
    let mut out = Vec::new();
    for a in args {
        if !a.is_dir() {
            out.push(a.clone());
            continue;
        }
        let listed = listing::list(&[a.to_string_lossy().into_owned()]).map_err(|e| {
            error(e);
            TROUBLE
        })?;
        let before = out.len();
        out.extend(
            listed
                .items
                .into_iter()
                .map(|i| PathBuf::from(i.source))
                .filter(|p| {
                    p.extension()
                        .and_then(|e| e.to_str())
                        .is_some_and(|e| ["pte", "bpte"].contains(&e.to_ascii_lowercase().as_str()))
                }),
        );
        if out.len() == before {
            error(format_args!(
                "{}: no program (.pte, .bpte) in it",
                a.display()
            ));
            return Err(TROUBLE);
        }
    }
    Ok(out)
}

pub(super) fn run(args: &OpsArgs) -> Result<i32, i32> {
    args.http.apply()?;
    let mut union = Union::default();
    for f in &programs(&args.files)? {
        let opened = open_inputs(std::slice::from_ref(f), &[], false)?;
        let inputs = opened.parse().map_err(|e| {
            error(e);
            TROUBLE
        })?;
        for input in &inputs.shown {
            let name = shown(f);
            let p = program(&name, &input.parsed).map_err(|e| {
                error(e);
                TROUBLE
            })?;
            union.add(p);
        }
    }
    if !union.backends.is_empty() {
        let names: Vec<&str> = union.backends.iter().map(String::as_str).collect();
        eprintln!(
            "ptefs: note: the programs also delegate to {}: a runtime registers a backend \
             by linking its library, which selected_operators.yaml does not list",
            names.join(", ")
        );
    }
    let yaml = union.yaml();
    match &args.output {
        None => super::print(&yaml)?,
        Some(path) => write_atomic(path, yaml.as_bytes()).map_err(|e| {
            error(format_args!("{}: {e}", path.display()));
            TROUBLE
        })?,
    }
    Ok(OK)
}

/// Writes `bytes` to a new file beside `path`, then renames it over
/// `path`: a reader never sees half a file.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // As any new file: readable as the umask allows (a temporary file
    // would otherwise keep its own 0600).
    let mut tmp = tempfile::Builder::new()
        .prefix(".ptefs-ops-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
