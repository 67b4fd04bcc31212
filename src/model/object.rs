//! `Object`: one DAPHNE object (matrix or frame) as stored, with typed access to its values.

use std::io::Write;

use crate::error::{Error, Result};
use crate::model::dialect::{write_runtime, Dialect};
use crate::model::encode::{write_frame, write_matrix, Layout, MatrixRef};
use crate::model::tiling::Coverage;
use crate::options::Options;
use crate::wire::block::{decode_block, encode_block};
use crate::wire::element::widens_exactly;
use crate::wire::sink::Sink;
use crate::wire::values::{with_value_type, zeroed_vec};
use crate::wire::{
    BlockData, BlockPlace, BlockType, Column, DataType, Element, Header, SliceSource, Source,
    Value, ValueType, Values,
};

/// One block of an object: where it lies and what it stores.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Block {
    /// Position and size.
    pub place: BlockPlace,
    /// The stored data.
    pub data: BlockData,
}

/// An untyped DAPHNE object: its header and its blocks exactly as stored.
///
/// Use it to open files whose types you do not know, to inspect block layouts, or to convert
/// between representations.
///
/// ```
/// use serde_daphne::{Object, Options, ValueType};
///
/// let bytes = serde_daphne::to_vec(&vec![1.5f64, 0.0, -2.0])?; // a 3 x 1 DenseMatrix
/// let object: Object = serde_daphne::from_slice(&bytes)?;
/// assert_eq!(object.shape(), (3, 1));
/// assert_eq!(object.header().matrix_value_type(), Some(ValueType::F64));
/// assert_eq!(object.dense_vec::<f64>()?, vec![1.5, 0.0, -2.0]);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Object {
    header: Header,
    blocks: Vec<Block>,
    /// Byte offsets of the object and of each block entry in the input (zeros when built).
    offset: u64,
    block_offsets: Vec<u64>,
    /// The dialect it was read in (`Spec` when built).
    dialect: Dialect,
}

impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        self.header == other.header && self.blocks == other.blocks
    }
}

impl Object {
    /// Builds an object from a header and blocks, checking them exactly as reading would.
    ///
    /// # Errors
    /// The structural errors reading would give (blocks outside, overlapping or missing,
    /// indices out of range or unsorted), with offsets into the object's encoding;
    /// [`Error::InvalidValue`] when blocks follow the ones that already cover the object.
    pub fn new(header: Header, blocks: Vec<Block>) -> Result<Object> {
        let count = blocks.len();
        let object = Object {
            header,
            blocks,
            offset: 0,
            block_offsets: vec![0; count],
            dialect: Dialect::Spec,
        };
        let bytes = object.to_bytes()?;
        let decoded = Object::decode(&mut SliceSource::new(&bytes))?;
        if decoded.blocks.len() != count {
            return Err(Error::invalid(format!(
                "the first {} of {count} blocks already cover the object",
                decoded.blocks.len()
            )));
        }
        Ok(object)
    }

    /// An object from parts known to be valid (strategies build them by construction).
    #[cfg(feature = "proptest")]
    pub(crate) fn from_parts(header: Header, blocks: Vec<Block>) -> Object {
        let count = blocks.len();
        Object {
            header,
            blocks,
            offset: 0,
            block_offsets: vec![0; count],
            dialect: Dialect::Spec,
        }
    }

    /// An object read at `offset` in another dialect, already in this model's blocks.
    pub(crate) fn read_in(
        header: Header,
        blocks: Vec<Block>,
        offset: u64,
        dialect: Dialect,
    ) -> Object {
        let count = blocks.len();
        Object {
            header,
            blocks,
            offset,
            block_offsets: vec![offset; count],
            dialect,
        }
    }

    /// The header and the blocks.
    pub fn into_parts(self) -> (Header, Vec<Block>) {
        (self.header, self.blocks)
    }

    /// The dialect the object was read in ([`Dialect::Spec`] for objects built in memory).
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// A dense matrix of one dense block, from row-major values.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] when `values.len() != rows * cols` or a dimension exceeds
    /// `u32::MAX` (use [`crate::to_vec_with`] to split large matrices into blocks).
    pub fn dense(rows: u64, cols: u64, values: Values) -> Result<Object> {
        let (r, c) = block_dims(rows, cols)?;
        if u128::from(rows) * u128::from(cols) != values.len() as u128 {
            return Err(Error::invalid(format!(
                "{} values cannot fill a {rows} x {cols} matrix",
                values.len()
            )));
        }
        Ok(Object::single(
            Header::DenseMatrix {
                rows,
                cols,
                value_type: values.value_type(),
            },
            r,
            c,
            BlockData::Dense(values),
        ))
    }

    /// A CSR matrix of one sparse block, from CSR arrays (`rows + 1` offsets; columns strictly
    /// increasing within a row).
    ///
    /// # Errors
    /// The structural errors reading would give (offsets into the object's encoding), and
    /// [`Error::InvalidValue`] for dimensions above `u32::MAX` or arrays of unequal lengths.
    pub fn csr(
        rows: u64,
        cols: u64,
        row_offsets: Vec<usize>,
        col_indices: Vec<usize>,
        values: Values,
    ) -> Result<Object> {
        let (r, c) = block_dims(rows, cols)?;
        if row_offsets.len() as u64 != rows + 1
            || row_offsets.last() != Some(&values.len())
            || col_indices.len() != values.len()
        {
            return Err(Error::invalid("CSR arrays of inconsistent lengths"));
        }
        let header = Header::CsrMatrix {
            rows,
            cols,
            value_type: values.value_type(),
        };
        let data = BlockData::Sparse {
            row_offsets,
            col_indices,
            values,
        };
        let place = BlockPlace {
            row: 0,
            col: 0,
            rows: r,
            cols: c,
        };
        Object::new(header, vec![Block { place, data }])
    }

    fn single(header: Header, rows: u32, cols: u32, data: BlockData) -> Object {
        Object {
            header,
            blocks: vec![Block {
                place: BlockPlace {
                    row: 0,
                    col: 0,
                    rows,
                    cols,
                },
                data,
            }],
            offset: 0,
            block_offsets: vec![0],
            dialect: Dialect::Spec,
        }
    }

    /// Reads one object.
    ///
    /// # Errors
    /// Any malformed header or block, and blocks that do not tile the object.
    pub fn decode<S: Source + ?Sized>(src: &mut S) -> Result<Object> {
        let offset = src.offset();
        let header = Header::decode(src)?;
        let (rows, cols) = header.shape();
        let mut coverage = Coverage::new(rows, cols, header.data_type() == DataType::Frame);
        let mut blocks = Vec::new();
        let mut block_offsets = Vec::new();
        while !coverage.complete() {
            let block_offset = src.offset();
            let row = src.u64("a block's row index")?;
            let col = src.u64("a block's column index")?;
            let (block_rows, block_cols, data) = decode_block(src)?;
            let place = BlockPlace {
                row,
                col,
                rows: block_rows,
                cols: block_cols,
            };
            coverage.add(block_offset, place, data.stored() > 0)?;
            check_block_values(&header, place, &data, block_offset)?;
            blocks.push(Block { place, data });
            block_offsets.push(block_offset);
        }
        coverage.finish()?;
        Ok(Object {
            header,
            blocks,
            offset,
            block_offsets,
            dialect: Dialect::Spec,
        })
    }

    /// Writes the object exactly as it is (header, then its blocks in order).
    ///
    /// # Errors
    /// I/O errors; [`Error::LabelTooLong`].
    pub fn encode<W: Write>(&self, writer: W) -> Result<()> {
        let mut sink = Sink::new(writer);
        self.encode_into(&mut sink)?;
        sink.finish()?;
        Ok(())
    }

    pub(crate) fn encode_into<W: Write>(&self, sink: &mut Sink<W>) -> Result<()> {
        let mut header = Vec::with_capacity(self.header.encoded_len());
        self.header.encode(&mut header)?;
        sink.bytes(&header)?;
        for block in &self.blocks {
            encode_block(sink, block.place, &block.data)?;
        }
        Ok(())
    }

    /// The encoded object.
    ///
    /// # Errors
    /// As [`Object::encode`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The blocks, in the order stored.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The byte offset of block `index` in the input it was read from.
    pub fn block_offset(&self, index: usize) -> Option<u64> {
        self.block_offsets.get(index).copied()
    }

    /// The byte offset of the object in the input it was read from.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The data type.
    pub fn data_type(&self) -> DataType {
        self.header.data_type()
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (u64, u64) {
        self.header.shape()
    }

    /// Frame column labels (empty for matrices).
    pub fn labels(&self) -> Vec<&str> {
        match &self.header {
            Header::Frame { columns, .. } => columns.iter().map(|c| c.label.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    /// The number of stored values that are not zero (bitwise: `-0.0` and NaN count).
    pub fn nnz(&self) -> u64 {
        self.blocks.iter().map(|b| b.data.nnz()).sum()
    }

    /// The value at (`row`, `col`), in the block's stored type; `None` outside the object.
    pub fn get(&self, row: u64, col: u64) -> Option<Value> {
        let (rows, cols) = self.shape();
        if row >= rows || col >= cols {
            return None;
        }
        let zero = Value::zero(self.header.value_type_of(col)?);
        let block = self.blocks.iter().find(|b| {
            let p = b.place;
            row >= p.row
                && row - p.row < u64::from(p.rows)
                && col >= p.col
                && col - p.col < u64::from(p.cols)
        })?;
        let (r, c) = (
            (row - block.place.row) as usize,
            (col - block.place.col) as u32,
        );
        Some(match &block.data {
            BlockData::Empty => zero,
            BlockData::Dense(values) => values.get(r * block.place.cols as usize + c as usize)?,
            BlockData::Sparse {
                row_offsets,
                col_indices,
                values,
            } => {
                let (start, end) = (row_offsets[r], row_offsets[r + 1]);
                match col_indices[start..end].binary_search(&(c as usize)) {
                    Ok(k) => values.get(start + k)?,
                    Err(_) => zero,
                }
            }
            BlockData::UltraSparse {
                row_indices,
                col_indices,
                values,
            } => {
                let found = (0..row_indices.len()).find(|&k| {
                    row_indices[k] as usize == r && col_indices.as_ref().is_none_or(|cs| cs[k] == c)
                });
                match found {
                    Some(k) => values.get(k)?,
                    None => zero,
                }
            }
        })
    }

    fn block_offset_or_object(&self, index: usize) -> u64 {
        self.block_offsets
            .get(index)
            .copied()
            .unwrap_or(self.offset)
    }

    /// Block `index`'s values converted exactly to `T`, or the first that does not fit.
    fn typed_values<T: Element>(&self, index: usize, values: &Values) -> Result<Vec<T>> {
        values
            .to_vec()
            .map_err(|i| self.lossy(index, values, i, T::VALUE_TYPE))
    }

    /// The error for value `at` of block `index` not fitting `to`.
    fn lossy(&self, index: usize, values: &Values, at: usize, to: ValueType) -> Error {
        Error::LossyConversion {
            offset: self.block_offset_or_object(index),
            value: values.get(at).unwrap_or(Value::U8(0)),
            to,
        }
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
    fn matrix_dims(&self) -> Result<(usize, usize)> {
        if self.data_type() == DataType::Frame {
            return Err(Error::DataTypeMismatch {
                offset: self.offset,
                expected: "a matrix (DenseMatrix or CSRMatrix)",
                found: DataType::Frame,
            });
        }
        let (rows, cols) = self.shape();
        let too_large = || Error::TooLarge {
            offset: self.offset,
            what: "the matrix",
            bytes: u128::from(rows) * u128::from(cols),
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
    /// [`Error::DataTypeMismatch`] for frames; [`Error::LossyConversion`] when a value does not
    /// fit `T`; [`Error::TooLarge`]/[`Error::OutOfMemory`] when the matrix does not fit memory.
    pub fn dense_vec<T: Element>(&self) -> Result<Vec<T>> {
        let (rows, cols) = self.matrix_dims()?;
        let len = rows.checked_mul(cols).ok_or(Error::TooLarge {
            offset: self.offset,
            what: "the matrix",
            bytes: rows as u128 * cols as u128 * std::mem::size_of::<T>() as u128,
        })?;
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
    pub fn dense_values(&self) -> Result<Values> {
        let vt = self
            .header
            .matrix_value_type()
            .ok_or(Error::DataTypeMismatch {
                offset: self.offset,
                expected: "a matrix (DenseMatrix or CSRMatrix)",
                found: DataType::Frame,
            })?;
        with_value_type!(vt, T => self.dense_vec::<T>().map(T::into_values))
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

    /// The matrix as CSR arrays `(row_offsets, col_indices, values)` with values converted
    /// exactly to `T`. Zeros are left out, except that an object of one sparse block is taken
    /// exactly as stored.
    ///
    /// # Errors
    /// As [`Object::dense_vec`].
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
        let mut counts = zeroed_vec::<u64>(
            rows.checked_add(1)
                .ok_or(Error::OutOfMemory { bytes: u128::MAX })?,
        )?;
        self.for_each_stored(|r, _, _: T| counts[r as usize + 1] += 1, None, false)?;
        for r in 0..rows {
            counts[r + 1] += counts[r];
        }
        let nnz = counts[rows] as usize;
        let mut next: Vec<usize> = counts.iter().map(|&c| c as usize).collect();
        let mut col_indices = vec![0usize; nnz];
        let mut values = zeroed_vec::<T>(nnz)?;
        self.for_each_stored(
            |r, c, x: T| {
                let k = &mut next[r as usize];
                col_indices[*k] = c as usize;
                values[*k] = x;
                *k += 1;
            },
            None,
            false,
        )?;
        let row_offsets: Vec<usize> = counts.into_iter().map(|c| c as usize).collect();
        // Blocks side by side in one row band arrive in block order: sort those rows.
        for w in row_offsets.windows(2) {
            let cols = &col_indices[w[0]..w[1]];
            if cols.windows(2).any(|p| p[0] > p[1]) {
                let mut pairs: Vec<(usize, T)> = cols
                    .iter()
                    .copied()
                    .zip(values[w[0]..w[1]].iter().copied())
                    .collect();
                pairs.sort_by_key(|p| p.0);
                for (k, (c, x)) in pairs.into_iter().enumerate() {
                    col_indices[w[0] + k] = c;
                    values[w[0] + k] = x;
                }
            }
        }
        Ok(CsrParts {
            row_offsets,
            col_indices,
            values,
        })
    }

    /// Column `col` of a frame (or of a matrix), converted to the header's type for it.
    ///
    /// # Errors
    /// [`Error::LossyConversion`] when a block's value does not fit the column's type;
    /// [`Error::TooLarge`]/[`Error::OutOfMemory`].
    pub fn column(&self, col: u64) -> Result<Values> {
        let vt = self
            .header
            .value_type_of(col)
            .ok_or_else(|| Error::invalid(format!("the object has no column {col}")))?;
        let rows = usize::try_from(self.shape().0).map_err(|_| Error::TooLarge {
            offset: self.offset,
            what: "a column",
            bytes: u128::from(self.shape().0),
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
    pub fn columns(&self) -> Result<Vec<Values>> {
        let (rows, cols) = self.shape();
        let too_large = || Error::TooLarge {
            offset: self.offset,
            what: "the columns",
            bytes: u128::from(rows) * u128::from(cols),
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

    /// A frame from labelled columns of equal length, each column one block.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] when column lengths differ or exceed `u32::MAX`.
    pub fn frame(columns: Vec<(String, Values)>) -> Result<Object> {
        let rows = columns.first().map_or(0, |(_, v)| v.len());
        if let Some((label, v)) = columns.iter().find(|(_, v)| v.len() != rows) {
            return Err(Error::invalid(format!(
                "frame column \"{label}\" has {} values but the first column has {rows}",
                v.len()
            )));
        }
        let rows32 = u32::try_from(rows)
            .map_err(|_| Error::invalid("frame columns longer than u32::MAX rows"))?;
        let header = Header::frame_of(rows as u64, &columns);
        let count = columns.len();
        if rows == 0 || count == 0 {
            let cols = u32::try_from(count)
                .map_err(|_| Error::invalid("more than u32::MAX frame columns"))?;
            return Ok(Object::single(header, rows32, cols, BlockData::Empty));
        }
        let blocks = columns
            .into_iter()
            .enumerate()
            .map(|(c, (_, values))| Block {
                place: BlockPlace {
                    row: 0,
                    col: c as u64,
                    rows: rows32,
                    cols: 1,
                },
                data: BlockData::Dense(values),
            })
            .collect();
        Ok(Object {
            header,
            blocks,
            offset: 0,
            block_offsets: vec![0; count],
            dialect: Dialect::Spec,
        })
    }

    /// Calls `f(row, col, value)` for every non-zero value (bitwise: `-0.0` and NaN count),
    /// in the stored type, block by block.
    pub fn for_each_nonzero(&self, mut f: impl FnMut(u64, u64, Value)) {
        for block in &self.blocks {
            let p = block.place;
            let Some(values) = block.data.values() else {
                continue;
            };
            block.data.for_each_position(p.cols, |k, r, c| {
                if let Some(v) = values.get(k).filter(|v| !v.is_zero()) {
                    f(p.row + u64::from(r), p.col + u64::from(c), v);
                }
            });
        }
    }

    /// The same matrix as another matrix data type (`DenseMatrix` or `CsrMatrix`): only the
    /// header changes, since blocks are independent of the data type.
    ///
    /// # Errors
    /// [`Error::DataTypeMismatch`] for frames and scalars, or a target that is not a matrix.
    pub fn with_data_type(mut self, data_type: DataType) -> Result<Object> {
        let mismatch = |found| Error::DataTypeMismatch {
            offset: self.offset,
            expected: "a matrix (DenseMatrix or CSRMatrix)",
            found,
        };
        if !data_type.is_matrix() {
            return Err(mismatch(data_type));
        }
        let (rows, cols) = self.shape();
        let value_type = match &self.header {
            Header::DenseMatrix { value_type, .. } | Header::CsrMatrix { value_type, .. } => {
                *value_type
            }
            other => return Err(mismatch(other.data_type())),
        };
        self.header = Header::matrix(data_type, rows, cols, value_type);
        Ok(self)
    }

    /// The same object with every value converted exactly to `value_type` (every column, for
    /// frames).
    ///
    /// # Errors
    /// [`Error::LossyConversion`] for the first value that does not fit.
    pub fn convert(&self, value_type: ValueType) -> Result<Object> {
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for (index, block) in self.blocks.iter().enumerate() {
            let convert = |values: &Values| {
                values
                    .clone()
                    .convert(value_type)
                    .map_err(|i| Error::LossyConversion {
                        offset: self.block_offset_or_object(index),
                        value: values.get(i).unwrap_or(Value::U8(0)),
                        to: value_type,
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

    /// Writes the object's content anew with `options`: block types, tiling and narrowing as
    /// the options choose, in the options' dialect. (Serializing an `Object` writes its blocks
    /// as stored instead.)
    ///
    /// # Errors
    /// I/O errors; what the dialect cannot hold ([`Error::NotInDialect`]); memory for the
    /// values ([`Error::OutOfMemory`]).
    pub fn write_with<W: Write>(&self, writer: W, options: &Options) -> Result<()> {
        let mut sink = Sink::new(writer);
        if options.writes_runtime() {
            write_runtime(&mut sink, self)?;
            sink.finish()?;
            return Ok(());
        }
        let (rows, cols) = self.matrix_dims().unwrap_or((0, 0));
        match &self.header {
            Header::Frame { columns, rows } => {
                let columns = columns
                    .iter()
                    .map(|column| column.label.clone())
                    .zip(self.columns()?)
                    .collect::<Vec<_>>();
                write_frame(&mut sink, *rows as usize, &columns, options)?;
            }
            Header::Scalar { value_type } | Header::DenseMatrix { value_type, .. }
                if (rows as u128) * (cols as u128) <= 2 * u128::from(self.nnz()) + 1 =>
            {
                // Mostly non-zero: from dense values (borrowed when one dense block has them).
                with_value_type!(*value_type, T => {
                    let copied;
                    let data: &[T] = match self.one_dense_block::<T>() {
                        Some(values) => values,
                        None => {
                            copied = self.dense_vec::<T>()?;
                            &copied
                        }
                    };
                    write_matrix(&mut sink, DataType::DenseMatrix, &MatrixRef::dense(rows, cols, data), options)?
                })
            }
            header => {
                let data_type = match header.data_type() {
                    DataType::Scalar => DataType::DenseMatrix,
                    other => other,
                };
                let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
                with_value_type!(vt, T => {
                    // Borrowed when one sparse block holds them, else built.
                    let built;
                    let (row_offsets, col_indices, values) = match self.one_sparse_block::<T>() {
                        Some(arrays) => arrays,
                        None => {
                            built = self.csr_parts::<T>()?;
                            (&built.row_offsets[..], &built.col_indices[..], &built.values[..])
                        }
                    };
                    let matrix = MatrixRef {
                        rows,
                        cols,
                        layout: Layout::Csr {
                            row_offsets,
                            col_indices,
                            values,
                        },
                    };
                    write_matrix(&mut sink, data_type, &matrix, options)?
                })
            }
        }
        sink.finish()?;
        Ok(())
    }

    /// The values of an object stored as one dense block of `T`s.
    fn one_dense_block<T: Element>(&self) -> Option<&[T]> {
        match self.blocks.as_slice() {
            [Block {
                data: BlockData::Dense(values),
                ..
            }] => T::slice_of(values),
            _ => None,
        }
    }

    /// The CSR arrays of an object stored as one sparse block of `T`s.
    #[allow(clippy::type_complexity)]
    fn one_sparse_block<T: Element>(&self) -> Option<(&[usize], &[usize], &[T])> {
        match self.blocks.as_slice() {
            [Block {
                data:
                    BlockData::Sparse {
                        row_offsets,
                        col_indices,
                        values,
                    },
                ..
            }] => Some((row_offsets, col_indices, T::slice_of(values)?)),
            _ => None,
        }
    }

    /// Block types used, with how many blocks of each.
    pub fn block_types(&self) -> Vec<(BlockType, usize)> {
        let mut out: Vec<(BlockType, usize)> = Vec::new();
        for b in &self.blocks {
            let bt = b.data.block_type();
            match out.iter_mut().find(|(t, _)| *t == bt) {
                Some((_, n)) => *n += 1,
                None => out.push((bt, 1)),
            }
        }
        out
    }
}

/// A block may store its values in its own type only "if the value range permits" (the
/// spec): every value must convert exactly to the object's type for its column.
fn check_block_values(
    header: &Header,
    place: BlockPlace,
    data: &BlockData,
    offset: u64,
) -> Result<()> {
    let Some(values) = data.values() else {
        return Ok(());
    };
    let Some(target) = header.value_type_of(place.col) else {
        return Ok(());
    };
    if widens_exactly(values.value_type(), target) {
        return Ok(());
    }
    match (0..values.len()).find_map(|i| values.get(i).filter(|v| v.convert(target).is_none())) {
        Some(value) => Err(Error::LossyConversion {
            offset,
            value,
            to: target,
        }),
        None => Ok(()),
    }
}

/// CSR arrays of a matrix: row `i` holds `col_indices[row_offsets[i]..row_offsets[i + 1]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct CsrParts<T> {
    /// `rows + 1` offsets.
    pub row_offsets: Vec<usize>,
    /// Column of each stored value, increasing within a row.
    pub col_indices: Vec<usize>,
    /// The stored values.
    pub values: Vec<T>,
}

/// Both dimensions as block dimensions, or an error when one exceeds `u32::MAX`.
fn block_dims(rows: u64, cols: u64) -> Result<(u32, u32)> {
    match (u32::try_from(rows), u32::try_from(cols)) {
        (Ok(r), Ok(c)) => Ok((r, c)),
        _ => Err(Error::invalid(format!(
            "a {rows} x {cols} matrix does not fit one block (at most {} rows and columns)",
            u32::MAX
        ))),
    }
}
