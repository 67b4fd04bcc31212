//! Typed assembly: an object's blocks gathered into one row-major vector, CSR arrays or frame
//! columns of a Rust element type, converting each value exactly or failing.

use crate::error::ErrorDetails;
use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::model::csr::{convert_indices, CsrFill, CsrIndex, RowCounts};
use crate::model::object::{block_dims, Block, Object};
use crate::wire::values::{with_value_type, zeroed_vec};
use crate::wire::{BlockData, Column, DataType, Element, Header, Value, ValueType, Values};

impl Object {
    /// Block `index`'s values converted exactly to `T`, or the first that does not fit.
    fn typed_values<T: Element>(&self, index: usize, values: &Values) -> Result<Vec<T>> {
        values
            .to_vec()
            .map_err(|i| self.lossy(index, values, i, T::VALUE_TYPE))
    }

    /// Calls `f(row, col, value)` for every stored value of every block (the non-zeros of
    /// dense blocks), in block order and row-major order within a block.
    ///
    /// With `only_col`, blocks not touching that column are skipped (frame columns).
    fn for_each_stored<T: Element>(
        &self,
        mut f: impl FnMut(u64, u64, T),
        only_col: Option<u64>,
        skip_dense: bool,
    ) -> Result<()> {
        for (index, block) in self.blocks.iter().enumerate() {
            let Some(values) = block.data.values() else {
                continue;
            };
            if skip_dense && matches!(block.data, BlockData::Dense(_)) {
                continue;
            }
            let p = block.place;
            if only_col.is_some_and(|c| c < p.col || c - p.col >= u64::from(p.cols)) {
                continue;
            }
            let typed: Vec<T> = self.typed_values(index, values)?;
            block.data.for_each_position(p.cols, |k, r, c| {
                if !typed[k].is_zero() {
                    f(p.row + u64::from(r), p.col + u64::from(c), typed[k]);
                }
            });
        }
        Ok(())
    }

    /// Checks the object is a matrix and its dimensions fit in memory; returns `(rows, cols)`.
    pub(super) fn matrix_dims(&self) -> Result<(usize, usize)> {
        if self.data_type() == DataType::Frame {
            return Err(ErrorDetails::DataTypeMismatch {
                offset: self.offset,
                expected: "a matrix (DenseMatrix or CSRMatrix)",
                found: DataType::Frame,
            }
            .into());
        }
        let (rows, cols) = self.shape();
        let too_large = || {
            Error::from(ErrorDetails::TooLarge {
                offset: self.offset,
                what: "the matrix",
                bytes: u128::from(rows) * u128::from(cols),
            })
        };
        Ok((
            usize::try_from(rows).map_err(|_| too_large())?,
            usize::try_from(cols).map_err(|_| too_large())?,
        ))
    }

    /// The matrix's values, row-major, converted exactly to `T`.
    ///
    /// Moves the stored vector when the object is one dense block of type `T`.
    ///
    /// # Errors
    /// [`crate::ErrorKind::DataTypeMismatch`] for frames; [`crate::ErrorKind::LossyConversion`] when a value does not
    /// fit `T`; [`crate::ErrorKind::TooLarge`]/[`crate::ErrorKind::OutOfMemory`] when the matrix does not fit memory.
    pub fn dense_vec<T: Element>(&self) -> Result<Vec<T>> {
        let (rows, cols) = self.matrix_dims()?;
        let len = rows
            .checked_mul(cols)
            .ok_or(Error::from(ErrorDetails::TooLarge {
                offset: self.offset,
                what: "the matrix",
                bytes: rows as u128 * cols as u128 * std::mem::size_of::<T>() as u128,
            }))?;
        if let [Block {
            data: BlockData::Dense(values),
            ..
        }] = self.blocks.as_slice()
        {
            return self.typed_values(0, values);
        }
        let mut out = zeroed_vec::<T>(len)?;
        let mut scattered = false;
        for (index, block) in self.blocks.iter().enumerate() {
            let (BlockData::Dense(values), p) = (&block.data, block.place) else {
                scattered = true;
                continue;
            };
            // Dense blocks (tiles) are copied a row at a time.
            let converted;
            let typed: &[T] = match T::slice_of(values) {
                Some(v) => v,
                None => {
                    converted = self.typed_values(index, values)?;
                    &converted
                }
            };
            let width = p.cols as usize;
            for (r, row) in typed.chunks_exact(width.max(1)).enumerate() {
                let start = (p.row as usize + r) * cols + p.col as usize;
                out[start..start + width].copy_from_slice(row);
            }
        }
        if scattered {
            self.for_each_stored(
                |r, c, x: T| out[r as usize * cols + c as usize] = x,
                None,
                true,
            )?;
        }
        Ok(out)
    }

    /// Like [`Object::dense_vec`], consuming the object: one dense block of `T` is moved, not
    /// copied.
    ///
    /// # Errors
    /// As [`Object::dense_vec`].
    pub fn into_dense_vec<T: Element>(mut self) -> Result<Vec<T>> {
        self.matrix_dims()?;
        if let [Block {
            data: BlockData::Dense(values),
            ..
        }] = self.blocks.as_mut_slice()
        {
            let values = std::mem::replace(values, Values::new(ValueType::U8));
            return match T::try_from_values(values) {
                Ok(moved) => Ok(moved),
                Err(values) => self.typed_values(0, &values),
            };
        }
        self.dense_vec()
    }

    /// The matrix's values, row-major, in the header's value type.
    ///
    /// # Errors
    /// As [`Object::dense_vec`].
    #[doc(hidden)]
    pub fn dense_values(&self) -> Result<Values> {
        let vt =
            self.header
                .matrix_value_type()
                .ok_or(Error::from(ErrorDetails::DataTypeMismatch {
                    offset: self.offset,
                    expected: "a matrix (DenseMatrix or CSRMatrix)",
                    found: DataType::Frame,
                }))?;
        with_value_type!(vt, T => self.dense_vec::<T>().map(T::into_values))
    }

    /// [`Object::dense_values`] for writers that only read them: a matrix stored as one
    /// dense block of its header's value type lends that block's values (no second copy of
    /// the matrix in memory); any other is assembled.
    ///
    /// # Errors
    /// As [`Object::dense_vec`].
    #[doc(hidden)]
    pub fn dense_values_ref(&self) -> Result<Cow<'_, Values>> {
        if let [Block {
            data: BlockData::Dense(values),
            ..
        }] = self.blocks.as_slice()
        {
            if Some(values.value_type()) == self.header.matrix_value_type() {
                self.matrix_dims()?;
                return Ok(Cow::Borrowed(values));
            }
        }
        self.dense_values().map(Cow::Owned)
    }

    /// Like [`Object::csr_parts`], consuming the object: the offsets and values of one sparse
    /// block are moved, not copied.
    ///
    /// # Errors
    /// As [`Object::csr_parts`].
    pub fn into_csr_parts<T: Element>(mut self) -> Result<CsrParts<T>> {
        self.matrix_dims()?;
        if let [Block {
            data:
                BlockData::Sparse {
                    row_offsets,
                    col_indices,
                    values,
                },
            ..
        }] = self.blocks.as_mut_slice()
        {
            let (row_offsets, col_indices) =
                (std::mem::take(row_offsets), std::mem::take(col_indices));
            let values = std::mem::replace(values, Values::new(ValueType::U8));
            let values = match T::try_from_values(values) {
                Ok(moved) => moved,
                Err(values) => self.typed_values(0, &values)?,
            };
            return Ok(CsrParts {
                row_offsets,
                col_indices,
                values,
            });
        }
        self.csr_parts()
    }

    /// Like [`Object::into_csr_parts`], with the offsets and indices as `I`: any sprs index
    /// type (`u32` and `i32` take half the memory of `usize`; `i64` is what scipy and
    /// `CsMatI<T, i64>` hold). The largest index is checked once (the column count and the
    /// number of stored values), so the conversion is a plain copy into fresh memory, or a
    /// move for 64-bit types.
    ///
    /// ```
    /// use serde_daphne::Object;
    /// use serde_daphne::Values;
    ///
    /// let m = Object::csr(2, 3, vec![0, 1, 2], vec![2, 0], Values::F64(vec![1.5, -2.0]))?;
    /// let parts = m.into_csr_parts_as::<f64, u32>()?;
    /// assert_eq!((parts.row_offsets, parts.col_indices), (vec![0u32, 1, 2], vec![2u32, 0]));
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Object::csr_parts`]; [`crate::ErrorKind::LossyConversion`] when an index can exceed `I`.
    pub fn into_csr_parts_as<T: Element, I: CsrIndex>(self) -> Result<CsrParts<T, I>> {
        let offset = self.offset;
        let (_, cols) = self.matrix_dims()?;
        let parts = self.into_csr_parts::<T>()?;
        let largest = cols.saturating_sub(1).max(parts.values.len());
        if I::try_from_usize(largest).is_none() {
            return Err(ErrorDetails::LossyConversion {
                offset,
                value: Value::U64(largest as u64),
                to: I::value_type(),
            }
            .into());
        }
        Ok(CsrParts {
            row_offsets: convert_indices(parts.row_offsets)?,
            col_indices: convert_indices(parts.col_indices)?,
            values: parts.values,
        })
    }

    /// The matrix as CSR arrays `(row_offsets, col_indices, values)` with values converted
    /// exactly to `T`. Zeros are left out, except that an object of one sparse block is taken
    /// exactly as stored.
    ///
    /// # Errors
    /// As [`Object::dense_vec`].
    #[doc(hidden)]
    pub fn csr_parts<T: Element>(&self) -> Result<CsrParts<T>> {
        let (rows, _) = self.matrix_dims()?;
        if let [Block {
            data:
                BlockData::Sparse {
                    row_offsets,
                    col_indices,
                    values,
                },
            ..
        }] = self.blocks.as_slice()
        {
            let values = self.typed_values::<T>(0, values)?;
            return Ok(CsrParts {
                row_offsets: row_offsets.clone(),
                col_indices: col_indices.clone(),
                values,
            });
        }
        let mut counts = RowCounts::new(rows)?;
        self.for_each_stored(|r, _, _: T| counts.add(r as usize), None, false)?;
        let mut fill = CsrFill::new(counts.into_offsets())?;
        self.for_each_stored(
            |r, c, x: T| {
                fill.push(r as usize, c as usize, x);
            },
            None,
            false,
        )?;
        // Both passes visit the same stored values, so every row is full.
        let (row_offsets, col_indices, values) = fill
            .finish()
            .ok_or_else(|| Error::invalid("internal: CSR rows filled unevenly"))?;
        Ok(CsrParts {
            row_offsets,
            col_indices,
            values,
        })
    }

    /// A CSR matrix of one sparse block from the coordinates `(row, col)` of its entries,
    /// in any order, and their values: the routine behind MatrixMarket and COO inputs.
    ///
    /// ```
    /// use serde_daphne::{Object, Values};
    ///
    /// let object = Object::csr_from_coordinates(2, 3, &[(1, 2), (0, 1)], Values::F64(vec![7.0, 5.0]))?;
    /// assert_eq!(object.csr_parts::<f64>()?.col_indices, vec![1, 2]);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::ErrorKind::DuplicateEntry`] when two entries name the same cell; [`crate::ErrorKind::InvalidValue`]
    /// for a coordinate outside the matrix, lengths that differ, or dimensions above
    /// `u32::MAX`; [`crate::ErrorKind::OutOfMemory`].
    pub fn csr_from_coordinates(
        rows: u64,
        cols: u64,
        coordinates: &[(u64, u64)],
        values: Values,
    ) -> Result<Object> {
        if coordinates.len() != values.len() {
            return Err(Error::invalid(format!(
                "{} coordinates for {} values",
                coordinates.len(),
                values.len()
            )));
        }
        // One block holds at most u32::MAX rows: checked before the row counts are allocated.
        let (height, _) = block_dims(rows, cols)?;
        let mut counts = RowCounts::new(height as usize)?;
        for &(r, c) in coordinates {
            if r >= rows || c >= cols {
                return Err(Error::invalid(format!(
                    "the entry ({r}, {c}) is outside the {rows} x {cols} matrix"
                )));
            }
            counts.add(r as usize);
        }
        let mut fill = CsrFill::<usize>::new(counts.into_offsets())?;
        for (k, &(r, c)) in coordinates.iter().enumerate() {
            fill.push(r as usize, c as usize, k);
        }
        let (row_offsets, col_indices, order) = fill
            .finish()
            .ok_or_else(|| Error::invalid("internal: CSR rows filled unevenly"))?;
        // Sorted rows put a repeated cell's entries side by side.
        for (r, w) in row_offsets.windows(2).enumerate() {
            for k in w[0] + 1..w[1] {
                if col_indices[k] == col_indices[k - 1] {
                    let (a, b) = (order[k - 1], order[k]);
                    return Err(ErrorDetails::DuplicateEntry {
                        first: a.min(b),
                        second: a.max(b),
                        row: r as u64,
                        col: col_indices[k] as u64,
                    }
                    .into());
                }
            }
        }
        Object::csr(
            rows,
            cols,
            row_offsets,
            col_indices,
            values.permuted(&order),
        )
    }

    /// Column `col` of a frame (or of a matrix), converted to the header's type for it.
    ///
    /// # Errors
    /// [`crate::ErrorKind::LossyConversion`] when a block's value does not fit the column's type;
    /// [`crate::ErrorKind::TooLarge`]/[`crate::ErrorKind::OutOfMemory`].
    pub fn column(&self, col: u64) -> Result<Values> {
        let vt = self
            .header
            .value_type_of(col)
            .ok_or_else(|| Error::invalid(format!("the object has no column {col}")))?;
        let rows = usize::try_from(self.shape().0).map_err(|_| {
            Error::from(ErrorDetails::TooLarge {
                offset: self.offset,
                what: "a column",
                bytes: u128::from(self.shape().0),
            })
        })?;
        with_value_type!(vt, T => {
            let mut out = zeroed_vec::<T>(rows)?;
            // Only blocks touching this column contribute.
            self.for_each_stored(
                |r, c, x: T| if c == col { out[r as usize] = x },
                Some(col),
                false,
            )?;
            Ok(T::into_values(out))
        })
    }

    /// Every column, each converted to the header's type for it, in one pass over the blocks
    /// (calling [`Object::column`] for each would visit every block once per column).
    ///
    /// # Errors
    /// As [`Object::column`].
    #[doc(hidden)]
    pub fn columns(&self) -> Result<Vec<Values>> {
        let (rows, cols) = self.shape();
        let too_large = || {
            Error::from(ErrorDetails::TooLarge {
                offset: self.offset,
                what: "the columns",
                bytes: u128::from(rows) * u128::from(cols),
            })
        };
        let rows = usize::try_from(rows).map_err(|_| too_large())?;
        let mut out = (0..cols)
            .map(|c| {
                let vt = self.header.value_type_of(c).ok_or_else(too_large)?;
                Values::zeros(vt, rows)
            })
            .collect::<Result<Vec<_>>>()?;
        for (index, block) in self.blocks.iter().enumerate() {
            let (Some(values), p) = (block.data.values(), block.place) else {
                continue;
            };
            // A dense block of one column in the column's own type is copied in one piece.
            if let (BlockData::Dense(_), 1) = (&block.data, p.cols) {
                if out[p.col as usize].copy_from(p.row as usize, values) {
                    continue;
                }
            }
            let mut misfit = None;
            block.data.for_each_position(p.cols, |k, r, c| {
                let column = &mut out[(p.col + u64::from(c)) as usize];
                let fits = values
                    .get(k)
                    .is_none_or(|v| v.is_zero() || column.set((p.row + u64::from(r)) as usize, v));
                if !fits && misfit.is_none() {
                    misfit = Some((k, column.value_type()));
                }
            });
            if let Some((k, to)) = misfit {
                return Err(self.lossy(index, values, k, to));
            }
        }
        Ok(out)
    }

    /// Like [`Object::columns`], consuming the object: a column stored as one dense block of
    /// its own type is moved, not copied.
    ///
    /// # Errors
    /// As [`Object::column`].
    pub fn into_columns(mut self) -> Result<Vec<Values>> {
        let (rows, cols) = self.shape();
        let whole_columns = self.blocks.len() as u64 == cols
            && self.blocks.iter().enumerate().all(|(c, b)| {
                b.place.col == c as u64
                    && b.place.cols == 1
                    && u64::from(b.place.rows) == rows
                    && matches!(&b.data, BlockData::Dense(v) if Some(v.value_type()) == self.header.value_type_of(c as u64))
            });
        if !whole_columns {
            return self.columns();
        }
        Ok(std::mem::take(&mut self.blocks)
            .into_iter()
            .map(|b| match b.data {
                BlockData::Dense(values) => values,
                _ => unreachable!("checked above"),
            })
            .collect())
    }

    /// The same object with every value converted exactly to `value_type` (every column, for
    /// frames).
    ///
    /// # Errors
    /// [`crate::ErrorKind::LossyConversion`] for the first value that does not fit.
    pub fn convert(&self, value_type: ValueType) -> Result<Object> {
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for (index, block) in self.blocks.iter().enumerate() {
            let convert = |values: &Values| {
                values.clone().convert(value_type).map_err(|i| {
                    Error::from(ErrorDetails::LossyConversion {
                        offset: self.block_offset_or_object(index),
                        value: values.get(i).unwrap_or(Value::U8(0)),
                        to: value_type,
                    })
                })
            };
            let data = match &block.data {
                BlockData::Empty => BlockData::Empty,
                BlockData::Dense(values) => BlockData::Dense(convert(values)?),
                BlockData::Sparse {
                    row_offsets,
                    col_indices,
                    values,
                } => BlockData::Sparse {
                    row_offsets: row_offsets.clone(),
                    col_indices: col_indices.clone(),
                    values: convert(values)?,
                },
                BlockData::UltraSparse {
                    row_indices,
                    col_indices,
                    values,
                } => BlockData::UltraSparse {
                    row_indices: row_indices.clone(),
                    col_indices: col_indices.clone(),
                    values: convert(values)?,
                },
            };
            blocks.push(Block {
                place: block.place,
                data,
            });
        }
        let header = match &self.header {
            Header::Frame { rows, columns } => Header::Frame {
                rows: *rows,
                columns: columns
                    .iter()
                    .map(|c| Column {
                        label: c.label.clone(),
                        value_type,
                    })
                    .collect(),
            },
            Header::Scalar { .. } => Header::Scalar { value_type },
            other => Header::matrix(other.data_type(), other.rows(), other.cols(), value_type),
        };
        Ok(Object {
            header,
            blocks,
            ..self.clone()
        })
    }
}

/// CSR arrays of a matrix: row `i` holds `col_indices[row_offsets[i]..row_offsets[i + 1]]`;
/// indices are `usize` unless asked for as another [`CsrIndex`]
/// ([`Object::into_csr_parts_as`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CsrParts<T, I = usize> {
    /// `rows + 1` offsets.
    pub row_offsets: Vec<I>,
    /// Column of each stored value, increasing within a row.
    pub col_indices: Vec<I>,
    /// The stored values.
    pub values: Vec<T>,
}
