//! `ptefs pack`: the data file a program expects, from named tensors.

use std::path::PathBuf;

use clap::Args;

use super::{OK, TROUBLE, error};
use crate::edit::pack::{self, Supply};
use crate::edit::{EditError, Inputs, output, ptd};
use crate::format::Kind;
use crate::source::redact::shown;

#[derive(Args, Debug)]
#[command(
    after_help = "Every key the program needs (its external tensors, and the named data \
    its delegates refer to) is taken from the first SOURCE that holds it, by key, or by a \
    dotted name that ends with the key (model.fc1.weight for fc1.weight). The layout is \
    ExecuTorch's own: packing the tensors of a .ptd for its program gives that .ptd byte for \
    byte.\n\n\
    Examples:\n  \
    ptefs pack --for model.pte finetuned.safetensors -o model.ptd\n  \
    ptefs pack --for model.pte --cast weights/ -o model.ptd\n  \
    ptefs pack --for xnn.pte --names original.safetensors finetuned.safetensors -o xnn.ptd"
)]
pub(super) struct PackArgs {
    /// The program (.pte) whose data file to write.
    #[arg(long = "for", value_name = "PTE")]
    program: PathBuf,
    /// Safetensors files, data files (.ptd), or directories of <key>.npy
    /// and <key>.bin files.
    #[arg(required = true, value_name = "SOURCE")]
    sources: Vec<PathBuf>,
    /// Convert floating-point tensors of another type to the declared one
    /// (round to nearest even), saying how many values changed.
    #[arg(long)]
    cast: bool,
    /// A checkpoint (safetensors, or JSON {name: sha256}) whose names are
    /// also the keys its bytes are stored under: a data file keyed by
    /// digests (XNNPACK's) is packed from tensors named as in it.
    #[arg(long = "names", value_name = "FILE")]
    names: Option<PathBuf>,
    /// The data file to write (replaced atomically; never an input).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
}

pub(super) fn run(args: &PackArgs) -> Result<i32, i32> {
    let fail = |e: EditError| {
        error(e);
        TROUBLE
    };
    let wants = pack::program_wants(&args.program).map_err(fail)?;
    if wants.is_empty() {
        error(format_args!(
            "{}: needs no data file (no external tensors, no named data kept outside it)",
            shown(&args.program)
        ));
        return Err(TROUBLE);
    }
    let supplies: Vec<Supply> = args
        .sources
        .iter()
        .map(|p| Supply::open(p))
        .collect::<Result<_, _>>()
        .map_err(fail)?;
    let mut offers = Vec::new();
    for s in &supplies {
        offers.extend(s.offers().map_err(fail)?);
    }
    let names = (args.names.as_deref())
        .map(pack::Names::open)
        .transpose()
        .map_err(fail)?;
    let (blobs, notes) = pack::choose(&wants, &offers, args.cast, names.as_ref()).map_err(fail)?;
    for n in &notes {
        eprintln!("ptefs: note: {n}");
    }
    let tensors = blobs.iter().filter(|b| b.layout.is_some()).count();
    let keys = blobs.len();
    let laid = ptd::layout(blobs);
    let segments = laid.segments.len();
    let validate = |bytes: &[u8]| pack::validate(bytes, &wants);
    let inputs = (supplies.iter().flat_map(Supply::sources))
        .fold(Inputs::new().path(&args.program), Inputs::source);
    let inputs = (args.sources.iter().chain(&args.names)).fold(inputs, |i, p| i.path(p));
    let written = output::write_whole(
        &mut |w| laid.write(w),
        &args.output,
        Kind::Data,
        &inputs,
        &validate,
    )
    .map_err(fail)?;
    println!(
        "{}: {} bytes; {keys} keys ({tensors} tensors, {} named blobs) in {segments} segments",
        shown(&written.path),
        written.len,
        keys - tensors
    );
    Ok(OK)
}
