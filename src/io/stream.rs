//! `DbdfWriter`: a file written tile by tile, in memory bounded by one tile, for objects
//! larger than memory. Tiles may come in any order (the spec allows any block order); the
//! writer checks that they cover each object exactly once. The file appears at its path only
//! when [`DbdfWriter::finish`] succeeds.

use crate::error::ErrorDetails;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use ndarray::ArrayView2;
use sprs::CsMatView;

use crate::error::{Error, Result};
use crate::io::{Counted, Pending, Writeback};
use crate::model::encode::{
    places, tile_dims, write_block, write_block_in_bands, MatrixCells, MatrixRef, RowBands,
};
use crate::model::tiling::Coverage;
use crate::options::{Dialect, Options};
use crate::wire::block::write_empty;
use crate::wire::element::widens_exactly;
use crate::wire::runtime;
use crate::wire::sink::Sink;
use crate::wire::values::with_values;
use crate::wire::{BlockPlace, DataType, Element, Header, ValueType, Values};

mod out;
mod runtime_layout;
mod serialized;

use out::{Out, BLOCK_HEAD_MOST};

/// Writes a DAPHNE file tile by tile.
///
/// Each object starts with [`DbdfWriter::begin`] (its header: data type, shape, value
/// type(s), labels); its tiles follow, each written at once as blocks chosen by the writer's
/// [`Options`] (tile size, block policy, narrowing) exactly as [`Options::to_vec`] would
/// write the same cells. Objects may follow one another. Nothing is visible at the path until
/// [`DbdfWriter::finish`]; a writer dropped unfinished, or after an error, leaves no file.
///
/// In the runtime dialect ([`Options::dialect`]) an object is one layout, so tiles must be
/// row bands of full width, in row order; a CSR matrix's column indices and values are
/// spilled to temporary files and appended at the end, and its non-zero count is patched
/// (a stream's CSR matrix written by [`DbdfWriter::write_untiled`] takes passes instead).
///
/// ```
/// use ndarray::{array, Array2};
/// use serde_daphne::{DbdfWriter, Options, ValueType};
/// use serde_daphne::Header;
///
/// let path = std::env::temp_dir().join("serde_daphne_doc_writer.dbdf");
/// let mut writer = DbdfWriter::create(&path)?;
/// writer.begin(Header::DenseMatrix { rows: 2, cols: 4, value_type: ValueType::F64 })?;
/// writer.write_dense_tile(0, 2, array![[3.0, 4.0], [7.0, 8.0]].view())?; // any order
/// writer.write_dense_tile(0, 0, array![[1.0, 2.0], [5.0, 6.0]].view())?;
/// writer.finish()?;
///
/// let m: serde_daphne::Dense<f64> = serde_daphne::from_file(&path)?;
/// assert_eq!(m.0, array![[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
pub struct DbdfWriter<'w> {
    path: PathBuf,
    /// The name the file gets when finished; until then it has none (or a temporary one).
    /// `None` for a stream ([`DbdfWriter::to_stream`]).
    pending: Option<Pending>,
    sink: Option<Sink<Counted<Out<'w>>>>,
    options: Options,
    current: Option<Current>,
    objects: usize,
    /// After an error past the first byte of a tile, the file is not trusted.
    poisoned: bool,
    /// Writing the file out while it grows, when it will be synced.
    writeback: Option<Writeback>,
}

/// The object being written.
struct Current {
    header: Header,
    coverage: Coverage,
    /// Where the object starts in the file.
    offset: u64,
    /// Runtime dialect: the next row band's first row, and a CSR matrix's spills.
    next_row: u64,
    spill: Option<CsrSpill>,
    /// Runtime dialect: a stream's CSR matrix written whole, in passes, not from spills.
    in_passes: bool,
}

/// A runtime CSR matrix's column indices and values, kept apart until the end.
struct CsrSpill {
    /// A stream's row offsets too: its non-zero count, before them, is known at the end.
    offsets: Option<BufWriter<File>>,
    cols: BufWriter<File>,
    values: BufWriter<File>,
    nnz: u64,
}

impl DbdfWriter<'static> {
    /// Starts a file at `path` (written to a temporary file beside it) with the default
    /// options.
    ///
    /// # Errors
    /// I/O errors creating the temporary file.
    pub fn create(path: impl AsRef<Path>) -> Result<DbdfWriter<'static>> {
        Options::new().create(path)
    }
}

impl Options {
    /// Starts a file at `path` with these options (the tile size, block policy and narrowing
    /// of the blocks written, and the dialect), as [`DbdfWriter::create`] does with the
    /// defaults.
    ///
    /// # Errors
    /// As [`DbdfWriter::create`]; [`crate::ErrorKind::NotInDialect`] when the runtime dialect is asked
    /// for with tiling, a block policy or narrowing (the runtime has one layout).
    pub fn create(&self, path: impl AsRef<Path>) -> Result<DbdfWriter<'static>> {
        let options = self;
        options.runtime_writer()?;
        let path = path.as_ref().to_path_buf();
        let (file, pending) = Pending::create(&path)?;
        let writeback = Writeback::start(&file, options.sync);
        let writer = Counted {
            inner: Out::File(BufWriter::with_capacity(1 << 20, file)),
            written: 0,
        };
        Ok(DbdfWriter {
            path,
            pending: Some(pending),
            sink: Some(Sink::new(writer)),
            options: options.clone(),
            current: None,
            objects: 0,
            poisoned: false,
            writeback,
        })
    }
}

impl<'w> DbdfWriter<'w> {
    fn runtime(&self) -> bool {
        self.options.dialect == Some(Dialect::Runtime)
    }

    fn sink(&mut self) -> &mut Sink<Counted<Out<'w>>> {
        self.sink.as_mut().expect("the sink lives until finish")
    }

    /// The offset in the file of the next byte written.
    fn position(&self) -> u64 {
        self.sink.as_ref().map_or(0, |s| {
            let (writer, buffered) = s.writer();
            writer.written + buffered as u64
        })
    }

    /// Runs a step that writes bytes; an error leaves the writer unusable.
    fn writing<T>(&mut self, step: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.poisoned {
            return Err(Error::invalid(
                "an earlier error left this file incomplete: start it again",
            ));
        }
        let result = step(self);
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    /// Starts the next object. The previous object, if any, must be complete.
    ///
    /// # Errors
    /// [`crate::ErrorKind::IncompleteObject`] when the previous object lacks tiles; errors writing the
    /// header ([`crate::ErrorKind::LabelTooLong`], [`crate::ErrorKind::NotInDialect`] in the runtime dialect).
    pub fn begin(&mut self, header: Header) -> Result<()> {
        self.end_object()?;
        self.writing(|w| {
            let offset = w.position();
            let (rows, cols) = header.shape();
            let frame = header.data_type() == DataType::Frame;
            let mut current = Current {
                coverage: Coverage::new(rows, cols, frame),
                header,
                offset,
                next_row: 0,
                spill: None,
                in_passes: false,
            };
            if w.runtime() {
                w.start_runtime(&mut current)?;
            } else {
                let mut bytes = Vec::with_capacity(current.header.encoded_len());
                current.header.encode(&mut bytes)?;
                w.keep(bytes.len() as u64);
                w.sink().bytes(&bytes)?;
                if rows == 0 || cols == 0 {
                    // No cells: the tiling rule's empty blocks, now.
                    for place in places(rows, cols, tile_dims(&w.options)) {
                        let at = w.position();
                        current.coverage.add(at, place, false)?;
                        w.keep(BLOCK_HEAD_MOST);
                        write_empty(w.sink(), place)?;
                    }
                }
            }
            w.current = Some(current);
            w.objects += 1;
            Ok(())
        })
    }

    fn current(&mut self) -> Result<&mut Current> {
        self.current
            .as_mut()
            .ok_or_else(|| Error::invalid("no object begun: call begin with its header first"))
    }

    /// Writes a dense tile whose top-left cell is (`row`, `col`) of the current matrix, as
    /// blocks of the options' tile size and block policy.
    ///
    /// # Errors
    /// [`crate::ErrorKind::TileValueType`] when `T` does not convert exactly to the matrix's value
    /// type; [`crate::ErrorKind::BlockOutsideObject`], [`crate::ErrorKind::OverlappingBlocks`] for tiles outside
    /// the object or over cells already written; [`crate::ErrorKind::TileOrder`] in the runtime dialect
    /// for anything but the next full-width row band; I/O errors.
    pub fn write_dense_tile<T: Element>(
        &mut self,
        row: u64,
        col: u64,
        tile: ArrayView2<'_, T>,
    ) -> Result<()> {
        let owned;
        let data = match tile.as_slice() {
            Some(data) => data,
            None => {
                owned = tile.iter().copied().collect::<Vec<T>>();
                &owned
            }
        };
        let (rows, cols) = tile.dim();
        self.write_matrix(row, col, &MatrixRef::dense_unchecked(rows, cols, data))
    }

    /// Writes a sparse tile (CSR or CSC) whose top-left cell is (`row`, `col`) of the
    /// current matrix.
    ///
    /// # Errors
    /// As [`DbdfWriter::write_dense_tile`].
    pub fn write_csr_tile<T: Element>(
        &mut self,
        row: u64,
        col: u64,
        tile: CsMatView<'_, T>,
    ) -> Result<()> {
        let csr;
        let tile = if tile.is_csr() {
            tile
        } else {
            csr = tile.to_other_storage();
            csr.view()
        };
        let indptr = tile.indptr();
        let row_offsets = indptr.to_proper();
        let matrix = MatrixRef {
            rows: tile.rows(),
            cols: tile.cols(),
            layout: MatrixCells::Csr {
                row_offsets: &row_offsets,
                col_indices: tile.indices(),
                values: tile.data(),
            },
        };
        self.write_matrix(row, col, &matrix)
    }

    /// Writes a tile of either layout whose top-left cell is (`row`, `col`), as
    /// [`DbdfWriter::write_dense_tile`] and [`DbdfWriter::write_csr_tile`] do.
    ///
    /// # Errors
    /// As [`DbdfWriter::write_dense_tile`].
    pub fn write_tile<T: Element>(
        &mut self,
        row: u64,
        col: u64,
        tile: &MatrixRef<'_, T>,
    ) -> Result<()> {
        self.write_matrix(row, col, tile)
    }

    fn write_matrix<T: Element>(
        &mut self,
        row: u64,
        col: u64,
        tile: &MatrixRef<'_, T>,
    ) -> Result<()> {
        let current = self.current()?;
        let header = current.header.clone();
        let Some(value_type) = header.matrix_value_type() else {
            return Err(Error::invalid(
                "the current object is a frame: write its rows with write_frame_rows",
            ));
        };
        check_type(self.objects - 1, value_type, T::VALUE_TYPE)?;
        let (rows, cols) = (tile.rows as u64, tile.cols as u64);
        if self.runtime() {
            self.check_band(row, col, rows, cols)?;
            return self.writing(|w| w.runtime_band(tile, value_type));
        }
        let blocks: Vec<BlockPlace> = places(rows, cols, tile_dims(&self.options)).collect();
        self.place_blocks(row, col, &blocks)?;
        self.writing(|w| {
            for place in blocks {
                let options = w.options.clone();
                w.keep(BLOCK_HEAD_MOST);
                write_block(w.sink(), tile, place, (row, col), &options)?;
            }
            w.check_complete_overlap()
        })
    }

    /// Writes the whole current matrix from `bands` of its rows, read twice at most: in the
    /// spec dialect as one block (what [`Options::to_vec`] writes without a tile size: a
    /// first pass chooses the block type and value type, a second writes), in the runtime
    /// dialect as its row bands (a stream's CSR matrix in up to four passes, one per section:
    /// its non-zero count, unless the bands know it, row offsets, column indices, values).
    /// Memory holds one band.
    ///
    /// # Errors
    /// As [`DbdfWriter::write_dense_tile`]; an error when a dimension exceeds one block's
    /// (`u32::MAX`) or when the source's rows change between the passes.
    pub fn write_untiled<T: Element>(&mut self, bands: &mut dyn RowBands<T>) -> Result<()> {
        let header = self.current()?.header.clone();
        let Some(value_type) = header.matrix_value_type() else {
            return Err(Error::invalid("the current object is not a matrix"));
        };
        check_type(self.objects - 1, value_type, T::VALUE_TYPE)?;
        let (rows, cols) = header.shape();
        if self.runtime() {
            let fresh = self.current()?.next_row == 0;
            if self.pending.is_none() && header.data_type() == DataType::CsrMatrix && fresh {
                return self.writing(|w| w.runtime_csr_in_passes(bands, value_type));
            }
            let mut row = 0;
            return bands.for_each_band(&mut |band| {
                self.write_matrix(row, 0, band)?;
                row += band.rows as u64;
                Ok(true)
            });
        }
        let (Ok(block_rows), Ok(block_cols)) = (u32::try_from(rows), u32::try_from(cols)) else {
            return Err(Error::invalid(format!(
                "a {rows} x {cols} matrix is larger than one block: give a tile size"
            )));
        };
        let place = BlockPlace {
            row: 0,
            col: 0,
            rows: block_rows,
            cols: block_cols,
        };
        self.place_blocks(0, 0, &[place])?;
        self.writing(|w| {
            let options = w.options.clone();
            w.keep(BLOCK_HEAD_MOST);
            write_block_in_bands(w.sink(), place, bands, &options)?;
            w.check_complete_overlap()
        })
    }

    /// Records the blocks a tile will write (before writing any of its bytes), refusing
    /// blocks outside the object and blocks of an object already covered.
    fn place_blocks(&mut self, row: u64, col: u64, blocks: &[BlockPlace]) -> Result<()> {
        let at = self.position();
        let current = self.current()?;
        for place in blocks {
            let place = BlockPlace {
                row: place.row + row,
                col: place.col + col,
                ..*place
            };
            if current.coverage.complete() {
                return Err(ErrorDetails::OverlappingBlocks {
                    offset: at,
                    row: place.row,
                    col: place.col,
                }
                .into());
            }
            current.coverage.add(at, place, true)?;
        }
        Ok(())
    }

    /// Once the tiles' areas add up to the object's, no two may overlap.
    fn check_complete_overlap(&mut self) -> Result<()> {
        let current = self.current()?;
        if current.coverage.complete() {
            current.coverage.check_overlaps()?;
        }
        Ok(())
    }

    /// Writes rows of the current frame, one [`Values`] per column (in the frame's column
    /// order, of equal lengths), starting at row `row`: in the spec dialect each column's rows
    /// become blocks of that column; in the runtime dialect the rows are interleaved.
    ///
    /// # Errors
    /// [`crate::ErrorKind::TileValueType`] for a column whose values do not convert exactly to the
    /// column's type; the placement errors of [`DbdfWriter::write_dense_tile`].
    pub fn write_frame_rows(&mut self, row: u64, columns: &[Values]) -> Result<()> {
        let object = self.objects - 1;
        let Header::Frame {
            columns: schema, ..
        } = &self.current()?.header
        else {
            return Err(Error::invalid(
                "the current object is a matrix: write its tiles with write_dense_tile",
            ));
        };
        let schema = schema.clone();
        let rows = columns.first().map_or(0, Values::len);
        if columns.len() != schema.len() || columns.iter().any(|c| c.len() != rows) {
            return Err(Error::invalid(format!(
                "frame rows need {} columns of equal length, got {}",
                schema.len(),
                columns.len()
            )));
        }
        let mut converted = Vec::with_capacity(columns.len());
        for (values, column) in columns.iter().zip(&schema) {
            check_type(object, column.value_type, values.value_type())?;
            converted.push(values);
        }
        if self.runtime() {
            self.check_band(row, 0, rows as u64, schema.len() as u64)?;
            return self.writing(|w| {
                let typed: Vec<Values> = converted
                    .iter()
                    .zip(&schema)
                    .map(|(v, c)| {
                        (*v).clone()
                            .convert(c.value_type)
                            .map_err(|_| Error::invalid("internal: a checked conversion failed"))
                    })
                    .collect::<Result<_>>()?;
                let refs: Vec<_> = typed.iter().map(Values::as_values_ref).collect();
                runtime::write_frame_rows(w.sink(), &refs)
            });
        }
        for (col, values) in converted.into_iter().enumerate() {
            self.write_frame_column(row, col as u64, values)?;
        }
        Ok(())
    }

    /// Writes rows of one column of the current frame (spec dialect), from row `row`.
    ///
    /// # Errors
    /// As [`DbdfWriter::write_frame_rows`]; [`crate::ErrorKind::TileOrder`] in the runtime dialect,
    /// whose rows interleave the columns.
    pub fn write_frame_column(&mut self, row: u64, col: u64, values: &Values) -> Result<()> {
        let object = self.objects - 1;
        if self.runtime() {
            return Err(ErrorDetails::TileOrder {
                object,
                expected: self.current()?.next_row,
                found: (row, col),
                reason: "the runtime dialect interleaves a frame's columns: use write_frame_rows",
            }
            .into());
        }
        let header = self.current()?.header.clone();
        let Some(value_type) = header
            .value_type_of(col)
            .filter(|_| header.data_type() == DataType::Frame)
        else {
            return Err(Error::invalid(format!(
                "the current object has no frame column {col}"
            )));
        };
        check_type(object, value_type, values.value_type())?;
        let (tile_rows, _) = tile_dims(&self.options);
        let blocks: Vec<BlockPlace> = places(values.len() as u64, 1, (tile_rows, 1)).collect();
        self.place_blocks(row, col, &blocks)?;
        self.writing(|w| {
            with_values!(values, v => {
                let column = MatrixRef::dense_unchecked(v.len(), 1, v);
                for place in blocks {
                    let options = w.options.clone();
                    w.keep(BLOCK_HEAD_MOST);
                    write_block(w.sink(), &column, place, (row, col), &options)?;
                }
            });
            w.check_complete_overlap()
        })
    }

    /// Checks the current object is complete and closes it (it stays open when not).
    fn end_object(&mut self) -> Result<()> {
        let runtime = self.runtime();
        let Some(current) = self.current.as_ref() else {
            return Ok(());
        };
        let object = self.objects - 1;
        let (rows, cols) = current.header.shape();
        let cells = u128::from(rows) * u128::from(cols);
        if runtime {
            if current.next_row < rows && cells > 0 {
                return Err(ErrorDetails::IncompleteObject {
                    object,
                    covered: u128::from(current.next_row) * u128::from(cols),
                    cells,
                }
                .into());
            }
        } else if !current.coverage.complete() {
            current.coverage.check_overlaps()?;
            return Err(ErrorDetails::IncompleteObject {
                object,
                covered: current.coverage.covered(),
                cells,
            }
            .into());
        }
        let mut current = self.current.take().expect("checked above");
        let stream_csr = runtime && self.pending.is_none() && !current.in_passes;
        if stream_csr
            && current.spill.is_none()
            && current.header.data_type() == DataType::CsrMatrix
        {
            // A stream's CSR matrix is written whole here, from spills its first tile makes:
            // one without rows has none to make them.
            current.spill = Some(self.spills()?);
        }
        match current.spill {
            Some(spill) if spill.offsets.is_some() => {
                self.writing(|w| w.write_spilled(spill, &current.header))?;
            }
            Some(spill) => self.writing(|w| w.append_spills(spill, current.offset))?,
            None => {}
        }
        Ok(())
    }

    /// Checks that the last object is complete, flushes, syncs ([`Options::sync`]) and
    /// renames the file into place; in the runtime dialect a file of one matrix or frame also
    /// gets its `.meta` sidecar. Returns the sidecars a stream's readers want beside it
    /// ([`DbdfWriter::to_stream`]), as `(suffix, bytes)` for the caller to put in place with
    /// it: `.meta` in the runtime dialect, else its block index (`.index`, unless its headers
    /// take over 64 MiB); a file's are in place already (none).
    ///
    /// # Errors
    /// [`crate::ErrorKind::IncompleteObject`] or [`crate::ErrorKind::OverlappingBlocks`] for the last object;
    /// I/O errors. The temporary file is removed on any error.
    pub fn finish(mut self) -> Result<Vec<(&'static str, Vec<u8>)>> {
        if self.poisoned {
            return Err(Error::invalid(
                "an earlier error left this file incomplete: start it again",
            ));
        }
        self.end_object()?;
        if self.objects == 0 {
            return Err(Error::invalid(
                "no object was begun: a DAPHNE file holds at least one",
            ));
        }
        let sink = self.sink.take().expect("the sink lives until finish");
        let runtime = self.runtime();
        let Some(pending) = self.pending.take() else {
            let counted = sink.finish()?;
            return DbdfWriter::finish_stream(counted.inner, counted.written, runtime);
        };
        let file = into_file(sink)?;
        drop(self.writeback.take());
        let mut set = super::FileSet::new(self.options.sync);
        set.pending(&self.path, file, pending);
        super::commit_dbdf(set, &self.path, runtime)?;
        Ok(Vec::new())
    }
}

/// Flushes a sink down to its file.
fn into_file(sink: Sink<Counted<Out<'_>>>) -> Result<File> {
    let Out::File(buffered) = sink.finish()?.inner else {
        return Err(Error::invalid("internal: a stream's spills appended"));
    };
    buffered
        .into_inner()
        .map_err(|e| Error::from(ErrorDetails::Io(e.into_error())))
}

impl std::fmt::Debug for DbdfWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbdfWriter")
            .field("path", &self.path)
            .field("objects", &self.objects)
            .field("position", &self.position())
            .finish_non_exhaustive()
    }
}

impl Drop for DbdfWriter<'_> {
    fn drop(&mut self) {
        // Unfinished: the file (and any spills) had no name, or loses its temporary one
        // when `pending` is dropped after the sink closes it.
        drop(self.sink.take());
        drop(self.pending.take());
    }
}

/// A tile's values must convert exactly to the object's (or column's) type.
fn check_type(object: usize, expected: ValueType, found: ValueType) -> Result<()> {
    if found == expected || widens_exactly(found, expected) {
        return Ok(());
    }
    Err(ErrorDetails::TileValueType {
        object,
        expected,
        found,
    }
    .into())
}
