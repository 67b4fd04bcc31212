//! proptest strategies for matrices, frames and objects (cargo feature `proptest`).
//!
//! Use them to property-test code that reads or writes this format:
//!
//! ```
//! use proptest::prelude::*;
//! use serde_daphne::{strategies, Dialect, Object, Options};
//!
//! // The objects are written in the spec's dialect: say so when reading them back, since a
//! // rare arbitrary frame is also a valid runtime-dialect file.
//! let spec = Options { dialect: Some(Dialect::Spec), ..Options::new() };
//! proptest!(|(object in strategies::object(6))| {
//!     let bytes = object.to_bytes().unwrap();
//!     let back: Object = spec.from_slice(&bytes).unwrap();
//!     prop_assert_eq!(back.to_bytes().unwrap(), bytes);
//! });
//! ```
//!
//! Values favour zeros (so every block type occurs) and include every bit pattern, so NaN
//! payloads, infinities, `-0.0` and extreme integers all appear.

use ndarray::Array2;
use proptest::prelude::*;
use proptest::sample::select;
use sprs::CsMat;

use crate::model::{Block, Object};
use crate::wire::values::with_value_type;
use crate::wire::{
    BlockData, BlockPlace, Column, DataType, Element, Header, Value, ValueType, Values,
};

/// Any of the ten value types.
pub fn value_type() -> impl Strategy<Value = ValueType> {
    select(ValueType::ALL.to_vec())
}

/// Any value of `T`: zeros half the time, small integers, and arbitrary bit patterns.
pub fn element<T: Element>() -> BoxedStrategy<T> {
    let size = std::mem::size_of::<T>();
    prop_oneof![
        3 => Just(T::zeroed()),
        1 => (1u8..10).prop_map(|x| T::from_value(Value::U8(x)).unwrap_or_default()),
        2 => any::<u64>().prop_map(move |bits| {
            bytemuck::pod_read_unaligned::<T>(&bits.to_le_bytes()[..size])
        }),
    ]
    .boxed()
}

/// `len` values of `value_type`, drawn by [`element`].
pub fn values(value_type: ValueType, len: usize) -> BoxedStrategy<Values> {
    with_value_type!(value_type, T => proptest::collection::vec(element::<T>(), len)
        .prop_map(T::into_values)
        .boxed())
}

/// A row-major `Array2<T>` with up to `max_rows x max_cols` cells (either may be 0).
pub fn array2<T: Element>(max_rows: usize, max_cols: usize) -> impl Strategy<Value = Array2<T>> {
    (0..=max_rows, 0..=max_cols).prop_flat_map(|(rows, cols)| {
        proptest::collection::vec(element::<T>(), rows * cols).prop_map(move |v| {
            Array2::from_shape_vec((rows, cols), v).expect("length matches the shape")
        })
    })
}

/// A CSR `CsMat<T>` with up to `max_rows x max_cols` cells; stored values may include zeros.
pub fn csmat<T: Element>(max_rows: usize, max_cols: usize) -> impl Strategy<Value = CsMat<T>> {
    array2::<T>(max_rows, max_cols).prop_map(|a| {
        let (rows, cols) = a.dim();
        let (mut indptr, mut indices, mut data) = (vec![0], Vec::new(), Vec::new());
        for row in a.rows() {
            for (c, &x) in row.iter().enumerate() {
                if !x.is_zero() {
                    indices.push(c);
                    data.push(x);
                }
            }
            indptr.push(indices.len());
        }
        CsMat::new((rows, cols), indptr, indices, data)
    })
}

/// Any object: a DenseMatrix, CSRMatrix or Frame of up to `max_dim` rows and columns, cut into
/// tiles of random size stored in random order, each tile with a random block type and a
/// random value type among those that hold its values exactly.
pub fn object(max_dim: u32) -> impl Strategy<Value = Object> {
    prop_oneof![
        matrix_object(DataType::DenseMatrix, max_dim),
        matrix_object(DataType::CsrMatrix, max_dim),
        frame_object(max_dim),
    ]
}

/// Random choices for each tile: block type and stored-type index.
fn tile_choices() -> impl Strategy<Value = Vec<(u8, usize)>> {
    proptest::collection::vec((0u8..4, 0usize..10), 64)
}

fn matrix_object(data_type: DataType, max_dim: u32) -> impl Strategy<Value = Object> {
    (value_type(), 0..=max_dim, 0..=max_dim)
        .prop_flat_map(move |(vt, rows, cols)| {
            (
                Just((vt, rows, cols)),
                values(vt, (rows * cols) as usize),
                (1..=rows.max(1), 1..=cols.max(1)),
                tile_choices(),
                any::<u64>(),
            )
        })
        .prop_map(move |((vt, rows, cols), cells, (tr, tc), choices, seed)| {
            let header = Header::matrix(data_type, u64::from(rows), u64::from(cols), vt);
            let blocks = tiles(rows, cols, tr, tc)
                .into_iter()
                .enumerate()
                .map(|(i, place)| {
                    let window = window(&cells, cols, place);
                    tile_block(place, window, choices[i % choices.len()])
                })
                .collect();
            Object::from_parts(header, shuffled(blocks, seed))
        })
}

fn frame_object(max_dim: u32) -> impl Strategy<Value = Object> {
    (
        0..=max_dim,
        proptest::collection::vec((value_type(), "[a-zé_0-9]{0,6}"), 0..=max_dim as usize),
    )
        .prop_flat_map(|(rows, columns)| {
            let cells: Vec<_> = columns
                .iter()
                .map(|&(vt, _)| values(vt, rows as usize))
                .collect();
            (
                Just((rows, columns)),
                cells,
                1..=rows.max(1),
                tile_choices(),
                any::<u64>(),
            )
        })
        .prop_map(|((rows, columns), cells, tr, choices, seed)| {
            let count = columns.len() as u32;
            let header = Header::Frame {
                rows: u64::from(rows),
                columns: columns
                    .into_iter()
                    .enumerate()
                    .map(|(i, (value_type, label))| Column {
                        label: format!("{label}{i}"),
                        value_type,
                    })
                    .collect(),
            };
            let blocks = if rows == 0 || count == 0 {
                vec![Block {
                    place: BlockPlace {
                        row: 0,
                        col: 0,
                        rows,
                        cols: count,
                    },
                    data: BlockData::Empty,
                }]
            } else {
                let mut blocks = Vec::new();
                for (c, column) in cells.iter().enumerate() {
                    for mut place in tiles(rows, 1, tr, 1) {
                        let window = window(column, 1, place);
                        place.col = c as u64;
                        blocks.push(tile_block(place, window, choices[blocks.len() % 64]));
                    }
                }
                shuffled(blocks, seed)
            };
            Object::from_parts(header, blocks)
        })
}

/// Tiles covering `rows x cols` (one 0-sized block for objects without cells).
fn tiles(rows: u32, cols: u32, tr: u32, tc: u32) -> Vec<BlockPlace> {
    if rows == 0 || cols == 0 {
        return vec![BlockPlace {
            row: 0,
            col: 0,
            rows,
            cols,
        }];
    }
    let mut out = Vec::new();
    for r in (0..rows).step_by(tr as usize) {
        for c in (0..cols).step_by(tc as usize) {
            out.push(BlockPlace {
                row: u64::from(r),
                col: u64::from(c),
                rows: tr.min(rows - r),
                cols: tc.min(cols - c),
            });
        }
    }
    out
}

/// The cells of a tile, row-major.
fn window(cells: &Values, cols: u32, place: BlockPlace) -> Vec<Value> {
    let mut out = Vec::new();
    for r in 0..u64::from(place.rows) {
        for c in 0..u64::from(place.cols) {
            let index = (place.row + r) * u64::from(cols) + place.col + c;
            out.extend(cells.get(index as usize));
        }
    }
    out
}

fn tile_block(place: BlockPlace, cells: Vec<Value>, (kind, pick): (u8, usize)) -> Block {
    let source = cells.first().map(|v| v.value_type());
    let stored = source.map(|source| {
        let fits: Vec<ValueType> = ValueType::ALL
            .into_iter()
            .filter(|&vt| vt == source || cells.iter().all(|v| v.narrows_to(vt)))
            .collect();
        fits[pick % fits.len()]
    });
    let all_zero = cells.iter().all(|v| v.is_zero());
    let data = match (kind, stored) {
        (_, None) => BlockData::Empty,
        (0, _) if all_zero => BlockData::Empty,
        (0 | 1, Some(vt)) => BlockData::Dense(convert(&cells, vt)),
        (2, Some(vt)) => {
            let (mut row_offsets, mut col_indices, mut kept) = (vec![0], Vec::new(), Vec::new());
            for r in 0..place.rows as usize {
                for c in 0..place.cols as usize {
                    let v = cells[r * place.cols as usize + c];
                    if !v.is_zero() {
                        col_indices.push(c);
                        kept.push(v);
                    }
                }
                row_offsets.push(kept.len());
            }
            BlockData::Sparse {
                row_offsets,
                col_indices,
                values: convert(&kept, vt),
            }
        }
        (_, Some(vt)) => {
            let (mut rows, mut cols, mut kept) = (Vec::new(), Vec::new(), Vec::new());
            for (k, v) in cells.iter().enumerate() {
                if !v.is_zero() {
                    rows.push((k / place.cols as usize) as u32);
                    cols.push((k % place.cols as usize) as u32);
                    kept.push(*v);
                }
            }
            BlockData::UltraSparse {
                row_indices: rows,
                col_indices: (place.cols != 1).then_some(cols),
                values: convert(&kept, vt),
            }
        }
    };
    Block { place, data }
}

fn convert(cells: &[Value], vt: ValueType) -> Values {
    let mut out = Values::new(vt);
    for &v in cells {
        out.push(v);
    }
    out
}

/// A deterministic shuffle (Fisher-Yates with a xorshift generator).
fn shuffled<T>(mut items: Vec<T>, mut seed: u64) -> Vec<T> {
    seed |= 1;
    for i in (1..items.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        items.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    items
}
