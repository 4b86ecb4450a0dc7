//! Constant tensors stored at an offset their element type does not
//! divide. The runtime loads them without copying and without looking at
//! the address, so its kernels read them unaligned: a warning, not a
//! problem, since ExecuTorch 1.5.1 loads and runs such a program.
//!
//! What the runtime does, in ExecuTorch's sources:
//! - `getTensorDataPtr` (runtime/executor/tensor_parser_exec_aten.cpp)
//!   makes a constant's data pointer `Program::get_constant_buffer_data`
//!   (runtime/executor/program.cpp): the constant segment's address plus
//!   the tensor's offset in it, bounds-checked, never copied, never
//!   checked for alignment. An external constant is the buffer
//!   `Method::parse_external_constants` (runtime/executor/method.cpp) got
//!   from `FlatTensorDataMap::get_data`
//!   (extension/flat_tensor/flat_tensor_data_map.cpp), which hands its
//!   tensor's file range to the data loader as it is.
//! - The data loader decides the address. `MmapDataLoader::load`
//!   (extension/data_loader/mmap_data_loader.cpp), which the Python
//!   runtime and `Module` use for files, maps the pages and returns a
//!   pointer at the file offset, so the tensor is exactly as aligned as
//!   its offset in the file. `BufferDataLoader` points into its buffer in
//!   the same way. Only `FileDataLoader::load`
//!   (extension/data_loader/file_data_loader.cpp) copies, each segment
//!   into an allocation of its own alignment (16 bytes by default), which
//!   is the copy zero-copy loading avoids.
//! - The runtime checks alignment only where a flatbuffer starts:
//!   `Program::load` and `FlatTensorDataMap::load` refuse a program or
//!   data flatbuffer whose address `alignof(std::max_align_t)` does not
//!   divide. A file loaded from its first byte always passes.
//!
//! Mutable tensors' initial state is left out: `load_mutable_subsegment_into`
//! copies it into planned memory at load. So are delegates' payloads and
//! named blobs: their backends read them through their own formats (the
//! XNNPACK flatbuffer verifier checks alignment relative to the payload,
//! and XNNPACK packs weights into buffers of its own).

use std::collections::BTreeMap;

use super::findings::{Finding, Kind, finding};
use crate::format::{DataFile, ProgramFile, TensorData, scalar};
use crate::meta::external;
use crate::schema::ScalarType;

/// What the runtime does with such a tensor.
const IN_PLACE: &str = "the runtime reads constants where its data loader puts them (in the \
                        mapped file, or the buffer it was given), with no copy and no alignment \
                        check, so kernels read it from an unaligned address";

/// One warning per constant, in the program (named `file`) or an attached
/// data file, at an offset its element type's alignment does not divide.
/// A program's offsets count from its own first byte, which is the file's
/// for a `.pte` and the embedded program's for a `.bpte`: `Program::load`
/// requires either to be aligned, so that is where alignment counts from.
pub fn unaligned(
    file: &str,
    program: &ProgramFile<'_>,
    data: &[&DataFile<'_>],
    data_names: &[String],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut constants: BTreeMap<u32, (ScalarType, u64)> = BTreeMap::new();
    let mut externals = BTreeMap::new();
    for t in program.methods.iter().flat_map(|m| &m.tensors) {
        match t.data {
            TensorData::Constant { buffer_index, span } => {
                constants
                    .entry(buffer_index)
                    .or_insert((t.scalar_type, span.offset));
            }
            TensorData::External { key } => {
                externals.entry(key.bytes()).or_insert((key, t.scalar_type));
            }
            TensorData::MutableInitialState { .. } => {}
        }
    }
    let in_program = format!("the program in {file}");
    for (index, (ty, offset)) in constants {
        if let Some(w) = misaligned(format!("constant {index}"), ty, offset, &in_program) {
            out.push(w);
        }
    }
    for (key, ty) in externals.into_values() {
        let Some((file, e)) = external::find(data.iter().copied(), key) else {
            continue;
        };
        let ty = e.layout.as_ref().map_or(ty, |l| l.scalar_type);
        let holder = data_names.get(file).map_or("a data file", String::as_str);
        if let Some(w) = misaligned(key.show().into_owned(), ty, e.span.offset, holder) {
            out.push(w);
        }
    }
    out
}

/// The warning for a tensor of `ty` at `offset` in `holder`, or `None`
/// when its alignment divides the offset.
fn misaligned(name: String, ty: ScalarType, offset: u64, holder: &str) -> Option<Finding> {
    let align = scalar::alignment(ty)?;
    if align <= 1 || offset.is_multiple_of(align) {
        return None;
    }
    let mut f = finding(
        None,
        Kind::Unaligned,
        name,
        format!(
            "{} data at offset {offset} of {holder}, not a multiple of its alignment \
             ({align} bytes): {IN_PLACE}",
            scalar::name(ty)
        ),
    );
    f.offset = Some(offset);
    f.alignment = Some(align);
    Some(f)
}
