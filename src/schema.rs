//! Flatbuffer types generated from `schema/*.fbs`.

pub use crate::bundled_program_generated::bundled_program_flatbuffer as bundled;
pub use crate::etdump_generated::etdump;
pub use crate::flat_tensor_generated::flat_tensor_flatbuffer as flat_tensor;
pub use crate::generated::tosa_generated::tosa_flatbuffer as tosa;
pub use crate::generated::vgf_generated::vgf_flatbuffer as vgf;
pub use crate::mlx_generated::mlx_flatbuffer as mlx;
pub use crate::mps_generated::mps_flatbuffer as mps;
pub use crate::native_graph_generated::native_graph;
pub use crate::program_generated::executorch_flatbuffer as program;
pub use crate::program_generated::executorch_flatbuffer::ScalarType;
pub use crate::vulkan_generated::vulkan_flatbuffer as vulkan;
pub use crate::xnnpack_generated::xnnpack_flatbuffer as xnnpack;
/// The named-data keys of an XNNPACK graph alone.
pub use crate::xnnpack_keys_generated::xnnpack_keys;

/// Protobuf messages of Core ML's `model.mlmodel` (prost), from
/// `schema/coreml.proto`.
pub use crate::generated::coreml_proto_generated as coreml;
