//! Borrowed matrices to write: dense row-major slices or CSR arrays, and rows of windows
//! onto them, read without copying.

use std::io::Write;

use crate::error::{Error, Result};
use crate::model::csr::check_arrays;
use crate::wire::sink::Sink;
use crate::wire::values::count_nonzero;
use crate::wire::{BlockPlace, Element, ValueType};

/// A borrowed matrix to write: dense row-major values or CSR arrays, checked when made, so
/// that the writers that take it ([`crate::DbdfWriter::write_tile`], [`RowBands`]) can trust
/// it.
///
/// [`RowBands`]: crate::lowlevel::RowBands
pub struct MatrixRef<'a, T> {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) layout: MatrixCells<'a, T>,
}

/// How a borrowed matrix holds its values.
pub(crate) enum MatrixCells<'a, T> {
    /// `rows * cols` values, row-major.
    Dense(&'a [T]),
    /// CSR arrays with a proper `row_offsets` (starting at 0), columns increasing in a row.
    #[allow(missing_docs)]
    Csr {
        row_offsets: &'a [usize],
        col_indices: &'a [usize],
        values: &'a [T],
    },
}

/// One row of a window onto a matrix.
pub(crate) enum Row<'a, T> {
    Dense(&'a [T]),
    /// Entries of the row inside the window; `first` is the window's first column.
    Sparse {
        cols: &'a [usize],
        values: &'a [T],
        first: usize,
    },
}

impl<T: Element> Row<'_, T> {
    pub(crate) fn nnz(&self) -> usize {
        match self {
            Row::Dense(v) => count_nonzero(v),
            Row::Sparse { values, .. } => count_nonzero(values),
        }
    }

    /// Calls `f(column within the window, value)` for each non-zero, in column order.
    pub(crate) fn for_each_nonzero(&self, mut f: impl FnMut(u32, T) -> Result<()>) -> Result<()> {
        match self {
            Row::Dense(v) => {
                for (c, &x) in v.iter().enumerate() {
                    if !x.is_zero() {
                        f(c as u32, x)?;
                    }
                }
            }
            Row::Sparse {
                cols,
                values,
                first,
            } => {
                for (&c, &x) in cols.iter().zip(values.iter()) {
                    if !x.is_zero() {
                        f((c - first) as u32, x)?;
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn write_dense<W: Write>(
        &self,
        sink: &mut Sink<W>,
        width: usize,
        vt: ValueType,
    ) -> Result<()> {
        match self {
            Row::Dense(v) => sink.values_as(v, vt),
            Row::Sparse { .. } => {
                let mut next = 0usize;
                let zero = T::zeroed();
                self.for_each_nonzero(|c, x| {
                    for _ in next..c as usize {
                        sink.value_as(zero, vt)?;
                    }
                    next = c as usize + 1;
                    sink.value_as(x, vt)
                })?;
                for _ in next..width {
                    sink.value_as(zero, vt)?;
                }
                Ok(())
            }
        }
    }
}

impl<'a, T: Element> MatrixRef<'a, T> {
    /// A row-major dense matrix of `rows x cols` values.
    ///
    /// ```
    /// use serde_daphne::lowlevel::MatrixRef;
    ///
    /// assert!(MatrixRef::dense(2, 2, &[1.0f64, 2.0, 3.0, 4.0]).is_ok());
    /// assert!(MatrixRef::dense(2, 2, &[1.0f64, 2.0, 3.0]).is_err());
    /// ```
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] when `data` does not hold `rows * cols` values.
    pub fn dense(rows: usize, cols: usize, data: &'a [T]) -> Result<Self> {
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(Error::invalid(format!(
                "{} values for a {rows} x {cols} dense matrix",
                data.len()
            )));
        }
        Ok(MatrixRef::dense_unchecked(rows, cols, data))
    }

    /// A CSR matrix of `rows x cols` from a proper `row_offsets` (starting at 0, `rows + 1`
    /// of them, never decreasing, ending at the number of entries) and each entry's column
    /// (inside `0..cols`, strictly increasing within a row) and value: checked as sprs
    /// checks its arrays, in one pass over the columns.
    ///
    /// ```
    /// use serde_daphne::lowlevel::MatrixRef;
    ///
    /// // [[0, 5], [7, 0]]
    /// assert!(MatrixRef::csr(2, 2, &[0, 1, 2], &[1, 0], &[5i32, 7]).is_ok());
    /// assert!(MatrixRef::csr(2, 2, &[0, 1, 2], &[1, 2], &[5i32, 7]).is_err());
    /// ```
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] naming the first fault.
    pub fn csr(
        rows: usize,
        cols: usize,
        row_offsets: &'a [usize],
        col_indices: &'a [usize],
        values: &'a [T],
    ) -> Result<Self> {
        check_arrays((rows, cols), row_offsets, col_indices, values.len())?;
        Ok(MatrixRef {
            rows,
            cols,
            layout: MatrixCells::Csr {
                row_offsets,
                col_indices,
                values,
            },
        })
    }

    /// [`MatrixRef::dense`] where the caller has just sized `data` itself.
    pub(crate) fn dense_unchecked(rows: usize, cols: usize, data: &'a [T]) -> Self {
        debug_assert_eq!(rows * cols, data.len());
        MatrixRef {
            rows,
            cols,
            layout: MatrixCells::Dense(data),
        }
    }

    /// The window's values as one contiguous row-major run, when the matrix is dense and the
    /// window spans whole rows (or is one row).
    pub(crate) fn contiguous(&self, window: BlockPlace) -> Option<&'a [T]> {
        let MatrixCells::Dense(data) = self.layout else {
            return None;
        };
        let (r0, c0) = (window.row as usize, window.col as usize);
        let (nr, nc) = (window.rows as usize, window.cols as usize);
        (nc == self.cols || nr == 1).then(|| {
            let start = r0 * self.cols + c0;
            &data[start..start + nr * nc]
        })
    }

    /// The rows of the window, when the matrix is dense.
    pub(crate) fn dense_rows(
        &self,
        window: BlockPlace,
    ) -> Option<impl Iterator<Item = &'a [T]> + 'a> {
        let MatrixCells::Dense(data) = self.layout else {
            return None;
        };
        let (c0, nc, cols) = (window.col as usize, window.cols as usize, self.cols);
        let rows = window.row as usize..window.row as usize + window.rows as usize;
        Some(rows.map(move |r| &data[r * cols + c0..r * cols + c0 + nc]))
    }

    /// The `(columns, values)` of each row of a CSR matrix's window that spans whole rows.
    pub(crate) fn csr_rows(
        &self,
        window: BlockPlace,
    ) -> Option<impl Iterator<Item = (&'a [usize], &'a [T])> + 'a> {
        let MatrixCells::Csr {
            row_offsets,
            col_indices,
            values,
        } = self.layout
        else {
            return None;
        };
        let (r0, nr) = (window.row as usize, window.rows as usize);
        (window.cols as usize == self.cols).then(|| {
            row_offsets[r0..=r0 + nr]
                .windows(2)
                .map(move |w| (&col_indices[w[0]..w[1]], &values[w[0]..w[1]]))
        })
    }

    /// The stored values of a window that spans whole rows (or one row), in one run: dense
    /// values, or a CSR matrix's stored values of those rows.
    pub(crate) fn stored_run(&self, window: BlockPlace) -> Option<&'a [T]> {
        match self.layout {
            MatrixCells::Dense(_) => self.contiguous(window),
            MatrixCells::Csr {
                row_offsets,
                values,
                ..
            } if window.cols as usize == self.cols => {
                let (r0, nr) = (window.row as usize, window.rows as usize);
                Some(&values[row_offsets[r0]..row_offsets[r0 + nr]])
            }
            MatrixCells::Csr { .. } => None,
        }
    }

    /// Row `r` with every cell, zeros included, into `out` (`cols` long).
    pub(crate) fn dense_row(&self, r: usize, out: &mut [T]) -> Result<()> {
        out.fill(T::zeroed());
        self.row(r, 0, self.cols).for_each_nonzero(|c, x| {
            out[c as usize] = x;
            Ok(())
        })
    }

    /// Calls `f(column, value)` for each non-zero of row `r`, in column order.
    pub(crate) fn for_each_nonzero_in_row(
        &self,
        r: usize,
        mut f: impl FnMut(usize, T),
    ) -> Result<()> {
        self.row(r, 0, self.cols).for_each_nonzero(|c, x| {
            f(c as usize, x);
            Ok(())
        })
    }

    pub(crate) fn row(&self, r: usize, first: usize, width: usize) -> Row<'a, T> {
        match self.layout {
            MatrixCells::Dense(data) => {
                let start = r * self.cols + first;
                Row::Dense(&data[start..start + width])
            }
            MatrixCells::Csr {
                row_offsets,
                col_indices,
                values,
            } => {
                let (start, end) = (row_offsets[r], row_offsets[r + 1]);
                let cols = &col_indices[start..end];
                let (lo, hi) = if first == 0 && width == self.cols {
                    (0, cols.len())
                } else {
                    (
                        cols.partition_point(|&c| c < first),
                        cols.partition_point(|&c| c < first + width),
                    )
                };
                Row::Sparse {
                    cols: &cols[lo..hi],
                    values: &values[start + lo..start + hi],
                    first,
                }
            }
        }
    }
}
