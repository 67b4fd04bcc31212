//! DAPHNE's runtime dialect in a [`DbdfWriter`]: one layout per object, written as full-width
//! row bands in order. A CSR matrix's non-zero count comes before its row offsets, column
//! indices and values: written whole from bands that can be read again
//! ([`DbdfWriter::write_untiled`]), a stream's takes a pass per section (the count, when the
//! source does not know it, then each array); tile by tile, its column indices and values are
//! spilled to unnamed scratch files until its end (a file's non-zero count patched in then; a
//! stream's whole matrix, row offsets too, written then).

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use super::{into_file, CsrSpill, Current, DbdfWriter, Out};
use crate::error::{Error, ErrorDetails, Result};
use crate::io::{scratch_file, Counted};
use crate::model::encode::{MatrixRef, RowBands};
use crate::wire::element::exact_cast;
use crate::wire::runtime::{self, CSR_NNZ_AT};
use crate::wire::sink::Sink;
use crate::wire::values::{with_value_type, write_le};
use crate::wire::{DataType, Element, Header, ValueType};

impl<'w> DbdfWriter<'w> {
    pub(super) fn start_runtime(&mut self, current: &mut Current) -> Result<()> {
        let (rows, cols) = current.header.shape();
        match &current.header {
            Header::DenseMatrix { value_type, .. } => {
                runtime::start_dense(self.sink(), rows, cols, *value_type)?;
            }
            Header::CsrMatrix { value_type, .. } => {
                // A file's non-zero count is patched in at the end; a stream's whole object
                // is written then, or in passes (its spills made by its first tile).
                if self.pending.is_some() {
                    runtime::start_csr(self.sink(), rows, cols, *value_type, 0)?;
                    self.sink().u64(0)?;
                    current.spill = Some(self.spills()?);
                }
            }
            Header::Frame { columns, .. } => {
                let guard = self.options.guard_daphne_labels;
                runtime::start_frame(self.sink(), rows, columns, guard)?;
            }
            Header::Scalar { .. } => {
                return Err(Error::invalid(
                    "a scalar has no tiles: write it with Options::to_file",
                ))
            }
        }
        // The runtime layouts need no blocks: coverage counts row bands.
        Ok(())
    }

    /// In the runtime dialect, a tile must be the next full-width row band.
    pub(super) fn check_band(&mut self, row: u64, col: u64, rows: u64, cols: u64) -> Result<()> {
        let object = self.objects - 1;
        let current = self.current()?;
        let (object_rows, object_cols) = current.header.shape();
        if col != 0 || cols != object_cols || row != current.next_row || row + rows > object_rows {
            return Err(ErrorDetails::TileOrder {
                object,
                expected: current.next_row,
                found: (row, col),
                reason: "the runtime dialect writes full-width row bands, in row order",
            }
            .into());
        }
        current.next_row += rows;
        Ok(())
    }

    /// A CSR matrix's spills: scratch files without names, nothing of them outlives the
    /// writer; a stream's row offsets too.
    pub(super) fn spills(&self) -> Result<CsrSpill> {
        let spill = || -> Result<BufWriter<File>> {
            Ok(BufWriter::with_capacity(1 << 20, scratch_file(&self.path)?))
        };
        Ok(CsrSpill {
            offsets: self.pending.is_none().then(spill).transpose()?,
            cols: spill()?,
            values: spill()?,
            nnz: 0,
        })
    }

    pub(super) fn runtime_band<T: Element>(
        &mut self,
        tile: &MatrixRef<'_, T>,
        vt: ValueType,
    ) -> Result<()> {
        let current = self.current()?;
        if current.header.data_type() != DataType::CsrMatrix {
            // Dense: every cell, row-major, in the object's type.
            let mut row = vec![T::zeroed(); tile.cols];
            for r in 0..tile.rows {
                tile.dense_row(r, &mut row)?;
                self.sink().values_as(&row, vt)?;
            }
            return Ok(());
        }
        if current.spill.is_none() {
            let spill = self.spills()?;
            self.current()?.spill = Some(spill);
        }
        let spill = self.current()?.spill.as_mut().expect("made above");
        // CSR: row offsets now, column indices and values to the spills.
        let mut offsets = Vec::with_capacity(tile.rows);
        let (mut cols, mut values) = (Vec::new(), Vec::new());
        for r in 0..tile.rows {
            tile.for_each_nonzero_in_row(r, |c, x| {
                cols.push(c as u64);
                values.push(x);
            })?;
            offsets.push(spill.nnz + cols.len() as u64);
        }
        spill.nnz += cols.len() as u64;
        write_le(&mut spill.cols, &cols)?;
        with_value_type!(vt, V => {
            // Exact: the tile's type was checked to widen to the object's.
            let stored: Vec<V> = values.iter().map(|&x| exact_cast(x)).collect();
            write_le(&mut spill.values, &stored)?;
        });
        match spill.offsets.as_mut() {
            Some(spilled) => Ok(write_le(spilled, &offsets)?),
            None => self.sink().values(&offsets),
        }
    }

    /// Writes a stream's whole runtime CSR matrix from `bands` (of `vt` values) with no
    /// spill: its header with the non-zero count (the source's, else a pass's), then its row
    /// offsets, column indices and values, a pass each. Memory holds a band.
    pub(super) fn runtime_csr_in_passes<T: Element>(
        &mut self,
        bands: &mut dyn RowBands<T>,
        vt: ValueType,
    ) -> Result<()> {
        let nnz = match bands.count_nonzero()? {
            Some(nnz) => nnz,
            None => self.csr_pass::<T, T>(bands, Section::Count)?,
        };
        let (rows, cols) = self.current()?.header.shape();
        self.current()?.in_passes = true;
        runtime::start_csr(self.sink(), rows, cols, vt, nnz)?;
        self.sink().u64(0)?;
        for section in [Section::RowOffsets, Section::Columns, Section::Values] {
            if with_value_type!(vt, V => self.csr_pass::<T, V>(bands, section))? != nnz {
                return Err(changed());
            }
        }
        self.current()?.next_row = rows;
        Ok(())
    }

    /// One pass over `bands` for `section` (its values as `V`); returns the non-zeros met.
    fn csr_pass<T: Element, V: Element>(
        &mut self,
        bands: &mut dyn RowBands<T>,
        section: Section,
    ) -> Result<u64> {
        let (rows, cols) = self.current()?.header.shape();
        let (mut row, mut entries) = (0, 0);
        // Reused from band to band.
        let (mut indices, mut values) = (Vec::<u64>::new(), Vec::<V>::new());
        bands.for_each_band(&mut |band| {
            if band.cols as u64 != cols || row + band.rows as u64 > rows {
                return Err(changed());
            }
            let sink = self.sink();
            section.write(sink, band, &mut entries, &mut indices, &mut values)?;
            row += band.rows as u64;
            Ok(true)
        })?;
        if row != rows {
            return Err(changed());
        }
        Ok(entries)
    }

    pub(super) fn append_spills(&mut self, spill: CsrSpill, object_offset: u64) -> Result<()> {
        let CsrSpill {
            cols, values, nnz, ..
        } = spill;
        (|| {
            let sink = self.sink.take().expect("the sink lives until finish");
            let mut file = into_file(sink)?;
            for writer in [cols, values] {
                let mut spilled = writer
                    .into_inner()
                    .map_err(|e| Error::from(ErrorDetails::Io(e.into_error())))?;
                spilled.seek(SeekFrom::Start(0))?;
                io::copy(&mut spilled, &mut file)?;
            }
            let end = file.stream_position()?;
            file.seek(SeekFrom::Start(object_offset + CSR_NNZ_AT))?;
            file.write_all(&nnz.to_le_bytes())?;
            file.seek(SeekFrom::Start(end))?;
            self.sink = Some(Sink::new(Counted {
                inner: Out::File(BufWriter::with_capacity(1 << 20, file)),
                written: end,
            }));
            Ok(())
        })()
    }

    /// Writes a stream's runtime CSR matrix of `header`, spilled whole: its header with the
    /// non-zero count, then its row offsets, column indices and values.
    pub(super) fn write_spilled(&mut self, spill: CsrSpill, header: &Header) -> Result<()> {
        let (rows, cols) = header.shape();
        let value_type = header.matrix_value_type().unwrap_or(ValueType::F64);
        runtime::start_csr(self.sink(), rows, cols, value_type, spill.nnz)?;
        self.sink().u64(0)?;
        let mut chunk = vec![0; 1 << 20];
        for spilled in spill.offsets.into_iter().chain([spill.cols, spill.values]) {
            let mut file = spilled
                .into_inner()
                .map_err(|e| Error::from(ErrorDetails::Io(e.into_error())))?;
            file.seek(SeekFrom::Start(0))?;
            loop {
                let n = file.read(&mut chunk)?;
                if n == 0 {
                    break;
                }
                self.sink().bytes(&chunk[..n])?;
            }
        }
        Ok(())
    }
}

/// A source whose rows differ from one pass to the next.
fn changed() -> Error {
    Error::invalid("the source's rows changed while it was written")
}

/// A pass over a runtime CSR matrix's rows: counting its non-zeros, or writing one of the
/// arrays after its header, in file order.
#[derive(Clone, Copy)]
enum Section {
    /// The non-zeros, for a source that does not know them.
    Count,
    /// From the second on (the first, 0, goes with the header).
    RowOffsets,
    Columns,
    Values,
}

impl Section {
    /// Writes this section's part of `band` (its values as `V`) through `indices` and
    /// `values`, buffers kept from band to band; `entries`, the non-zeros before it, counted
    /// on.
    fn write<T: Element, V: Element, W: Write>(
        self,
        sink: &mut Sink<W>,
        band: &MatrixRef<'_, T>,
        entries: &mut u64,
        indices: &mut Vec<u64>,
        values: &mut Vec<V>,
    ) -> Result<()> {
        indices.clear();
        values.clear();
        for r in 0..band.rows {
            match self {
                Section::Count | Section::RowOffsets => {
                    *entries += band.row(r, 0, band.cols).nnz() as u64;
                    if let Section::RowOffsets = self {
                        indices.push(*entries);
                    }
                }
                Section::Columns => {
                    band.for_each_nonzero_in_row(r, |c, _| indices.push(c as u64))?;
                }
                Section::Values => band.for_each_nonzero_in_row(r, |_, x| {
                    // Exact: the tile's type was checked to widen to the object's.
                    values.push(exact_cast::<T, V>(x));
                })?,
            }
        }
        match self {
            Section::Count => Ok(()),
            Section::RowOffsets => sink.values(indices),
            Section::Columns => {
                *entries += indices.len() as u64;
                sink.values(indices)
            }
            Section::Values => {
                *entries += values.len() as u64;
                sink.values(values)
            }
        }
    }
}
