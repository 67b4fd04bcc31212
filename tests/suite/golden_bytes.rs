//! Bytes laid out by hand from the diagrams of the spec (daphne-binary-data-format.md):
//! what we write must be exactly these, and these must read back to the values drawn.

use ndarray::{array, Array2};
use serde_daphne::{
    from_slice, to_vec, BlockPolicy, BlockType, Csr, DataType, Dense, Frame, Object, Options,
    ValueType,
};
use sprs::CsMat;

use crate::Layout;

const DENSE_MATRIX: u8 = 1;
const CSR_MATRIX: u8 = 2;
const FRAME: u8 = 3;
const EMPTY: u8 = 0;
const DENSE: u8 = 1;
const SPARSE: u8 = 2;
const ULTRA_SPARSE: u8 = 3;

fn forced(policy: BlockPolicy) -> Options {
    Options {
        block_policy: policy,
        ..Options::new()
    }
}

/// The 3 x 4 f32 matrix used for the sparse layouts.
fn sparse_example() -> Array2<f32> {
    array![
        [0.0, 1.5, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [2.0, 0.0, 0.0, -1.0]
    ]
}

#[test]
fn empty_block() {
    // | #r | #c | 0 |, nothing follows.
    let expected = Layout::new()
        .matrix(DENSE_MATRIX, 2, 3, 10)
        .block(0, 0, 2, 3, EMPTY)
        .0;
    let zeros = Dense(Array2::<f64>::zeros((2, 3)));
    assert_eq!(to_vec(&zeros).unwrap(), expected);
    assert_eq!(from_slice::<Dense<f64>>(&expected).unwrap(), zeros);
}

#[test]
fn dense_block() {
    // | #r | #c | 1 | vt | v[0,0] | v[0,1] | ... row-major
    let expected = Layout::new()
        .matrix(DENSE_MATRIX, 2, 2, 7)
        .block(0, 0, 2, 2, DENSE)
        .u8(7)
        .bytes(&1i32.to_le_bytes())
        .bytes(&(-2i32).to_le_bytes())
        .bytes(&3i32.to_le_bytes())
        .bytes(&4i32.to_le_bytes())
        .0;
    let m = Dense(array![[1i32, -2], [3, 4]]);
    assert_eq!(to_vec(&m).unwrap(), expected);
    assert_eq!(forced(BlockPolicy::Dense).to_vec(&m).unwrap(), expected);
    assert_eq!(from_slice::<Dense<i32>>(&expected).unwrap(), m);
}

#[test]
fn sparse_block() {
    // | #r | #c | 2 | vt | #nzb u64 | per row: #nzr u32, (cx u32, v)...
    let expected = Layout::new()
        .matrix(CSR_MATRIX, 3, 4, 9)
        .block(0, 0, 3, 4, SPARSE)
        .u8(9)
        .u64(3)
        .u32(1)
        .u32(1)
        .bytes(&1.5f32.to_le_bytes())
        .u32(0)
        .u32(2)
        .u32(0)
        .bytes(&2.0f32.to_le_bytes())
        .u32(3)
        .bytes(&(-1.0f32).to_le_bytes())
        .0;
    let m = Csr(CsMat::csr_from_dense(sparse_example().view(), 0.0));
    assert_eq!(forced(BlockPolicy::Sparse).to_vec(&m).unwrap(), expected);
    assert_eq!(from_slice::<Csr<f32>>(&expected).unwrap(), m);
    assert_eq!(
        from_slice::<Dense<f32>>(&expected).unwrap().0,
        sparse_example()
    );
}

#[test]
fn ultra_sparse_block_with_more_than_one_column() {
    // | #r | #c | 3 | vt | #nzb u32 | (rx u32, cx u32, v)...
    let expected = Layout::new()
        .matrix(DENSE_MATRIX, 3, 4, 9)
        .block(0, 0, 3, 4, ULTRA_SPARSE)
        .u8(9)
        .u32(3)
        .u32(0)
        .u32(1)
        .bytes(&1.5f32.to_le_bytes())
        .u32(2)
        .u32(0)
        .bytes(&2.0f32.to_le_bytes())
        .u32(2)
        .u32(3)
        .bytes(&(-1.0f32).to_le_bytes())
        .0;
    let m = Dense(sparse_example());
    assert_eq!(
        forced(BlockPolicy::UltraSparse).to_vec(&m).unwrap(),
        expected
    );
    // It is also what the smallest-encoding policy picks: 14 + 3 * 12 = 50 bytes beats CSR
    // and dense. `Auto` keeps a dense source dense.
    assert_eq!(forced(BlockPolicy::Smallest).to_vec(&m).unwrap(), expected);
    let auto: Object = from_slice(&to_vec(&m).unwrap()).unwrap();
    assert_eq!(auto.block_types(), vec![(BlockType::Dense, 1)]);
    assert_eq!(from_slice::<Dense<f32>>(&expected).unwrap(), m);
}

#[test]
fn ultra_sparse_block_with_a_single_column() {
    // | #r | #c = 1 | 3 | vt | #nzb u32 | (rx u32, v)...
    let expected = Layout::new()
        .matrix(DENSE_MATRIX, 5, 1, 2)
        .block(0, 0, 5, 1, ULTRA_SPARSE)
        .u8(2)
        .u32(2)
        .u32(1)
        .u16(7)
        .u32(4)
        .u16(9)
        .0;
    let v: Vec<u16> = vec![0, 7, 0, 0, 9];
    assert_eq!(
        forced(BlockPolicy::UltraSparse).to_vec(&v).unwrap(),
        expected
    );
    assert_eq!(from_slice::<Vec<u16>>(&expected).unwrap(), v);
}

#[test]
fn every_value_type_code() {
    fn check<T: serde_daphne::Element + serde::Serialize + serde::de::DeserializeOwned>(
        x: T,
        code: u8,
    ) {
        let expected = Layout::new()
            .matrix(DENSE_MATRIX, 1, 1, code)
            .block(0, 0, 1, 1, DENSE)
            .u8(code)
            .bytes(bytemuck::bytes_of(&x))
            .0;
        assert_eq!(to_vec(&x).unwrap(), expected, "{}", T::VALUE_TYPE);
        assert_eq!(from_slice::<T>(&expected).unwrap(), x);
        assert_eq!(T::VALUE_TYPE.code(), code);
    }
    check(200u8, 1);
    check(0xBEEFu16, 2);
    check(0xDEAD_BEEFu32, 3);
    check(u64::MAX - 1, 4);
    check(-100i8, 5);
    check(-30000i16, 6);
    check(-2_000_000_000i32, 7);
    check(i64::MIN + 1, 8);
    check(1.25f32, 9);
    check(-6.5e300f64, 10);
    // Little-endian regardless of the host.
    assert_eq!(&to_vec(&0x0102_0304u32).unwrap()[45..], &[4, 3, 2, 1]);
}

#[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
struct Row {
    id: i64,
    x: f64,
}

/// The spec's frame of two columns, `id: i64 = [5, -7]` and `x: f64 = [0.5, 1e10]`.
fn id_x_frame() -> Vec<u8> {
    // | 1 | 3 | #r | #c | vt[0..#c] | (len u16, lbl)... then one #r x 1 block per column.
    Layout::new()
        .u8(1)
        .u8(FRAME)
        .u64(2)
        .u64(2)
        .u8(8)
        .u8(10)
        .u16(2)
        .bytes(b"id")
        .u16(1)
        .bytes(b"x")
        .block(0, 0, 2, 1, DENSE)
        .u8(8)
        .bytes(&5i64.to_le_bytes())
        .bytes(&(-7i64).to_le_bytes())
        .block(0, 1, 2, 1, DENSE)
        .u8(10)
        .bytes(&0.5f64.to_le_bytes())
        .bytes(&1e10f64.to_le_bytes())
        .0
}

#[test]
fn frame_header_and_column_blocks() {
    let expected = id_x_frame();
    let frame = Frame(vec![Row { id: 5, x: 0.5 }, Row { id: -7, x: 1e10 }]);
    assert_eq!(to_vec(&frame).unwrap(), expected);
    assert_eq!(from_slice::<Frame<Row>>(&expected).unwrap(), frame);
}

/// Borrowed columns and owned ones are written as the spec lays out a frame.
#[test]
fn frame_of_borrowed_and_owned_columns() {
    let (ids, xs) = (vec![5i64, -7], [0.5f64, 1e10]);
    let mut view = serde_daphne::ColumnsView::new();
    view.push("id", &ids).unwrap();
    view.push("x", &xs[..]).unwrap();
    assert_eq!(to_vec(&view).unwrap(), id_x_frame());
    let mut columns = serde_daphne::Columns::new();
    columns.push("id", ids.clone()).unwrap();
    columns.push("x", xs.to_vec()).unwrap();
    assert_eq!(to_vec(&columns).unwrap(), id_x_frame());
    let back: serde_daphne::Columns = from_slice(&id_x_frame()).unwrap();
    assert_eq!(back.column::<i64>("id"), Some(&ids[..]));
}

#[test]
fn multi_block_object_written_in_tiles() {
    // A 3 x 3 u8 matrix in 2 x 2 tiles: body entries (rx, cx, block) in row-major tile order.
    let m = Dense(array![[1u8, 2, 3], [4, 5, 6], [7, 8, 9]]);
    let expected = Layout::new()
        .matrix(DENSE_MATRIX, 3, 3, 1)
        .block(0, 0, 2, 2, DENSE)
        .u8(1)
        .bytes(&[1, 2, 4, 5])
        .block(0, 2, 2, 1, DENSE)
        .u8(1)
        .bytes(&[3, 6])
        .block(2, 0, 1, 2, DENSE)
        .u8(1)
        .bytes(&[7, 8])
        .block(2, 2, 1, 1, DENSE)
        .u8(1)
        .bytes(&[9])
        .0;
    let options = serde_daphne::Options {
        tile: Some((2, 2)),
        ..forced(BlockPolicy::Dense)
    };
    assert_eq!(options.to_vec(&m).unwrap(), expected);
    assert_eq!(from_slice::<Dense<u8>>(&expected).unwrap(), m);
}

#[test]
fn blocks_in_any_order_with_their_own_block_and_value_types() {
    // A 2 x 4 f64 object: the right half first, as a sparse u8 block; then the left half, as a
    // dense f32 block.
    let bytes = Layout::new()
        .matrix(DENSE_MATRIX, 2, 4, 10)
        .block(0, 2, 2, 2, SPARSE)
        .u8(1)
        .u64(1)
        .u32(0)
        .u32(1)
        .u32(1)
        .u8(200)
        .block(0, 0, 2, 2, DENSE)
        .u8(9)
        .bytes(&0.5f32.to_le_bytes())
        .bytes(&1.0f32.to_le_bytes())
        .bytes(&(-0.25f32).to_le_bytes())
        .bytes(&0.0f32.to_le_bytes())
        .0;
    let m: Dense<f64> = from_slice(&bytes).unwrap();
    assert_eq!(m.0, array![[0.5, 1.0, 0.0, 0.0], [-0.25, 0.0, 0.0, 200.0]]);
    let object: Object = from_slice(&bytes).unwrap();
    assert_eq!(
        object.block_types(),
        vec![(BlockType::Sparse, 1), (BlockType::Dense, 1)]
    );
    assert_eq!(object.blocks()[0].data.value_type(), Some(ValueType::U8));
    assert_eq!(object.block_offset(1), Some(19 + 16 + 9 + 1 + 8 + 4 + 9));
    // Written back as it is: the same bytes.
    assert_eq!(object.to_bytes().unwrap(), bytes);
    assert_eq!(to_vec(&object).unwrap(), bytes);
}

#[test]
fn dimensions_beyond_u32_are_split_into_blocks() {
    // 0 x 5,000,000,000: blocks of at most u32::MAX columns, laid end to end.
    let wide = Dense(Array2::<f64>::zeros((0, 5_000_000_000)));
    let expected = Layout::new()
        .matrix(DENSE_MATRIX, 0, 5_000_000_000, 10)
        .block(0, 0, 0, u32::MAX, EMPTY)
        .block(0, u64::from(u32::MAX), 0, 705_032_705, EMPTY)
        .0;
    assert_eq!(to_vec(&wide).unwrap(), expected);
    let back: Dense<f64> = from_slice(&expected).unwrap();
    assert_eq!(back.0.dim(), (0, 5_000_000_000));
}

#[test]
fn objects_without_cells_are_one_block_of_their_own_shape() {
    for (rows, cols) in [(0, 0), (0, 3), (4, 0)] {
        let expected = Layout::new()
            .matrix(DENSE_MATRIX, rows, cols, 10)
            .block(0, 0, rows as u32, cols as u32, EMPTY)
            .0;
        let m = Dense(Array2::<f64>::zeros((rows as usize, cols as usize)));
        assert_eq!(to_vec(&m).unwrap(), expected);
        assert_eq!(from_slice::<Dense<f64>>(&expected).unwrap(), m);
        let object: Object = from_slice(&expected).unwrap();
        assert_eq!(object.data_type(), DataType::DenseMatrix);
    }
}
