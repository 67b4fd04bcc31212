//! Malformed structures: each is its own error variant, at the right byte offset.

use serde_daphne::{from_slice, Dense, Error, Object};

use crate::Layout;

fn read(bytes: &[u8]) -> Error {
    from_slice::<Object>(bytes).unwrap_err()
}

#[test]
fn header_codes() {
    let ok = Layout::new()
        .matrix(1, 1, 1, 1)
        .block(0, 0, 1, 1, 1)
        .u8(1)
        .u8(9)
        .0;
    assert!(from_slice::<Object>(&ok).is_ok());
    let mut b = ok.clone();
    b[0] = 2;
    assert_error!(
        read(&b),
        UnsupportedVersion {
            offset: 0,
            version: 2
        }
    );
    let mut b = ok.clone();
    b[1] = 0;
    assert_error!(read(&b), UnknownDataType { offset: 1, code: 0 });
    let mut b = ok.clone();
    b[18] = 0;
    assert_error!(
        read(&b),
        UnknownValueType {
            offset: 18,
            code: 0
        }
    );
    let mut b = ok.clone();
    b[43] = 4;
    assert_error!(
        read(&b),
        UnknownBlockType {
            offset: 43,
            code: 4
        }
    );
    let mut b = ok.clone();
    b[44] = 11;
    assert_error!(
        read(&b),
        UnknownValueType {
            offset: 44,
            code: 11
        }
    );
    assert_error!(
        read(&ok[..30]),
        UnexpectedEof {
            offset: 27,
            needed: 8,
            available: 3,
            ..
        }
    );
}

#[test]
fn frame_labels_must_be_utf8() {
    let b = Layout::new()
        .u8(1)
        .u8(3)
        .u64(0)
        .u64(1)
        .u8(1)
        .u16(2)
        .bytes(&[0xff, 0xfe])
        .block(0, 0, 0, 1, 0)
        .0;
    assert_error!(
        read(&b),
        InvalidLabel {
            offset: 21,
            column: 0
        }
    );
}

#[test]
fn sparse_counts_indices_and_order() {
    // 2 x 3 f64 CSR block declaring 2 non-zeros.
    let start = || {
        Layout::new()
            .matrix(2, 2, 3, 10)
            .block(0, 0, 2, 3, 2)
            .u8(10)
            .u64(2)
    };
    let v = 1.0f64.to_le_bytes();
    let good = start().u32(1).u32(2).bytes(&v).u32(1).u32(0).bytes(&v).0;
    assert!(from_slice::<Object>(&good).is_ok());
    // Padded so the block is long enough for what it declares: the count is what is wrong.
    let too_many = start().u32(3).u32(0).bytes(&v).bytes(&[0; 16]).0;
    assert_error!(
        read(&too_many),
        SparseCountMismatch {
            offset: 53,
            declared: 2,
            counted: 3
        }
    );
    let too_few = start().u32(1).u32(2).bytes(&v).u32(0).bytes(&[0; 12]).0;
    assert_error!(
        read(&too_few),
        SparseCountMismatch {
            offset: 45,
            declared: 2,
            counted: 1
        }
    );
    let out_of_range = start().u32(1).u32(3).bytes(&v).u32(1).u32(0).bytes(&v).0;
    assert_error!(
        read(&out_of_range),
        ColumnOutOfRange {
            offset: 57,
            index: 3,
            cols: 3
        }
    );
    let duplicate = start().u32(2).u32(1).bytes(&v).u32(1).bytes(&v).u32(0).0;
    assert_error!(
        read(&duplicate),
        UnsortedColumns {
            offset: 69,
            row: 0,
            previous: 1,
            index: 1
        }
    );
}

#[test]
fn ultra_sparse_indices_and_order() {
    let start = || {
        Layout::new()
            .matrix(1, 3, 3, 1)
            .block(0, 0, 3, 3, 3)
            .u8(1)
            .u32(2)
    };
    let good = start().u32(0).u32(2).u8(5).u32(2).u32(0).u8(6).0;
    assert!(from_slice::<Object>(&good).is_ok());
    let row = start().u32(3).u32(0).u8(5).u32(0).u32(0).u8(6).0;
    assert_error!(
        read(&row),
        RowOutOfRange {
            offset: 49,
            index: 3,
            rows: 3
        }
    );
    let col = start().u32(0).u32(7).u8(5).u32(1).u32(0).u8(6).0;
    assert_error!(
        read(&col),
        ColumnOutOfRange {
            offset: 53,
            index: 7,
            cols: 3
        }
    );
    let unsorted = start().u32(2).u32(0).u8(5).u32(1).u32(1).u8(6).0;
    assert_error!(
        read(&unsorted),
        UnsortedCoordinates {
            offset: 58,
            previous: (2, 0),
            index: (1, 1)
        }
    );
}

#[test]
fn blocks_must_tile_the_object() {
    let header = || Layout::new().matrix(1, 2, 2, 1);
    let outside = header().block(1, 1, 2, 1, 0).0;
    assert_error!(read(&outside), BlockOutsideObject { offset: 19, .. });
    let zero = header().block(0, 0, 0, 2, 0).0;
    assert_error!(
        read(&zero),
        ZeroSizedBlock {
            offset: 19,
            rows: 0,
            cols: 2
        }
    );
    let overlap = header()
        .block(0, 0, 1, 2, 0)
        .block(0, 1, 1, 1, 0)
        .block(1, 0, 1, 1, 0)
        .0;
    assert_error!(
        read(&overlap),
        OverlappingBlocks {
            offset: 44,
            row: 0,
            col: 1
        }
    );
    let uncovered = header().block(0, 0, 1, 2, 0).0;
    assert_error!(read(&uncovered), UnexpectedEof { offset: 44, .. });
    let misplaced = Layout::new().matrix(1, 0, 4, 1).block(0, 1, 0, 3, 0).0;
    assert_error!(
        read(&misplaced),
        MisplacedBlock {
            offset: 19,
            expected: (0, 0),
            found: (0, 1)
        }
    );
    let frame_block = Layout::new()
        .u8(1)
        .u8(3)
        .u64(1)
        .u64(2)
        .u8(1)
        .u8(1)
        .u16(1)
        .bytes(b"a")
        .u16(1)
        .bytes(b"b")
        .block(0, 0, 1, 2, 1)
        .u8(1)
        .bytes(&[1, 2])
        .0;
    assert_error!(
        read(&frame_block),
        FrameBlockSpansColumns {
            offset: 26,
            col: 0,
            cols: 2
        }
    );
}

#[test]
fn shapes_and_data_types_must_fit_the_rust_type() {
    let m = serde_daphne::to_vec(&vec![1.0f64, 2.0]).unwrap();
    assert_error!(
        from_slice::<f64>(&m),
        ShapeMismatch {
            offset: 0,
            rows: 2,
            cols: 1,
            ..
        }
    );
    #[derive(serde::Serialize, serde::Deserialize)]
    struct R {
        a: u8,
    }
    let f = serde_daphne::to_vec(&serde_daphne::Frame(vec![R { a: 1 }])).unwrap();
    assert_error!(
        from_slice::<Dense<u8>>(&f),
        DataTypeMismatch { offset: 0, .. }
    );
    #[derive(serde::Deserialize, Debug)]
    struct Other {
        #[allow(dead_code)]
        b: u8,
    }
    let err = from_slice::<serde_daphne::Frame<Other>>(&f).unwrap_err();
    assert_error!(err, FrameMismatch);
    assert!(
        err.to_string().contains("no column labelled \"b\""),
        "{err}"
    );
}

#[test]
fn objects_built_by_hand_are_checked_like_read_ones() {
    use serde_daphne::Block;
    use serde_daphne::BlockData;
    use serde_daphne::BlockPlace;
    use serde_daphne::Header;
    use serde_daphne::{ValueType, Values};
    let header = Header::DenseMatrix {
        rows: 1,
        cols: 2,
        value_type: ValueType::U8,
    };
    let block = |col, data| Block {
        place: BlockPlace {
            row: 0,
            col,
            rows: 1,
            cols: 1,
        },
        data,
    };
    let ok = Object::new(
        header.clone(),
        vec![
            block(1, BlockData::Dense(Values::U8(vec![5]))),
            block(0, BlockData::Empty),
        ],
    )
    .unwrap();
    assert_eq!(ok.dense_vec::<u8>().unwrap(), vec![0, 5]);
    let outside = Object::new(header.clone(), vec![block(2, BlockData::Empty)]);
    assert_error!(outside, BlockOutsideObject);
    let extra = Object::new(
        header,
        vec![
            Block {
                place: BlockPlace {
                    row: 0,
                    col: 0,
                    rows: 1,
                    cols: 2,
                },
                data: BlockData::Empty,
            },
            block(0, BlockData::Empty),
        ],
    );
    assert_error!(extra, InvalidValue);
}
