//! Writing an object anew with options: its values handed to the encoder, which chooses block
//! types, tiles and narrowing, in the options' dialect.

use std::io::Write;

use crate::error::Result;
use crate::model::encode::{write_frame, write_matrix, MatrixCells, MatrixRef};
use crate::model::object::{Block, Object};
use crate::model::runtime::write_runtime;
use crate::options::Options;
use crate::wire::sink::Sink;
use crate::wire::values::with_value_type;
use crate::wire::{BlockData, DataType, Element, Header, ValueType, Values};

impl Object {
    /// Writes the object's content anew with `options`: block types, tiling and narrowing as
    /// the options choose, in the options' dialect. (Serializing an `Object` writes its blocks
    /// as stored instead.)
    ///
    /// # Errors
    /// I/O errors; what the dialect cannot hold ([`crate::ErrorKind::NotInDialect`]); memory for the
    /// values ([`crate::ErrorKind::OutOfMemory`]).
    pub fn write_with<W: Write>(&self, writer: W, options: &Options) -> Result<()> {
        let mut sink = Sink::new(writer);
        if options.runtime_writer()? {
            write_runtime(&mut sink, self, options)?;
            sink.finish()?;
            return Ok(());
        }
        let (rows, cols) = self.matrix_dims().unwrap_or((0, 0));
        match &self.header {
            Header::Frame { columns, rows } => {
                let values = self.columns()?;
                let columns = columns
                    .iter()
                    .map(|column| column.label.as_str())
                    .zip(values.iter().map(Values::as_values_ref))
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
                    write_matrix(&mut sink, DataType::DenseMatrix, &MatrixRef::dense_unchecked(rows, cols, data), options)?
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
                        layout: MatrixCells::Csr {
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
}
