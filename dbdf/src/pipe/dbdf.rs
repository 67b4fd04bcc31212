//! `.dbdf` files on the pipe: a source of windows read from the blocks that overlap them
//! (any rectangle, from any thread: each thread takes a handle from a pool), and a sink
//! that writes through [`DbdfWriter`], tile by tile or one block from bands read twice.

use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{window_tiles, Band, Cells, InputMetadata, MadeSidecars, Pieces, Sink, Spilled};
use super::{Want, Windows};
use serde_daphne::lowlevel::tile_dims;
use serde_daphne::lowlevel::MatrixRef;
use serde_daphne::lowlevel::RowBands;
use serde_daphne::with_value_type;
use serde_daphne::BlockInfo;
use serde_daphne::BlockPlace;
use serde_daphne::DbdfFile;
use serde_daphne::DbdfWriter;
use serde_daphne::Dialect;
use serde_daphne::Element;
use serde_daphne::FileReader;
use serde_daphne::Header;
use serde_daphne::Options;
use serde_daphne::{DataType, Result, ValueType};

/// Bytes of cells up to which an untiled frame is written one block per column.
pub const HELD_FRAME_BYTES: u64 = 64 << 20;

/// Bytes of dense cells up to which a tiled object's blocks are read one at a time as its
/// own tiles; larger blocks are read in windows of what the sink wants.
const OWN_TILE_BYTES: u64 = 64 << 20;

/// Bytes of dense cells up to which a row of tiles is one band of a file read in order
/// ([`DbdfSource::in_file_order`]).
const TILE_ROW_BYTES: u64 = 64 << 20;

/// The objects of a `.dbdf` file, read window by window.
pub struct DbdfSource {
    /// The file's path, for handles of its own; `None` for a file read through a
    /// [`serde_daphne::ReadAt`] source, whose handles share it.
    path: Option<PathBuf>,
    /// The file's index of each object given out.
    picked: Vec<usize>,
    headers: Vec<Header>,
    stored: Vec<u64>,
    /// Each object's tile size, where its blocks tile it on one grid ([`own_tiles`]).
    tiles: Vec<Option<(u32, u32)>>,
    input_len: u64,
    /// Open handles, one per thread reading at once.
    files: Mutex<Vec<DbdfFile<FileReader>>>,
    /// Whether bands are read in file order where they can be ([`DbdfSource::in_file_order`]).
    in_file_order: bool,
    /// Whether each window fetches its own span ([`DbdfSource::fetched`]).
    fetched: bool,
}

impl DbdfSource {
    /// Opens the file at `path` and indexes its objects (headers and blocks, no values).
    ///
    /// # Errors
    /// As [`DbdfFile::open`].
    pub fn open(path: &Path) -> Result<DbdfSource> {
        // Plain reads (the default): a memory map would keep every page read resident.
        let mut source = DbdfSource::from_file(DbdfFile::open(path)?);
        source.path = Some(path.to_owned());
        Ok(source)
    }

    /// A source of `file`, opened already: by path, or from a [`serde_daphne::ReadAt`]
    /// source such as an object in a store ([`serde_daphne::Options::open_at`]), whose other handles
    /// are its clones ([`DbdfFile::try_clone`]).
    pub fn from_file(file: DbdfFile) -> DbdfSource {
        let headers = file.objects().iter().map(|o| o.header.clone()).collect();
        let stored = file
            .objects()
            .iter()
            .map(|o| o.range.end - o.range.start)
            .collect();
        let tiles = file
            .objects()
            .iter()
            .map(|o| own_tiles(&o.header, &o.blocks))
            .collect();
        DbdfSource {
            path: None,
            picked: (0..file.objects().len()).collect(),
            headers,
            stored,
            tiles,
            input_len: file.file_len(),
            files: Mutex::new(vec![file]),
            in_file_order: false,
            fetched: false,
        }
    }

    /// The same source reading a tiled object's bands as whole rows of tiles (up to
    /// [`TILE_ROW_BYTES`]): every block then whole, in file order, one after another, so
    /// that a remote file read through a [`crate::storage::ReadAhead`] is read ahead from
    /// start to end.
    pub(crate) fn in_file_order(mut self) -> DbdfSource {
        self.in_file_order = true;
        self
    }

    /// The same source, of a file whose windows each fetch their own span (an object in a
    /// store): sinks with a choice read its bands in order ([`Source::prefers_bands`]).
    pub(crate) fn fetched(mut self, fetched: bool) -> DbdfSource {
        self.fetched = fetched;
        self
    }

    /// The same source giving out object `index` only.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::InvalidValue`] for an `index` the file does not have.
    pub fn only(mut self, index: usize) -> Result<DbdfSource> {
        if index >= self.headers.len() {
            return Err(serde_daphne::Error::invalid(format!(
                "object {index} does not exist: the file holds {} objects",
                self.headers.len()
            )));
        }
        self.picked = vec![self.picked[index]];
        self.headers = vec![self.headers.swap_remove(index)];
        self.stored = vec![self.stored[index]];
        self.tiles = vec![self.tiles[index]];
        Ok(self)
    }

    fn with_file<T>(&self, f: impl FnOnce(&mut DbdfFile<FileReader>) -> Result<T>) -> Result<T> {
        let taken = self.files.lock().ok().and_then(|mut files| {
            // Another thread's handle shares the first one's index.
            match files.len() {
                0 => None,
                1 => Some(files[0].try_clone()),
                _ => files.pop().map(Ok),
            }
        });
        let mut file = match taken {
            Some(file) => file?,
            None => match &self.path {
                Some(path) => DbdfFile::open(path)?,
                // Every handle is out: one comes back when a thread is done with it.
                None => {
                    return Err(serde_daphne::Error::invalid(
                        "no handle of the file is free",
                    ))
                }
            },
        };
        let result = f(&mut file);
        if let Ok(mut files) = self.files.lock() {
            files.push(file);
        }
        result
    }
}

super::windowed_source!(DbdfSource {
    /// Bands of about [`super::BAND_BYTES`]; read in file order, whole rows of tiles.
    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let header = &self.headers[index];
        let row_bytes = super::band::row_bytes(header, self.stored_bytes(index));
        let tile_rows = self.tiles[index]
            .map(|(tr, _)| u64::from(tr))
            .filter(|&tr| {
                self.in_file_order
                    && tr.is_multiple_of(multiple.max(1))
                    && tr * row_bytes <= TILE_ROW_BYTES
            });
        let step = tile_rows
            .unwrap_or_else(|| super::band_rows(header, row_bytes, multiple, super::BAND_BYTES));
        super::window_bands(self, index, header.shape(), step, each)
    }

    fn stored_bytes(&self, index: usize) -> Option<u64> {
        self.stored.get(index).copied()
    }

    fn own_tiles(&self, index: usize) -> Option<(u32, u32)> {
        self.tiles.get(index).copied().flatten()
    }

    fn prefers_bands(&self) -> bool {
        self.fetched
    }

    /// The object's blocks in file order, each read whole: the file front to back.
    fn for_each_tile(
        &mut self,
        index: usize,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Option<Result<()>> {
        self.own_tiles(index)?;
        let at = self.picked[index];
        let places = self.with_file(|file| {
            Ok(file.objects()[at].blocks.iter().map(|b| b.place).collect::<Vec<_>>())
        });
        let each_block = || -> Result<()> {
            for place in places? {
                let rows = place.row..place.row + u64::from(place.rows);
                let cols = place.col..place.col + u64::from(place.cols);
                if !each(self.window(index, rows, cols)?)? {
                    break;
                }
            }
            Ok(())
        };
        Some(each_block())
    }

    fn metadata(&self) -> InputMetadata {
        InputMetadata {
            tile: self.own_tiles(0),
            ..InputMetadata::default()
        }
    }
});

/// The tile size of a matrix whose blocks tile it on one grid from (0, 0), each block a
/// whole tile (the last row and column of tiles cut at the edges), with more than one
/// block and tiles of at most [`OWN_TILE_BYTES`] dense; `None` for any other object. The
/// file's index has checked that the blocks cover the object without overlapping, so
/// blocks that are each one tile of the grid are each tile once.
fn own_tiles(header: &Header, blocks: &[BlockInfo]) -> Option<(u32, u32)> {
    let value_type = header.matrix_value_type()?;
    let (rows, cols) = header.shape();
    let tr = blocks.iter().map(|b| b.place.rows).max()?;
    let tc = blocks.iter().map(|b| b.place.cols).max()?;
    let (r, c) = (u64::from(tr), u64::from(tc));
    if r == 0 || c == 0 || blocks.len() < 2 {
        return None;
    }
    if (r * c).saturating_mul(value_type.size() as u64) > OWN_TILE_BYTES {
        return None;
    }
    let on_grid = |p: &BlockPlace| {
        p.row.is_multiple_of(r)
            && p.col.is_multiple_of(c)
            && u64::from(p.rows) == r.min(rows.saturating_sub(p.row))
            && u64::from(p.cols) == c.min(cols.saturating_sub(p.col))
    };
    blocks.iter().all(|b| on_grid(&b.place)).then_some((tr, tc))
}

impl Windows for DbdfSource {
    fn window(&self, index: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        let (r0, c0) = (rows.start, cols.start);
        let at = self.picked[index];
        let object = self.with_file(|file| file.read_window_object(at, rows, cols))?;
        let mut band = Band::of_object(r0, object)?;
        band.first_col = c0;
        Ok(band)
    }
}

/// A `.dbdf` file written object by object with [`DbdfWriter`] (atomically, at
/// [`Sink::finish`]), or as one stream (an upload) whose sidecars come from
/// [`Sink::finish_with_sidecars`].
pub struct DbdfSink<'w> {
    writer: DbdfWriter<'w>,
    streamed: bool,
    options: Options,
    /// For DAPHNE's DaphneDSL: `Some(asked)` retypes dense-enough CSR matrices as dense,
    /// unless the CSR data type was asked for (then kept, with a warning).
    daphne_dsl: Option<bool>,
    output: PathBuf,
    warnings: Vec<String>,
}

impl DbdfSink<'static> {
    /// A sink writing to `output` with `options`.
    ///
    /// # Errors
    /// As [`serde_daphne::Options::create`].
    pub fn create(output: &Path, options: &Options) -> Result<DbdfSink<'static>> {
        Ok(DbdfSink {
            writer: options.create(output)?,
            streamed: false,
            options: options.clone(),
            daphne_dsl: None,
            output: output.to_owned(),
            warnings: Vec::new(),
        })
    }
}

impl<'w> DbdfSink<'w> {
    /// A sink writing one stream into `out` with `options` ([`DbdfWriter::to_stream`]).
    pub(crate) fn to_stream(out: &'w mut (dyn Write + Send), options: &Options) -> Result<Self> {
        Ok(DbdfSink {
            writer: DbdfWriter::to_stream(out, options)?,
            streamed: true,
            options: options.clone(),
            daphne_dsl: None,
            output: PathBuf::new(),
            warnings: Vec::new(),
        })
    }

    /// For the runtime dialect: writes a CSR matrix DaphneDSL's `readMatrix` would type as
    /// dense (denser than DAPHNE's sparsity threshold) as a dense matrix, which is what it
    /// will ask the file for, unless `csr_asked` (then it stays CSR, with a warning).
    pub(crate) fn for_daphne_dsl(mut self, csr_asked: bool) -> Self {
        self.daphne_dsl = Some(csr_asked);
        self
    }

    fn runtime(&self) -> bool {
        self.options.dialect == Some(Dialect::Runtime)
    }

    /// For DAPHNE, a CSR matrix DaphneDSL would type as dense (denser than DAPHNE's sparsity
    /// threshold, or without cells) is written dense, which is what `readMatrix` will ask the
    /// file for; when CSR was asked for it stays, with a warning.
    fn header_for_daphne_dsl(
        &mut self,
        header: &Header,
        pieces: &mut Pieces<'_>,
    ) -> Result<Header> {
        let (rows, cols) = header.shape();
        let Some(asked) = self.daphne_dsl else {
            return Ok(header.clone());
        };
        if !self.runtime() || header.data_type() != DataType::CsrMatrix {
            return Ok(header.clone());
        }
        // The count the sidecar records and DaphneDSL types the read by: stored entries.
        let mut nnz = 0;
        pieces.for_each(&mut |band| {
            nnz += match &band.cells {
                Cells::Csr { .. } => band.entries(),
                _ => {
                    let mut n = 0;
                    band.for_each_nonzero(|_, _, _| n += 1);
                    n
                }
            };
            Ok(true)
        })?;
        if daphne_types_as_csr(rows, cols, nnz) {
            return Ok(header.clone());
        }
        let value_type = header.matrix_value_type().unwrap_or(ValueType::F64);
        if !asked {
            return Ok(Header::matrix(
                DataType::DenseMatrix,
                rows,
                cols,
                value_type,
            ));
        }
        let density = match rows * cols {
            0 => "no cells".to_owned(),
            cells => format!("density {:.3}", nnz as f64 / cells as f64),
        };
        let at = match self.output.as_os_str().is_empty() {
            true => String::new(),
            false => format!("{}: ", self.output.display()),
        };
        self.warnings.push(format!(
            "{at}warning: DaphneDSL's readMatrix types this {rows} x {cols} CSR matrix \
             ({density}, not below {DAPHNE_SPARSITY_THRESHOLD}) as dense and will fail on it; \
             DAPHNE's C++ reader reads it as CSR"
        ));
        Ok(header.clone())
    }
}

impl Sink for DbdfSink<'_> {
    fn wants(&self, header: &Header) -> Want {
        let tiled = self.options.tile.is_some() && !self.runtime();
        match header {
            _ if !tiled => Want::Bands(1),
            // CSR bands are read once and cut into their tiles here: a window per tile would
            // walk the band's rows once per tile.
            Header::Frame { .. } | Header::CsrMatrix { .. } => {
                Want::Bands(tile_dims(&self.options).0)
            }
            _ => {
                let (tr, tc) = tile_dims(&self.options);
                Want::Tiles(tr, tc)
            }
        }
    }

    fn passes(&self, header: &Header) -> u32 {
        let untiled = self.options.tile.is_none() && !self.runtime();
        let daphne_csr = self.daphne_dsl.is_some()
            && self.runtime()
            && header.data_type() == DataType::CsrMatrix;
        // A stream's runtime CSR matrix: a pass per section, and one to count.
        let csr_in_passes =
            self.streamed && self.runtime() && header.data_type() == DataType::CsrMatrix;
        1 + u32::from(untiled && header.data_type().is_matrix())
            + u32::from(daphne_csr)
            + 3 * u32::from(csr_in_passes)
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let header = self.header_for_daphne_dsl(header, pieces)?;
        self.writer.begin(header.clone())?;
        let (rows, cols) = header.shape();
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let tiled = self.options.tile.is_some() || self.runtime();
        let tiles = self.options.tile.is_some() && !self.runtime();
        let writer = &mut self.writer;
        // A frame larger than this is written as blocks of the source's bands (a block per
        // column each) rather than held whole for one block per column.
        let held = |header: &Header| {
            let (rows, _) = header.shape();
            rows.saturating_mul(super::row_bytes(header, None)) <= HELD_FRAME_BYTES
        };
        match &header {
            Header::Frame { .. } if tiled || !held(&header) => pieces.for_each(&mut |band| {
                let Cells::Frame(columns) = band.cells else {
                    return Err(serde_daphne::Error::invalid("a matrix band for a frame"));
                };
                writer.write_frame_rows(band.first_row, &columns)?;
                Ok(true)
            }),
            Header::Frame { .. } => {
                // One block per column: the frame is held whole (it is small).
                let columns = pieces.collect()?.into_columns()?;
                for (c, values) in columns.iter().enumerate() {
                    writer.write_frame_column(0, c as u64, values)?;
                }
                Ok(())
            }
            _ => {
                let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
                let bands_dense = pieces.source_data_type() != DataType::CsrMatrix;
                let spill =
                    tiles && bands_dense && pieces.windows().is_none() && !pieces.takes_own_tiles();
                if spill {
                    // Dense rows in order: spilled, then read tile by tile (a band of tile
                    // rows would hold 8 MB per tile of its width).
                    let spilled = Spilled::new(pieces, cols, vt)?;
                    let tile = tile_dims(&self.options);
                    with_value_type!(vt, T => window_tiles(&spilled, 0, (rows, cols), tile, &mut |band| {
                        writer.write_tile(band.first_row, band.first_col, &band.matrix::<T>()?)?;
                        Ok(true)
                    }))
                } else if tiles {
                    let tile = tile_dims(&self.options);
                    // Tiles may come in any order: a source's own tiles are taken as they come.
                    with_value_type!(vt, T => pieces.for_each_in_any_order(&mut |band| {
                        match &band.cells {
                            Cells::Csr { .. } => write_csr_band::<T>(writer, &band, tile)?,
                            _ => writer.write_tile(band.first_row, band.first_col, &band.matrix::<T>()?)?,
                        }
                        Ok(true)
                    }))
                } else {
                    // A CSR matrix gets the smallest block, as from sparse rows, even where
                    // its rows come dense (a table's columns, `--data-type csr`).
                    let mut bands = PieceBands {
                        pieces,
                        dense: bands_dense && header.data_type() != DataType::CsrMatrix,
                    };
                    with_value_type!(vt, T => writer.write_untiled::<T>(&mut bands))
                }
            }
        }
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        self.finish_with_sidecars().map(|(warnings, _)| warnings)
    }

    fn finish_with_sidecars(self: Box<Self>) -> Result<(Vec<String>, MadeSidecars)> {
        let made = self.writer.finish()?;
        let sidecars = match self.streamed {
            false => Vec::new(),
            true => streamed_sidecars(made),
        };
        Ok((self.warnings, sidecars))
    }
}

/// The sidecars of a `.dbdf` written as one stream, from those its writer made: its `.meta`
/// (DAPHNE's runtime dialect) or its `.index`, and `None` for the other (an old one goes).
pub(crate) fn streamed_sidecars(mut made: Vec<(&'static str, Vec<u8>)>) -> MadeSidecars {
    [".meta", ".index"]
        .into_iter()
        .map(|suffix| {
            let at = made.iter().position(|(s, _)| *s == suffix);
            (suffix, at.map(|at| made.swap_remove(at).1))
        })
        .collect()
}

/// Writes a band of CSR rows as its tiles of `tr x tc`, a row of tiles after another: each
/// row of tiles' entries sorted into their tiles by a counting sort (in row order within
/// each), then each tile's row offsets counted in one buffer reused for every tile.
fn write_csr_band<T: Element>(
    writer: &mut DbdfWriter<'_>,
    band: &Band,
    (tr, tc): (u64, u64),
) -> Result<()> {
    let Cells::Csr {
        row_offsets,
        col_indices,
        values,
    } = &band.cells
    else {
        return Err(serde_daphne::Error::invalid("a CSR band was expected"));
    };
    let values = T::slice_of(values)
        .ok_or_else(|| serde_daphne::Error::invalid("a band of another value type"))?;
    let (tr, tc) = (tr as usize, tc as usize);
    let width = band.cols as usize;
    let tiles = width.div_ceil(tc);
    let mut tile_starts = vec![0usize; tiles + 1];
    let (mut rows_in_tile, mut cols_in_tile, mut tile_values) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut offsets: Vec<usize> = Vec::with_capacity(tr + 1);
    let mut next = Vec::with_capacity(tiles + 1);
    for r0 in (0..band.rows as usize).step_by(tr) {
        let rows = tr.min(band.rows as usize - r0);
        let entries = row_offsets[r0]..row_offsets[r0 + rows];
        tile_starts.fill(0);
        for &c in &col_indices[entries.clone()] {
            tile_starts[c / tc + 1] += 1;
        }
        for j in 0..tiles {
            tile_starts[j + 1] += tile_starts[j];
        }
        let n = entries.len();
        rows_in_tile.resize(n, 0usize);
        cols_in_tile.resize(n, 0usize);
        tile_values.resize(n, T::default());
        next.clone_from(&tile_starts);
        for r in 0..rows {
            let row = row_offsets[r0 + r]..row_offsets[r0 + r + 1];
            for (&c, &v) in col_indices[row.clone()].iter().zip(&values[row]) {
                let at = &mut next[c / tc];
                rows_in_tile[*at] = r;
                cols_in_tile[*at] = c % tc;
                tile_values[*at] = v;
                *at += 1;
            }
        }
        for j in 0..tiles {
            let held = tile_starts[j]..tile_starts[j + 1];
            offsets.clear();
            offsets.resize(rows + 1, 0);
            for &r in &rows_in_tile[held.clone()] {
                offsets[r + 1] += 1;
            }
            for r in 0..rows {
                offsets[r + 1] += offsets[r];
            }
            let tile = MatrixRef::csr(
                rows,
                tc.min(width - j * tc),
                &offsets,
                &cols_in_tile[held.clone()],
                &tile_values[held],
            )?;
            let (row, col) = (band.first_row + r0 as u64, band.first_col + (j * tc) as u64);
            writer.write_tile(row, col, &tile)?;
        }
    }
    Ok(())
}

/// An object's pieces as the bands of rows [`DbdfWriter::write_untiled`] reads.
struct PieceBands<'a, 'p> {
    pieces: &'a mut Pieces<'p>,
    /// Whether the bands are a dense matrix's (every cell), which `Auto` keeps dense.
    dense: bool,
}

impl<T: Element> RowBands<T> for PieceBands<'_, '_> {
    fn dense(&self) -> bool {
        self.dense
    }

    fn nonzero(&self) -> Option<bool> {
        self.pieces.nonzero()
    }

    /// A CSR source may count its non-zeros without building bands: then the block is
    /// written in one pass over them.
    fn count_nonzero(&mut self) -> Result<Option<u64>> {
        match self.dense {
            true => Ok(None),
            false => self.pieces.count_nonzero(),
        }
    }

    fn for_each_band(
        &mut self,
        each: &mut dyn FnMut(&MatrixRef<'_, T>) -> Result<bool>,
    ) -> Result<()> {
        self.pieces.for_each(&mut |band| each(&band.matrix::<T>()?))
    }
}

/// DAPHNE's default sparsity threshold (`DaphneUserConfig::sparsity_threshold`).
const DAPHNE_SPARSITY_THRESHOLD: f64 = 0.25;

/// Whether DaphneDSL's `readMatrix` types a file whose sidecar gives this shape and
/// `numNonZeros` as a CSRMatrix (with `daphne --select-matrix-repr`; without that flag it is
/// always a DenseMatrix): when `nnz / (rows x cols)` is below [`DAPHNE_SPARSITY_THRESHOLD`]
/// (`DaphneInferSparsityOpInterface.cpp`, `SelectMatrixRepresentationsPass.cpp`). A matrix
/// without cells never is (0 / 0 is not below it).
fn daphne_types_as_csr(rows: u64, cols: u64, nnz: u64) -> bool {
    (nnz as f64 / rows as f64 / cols as f64) < DAPHNE_SPARSITY_THRESHOLD
}
