//! `Object`: one DAPHNE object (matrix or frame) as stored: building, reading and writing it
//! block for block, and looking at it. Typed access is in `assemble.rs`, writing anew with
//! options in `write.rs`.

use crate::error::ErrorDetails;
use std::io::Write;

use crate::error::{Error, Result};
use crate::model::tiling::Coverage;
use crate::options::Dialect;
use crate::wire::block::{decode_block, encode_block};
use crate::wire::element::widens_exactly;
use crate::wire::sink::Sink;
use crate::wire::{
    BlockData, BlockPlace, BlockType, DataType, Header, SliceSource, Source, Value, ValueType,
    Values,
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
    pub(super) header: Header,
    pub(super) blocks: Vec<Block>,
    /// Byte offsets of the object and of each block entry in the input (zeros when built).
    pub(super) offset: u64,
    pub(super) block_offsets: Vec<u64>,
    /// The dialect it was read in (`Spec` when built).
    pub(super) dialect: Dialect,
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
    /// [`crate::ErrorKind::InvalidValue`] when blocks follow the ones that already cover the object.
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn read_in(header: Header, blocks: Vec<Block>, offset: u64, dialect: Dialect) -> Object {
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
    #[doc(hidden)]
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
    /// [`crate::ErrorKind::InvalidValue`] when `values.len() != rows * cols` or a dimension exceeds
    /// `u32::MAX` (use [`crate::Options::to_vec`] to split large matrices into blocks).
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
    /// [`crate::ErrorKind::InvalidValue`] for dimensions above `u32::MAX` or arrays of unequal lengths.
    pub fn csr(
        rows: u64,
        cols: u64,
        row_offsets: Vec<usize>,
        col_indices: Vec<usize>,
        values: Values,
    ) -> Result<Object> {
        let (r, c) = block_dims(rows, cols)?;
        if row_offsets.len() as u64 != rows + 1
            || row_offsets.first() != Some(&0)
            || row_offsets.last() != Some(&values.len())
            || col_indices.len() != values.len()
        {
            return Err(Error::invalid("CSR arrays of inconsistent lengths"));
        }
        check_csr_rows(&row_offsets, &col_indices, c, values.value_type())?;
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
        Ok(Object::single(header, r, c, data))
    }

    pub(crate) fn single(header: Header, rows: u32, cols: u32, data: BlockData) -> Object {
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
    #[doc(hidden)]
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
    /// I/O errors; [`crate::ErrorKind::LabelTooLong`].
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn block_offset(&self, index: usize) -> Option<u64> {
        self.block_offsets.get(index).copied()
    }

    /// The byte offset of the object in the input it was read from.
    #[doc(hidden)]
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

    /// The entries a CSR form of the object holds: the stored entries of sparse and
    /// ultra-sparse blocks (explicit zeros included, as DAPHNE counts them) and the non-zeros
    /// of dense blocks. Counts only dense blocks' values; a sparse block's count is its length.
    /// What a runtime-dialect CSR file of the object records as `numNonZeros`.
    #[doc(hidden)]
    pub fn entries(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| match &b.data {
                BlockData::Dense(_) => b.data.nnz(),
                data => data.stored() as u64,
            })
            .sum()
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

    pub(super) fn block_offset_or_object(&self, index: usize) -> u64 {
        self.block_offsets
            .get(index)
            .copied()
            .unwrap_or(self.offset)
    }

    /// The error for value `at` of block `index` not fitting `to`.
    pub(super) fn lossy(&self, index: usize, values: &Values, at: usize, to: ValueType) -> Error {
        Error::from(ErrorDetails::LossyConversion {
            offset: self.block_offset_or_object(index),
            value: values.get(at).unwrap_or(Value::U8(0)),
            to,
        })
    }

    /// A frame from labelled columns of equal length, each column one block.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] when column lengths differ or exceed `u32::MAX`.
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
        let types = columns
            .iter()
            .map(|(label, v)| (label.as_str(), v.value_type()));
        let header = Header::frame_of(rows as u64, types);
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
    #[doc(hidden)]
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
    /// [`crate::ErrorKind::DataTypeMismatch`] for frames and scalars, or a target that is not a matrix.
    #[doc(hidden)]
    pub fn with_data_type(mut self, data_type: DataType) -> Result<Object> {
        let mismatch = |found| {
            Error::from(ErrorDetails::DataTypeMismatch {
                offset: self.offset,
                expected: "a matrix (DenseMatrix or CSRMatrix)",
                found,
            })
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

    /// Block types used, with how many blocks of each.
    #[doc(hidden)]
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
pub(crate) fn check_block_values(
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
        Some(value) => Err(ErrorDetails::LossyConversion {
            offset,
            value,
            to: target,
        }
        .into()),
        None => Ok(()),
    }
}

/// The rules reading applies to a sparse block's rows, checked on CSR arrays directly (no
/// encoding): offsets that never decrease, columns inside the block and strictly increasing
/// within a row. Errors carry the offsets these fields would have in the object's encoding.
fn check_csr_rows(
    row_offsets: &[usize],
    col_indices: &[usize],
    cols: u32,
    value_type: ValueType,
) -> Result<()> {
    // Header (19), block position (16) and sparse block header (18).
    const ROWS_AT: u64 = 53;
    let entry = 4 + value_type.size() as u64;
    let at = |row: usize, k: usize| ROWS_AT + 4 * (row as u64 + 1) + entry * k as u64;
    for (row, w) in row_offsets.windows(2).enumerate() {
        if w[1] < w[0] || w[1] > col_indices.len() {
            return Err(ErrorDetails::SparseCountMismatch {
                offset: at(row, w[0]) - 4,
                declared: col_indices.len() as u64,
                counted: w[1] as u64,
            }
            .into());
        }
        let mut previous: Option<usize> = None;
        for (k, &col) in col_indices[w[0]..w[1]].iter().enumerate() {
            let offset = at(row, w[0] + k);
            if col >= cols as usize {
                return Err(ErrorDetails::ColumnOutOfRange {
                    offset,
                    index: u32::try_from(col).unwrap_or(u32::MAX),
                    cols,
                }
                .into());
            }
            if let Some(previous) = previous.filter(|&p| p >= col) {
                return Err(ErrorDetails::UnsortedColumns {
                    offset,
                    row: row as u32,
                    previous: previous as u32,
                    index: col as u32,
                }
                .into());
            }
            previous = Some(col);
        }
    }
    Ok(())
}

/// Both dimensions as block dimensions, or an error when one exceeds `u32::MAX`.
pub(super) fn block_dims(rows: u64, cols: u64) -> Result<(u32, u32)> {
    match (u32::try_from(rows), u32::try_from(cols)) {
        (Ok(r), Ok(c)) => Ok((r, c)),
        _ => Err(Error::invalid(format!(
            "a {rows} x {cols} matrix does not fit one block (at most {} rows and columns)",
            u32::MAX
        ))),
    }
}
