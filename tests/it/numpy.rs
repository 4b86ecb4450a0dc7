//! `.npy` twins load in NumPy, plainly and with `mmap_mode="r"`, to the
//! values of the `.bin`, for every dtype of `dtypes.pte` and the types the
//! writer adds.

use crate::common;
use crate::writer;

use common::*;
use ptefs::schema::ScalarType;
use writer::{Data, Program, Tensor, Value as V};

#[test]
fn every_dtype_of_dtypes_pte_loads_in_numpy() {
    let dir = tempfile::tempdir().unwrap();
    extract(&view("dtypes.pte"), dir.path());
    let out = python(NUMPY_CHECK, &[dir.path()]);
    for dtype in [
        "float16", "uint16", "float64", "int16", "int32", "int64", "int8", "uint8", "bool",
    ] {
        assert!(
            out.contains(&format!(" {dtype} ")),
            "{dtype} not checked:\n{out}"
        );
    }
    assert!(out.contains("checked 9"), "{out}");
}

#[test]
fn every_fixture_tensor_loads_in_numpy() {
    for model in models() {
        let dir = tempfile::tempdir().unwrap();
        extract(&view(&model), dir.path());
        python(NUMPY_CHECK, &[dir.path()]);
    }
}

#[test]
fn writer_types_and_dim_orders_load_in_numpy() {
    let types = [
        (ScalarType::BFLOAT16, 2),
        (ScalarType::FLOAT8E4M3FN, 1),
        (ScalarType::BITS16, 2),
        (ScalarType::QUINT4X2, 1),
        (ScalarType::UINT16, 2),
        (ScalarType::UINT32, 4),
        (ScalarType::UINT64, 8),
        (ScalarType::BOOL, 1),
    ];
    let mut values: Vec<V> = types
        .iter()
        .map(|&(t, size)| {
            let data: Vec<u8> = (0..6 * size).map(|i| (i * 7 % 2) as u8).collect();
            V::Tensor(Tensor::new(t, &[2, 3], Data::Constant(data.into())))
        })
        .collect();
    let data: Vec<u8> = (0..2 * 3 * 4 * 5 * 4).map(|i| i as u8).collect();
    values.push(V::Tensor(
        Tensor::new(
            ScalarType::FLOAT,
            &[2, 3, 4, 5],
            Data::Constant(data.into()),
        )
        .dim_order(&[0, 2, 3, 1]),
    ));
    values.push(V::Tensor(Tensor::new(
        ScalarType::DOUBLE,
        &[],
        Data::Constant(2.5f64.to_le_bytes().to_vec().into()),
    )));
    let p = Program::forward(values);
    let (_d, v) = view_bytes("t.pte", &p.to_bytes());
    let dir = tempfile::tempdir().unwrap();
    extract(&v, dir.path());
    let out = python(NUMPY_CHECK, &[dir.path()]);
    assert!(out.contains("checked 10"), "{out}");
    assert!(out.contains("float32 (2, 4, 5, 3)"), "{out}");
    assert!(out.contains("float64 ()"), "{out}");
}
