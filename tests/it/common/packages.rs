//! The pieces of writer-made packages (`.ptn`) that the package tests
//! share: tensors of patterned bytes and one small package.

use ptefs::schema::native_graph as ng;

use crate::writer::package::{Chunk, StTensor, Zip, constants_method, package};

/// A safetensors tensor holding `data`.
pub fn st(key: &str, dtype: &'static str, shape: &[u64], data: Vec<u8>) -> StTensor {
    StTensor {
        key: key.into(),
        dtype,
        shape: shape.to_vec(),
        data: Chunk::Bytes(data),
    }
}

/// `n` bytes that differ from one another and, by `seed`, from those of
/// another tensor.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Two float tensors (`a.w` of 4 elements, `b` of 2×2) and a method using
/// them.
pub fn small() -> Zip {
    let m = constants_method(&[
        ("a.w", ng::ScalarType::FLOAT, &[4]),
        ("b", ng::ScalarType::FLOAT, &[2, 2]),
    ]);
    let tensors = [
        st("a.w", "F32", &[4], pattern(16, 1)),
        st("b", "F32", &[2, 2], pattern(16, 2)),
    ];
    package(&[m], &tensors, &[])
}
