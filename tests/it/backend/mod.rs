//! Each backend's delegate payloads, one module per backend: the decoded
//! trees against the fixtures' oracles and the files the writer makes.

mod coreml;
mod ethosu;
mod mlx;
mod mps;
mod openvino;
mod tosa;
mod vendor;
mod vgf;
mod vulkan;
mod xnnpack;
mod xnnpack_links;
mod xnnpack_payloads;
mod xnnpack_scales;
