//! A `.dbdf` file written again with other options (tile size, block policy, narrowing,
//! dialect), one target tile at a time: each tile is a window of the source, read from the
//! blocks that overlap it.

use std::io::{Read, Seek};
use std::path::Path;

use crate::error::{Error, Result};
use crate::io::progress::Progress;
use crate::io::{row_bands, stored_bytes, DbdfFile, DbdfWriter};
use crate::model::encode::{tile_dims, Layout, MatrixRef, RowBands};
use crate::options::{Dialect, Options};
use crate::wire::values::with_value_type;
use crate::wire::{DataType, Element, Header, ValueType};

/// Bytes per band of rows where no tile size bounds a piece (the runtime dialect).
const BAND: u64 = 16 << 20;

/// Writes every object of the `.dbdf` file at `input` to `output` (atomically) with
/// `options`, tile by tile: memory holds one target tile (in the runtime dialect a band of
/// rows of at most 16 MiB), plus a source sparse block while it is decoded. A matrix's bytes
/// equal [`crate::to_vec_with`] of it with the same options (stored zeros of CSR matrices
/// left out); a frame holds the same blocks, written band by band. Without a tile size (spec
/// dialect) a matrix is one block, written from bands of rows read twice (once to choose the
/// block type, once to write it); a frame is read whole.
///
/// ```
/// use serde_daphne::{Dense, Options};
///
/// let dir = std::env::temp_dir();
/// let (from, to) = (dir.join("serde_daphne_doc_rw_a.dbdf"), dir.join("serde_daphne_doc_rw_b.dbdf"));
/// let m = ndarray::Array2::from_shape_fn((5, 4), |(r, c)| (r * 4 + c) as f64);
/// serde_daphne::to_file(&from, &Dense(m.clone()))?;
/// serde_daphne::__private::io::rewrite(&from, &to, &Options::new().tile(2, 2))?;
/// let back: Dense<f64> = serde_daphne::from_file(&to)?;
/// assert_eq!(back.0, m);
/// # std::fs::remove_file(&from).ok(); std::fs::remove_file(&to).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// [`DbdfFile::open`]'s and [`DbdfWriter`]'s errors (such as [`crate::ErrorKind::NotInDialect`]
/// for what the runtime dialect cannot hold); values that do not fit their object's type.
pub fn rewrite(input: impl AsRef<Path>, output: impl AsRef<Path>, options: &Options) -> Result<()> {
    rewrite_reporting(DbdfFile::open(input)?, output.as_ref(), options, None)
}

/// [`rewrite`], telling `progress` how far into the input file it has come (by objects and
/// bands of tiles).
pub fn rewrite_reporting<R: Read + Seek>(
    mut file: DbdfFile<R>,
    output: &Path,
    options: &Options,
    progress: Option<&Progress>,
) -> Result<()> {
    let mut writer = DbdfWriter::create_with(output, options)?;
    for index in 0..file.objects().len() {
        let header = file.objects()[index].header.clone();
        let range = file.objects()[index].range.clone();
        let total = file.file_len();
        // Within an object, the share of its rows done, as bytes of its range.
        let report = |done: u64, of: u64| {
            if let Some(report) = progress {
                let part =
                    (range.end - range.start) as u128 * u128::from(done) / u128::from(of.max(1));
                report(range.start + part as u64, total);
            }
        };
        writer.begin(header.clone())?;
        let pieces = pieces(&header, options);
        match &header {
            Header::Frame { rows, columns } => {
                let labels: Vec<&str> = columns.iter().map(|c| c.label.as_str()).collect();
                for r0 in (0..*rows).step_by(pieces.0 as usize) {
                    let part = file.read_frame(index, r0..(r0 + pieces.0).min(*rows), &labels)?;
                    writer.write_frame_rows(r0, &part.into_columns()?)?;
                    report((r0 + pieces.0).min(*rows), *rows);
                }
            }
            _ => {
                let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
                with_value_type!(vt, T => copy_matrix::<T, _>(&mut file, index, &header, pieces, &mut writer, &report)?);
            }
        }
    }
    writer.finish()
}

/// The size of the pieces copied: the target tiles, or bands of rows.
fn pieces(header: &Header, options: &Options) -> (u64, u64) {
    let (rows, cols) = header.shape();
    if options.dialect == Some(Dialect::Runtime) {
        let width = header.data_type() == DataType::Frame;
        let row_bytes = match width {
            true => 64 * cols,
            false => cols * header.matrix_value_type().map_or(8, ValueType::size) as u64,
        };
        return ((BAND / row_bytes.max(1)).max(1), cols.max(1));
    }
    if options.tile.is_some() {
        return tile_dims(options);
    }
    (rows.max(1), cols.max(1))
}

fn copy_matrix<T: crate::wire::Element, R: Read + Seek>(
    file: &mut DbdfFile<R>,
    index: usize,
    header: &Header,
    (tr, tc): (u64, u64),
    writer: &mut DbdfWriter,
    report: &dyn Fn(u64, u64),
) -> Result<()> {
    let (rows, cols) = header.shape();
    let csr = header.data_type() == DataType::CsrMatrix;
    if (tr, tc) == (rows, cols) && rows > 0 && cols > 0 {
        // One block (one layout in the runtime dialect): written from bands of rows.
        return writer.write_untiled(&mut WindowBands {
            stored: stored_bytes(file.objects(), index),
            file,
            index,
            header,
            report,
            buf: Vec::<T>::new(),
        });
    }
    for r0 in (0..rows).step_by(tr as usize) {
        let r1 = (r0 + tr).min(rows);
        if csr {
            // A CSR band is read once (its rows only) and cut into the tiles of its row:
            // a window per tile would read and walk the band's rows once per tile.
            let band = file.read_window_csr::<T>(index, r0..r1, 0..cols)?;
            write_csr_band(writer, r0, &band, tc)?;
        } else {
            for c0 in (0..cols).step_by(tc as usize) {
                let c1 = (c0 + tc).min(cols);
                let tile = file.read_window::<T>(index, r0..r1, c0..c1)?;
                writer.write_dense_tile(r0, c0, tile.view())?;
            }
        }
        report(r1, rows);
    }
    Ok(())
}

/// Writes the tiles of a band of CSR rows starting at row `r0`, `tc` columns wide, each
/// entry moved once into its tile.
fn write_csr_band<T: Element>(
    writer: &mut DbdfWriter,
    r0: u64,
    band: &sprs::CsMat<T>,
    tc: u64,
) -> Result<()> {
    let (rows, cols) = band.shape();
    let tc = tc as usize;
    let mut tiles: Vec<(Vec<usize>, Vec<usize>, Vec<T>)> = (0..cols.div_ceil(tc))
        .map(|_| (vec![0], Vec::new(), Vec::new()))
        .collect();
    for row in band.outer_iterator() {
        for (c, &v) in row.iter() {
            let (_, indices, values) = &mut tiles[c / tc];
            indices.push(c % tc);
            values.push(v);
        }
        for (offsets, indices, _) in &mut tiles {
            offsets.push(indices.len());
        }
    }
    for (j, (offsets, indices, values)) in tiles.into_iter().enumerate() {
        let width = tc.min(cols - j * tc);
        let tile = sprs::CsMat::try_new((rows, width), offsets, indices, values)
            .map_err(|(.., e)| Error::invalid(format!("a band's tile: {e}")))?;
        writer.write_csr_tile(r0, (j * tc) as u64, tile.view())?;
    }
    Ok(())
}

/// A matrix of a `.dbdf` file read in bands of rows ([`row_bands`]), as windows.
struct WindowBands<'a, T, R> {
    file: &'a mut DbdfFile<R>,
    index: usize,
    header: &'a Header,
    stored: u64,
    report: &'a dyn Fn(u64, u64),
    buf: Vec<T>,
}

impl<T: Element, R: Read + Seek> RowBands<T> for WindowBands<'_, T, R> {
    fn dense(&self) -> bool {
        self.header.data_type() != DataType::CsrMatrix
    }

    fn for_each_band(
        &mut self,
        each: &mut dyn FnMut(&MatrixRef<'_, T>) -> Result<bool>,
    ) -> Result<()> {
        let (rows, cols) = self.header.shape();
        for band in row_bands(self.header, self.stored, BAND) {
            let (r1, nr) = (band.end, (band.end - band.start) as usize);
            let more = if self.dense() {
                self.buf.resize(nr * cols as usize, T::zeroed());
                self.file
                    .read_window_into::<T>(self.index, band, 0..cols, &mut self.buf)?;
                each(&MatrixRef::dense(nr, cols as usize, &self.buf))?
            } else {
                let tile = self.file.read_window_csr::<T>(self.index, band, 0..cols)?;
                let indptr = tile.indptr();
                let row_offsets = indptr.to_proper();
                each(&MatrixRef {
                    rows: nr,
                    cols: cols as usize,
                    layout: Layout::Csr {
                        row_offsets: &row_offsets,
                        col_indices: tile.indices(),
                        values: tile.data(),
                    },
                })?
            };
            (self.report)(r1, rows);
            if !more {
                break;
            }
        }
        Ok(())
    }
}
