//! Windows over a dense matrix whose source gives rows only in order: its bands spilled to
//! an unnamed scratch file in the temporary directory, in binary, row-major, then read at
//! positions. Memory holds a band while it is spilled and a window while it is read; the
//! disk a binary copy of the matrix.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;

use super::{Band, Cells, Pieces, Want, Windows};
use crate::input::write_le;
use serde_daphne::lowlevel::scratch_file;
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::with_value_type;
use serde_daphne::with_values;
use serde_daphne::Element;
use serde_daphne::{Result, ValueType};

/// A dense matrix spilled to a scratch file.
pub(crate) struct Spilled {
    file: File,
    cols: u64,
    value_type: ValueType,
}

impl Spilled {
    /// Spills the object `pieces` gives (a matrix of `value_type`, `cols` wide, CSR bands
    /// made dense), one pass over its bands.
    ///
    /// # Errors
    /// The source's errors; I/O errors; frame bands.
    pub(crate) fn new(
        pieces: &mut Pieces<'_>,
        cols: u64,
        value_type: ValueType,
    ) -> Result<Spilled> {
        let file = scratch_file(&std::env::temp_dir().join("dbdf-spill"))?;
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        // Bands of any height: the sink's tiles or blocks are read back as windows.
        let want = std::mem::replace(&mut pieces.want, Want::Bands(1));
        let spilled = pieces.for_each(&mut |band| {
            match &band.cells {
                Cells::Dense(values) => with_values!(values, v => write_le(&mut out, v))?,
                _ => with_values!(&band.dense_values()?, v => write_le(&mut out, v))?,
            }
            Ok(true)
        });
        pieces.want = want;
        spilled?;
        out.flush()?;
        drop(out);
        Ok(Spilled {
            file,
            cols,
            value_type,
        })
    }
}

impl Windows for Spilled {
    fn window(&self, _: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        let (nr, nc) = (
            (rows.end - rows.start) as usize,
            (cols.end - cols.start) as usize,
        );
        let size = self.value_type.size() as u64;
        let values = with_value_type!(self.value_type, T => {
            let mut out = zeroed_vec::<T>(nr * nc)?;
            if nc as u64 == self.cols {
                // Whole rows: one read.
                let at = rows.start * self.cols * size;
                crate::input::read_exact_at(&self.file, bytemuck::cast_slice_mut(&mut out), at)?;
                out.iter_mut().for_each(|x| *x = x.to_le());
                return Ok(Band::dense(rows, cols, T::into_values(out)));
            }
            // Each row's part of the window, straight into its place.
            for (k, row) in out.chunks_mut(nc.max(1)).enumerate().take(nr) {
                let at = ((rows.start + k as u64) * self.cols + cols.start) * size;
                crate::input::read_exact_at(&self.file, bytemuck::cast_slice_mut(row), at)?;
                row.iter_mut().for_each(|x| *x = x.to_le());
            }
            T::into_values(out)
        });
        Ok(Band::dense(rows, cols, values))
    }
}
