//! A band: some rows of an object (or a rectangle of them), with every cell it holds, as
//! sources give them and sinks take them.

use serde_daphne::lowlevel::MatrixRef;
use std::ops::Range;

use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::with_value_type;
use serde_daphne::with_values;
use serde_daphne::Block;
use serde_daphne::BlockData;
use serde_daphne::BlockPlace;
use serde_daphne::Element;
use serde_daphne::ErrorDetails;
use serde_daphne::Header;
use serde_daphne::ValueType;
use serde_daphne::{DataType, Error, Object, Result, Value, Values};

/// Rows `first_row..first_row + rows` and columns `first_col..first_col + cols` of an
/// object, and their cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// The object's row of the band's first row.
    pub first_row: u64,
    /// The object's column of the band's first column (0 for whole rows).
    pub first_col: u64,
    /// Rows in the band.
    pub rows: u64,
    /// Columns in the band.
    pub cols: u64,
    /// The cells.
    pub cells: Cells,
}

/// How a band holds its cells.
#[derive(Clone, Debug, PartialEq)]
pub enum Cells {
    /// Every cell, row-major.
    Dense(Values),
    /// Compressed sparse rows: `rows + 1` offsets from 0, each entry's column (increasing in
    /// a row, from the band's first column) and value.
    Csr {
        /// Where each row's entries start, and where the last ends.
        row_offsets: Vec<usize>,
        /// The column of each entry.
        col_indices: Vec<usize>,
        /// The value of each entry.
        values: Values,
    },
    /// A frame's columns, each `rows` long.
    Frame(Vec<Values>),
}

impl Band {
    /// The window `rows x cols` of an object, dense: its `values`, row-major.
    pub fn dense(rows: Range<u64>, cols: Range<u64>, values: Values) -> Band {
        Band {
            first_row: rows.start,
            first_col: cols.start,
            rows: rows.end - rows.start,
            cols: cols.end - cols.start,
            cells: Cells::Dense(values),
        }
    }

    /// A band of no rows (or no columns) of an object with `header`.
    pub(crate) fn empty(header: &Header) -> Band {
        let (rows, cols) = header.shape();
        let cells = match header {
            Header::Frame { columns, .. } => {
                Cells::Frame(columns.iter().map(|c| Values::new(c.value_type)).collect())
            }
            _ => Cells::Dense(Values::new(
                header.matrix_value_type().unwrap_or(ValueType::F64),
            )),
        };
        Band {
            first_row: 0,
            first_col: 0,
            rows: if cols == 0 { rows } else { 0 },
            cols,
            cells,
        }
    }

    /// The cells of `object` (its blocks as one layout) as rows from `first_row`.
    ///
    /// # Errors
    /// Values that do not fit the object's value types (a malformed object).
    pub(crate) fn of_object(first_row: u64, object: Object) -> Result<Band> {
        let (rows, cols) = object.shape();
        let data_type = object.data_type();
        let value_type = object.header().matrix_value_type();
        let cells = match data_type {
            DataType::Frame => Cells::Frame(object.into_columns()?),
            DataType::CsrMatrix => {
                let single = matches!(object.blocks(), [b] if matches!(&b.data,
                    BlockData::Sparse { row_offsets, .. } if row_offsets.len() as u64 == rows + 1));
                match single {
                    true => match object.into_parts().1.pop().map(|b| b.data) {
                        Some(BlockData::Sparse {
                            row_offsets,
                            col_indices,
                            values,
                        }) => Cells::Csr {
                            row_offsets,
                            col_indices,
                            values,
                        },
                        _ => unreachable!("checked above"),
                    },
                    false => with_value_type!(value_type.unwrap_or(ValueType::F64), T => {
                        let parts = object.csr_parts::<T>()?;
                        Cells::Csr { row_offsets: parts.row_offsets, col_indices: parts.col_indices, values: T::into_values(parts.values) }
                    }),
                }
            }
            _ => {
                let single = object.blocks().len() == 1
                    && matches!(&object.blocks()[0].data, BlockData::Dense(v) if v.len() as u64 == rows * cols);
                if single {
                    let (_, mut blocks) = object.into_parts();
                    match blocks.pop().map(|b| b.data) {
                        Some(BlockData::Dense(values)) => Cells::Dense(values),
                        _ => unreachable!("checked above"),
                    }
                } else {
                    with_value_type!(value_type.unwrap_or(ValueType::F64), T => Cells::Dense(T::into_values(object.dense_vec::<T>()?)))
                }
            }
        };
        Ok(Band {
            first_row,
            first_col: 0,
            rows,
            cols,
            cells,
        })
    }

    /// The band as an object of `header`'s kind (its labels and types, its data type for
    /// matrices), `rows x cols`.
    ///
    /// # Errors
    /// Cells that do not match the header.
    pub fn into_object(self, header: &Header) -> Result<Object> {
        let object = match self.cells {
            Cells::Dense(values) => Object::dense(self.rows, self.cols, values)?,
            Cells::Csr {
                row_offsets,
                col_indices,
                values,
            } => Object::csr(self.rows, self.cols, row_offsets, col_indices, values)?,
            // Rows without columns: `Object::frame` would count no rows.
            Cells::Frame(columns) if columns.is_empty() => {
                let rows = u32::try_from(self.rows)
                    .map_err(|_| Error::invalid("a frame of no columns and 2^32 rows or more"))?;
                let empty = Block {
                    place: BlockPlace {
                        row: 0,
                        col: 0,
                        rows,
                        cols: 0,
                    },
                    data: BlockData::Empty,
                };
                let header = Header::Frame {
                    rows: self.rows,
                    columns: Vec::new(),
                };
                Object::new(header, vec![empty])?
            }
            Cells::Frame(columns) => {
                let Header::Frame {
                    columns: schema, ..
                } = header
                else {
                    return Err(Error::invalid("frame cells for a matrix"));
                };
                let first = self.first_col as usize;
                let labels = schema[first..first + columns.len()].iter();
                Object::frame(labels.map(|c| c.label.clone()).zip(columns).collect())?
            }
        };
        match header.data_type() {
            DataType::Frame => Ok(object),
            data_type => object.with_data_type(data_type),
        }
    }

    /// The value type of a matrix band's cells (`None` for frames).
    pub fn value_type(&self) -> Option<ValueType> {
        match &self.cells {
            Cells::Dense(v) | Cells::Csr { values: v, .. } => Some(v.value_type()),
            Cells::Frame(_) => None,
        }
    }

    /// Stored entries: every cell of dense and frame bands.
    pub fn entries(&self) -> u64 {
        match &self.cells {
            Cells::Csr { values, .. } => values.len() as u64,
            _ => self.rows * self.cols,
        }
    }

    /// The band as a borrowed matrix of `T` (its own value type).
    ///
    /// # Errors
    /// A frame band, or cells of another type.
    pub fn matrix<T: Element>(&self) -> Result<MatrixRef<'_, T>> {
        let (rows, cols) = (self.rows as usize, self.cols as usize);
        fn typed<T: Element>(values: &Values) -> Result<&[T]> {
            T::slice_of(values).ok_or_else(|| {
                Error::invalid(format!(
                    "a band of {} where {} was announced",
                    values.value_type(),
                    T::VALUE_TYPE
                ))
            })
        }
        match &self.cells {
            Cells::Dense(values) => MatrixRef::dense(rows, cols, typed(values)?),
            Cells::Csr {
                row_offsets,
                col_indices,
                values,
            } => MatrixRef::csr(rows, cols, row_offsets, col_indices, typed(values)?),
            Cells::Frame(_) => Err(Error::invalid("a frame's band where a matrix was expected")),
        }
    }

    /// Calls `f(row, col, value)` with each non-zero in row-major order (object rows and
    /// columns); frames' columns in their own types.
    pub fn for_each_nonzero(&self, mut f: impl FnMut(u64, u64, Value)) {
        let (r0, c0, cols) = (self.first_row, self.first_col, self.cols as usize);
        match &self.cells {
            Cells::Dense(values) => with_values_ref(values, |k, v| {
                if !v.is_zero() {
                    f(r0 + (k / cols) as u64, c0 + (k % cols) as u64, v);
                }
            }),
            Cells::Csr {
                row_offsets,
                col_indices,
                values,
            } => {
                for r in 0..self.rows as usize {
                    let entries = row_offsets[r]..row_offsets[r + 1];
                    for (k, &c) in entries.clone().zip(&col_indices[entries]) {
                        let v = values.get(k).unwrap_or(Value::U8(0));
                        if !v.is_zero() {
                            f(r0 + r as u64, c0 + c as u64, v);
                        }
                    }
                }
            }
            Cells::Frame(columns) => {
                for r in 0..self.rows as usize {
                    for (c, column) in columns.iter().enumerate() {
                        let v = column.get(r).unwrap_or(Value::U8(0));
                        if !v.is_zero() {
                            f(r0 + r as u64, c0 + c as u64, v);
                        }
                    }
                }
            }
        }
    }

    /// Every cell of a matrix band, row-major, in its value type (zeros where a CSR band
    /// stores nothing).
    ///
    /// # Errors
    /// A frame band; a band too large for memory.
    pub fn dense_values(&self) -> Result<Values> {
        match &self.cells {
            Cells::Dense(values) => Ok(values.clone()),
            Cells::Csr {
                row_offsets,
                col_indices,
                values,
            } => with_values!(values, v => {
                let cols = self.cols as usize;
                let mut out = zeroed_vec((self.rows * self.cols) as usize)?;
                for r in 0..self.rows as usize {
                    let entries = row_offsets[r]..row_offsets[r + 1];
                    for (&c, &x) in col_indices[entries.clone()].iter().zip(&v[entries]) {
                        out[r * cols + c] = x;
                    }
                }
                Ok(Element::into_values(out))
            }),
            Cells::Frame(_) => Err(Error::invalid("a frame's band where a matrix was expected")),
        }
    }

    /// The same band with every value converted exactly to `value_type`.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::LossyConversion`] for the first value that does not fit.
    pub fn convert(self, value_type: ValueType) -> Result<Band> {
        self.convert_each(|_| value_type)
    }

    /// The same band with its values in the types `header` gives them (a source's blocks may
    /// hold narrower types than their object's).
    ///
    /// # Errors
    /// As [`Band::convert`].
    pub fn conform(self, header: &Header) -> Result<Band> {
        let fits = match (&self.cells, header) {
            (
                Cells::Frame(columns),
                Header::Frame {
                    columns: schema, ..
                },
            ) => {
                let first = self.first_col as usize;
                columns
                    .iter()
                    .zip(&schema[first..])
                    .all(|(v, c)| v.value_type() == c.value_type)
            }
            _ => self.value_type() == header.matrix_value_type(),
        };
        if fits {
            return Ok(self);
        }
        let first = self.first_col;
        self.convert_each(|c| {
            header
                .value_type_of(first + c as u64)
                .unwrap_or(ValueType::F64)
        })
    }

    /// Converts each column's values (all of a matrix's: column 0) to `type_of(column)`.
    fn convert_each(self, type_of: impl Fn(usize) -> ValueType) -> Result<Band> {
        let convert = |values: Values, value_type: ValueType| {
            if values.value_type() == value_type {
                return Ok(values);
            }
            let copy = values.clone();
            values.convert(value_type).map_err(|at| {
                Error::from(ErrorDetails::LossyConversion {
                    offset: 0,
                    value: copy.get(at).unwrap_or(Value::U8(0)),
                    to: value_type,
                })
            })
        };
        let cells = match self.cells {
            Cells::Dense(values) => Cells::Dense(convert(values, type_of(0))?),
            Cells::Csr {
                row_offsets,
                col_indices,
                values,
            } => Cells::Csr {
                row_offsets,
                col_indices,
                values: convert(values, type_of(0))?,
            },
            Cells::Frame(columns) => Cells::Frame(
                columns
                    .into_iter()
                    .enumerate()
                    .map(|(c, v)| convert(v, type_of(c)))
                    .collect::<Result<_>>()?,
            ),
        };
        Ok(Band { cells, ..self })
    }
}

/// Calls `f(index, value)` with each value.
fn with_values_ref(values: &Values, mut f: impl FnMut(usize, Value)) {
    serde_daphne::with_values!(values, v => {
        for (k, &x) in v.iter().enumerate() {
            f(k, x.into_value());
        }
    });
}

/// Rows per band of an object with `header`, about `bytes` of cells (`row_bytes` each), a
/// multiple of `multiple` and at least one multiple; rows of no bytes (no columns) all in
/// one band, however many (a header may claim 2^60).
pub fn band_rows(header: &Header, row_bytes: u64, multiple: u64, bytes: u64) -> u64 {
    let multiple = multiple.max(1);
    let rows = match row_bytes {
        0 => u64::MAX,
        _ => (bytes / row_bytes).max(1),
    };
    let rows = (rows / multiple).max(1) * multiple;
    rows.min(header.shape().0.max(1).next_multiple_of(multiple))
}

/// Bytes one row of an object with `header` takes in memory, as cells (CSR: `stored`
/// bytes of the input shared among its rows).
pub(crate) fn row_bytes(header: &Header, stored: Option<u64>) -> u64 {
    let (rows, cols) = header.shape();
    match header {
        Header::Frame { columns, .. } => columns.iter().map(|c| c.value_type.size() as u64).sum(),
        Header::CsrMatrix { .. } => match stored {
            Some(stored) => (stored / rows.max(1)).max(1),
            None => cols.saturating_mul(8),
        },
        // Saturating: a header may claim any width.
        _ => cols.saturating_mul(header.matrix_value_type().map_or(8, |vt| vt.size() as u64)),
    }
}

/// The least memory an object with `header` takes held whole, whatever its entries: a dense
/// matrix's or a frame's cells, a CSR matrix's row offsets.
pub(crate) fn least_held_bytes(header: &Header) -> u128 {
    let rows = u128::from(header.shape().0);
    match header {
        Header::CsrMatrix { .. } => (rows + 1) * 8,
        _ => rows * u128::from(row_bytes(header, None)),
    }
}

impl Band {
    /// Rows `rows` and columns `cols` of this band (object coordinates), copied.
    pub fn window(&self, rows: Range<u64>, cols: Range<u64>) -> Band {
        let (r0, r1) = (
            (rows.start - self.first_row) as usize,
            (rows.end - self.first_row) as usize,
        );
        let (c0, c1) = (
            (cols.start - self.first_col) as usize,
            (cols.end - self.first_col) as usize,
        );
        let width = self.cols as usize;
        let cells = match &self.cells {
            Cells::Dense(values) => Cells::Dense(with_values!(values, v => {
                let out = match (c0, c1) {
                    // Whole rows (or none of a row): one run, not a copy per row (a header
                    // may claim 2^60 rows of no columns).
                    (0, c1) if c1 == width => v[r0 * width..r1 * width].to_vec(),
                    (c0, c1) if c0 == c1 => Vec::new(),
                    _ => {
                        let mut out = Vec::with_capacity((r1 - r0) * (c1 - c0));
                        for r in r0..r1 {
                            out.extend_from_slice(&v[r * width + c0..r * width + c1]);
                        }
                        out
                    }
                };
                Element::into_values(out)
            })),
            Cells::Csr {
                row_offsets,
                col_indices,
                values,
            } => {
                let mut offsets = Vec::with_capacity(r1 - r0 + 1);
                let mut picked = Vec::new();
                offsets.push(0);
                for r in r0..r1 {
                    let (start, end) = (row_offsets[r], row_offsets[r + 1]);
                    let row = &col_indices[start..end];
                    let lo = start + row.partition_point(|&c| c < c0);
                    let hi = start + row.partition_point(|&c| c < c1);
                    picked.extend(lo..hi);
                    offsets.push(picked.len());
                }
                let indices = picked.iter().map(|&k| col_indices[k] - c0).collect();
                let whole = picked
                    .first()
                    .is_some_and(|&k| picked.len() == 1 + picked[picked.len() - 1] - k);
                let values = match whole {
                    true => {
                        with_values!(values, v => Element::into_values(v[picked[0]..=picked[picked.len() - 1]].to_vec()))
                    }
                    false => values.permuted(&picked),
                };
                Cells::Csr {
                    row_offsets: offsets,
                    col_indices: indices,
                    values,
                }
            }
            Cells::Frame(columns) => Cells::Frame(
                columns[c0..c1]
                    .iter()
                    .map(|c| with_values!(c, v => Element::into_values(v[r0..r1].to_vec())))
                    .collect(),
            ),
        };
        Band {
            first_row: rows.start,
            first_col: cols.start,
            rows: (r1 - r0) as u64,
            cols: (c1 - c0) as u64,
            cells,
        }
    }

    /// The first `n` rows (moved) and the rest (copied: for a short rest).
    ///
    /// # Errors
    /// A frame band, or `n` beyond the band's rows.
    pub(crate) fn split_rows(mut self, n: u64) -> Result<(Band, Band)> {
        if n > self.rows {
            return Err(Error::invalid("a band split past its rows"));
        }
        let cols = self.cols as usize;
        let rest_cells = match &mut self.cells {
            Cells::Dense(values) => Cells::Dense(
                with_values!(values, v => Element::into_values(v.split_off(n as usize * cols))),
            ),
            Cells::Csr {
                row_offsets,
                col_indices,
                values,
            } => {
                let cut = row_offsets[n as usize];
                let rest_offsets = row_offsets[n as usize..].iter().map(|&k| k - cut).collect();
                row_offsets.truncate(n as usize + 1);
                Cells::Csr {
                    row_offsets: rest_offsets,
                    col_indices: col_indices.split_off(cut),
                    values: with_values!(values, v => Element::into_values(v.split_off(cut))),
                }
            }
            Cells::Frame(columns) => Cells::Frame(
                columns
                    .iter_mut()
                    .map(|c| with_values!(c, v => Element::into_values(v.split_off(n as usize))))
                    .collect(),
            ),
        };
        let rest = Band {
            first_row: self.first_row + n,
            first_col: self.first_col,
            rows: self.rows - n,
            cols: self.cols,
            cells: rest_cells,
        };
        self.rows = n;
        Ok((self, rest))
    }

    /// Makes room for the band to grow to `rows` rows without moving its cells again (dense
    /// and frame bands; a CSR band's entries are not known ahead).
    pub(crate) fn reserve_rows(&mut self, rows: u64) {
        let more = rows.saturating_sub(self.rows) as usize;
        match &mut self.cells {
            Cells::Dense(values) => values.reserve(more * self.cols as usize),
            Cells::Frame(columns) => columns.iter_mut().for_each(|c| c.reserve(more)),
            Cells::Csr { row_offsets, .. } => row_offsets.reserve(more),
        }
    }

    /// Appends `next`, the rows after this band's (same columns, same layout and types).
    ///
    /// # Errors
    /// Bands that do not fit together.
    pub fn append(&mut self, next: Band) -> Result<()> {
        let misfit = || Error::invalid("bands of different columns, layouts or types");
        if next.cols != self.cols || next.first_row != self.first_row + self.rows {
            return Err(misfit());
        }
        match (&mut self.cells, next.cells) {
            (Cells::Dense(a), Cells::Dense(b)) => a.append(b).then_some(()).ok_or_else(misfit)?,
            (
                Cells::Csr {
                    row_offsets,
                    col_indices,
                    values,
                },
                Cells::Csr {
                    row_offsets: o,
                    col_indices: mut i,
                    values: v,
                },
            ) => {
                let base = values.len();
                values.append(v).then_some(()).ok_or_else(misfit)?;
                row_offsets.extend(o[1..].iter().map(|&k| k + base));
                col_indices.append(&mut i);
            }
            (Cells::Frame(a), Cells::Frame(b)) if a.len() == b.len() => {
                for (a, b) in a.iter_mut().zip(b) {
                    a.append(b).then_some(()).ok_or_else(misfit)?;
                }
            }
            _ => return Err(misfit()),
        }
        self.rows += next.rows;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_daphne::ValueType;

    /// Regression: a CSR matrix's bands were sized as if it were dense, so a 1e6-column
    /// matrix was read two rows at a time (500,000 windows, each decoding its block).
    #[test]
    fn csr_bands_follow_the_stored_bytes() {
        let csr = Header::CsrMatrix {
            rows: 1_000_000,
            cols: 1_000_000,
            value_type: ValueType::F64,
        };
        let rows = band_rows(&csr, row_bytes(&csr, Some(124_000_000)), 1, 16 << 20);
        assert_eq!(1_000_000u64.div_ceil(rows), 8, "{rows} rows a band");
        // Dense matrices: bands of 16 MiB of values.
        let dense = Header::DenseMatrix {
            rows: 16384,
            cols: 16384,
            value_type: ValueType::F64,
        };
        assert_eq!(band_rows(&dense, row_bytes(&dense, None), 1, 16 << 20), 128);
    }
}
