//! A MatrixMarket coordinate file on the pipe: its entries come in any order, so it is read
//! into the CSR arrays they make ([`super::coordinates`]), held with 4-byte column indices
//! (a matrix's columns fit a `u32`, as a block's do: 12 bytes an `f64` entry, not 16), and
//! given out as bands of rows or any window.

use std::ops::Range;

use super::coordinates::CsrArrays;
use crate::input::count_nonzero;
use crate::pipe::{Band, Cells, Windows};
use serde_daphne::with_values;
use serde_daphne::Element;
use serde_daphne::Header;
use serde_daphne::{DataType, Result};

/// The CSR arrays of a coordinate file, held.
pub(crate) struct CoordinateSource {
    headers: [Header; 1],
    arrays: CsrArrays<u32>,
    input_len: u64,
}

impl CoordinateSource {
    pub(super) fn new(arrays: CsrArrays<u32>, input_len: u64) -> CoordinateSource {
        let header = Header::matrix(
            DataType::CsrMatrix,
            arrays.rows,
            arrays.cols,
            arrays.values.value_type(),
        );
        CoordinateSource {
            headers: [header],
            arrays,
            input_len,
        }
    }
}

crate::pipe::windowed_source!(CoordinateSource {
    /// What a band takes in memory per entry: its index as `usize` and its value.
    fn stored_bytes(&self, _: usize) -> Option<u64> {
        let value = self.arrays.values.value_type().size() as u64;
        Some(self.arrays.columns.len() as u64 * (8 + value))
    }

    fn count_nonzero(&mut self, _: usize) -> Result<Option<u64>> {
        let values = &self.arrays.values;
        Ok(Some(with_values!(values, v => count_nonzero(v)) as u64))
    }

    /// The file was read whole into the CSR arrays its entries build.
    fn reads_in_place(&self) -> bool {
        false
    }
});

impl Windows for CoordinateSource {
    fn window(&self, _: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        let a = &self.arrays;
        let (c0, c1) = (cols.start as u32, cols.end.min(u64::from(u32::MAX) + 1));
        let mut row_offsets = Vec::with_capacity((rows.end - rows.start) as usize + 1);
        row_offsets.push(0);
        // Whole rows: as many indices as they hold (no regrowing copies).
        let mut col_indices = match (c0, c1) == (0, a.cols) {
            true => {
                Vec::with_capacity(a.offsets[rows.end as usize] - a.offsets[rows.start as usize])
            }
            false => Vec::new(),
        };
        // Each row's entries within the columns: a range of its sorted columns.
        let mut spans = Vec::with_capacity(row_offsets.capacity());
        for r in rows.start as usize..rows.end as usize {
            let (start, end) = (a.offsets[r], a.offsets[r + 1]);
            let row = &a.columns[start..end];
            let lo = start + row.partition_point(|&c| c < c0);
            let hi = start + row.partition_point(|&c| u64::from(c) < c1);
            col_indices.extend(a.columns[lo..hi].iter().map(|&c| (c - c0) as usize));
            row_offsets.push(col_indices.len());
            spans.push(lo..hi);
        }
        let values = with_values!(&a.values, v => {
            let mut out = Vec::with_capacity(col_indices.len());
            spans.iter().for_each(|span| out.extend_from_slice(&v[span.clone()]));
            Element::into_values(out)
        });
        Ok(Band {
            first_row: rows.start,
            first_col: cols.start,
            rows: rows.end - rows.start,
            cols: cols.end - cols.start,
            cells: Cells::Csr {
                row_offsets,
                col_indices,
                values,
            },
        })
    }
}
