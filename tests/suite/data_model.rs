//! The serde data model: what each Rust shape becomes, and what cannot be represented.

use std::collections::BTreeMap;

use ndarray::array;
use serde::{Deserialize, Serialize};
use serde_daphne::{
    from_slice, to_vec, Csr, DataType, Dense, Deserializer, Object, Value, ValueType,
};
use sprs::CsMat;

fn objects(bytes: &[u8]) -> Vec<Object> {
    Deserializer::from_slice(bytes)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn shapes(bytes: &[u8]) -> Vec<(DataType, (u64, u64))> {
    objects(bytes)
        .iter()
        .map(|o| (o.data_type(), o.shape()))
        .collect()
}

#[test]
fn numbers_and_bools_are_1_x_1_matrices() {
    let bytes = to_vec(&true).unwrap();
    let o = &objects(&bytes)[0];
    assert_eq!(o.shape(), (1, 1));
    assert_eq!(o.get(0, 0), Some(Value::U8(1)));
    assert!(from_slice::<bool>(&bytes).unwrap());
    assert_error!(from_slice::<bool>(&to_vec(&2u8).unwrap()), NotABool);
}

#[test]
fn vectors_are_column_vectors_and_nested_vectors_are_matrices() {
    let v = vec![1.5f64, -2.0, 0.0];
    let bytes = to_vec(&v).unwrap();
    assert_eq!(shapes(&bytes), vec![(DataType::DenseMatrix, (3, 1))]);
    assert_eq!(from_slice::<Vec<f64>>(&bytes).unwrap(), v);
    let m = vec![vec![1i16, 2, 3], vec![4, 5, 6]];
    let bytes = to_vec(&m).unwrap();
    assert_eq!(shapes(&bytes), vec![(DataType::DenseMatrix, (2, 3))]);
    assert_eq!(from_slice::<Vec<Vec<i16>>>(&bytes).unwrap(), m);
    // Arrays and tuples of one number type are column vectors too.
    let bytes = to_vec(&[7u32, 8, 9]).unwrap();
    assert_eq!(shapes(&bytes), vec![(DataType::DenseMatrix, (3, 1))]);
    assert_eq!(from_slice::<[u32; 3]>(&bytes).unwrap(), [7, 8, 9]);
    assert_eq!(from_slice::<(u32, u32, u32)>(&bytes).unwrap(), (7, 8, 9));
    // A row vector reads as a Vec as well.
    let row = to_vec(&vec![vec![1u8, 2, 3]]).unwrap();
    assert_eq!(from_slice::<Vec<u8>>(&row).unwrap(), vec![1, 2, 3]);
}

#[test]
fn ragged_rows_are_an_error_naming_the_field() {
    #[derive(Serialize)]
    struct S {
        grid: Vec<Vec<f64>>,
    }
    let err = to_vec(&S {
        grid: vec![vec![1.0, 2.0], vec![3.0]],
    })
    .unwrap_err();
    assert_error!(err, InvalidValue);
    assert_eq!(err.path(), Some("grid[1]"));
    assert!(err.to_string().contains("ragged rows"), "{err}");
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Inner {
    a: u8,
    b: Vec<f32>,
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Outer {
    x: f64,
    inner: Inner,
    pair: (i32, Vec<u64>),
    many: Vec<Inner>,
    none: Vec<Inner>,
}

#[test]
fn structs_tuples_and_sequences_are_objects_back_to_back() {
    let value = Outer {
        x: 0.25,
        inner: Inner {
            a: 3,
            b: vec![1.0, 2.0],
        },
        pair: (-4, vec![10, 20, 30]),
        many: vec![Inner { a: 1, b: vec![] }, Inner { a: 2, b: vec![5.0] }],
        none: vec![],
    };
    let bytes = to_vec(&value).unwrap();
    let dm = DataType::DenseMatrix;
    assert_eq!(
        shapes(&bytes),
        vec![
            (dm, (1, 1)), // x
            (dm, (1, 1)), // inner.a
            (dm, (2, 1)), // inner.b
            (dm, (1, 1)), // pair.0
            (dm, (3, 1)), // pair.1
            (dm, (0, 2)), // many: count marker
            (dm, (1, 1)), // many[0].a
            (dm, (0, 0)), // many[0].b: empty
            (dm, (1, 1)), // many[1].a
            (dm, (1, 1)), // many[1].b
            (dm, (0, 0)), // none: empty
        ]
    );
    assert_eq!(from_slice::<Outer>(&bytes).unwrap(), value);
}

#[test]
fn types_without_representation_name_their_field() {
    #[derive(Serialize)]
    struct Meta {
        name: String,
    }
    #[derive(Serialize)]
    struct Doc {
        weights: Vec<f64>,
        meta: Meta,
    }
    let err = to_vec(&Doc {
        weights: vec![1.0],
        meta: Meta { name: "w".into() },
    })
    .unwrap_err();
    assert_error!(err, Unrepresentable);
    assert_eq!(
        err.to_string(),
        "field \"meta.name\": strings have no representation in the DAPHNE format"
    );

    #[derive(Serialize)]
    enum E {
        A,
    }
    #[derive(Serialize)]
    struct Others {
        o: Option<u8>,
        m: BTreeMap<u8, u8>,
        e: E,
    }
    let value = Others {
        o: Some(1),
        m: BTreeMap::new(),
        e: E::A,
    };
    let err = to_vec(&value).unwrap_err();
    assert_eq!(err.path(), Some("o"));
    assert!(err.to_string().contains("options"));
    let err = to_vec(&vec![BTreeMap::from([(1u8, 2u8)])]).unwrap_err();
    assert!(err.to_string().contains("maps"), "{err}");
    assert!(to_vec(&E::A).unwrap_err().to_string().contains("enums"));
    assert!(to_vec(&1u128).unwrap_err().to_string().contains("128-bit"));
}

#[test]
fn reads_widen_exactly_and_refuse_lossy_conversions() {
    let bytes = to_vec(&vec![1u8, 255]).unwrap();
    assert_eq!(from_slice::<Vec<f64>>(&bytes).unwrap(), vec![1.0, 255.0]);
    assert_eq!(from_slice::<Vec<i16>>(&bytes).unwrap(), vec![1, 255]);
    assert_error!(
        from_slice::<Vec<i8>>(&bytes),
        LossyConversion {
            value: Value::U8(255),
            to: ValueType::I8,
            ..
        }
    );
    let bytes = to_vec(&Dense(array![[0.1f64]])).unwrap();
    assert_error!(
        from_slice::<Dense<f32>>(&bytes),
        LossyConversion {
            to: ValueType::F32,
            ..
        }
    );
    let bytes = to_vec(&-3i64).unwrap();
    let err = from_slice::<u32>(&bytes).unwrap_err();
    assert_error!(err, LossyConversion { offset: 0, .. });
}

#[test]
fn data_and_block_types_need_not_match_the_rust_type() {
    let dense = array![[0.0f64, 1.0], [2.0, 0.0]];
    let csr = CsMat::csr_from_dense(dense.view(), 0.0);
    // CSRMatrix into Array2, DenseMatrix into CsMat.
    let from_csr: Dense<f64> = from_slice(&to_vec(&Csr(csr.clone())).unwrap()).unwrap();
    assert_eq!(from_csr.0, dense);
    let from_dense: Csr<f64> = from_slice(&to_vec(&Dense(dense.clone())).unwrap()).unwrap();
    assert_eq!(from_dense.0, csr);
    // Plain vectors read matrices of any data type.
    let column = to_vec(&Csr(CsMat::new((2, 1), vec![0, 0, 1], vec![0], vec![5u8]))).unwrap();
    assert_eq!(from_slice::<Vec<u8>>(&column).unwrap(), vec![0, 5]);
}

#[test]
fn from_slice_rejects_trailing_bytes_and_streams_read_on() {
    let mut bytes = to_vec(&1u8).unwrap();
    let first = bytes.len() as u64;
    bytes.extend(to_vec(&2u8).unwrap());
    assert_error!(from_slice::<u8>(&bytes), TrailingBytes { offset } if *offset == first);
    let all: Vec<u8> = Deserializer::from_slice(&bytes)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(all, vec![1, 2]);
    assert_eq!(
        serde_daphne::from_reader::<_, (u8, u8)>(&bytes[..]).unwrap(),
        (1, 2)
    );
}

#[test]
fn adapters_are_plain_structures_in_other_formats() {
    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Both {
        #[serde(with = "serde_daphne::dense")]
        d: ndarray::Array2<i32>,
        #[serde(with = "serde_daphne::csr")]
        s: CsMat<f64>,
    }
    let value = Both {
        d: array![[1, 2], [3, 4]],
        s: CsMat::new((2, 3), vec![0, 1, 2], vec![2, 0], vec![0.5, -1.0]),
    };
    let json = serde_json::to_string(&value).unwrap();
    assert_eq!(
        json,
        r#"{"d":{"rows":2,"cols":2,"values":[1,2,3,4]},"s":{"rows":2,"cols":3,"indptr":[0,1,2],"indices":[2,0],"data":[0.5,-1.0]}}"#
    );
    assert_eq!(serde_json::from_str::<Both>(&json).unwrap(), value);
    assert_eq!(from_slice::<Both>(&to_vec(&value).unwrap()).unwrap(), value);
    // Object through JSON: header and blocks, and back.
    let object: Object = from_slice(
        &to_vec(
            &value
                .d
                .mapv(|x| x as f32)
                .into_shape_clone((4, 1))
                .unwrap()
                .column(0)
                .to_vec(),
        )
        .unwrap(),
    )
    .unwrap();
    let json = serde_json::to_string(&object).unwrap();
    assert!(
        json.starts_with(r#"{"header":{"DenseMatrix":{"rows":4,"cols":1,"value_type":"F32"}}"#),
        "{json}"
    );
    assert_eq!(serde_json::from_str::<Object>(&json).unwrap(), object);
}

#[test]
fn borrowed_views_write_without_an_owned_copy() {
    let a = array![[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let from_view = to_vec(&serde_daphne::DenseView(a.view())).unwrap();
    assert_eq!(from_view, to_vec(&Dense(a.clone())).unwrap());
    // A strided column slice and a transposed (Fortran-order) view write their logical values.
    let cols = a.slice(ndarray::s![.., ..;2]);
    let back: Dense<f64> = from_slice(&to_vec(&serde_daphne::DenseView(cols)).unwrap()).unwrap();
    assert_eq!(back.0, array![[1.0, 3.0], [4.0, 6.0]]);
    let back: Dense<f64> = from_slice(&to_vec(&serde_daphne::DenseView(a.t())).unwrap()).unwrap();
    assert_eq!(back.0, a.t());
    let m = CsMat::csr_from_dense(a.view(), 0.0);
    let rows = m.slice_outer(1..2);
    let back: Csr<f64> = from_slice(&to_vec(&serde_daphne::CsrView(rows)).unwrap()).unwrap();
    assert_eq!(back.0.to_dense(), array![[4.0, 5.0, 6.0]]);
}

#[test]
fn frame_columns_move_out_or_are_gathered_from_any_tiling() {
    let columns = vec![
        ("id".to_string(), serde_daphne::Values::I64(vec![1, -2, 3])),
        (
            "x".to_string(),
            serde_daphne::Values::F32(vec![0.5, 0.0, -1.5]),
        ),
    ];
    let frame = Object::frame(columns.clone()).unwrap();
    let expected: Vec<_> = columns.into_iter().map(|(_, v)| v).collect();
    assert_eq!(frame.columns().unwrap(), expected);
    assert_eq!(frame.clone().into_columns().unwrap(), expected);
    // Tiled in 2-row blocks: gathered, the same values.
    let options = serde_daphne::Options {
        tile: Some((2, 1)),
        ..serde_daphne::Options::new()
    };
    let mut bytes = Vec::new();
    frame.write_with(&mut bytes, &options).unwrap();
    let tiled: Object = from_slice(&bytes).unwrap();
    assert_eq!(tiled.blocks().len(), 4);
    assert_eq!(tiled.into_columns().unwrap(), expected);
}

#[test]
fn csr_from_coordinates_sorts_and_refuses_duplicates() {
    use serde_daphne::{Object, Values};
    // [[0, 5, 6], [7, 0, 0]] from entries in any order.
    let object =
        Object::csr_from_coordinates(2, 3, &[(1, 0), (0, 2), (0, 1)], Values::I32(vec![7, 6, 5]))
            .unwrap();
    let parts = object.csr_parts::<i32>().unwrap();
    assert_eq!(
        (parts.row_offsets, parts.col_indices, parts.values),
        (vec![0, 2, 3], vec![1, 2, 0], vec![5, 6, 7])
    );
    let err =
        Object::csr_from_coordinates(2, 3, &[(1, 0), (0, 2), (1, 0)], Values::I32(vec![7, 6, 5]))
            .unwrap_err();
    assert_error!(
        err,
        DuplicateEntry {
            first: 0,
            second: 2,
            row: 1,
            col: 0
        }
    );
    // Dimensions past one block are refused before anything is allocated for them.
    let huge = Object::csr_from_coordinates(1 << 40, 3, &[], Values::I32(vec![])).unwrap_err();
    assert_error!(huge, InvalidValue);
    let outside = Object::csr_from_coordinates(2, 3, &[(2, 0)], Values::I32(vec![1])).unwrap_err();
    assert_error!(outside, InvalidValue);
}

/// CSR arrays come in any sprs index type, checked once against the largest index.
#[test]
fn csr_parts_in_every_index_type_and_refused_where_they_overflow() {
    use serde_daphne::CsrParts;
    use serde_daphne::Values;

    let m = || {
        Object::csr(
            3,
            70_000,
            vec![0, 2, 2, 3],
            vec![5, 69_999, 0],
            Values::I32(vec![1, -2, 3]),
        )
        .unwrap()
    };
    let expected = |row_offsets: Vec<u64>, cols: Vec<u64>| (row_offsets, cols);
    let wide: CsrParts<i64, u32> = m().into_csr_parts_as().unwrap();
    assert_eq!(
        (
            wide.row_offsets
                .iter()
                .map(|&i| u64::from(i))
                .collect::<Vec<_>>(),
            wide.col_indices
                .iter()
                .map(|&i| u64::from(i))
                .collect::<Vec<_>>()
        ),
        expected(vec![0, 2, 2, 3], vec![5, 69_999, 0])
    );
    assert_eq!(wide.values, vec![1, -2, 3]);
    let signed: CsrParts<i32, i32> = m().into_csr_parts_as().unwrap();
    assert_eq!(signed.col_indices, vec![5, 69_999, 0]);
    let long: CsrParts<f64, i64> = m().into_csr_parts_as().unwrap();
    assert_eq!(long.row_offsets, vec![0i64, 2, 2, 3]);
    assert_eq!(long.values, vec![1.0, -2.0, 3.0]);
    // 70 000 columns do not fit u16 (nor do they i16): an error, never a wrapped index.
    assert_error!(
        m().into_csr_parts_as::<i32, u16>(),
        LossyConversion {
            value: Value::U64(69_999),
            to: ValueType::U16,
            ..
        }
    );
    assert_error!(
        m().into_csr_parts_as::<i32, i16>(),
        LossyConversion {
            to: ValueType::I16,
            ..
        }
    );
}

/// `#[serde(with = "serde_daphne::csr")]` takes every sprs index type; an index that does
/// not fit the type read into is an error, and a view of some rows writes those rows.
#[test]
fn sprs_index_types_through_the_adapter() {
    use serde_daphne::Csr;
    use sprs::CsMatI;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Graph {
        #[serde(with = "serde_daphne::csr")]
        small: CsMatI<f32, u32>,
        #[serde(with = "serde_daphne::csr")]
        scipy: CsMatI<i8, i64>,
    }
    let graph = Graph {
        small: CsMatI::new((2, 3), vec![0, 1, 2], vec![2, 0], vec![1.5, -2.0]),
        scipy: CsMatI::new((1, 4), vec![0, 2], vec![1, 3], vec![-1, 7]),
    };
    let bytes = to_vec(&graph).unwrap();
    assert_eq!(from_slice::<Graph>(&bytes).unwrap(), graph);
    // The same file read with usize indices.
    let wide: Csr<f32> = from_slice(&to_vec(&Csr(graph.small.clone())).unwrap()).unwrap();
    assert_eq!(wide.0.indices(), &[2, 0]);
    // 70 000 columns into u16 indices: refused.
    let m: CsMatI<f64, u32> = CsMatI::new((1, 70_000), vec![0, 1], vec![69_999], vec![1.0]);
    let bytes = to_vec(&Csr(m)).unwrap();
    assert_error!(
        from_slice::<Csr<f64, u16>>(&bytes),
        LossyConversion {
            value: Value::U64(69_999),
            to: ValueType::U16,
            ..
        }
    );
    // Rows 1..3 of a u32 matrix: their offsets start past 0 and are rebased.
    let m: CsMatI<u8, u32> =
        CsMatI::new((3, 2), vec![0, 1, 2, 4], vec![0, 1, 0, 1], vec![1, 2, 3, 4]);
    let rows = m.slice_outer(1..3);
    let back: CsMat<u8> = from_slice::<Csr<u8>>(&to_vec(&serde_daphne::CsrView(rows)).unwrap())
        .unwrap()
        .0;
    assert_eq!(back.to_dense(), ndarray::array![[0, 2], [3, 4]]);
}
