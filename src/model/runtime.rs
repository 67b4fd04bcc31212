//! Objects of DAPHNE's runtime dialect as this crate's [`Object`]s, and objects written for
//! the runtime.

use crate::error::ErrorDetails;
use std::io::Write;

use crate::error::{Error, Result};
use crate::model::encode::{places, write_matrix, MatrixCells, MatrixRef};
use crate::model::object::{Block, Object};
use crate::options::{Dialect, Options};
use crate::wire::runtime::{self, RuntimeHead, RuntimeObject};
use crate::wire::sink::Sink;
use crate::wire::source::SliceSource;
use crate::wire::values::{with_value_type, with_values};
use crate::wire::{BlockData, BlockPlace, Column, DataType, Header, ValueType, Values};

/// The most blocks a runtime object may need in this crate's model (blocks are at most
/// `u32::MAX` on a side): the runtime itself cannot represent dimensions of 2^32 or more, so
/// files that would need more are refused rather than expanded.
const MAX_RUNTIME_BLOCKS: u128 = 1 << 12;

/// An object from a decoded runtime object, in blocks this crate's model allows.
pub(crate) fn from_runtime(
    parts: RuntimeObject,
    offset: u64,
    labels: Option<Vec<String>>,
) -> Result<Object> {
    let (rows, cols) = match &parts {
        RuntimeObject::Dense { rows, cols, .. } | RuntimeObject::Csr { rows, cols, .. } => {
            (*rows, *cols)
        }
        RuntimeObject::Frame {
            rows, value_types, ..
        } => (*rows, value_types.len() as u64),
        RuntimeObject::Scalar(_) => (1, 1),
    };
    let max = u128::from(u32::MAX);
    let tiles = |n: u64| u128::from(n).div_ceil(max).max(1);
    let blocks = if rows == 0 || cols == 0 {
        tiles(rows.max(cols))
    } else {
        tiles(rows) * tiles(cols)
    };
    if blocks > MAX_RUNTIME_BLOCKS {
        return Err(ErrorDetails::TooLarge {
            offset,
            what: "a runtime-dialect object this large (its dimensions need over 4,096 blocks)",
            bytes: u128::from(rows) * u128::from(cols),
        }
        .into());
    }
    let fits = |rows: u64, cols: u64| rows <= u64::from(u32::MAX) && cols <= u64::from(u32::MAX);
    let place = |rows: u64, cols: u64| BlockPlace {
        row: 0,
        col: 0,
        rows: rows as u32,
        cols: cols as u32,
    };
    let (header, blocks) = match parts {
        RuntimeObject::Scalar(value) => (
            Header::Scalar {
                value_type: value.value_type(),
            },
            vec![Block {
                place: place(1, 1),
                data: BlockData::Dense({
                    let mut v = Values::new(value.value_type());
                    v.push(value);
                    v
                }),
            }],
        ),
        RuntimeObject::Dense { rows, cols, values } => {
            let header = Header::DenseMatrix {
                rows,
                cols,
                value_type: values.value_type(),
            };
            if fits(rows, cols) {
                let block = Block {
                    place: place(rows, cols),
                    data: BlockData::Dense(values),
                };
                (header, vec![block])
            } else if values.is_empty() {
                (header, empty_blocks(rows, cols))
            } else {
                return reencode(DataType::DenseMatrix, rows, cols, &values, None, offset);
            }
        }
        RuntimeObject::Csr {
            rows,
            cols,
            row_offsets,
            col_indices,
            values,
        } => {
            let header = Header::CsrMatrix {
                rows,
                cols,
                value_type: values.value_type(),
            };
            if fits(rows, cols) {
                let data = BlockData::Sparse {
                    // Moved where usize is u64; converted elsewhere.
                    row_offsets: bytemuck::allocation::try_cast_vec(row_offsets).unwrap_or_else(
                        |(_, offsets)| offsets.iter().map(|&o| o as usize).collect(),
                    ),
                    col_indices: bytemuck::allocation::try_cast_vec(col_indices)
                        .unwrap_or_else(|(_, cols)| cols.iter().map(|&c| c as usize).collect()),
                    values,
                };
                (
                    header,
                    vec![Block {
                        place: place(rows, cols),
                        data,
                    }],
                )
            } else if values.is_empty() {
                (header, empty_blocks(rows, cols))
            } else {
                let csr = (
                    row_offsets.iter().map(|&o| o as usize).collect::<Vec<_>>(),
                    col_indices.iter().map(|&c| c as usize).collect::<Vec<_>>(),
                );
                return reencode(DataType::CsrMatrix, rows, cols, &values, Some(csr), offset);
            }
        }
        RuntimeObject::Frame {
            rows,
            value_types,
            label_lens,
            columns,
        } => {
            let labels = frame_labels(&label_lens, labels);
            let header = Header::Frame {
                rows,
                columns: labels
                    .into_iter()
                    .zip(&value_types)
                    .map(|(label, &value_type)| Column { label, value_type })
                    .collect(),
            };
            let cols = value_types.len() as u64;
            let blocks = if rows == 0 || cols == 0 {
                empty_blocks(rows, cols)
            } else {
                columns
                    .into_iter()
                    .enumerate()
                    .map(|(c, values)| Block {
                        place: BlockPlace {
                            row: 0,
                            col: c as u64,
                            rows: rows as u32,
                            cols: 1,
                        },
                        data: BlockData::Dense(values),
                    })
                    .collect()
            };
            (header, blocks)
        }
    };
    Ok(Object::read_in(header, blocks, offset, Dialect::Runtime))
}

/// A frame's labels: the sidecar's when it has one per column; otherwise `col_<i>`, or empty
/// where the opaque label bytes are known to be empty.
fn frame_labels(label_lens: &[u16], labels: Option<Vec<String>>) -> Vec<String> {
    labels
        .filter(|l| l.len() == label_lens.len())
        .unwrap_or_else(|| {
            label_lens
                .iter()
                .enumerate()
                .map(|(c, &len)| match len {
                    0 => String::new(),
                    _ => format!("col_{c}"),
                })
                .collect()
        })
}

/// The header of a runtime object from its head (frame labels as in [`from_runtime`]).
pub(crate) fn header_of(head: &RuntimeHead, labels: Option<Vec<String>>) -> Header {
    let vt = head.value_types.first().copied().unwrap_or(ValueType::U8);
    match head.data_type {
        DataType::Frame => Header::Frame {
            rows: head.rows,
            columns: frame_labels(&head.label_lens, labels)
                .into_iter()
                .zip(&head.value_types)
                .map(|(label, &value_type)| Column { label, value_type })
                .collect(),
        },
        data_type => Header::matrix(data_type, head.rows, head.cols, vt),
    }
}

/// Empty blocks covering an object without values, by the tiling rule.
fn empty_blocks(rows: u64, cols: u64) -> Vec<Block> {
    let max = u64::from(u32::MAX);
    places(rows, cols, (max, max))
        .map(|place| Block {
            place,
            data: BlockData::Empty,
        })
        .collect()
}

/// A runtime object too large for one block: written in the spec's blocks and read back.
fn reencode(
    data_type: DataType,
    rows: u64,
    cols: u64,
    values: &Values,
    csr: Option<(Vec<usize>, Vec<usize>)>,
    offset: u64,
) -> Result<Object> {
    let too_large = || {
        Error::from(ErrorDetails::TooLarge {
            offset,
            what: "a matrix",
            bytes: u128::from(rows) * u128::from(cols),
        })
    };
    let (r, c) = (
        usize::try_from(rows).map_err(|_| too_large())?,
        usize::try_from(cols).map_err(|_| too_large())?,
    );
    let mut bytes = Vec::new();
    let mut sink = Sink::new(&mut bytes);
    with_values!(values, v => {
        let layout = match &csr {
            Some((row_offsets, col_indices)) => MatrixCells::Csr {
                row_offsets,
                col_indices,
                values: v,
            },
            None => MatrixCells::Dense(v),
        };
        let matrix = MatrixRef { rows: r, cols: c, layout };
        write_matrix(&mut sink, data_type, &matrix, &Options::new())
    })?;
    sink.finish()?;
    let object = Object::decode(&mut SliceSource::new(&bytes))?;
    let (header, blocks) = object.into_parts();
    Ok(Object::read_in(header, blocks, offset, Dialect::Runtime))
}

/// Writes an object in the runtime dialect.
pub(crate) fn write_runtime<W: Write>(
    sink: &mut Sink<W>,
    object: &Object,
    options: &Options,
) -> Result<()> {
    let (rows, cols) = object.shape();
    match object.header() {
        Header::Scalar { .. } => {
            let value = object
                .get(0, 0)
                .ok_or_else(|| Error::invalid("a scalar without value"))?;
            runtime::write_scalar(sink, value)
        }
        Header::DenseMatrix { value_type, .. } => with_value_type!(*value_type, T => {
            runtime::write_dense(sink, rows, cols, &object.dense_vec::<T>()?)
        }),
        Header::CsrMatrix { value_type, .. } => with_value_type!(*value_type, T => {
            let parts = object.csr_parts::<T>()?;
            runtime::write_csr(sink, rows, cols, &parts.row_offsets, &parts.col_indices, &parts.values)
        }),
        Header::Frame { columns, .. } => {
            let values = object.columns()?;
            let columns = columns
                .iter()
                .map(|column| column.label.as_str())
                .zip(values.iter().map(Values::as_values_ref))
                .collect::<Vec<_>>();
            runtime::write_frame(sink, rows, &columns, options.guard_daphne_labels)
        }
    }
}
