//! Writing matrices and frames with the writer's choices: tiling, block policy, narrowing.
//!
//! The data is borrowed (dense row-major slices or CSR arrays) and streamed to the sink:
//! nothing is copied except through the sink's small buffer, and a contiguous dense block of
//! an un-narrowed type goes out in one `write_all`.

use std::io::Write;

use crate::error::{Error, Result};
use crate::options::{BlockPolicy, Options};
use crate::wire::block::{
    block_len, sparse_rows_len, start_dense, start_sparse, start_sparse_row, start_ultra_sparse,
    write_empty, write_sparse_entry, write_ultra_sparse_entry, POSITION_LEN,
};
use crate::wire::element::{with_values_ref, ValuesRef};
use crate::wire::runtime;
use crate::wire::sink::Sink;
use crate::wire::values::count_nonzero;
use crate::wire::{BlockPlace, BlockType, DataType, Element, Header, ValueType};

pub(crate) use super::matrix_ref::MatrixCells;
pub use super::matrix_ref::MatrixRef;
use super::narrow::Narrower;

/// Tile size in force: the option, capped at the largest block dimension.
pub fn tile_dims(options: &Options) -> (u64, u64) {
    let (r, c) = options.tile.unwrap_or((u32::MAX, u32::MAX));
    (u64::from(r.max(1)), u64::from(c.max(1)))
}

/// The blocks of a `rows x cols` object, row-major, following the tiling rule. An object
/// without cells ignores the tile size: it is one block of its own shape, split only where a
/// dimension exceeds `u32::MAX` (tiles would only multiply empty blocks).
pub(crate) fn places(
    rows: u64,
    cols: u64,
    (tr, tc): (u64, u64),
) -> Box<dyn Iterator<Item = BlockPlace>> {
    let max = u64::from(u32::MAX);
    let (tr, tc) = if rows == 0 || cols == 0 {
        (max, max)
    } else {
        (tr, tc)
    };
    let place = |row, col, r: u64, c: u64| BlockPlace {
        row,
        col,
        rows: r as u32,
        cols: c as u32,
    };
    if rows == 0 && cols == 0 {
        Box::new(std::iter::once(place(0, 0, 0, 0)))
    } else if rows == 0 {
        Box::new(steps(cols, tc).map(move |(c0, n)| place(0, c0, 0, n)))
    } else if cols == 0 {
        Box::new(steps(rows, tr).map(move |(r0, n)| place(r0, 0, n, 0)))
    } else {
        Box::new(
            steps(rows, tr).flat_map(move |(r0, nr)| {
                steps(cols, tc).map(move |(c0, nc)| place(r0, c0, nr, nc))
            }),
        )
    }
}

/// The bytes of a `rows x cols` matrix's blocks (positions included) when every tile of
/// `tile` is stored dense in `vt`: what no block type the writer picks exceeds.
fn dense_len(rows: u64, cols: u64, tile: (u64, u64), vt: ValueType) -> u64 {
    places(rows, cols, tile)
        .map(|p| {
            let block = block_len(BlockType::Dense, p.rows, p.cols, 0, vt).unwrap_or(0);
            POSITION_LEN + u64::try_from(block).unwrap_or(u64::MAX)
        })
        .fold(0, u64::saturating_add)
}

/// `(start, length)` of consecutive pieces of at most `step` covering `0..len`.
fn steps(len: u64, step: u64) -> impl Iterator<Item = (u64, u64)> + Clone {
    (0..len.div_ceil(step)).map(move |i| (i * step, step.min(len - i * step)))
}

/// Writes a matrix object: header, then blocks chosen by `options`.
pub(crate) fn write_matrix<T: Element, W: Write>(
    sink: &mut Sink<W>,
    data_type: DataType,
    matrix: &MatrixRef<'_, T>,
    options: &Options,
) -> Result<()> {
    let (rows, cols) = (matrix.rows as u64, matrix.cols as u64);
    if options.runtime_writer()? {
        return write_runtime_matrix(sink, data_type, matrix);
    }
    write_header(sink, &Header::matrix(data_type, rows, cols, T::VALUE_TYPE))?;
    if sink.is_direct() && matches!(matrix.layout, MatrixCells::Dense(_)) {
        // Room for every block stored dense (no block type the writer picks is larger):
        // one allocation, faulted in on every core, instead of growing tile by tile.
        sink.reserve(dense_len(rows, cols, tile_dims(options), T::VALUE_TYPE))?;
    }
    for place in places(rows, cols, tile_dims(options)) {
        write_block(sink, matrix, place, (0, 0), options)?;
    }
    Ok(())
}

/// Writes a frame object: each column as its own blocks (`rows x 1`, or tiles of it).
pub(crate) fn write_frame<W: Write>(
    sink: &mut Sink<W>,
    rows: usize,
    columns: &[(&str, ValuesRef<'_>)],
    options: &Options,
) -> Result<()> {
    if options.runtime_writer()? {
        return runtime::write_frame(sink, rows as u64, columns, options.guard_daphne_labels);
    }
    let types = columns.iter().map(|&(label, v)| (label, v.value_type()));
    write_header(sink, &Header::frame_of(rows as u64, types))?;
    if rows == 0 || columns.is_empty() {
        // No values and no one value type: the blocks of an object without cells are empty.
        for place in places(rows as u64, columns.len() as u64, tile_dims(options)) {
            write_empty(sink, place)?;
        }
        return Ok(());
    }
    let (tile_rows, _) = tile_dims(options);
    if sink.is_direct() {
        // Room for every column stored dense, at once (see `write_matrix`).
        let bytes = columns
            .iter()
            .map(|(_, v)| dense_len(rows as u64, 1, (tile_rows, 1), v.value_type()));
        sink.reserve(bytes.sum())?;
    }
    for (col, &(label, values)) in columns.iter().enumerate() {
        if values.len() != rows {
            return Err(Error::invalid(format!(
                "frame column \"{label}\" has {} values but the frame has {rows} rows",
                values.len()
            )));
        }
        with_values_ref!(values, v => {
            let column = MatrixRef::dense_unchecked(rows, 1, v);
            for place in places(rows as u64, 1, (tile_rows, 1)) {
                write_block(sink, &column, place, (0, col as u64), options)?;
            }
        });
    }
    Ok(())
}

/// Writes a matrix in the runtime dialect's one layout for its data type.
fn write_runtime_matrix<T: Element, W: Write>(
    sink: &mut Sink<W>,
    data_type: DataType,
    matrix: &MatrixRef<'_, T>,
) -> Result<()> {
    let (rows, cols) = (matrix.rows as u64, matrix.cols as u64);
    match (data_type, &matrix.layout) {
        (
            DataType::CsrMatrix,
            MatrixCells::Csr {
                row_offsets,
                col_indices,
                values,
            },
        ) => runtime::write_csr(sink, rows, cols, row_offsets, col_indices, values),
        (DataType::CsrMatrix, MatrixCells::Dense(data)) => {
            let (mut row_offsets, mut col_indices, mut values) = (vec![0], Vec::new(), Vec::new());
            for row in data.chunks(matrix.cols.max(1)).take(matrix.rows) {
                for (c, &x) in row.iter().enumerate().filter(|(_, x)| !x.is_zero()) {
                    col_indices.push(c);
                    values.push(x);
                }
                row_offsets.push(values.len());
            }
            runtime::write_csr(sink, rows, cols, &row_offsets, &col_indices, &values)
        }
        (_, MatrixCells::Dense(data)) => runtime::write_dense(sink, rows, cols, data),
        (_, MatrixCells::Csr { .. }) => {
            let mut dense = vec![T::zeroed(); matrix.rows * matrix.cols];
            for r in 0..matrix.rows {
                matrix.row(r, 0, matrix.cols).for_each_nonzero(|c, x| {
                    dense[r * matrix.cols + c as usize] = x;
                    Ok(())
                })?;
            }
            runtime::write_dense(sink, rows, cols, &dense)
        }
    }
}

pub(crate) fn write_header<W: Write>(sink: &mut Sink<W>, header: &Header) -> Result<()> {
    let mut bytes = Vec::with_capacity(header.encoded_len());
    header.encode(&mut bytes)?;
    sink.bytes(&bytes)
}

/// What the analysis of a block found.
pub(crate) struct Analysis {
    /// Non-zeros, exact unless counting stopped at `dense_wins_at`.
    pub(crate) nnz: u64,
    pub(crate) value_type: ValueType,
    /// Whether the source holds every cell (so `Auto` keeps the block dense).
    pub(crate) dense_source: bool,
    /// Whether every value the source stores for the block was counted as non-zero (so a
    /// sparse source's rows can be written as stored).
    pub(crate) no_stored_zeros: bool,
}

/// Counts a block's non-zeros (and, when narrowing, the values' range) over one or more
/// windows of its rows, stopping as soon as the choice of block type is made.
struct Analyser {
    stop_at: u64,
    nnz: u64,
    narrower: Option<Narrower>,
    source: ValueType,
    dense_source: bool,
    /// Stored values seen in runs, and whether every window was one run.
    stored: u64,
    runs_only: bool,
}

impl Analyser {
    fn new(place: BlockPlace, source: ValueType, dense_source: bool, options: &Options) -> Self {
        // Once this many non-zeros are seen, the choice is made and counting can stop. At
        // least 1 where an all-zero block becomes empty: that needs a count of zero over the
        // whole block.
        let stop_at = match options.block_policy {
            _ if options.narrow => u64::MAX,
            BlockPolicy::Dense => 0,
            BlockPolicy::Auto if dense_source => 1,
            BlockPolicy::Auto | BlockPolicy::Smallest => dense_wins_at(place, source).max(1),
            BlockPolicy::Sparse | BlockPolicy::UltraSparse => u64::MAX,
        };
        Analyser {
            stop_at,
            nnz: 0,
            narrower: options.narrow.then(|| Narrower::new(source)),
            source,
            dense_source,
            stored: 0,
            runs_only: true,
        }
    }

    fn done(&self) -> bool {
        self.nnz >= self.stop_at
    }

    /// Whether a count of non-zeros is all the choice still needs (no narrowing, not made).
    fn wants_count(&self) -> bool {
        self.narrower.is_none() && !self.done()
    }

    /// Takes the source's count of non-zeros.
    fn know_nnz(&mut self, nnz: u64) {
        self.nnz = nnz;
        self.stop_at = 0;
    }

    /// Takes the source's word for whether a cell is non-zero, where that is all the choice
    /// needs (no narrowing, and one non-zero decides).
    fn know_nonzero(&mut self, nonzero: Option<bool>) {
        if let (1, None, Some(nonzero)) = (self.stop_at, &self.narrower, nonzero) {
            self.nnz = u64::from(nonzero);
        }
    }

    /// Counts the cells of `matrix` in `window`, the block's next rows.
    fn observe<T: Element>(&mut self, matrix: &MatrixRef<'_, T>, window: BlockPlace) {
        if self.done() {
            return;
        }
        if let (None, Some(run)) = (&self.narrower, matrix.stored_run(window)) {
            self.stored += run.len() as u64;
            // Counted in cache-sized pieces so that a dense block stops early.
            for piece in run.chunks(1 << 14) {
                self.nnz += count_nonzero(piece) as u64;
                if self.done() {
                    break;
                }
            }
            return;
        }
        self.runs_only = false;
        let (r0, c0) = (window.row as usize, window.col as usize);
        for r in r0..r0 + window.rows as usize {
            let row = matrix.row(r, c0, window.cols as usize);
            match &mut self.narrower {
                Some(n) => {
                    let _ = row.for_each_nonzero(|_, x| {
                        self.nnz += 1;
                        n.observe(x);
                        Ok(())
                    });
                }
                None => self.nnz += row.nnz() as u64,
            }
            if self.done() {
                break;
            }
        }
    }

    fn finish(self) -> Analysis {
        Analysis {
            nnz: self.nnz,
            value_type: self.narrower.map_or(self.source, |n| n.choice()),
            dense_source: self.dense_source,
            // Equal only when counting ran to the end of every run and met no zero.
            no_stored_zeros: self.runs_only && self.stored > 0 && self.nnz == self.stored,
        }
    }
}

/// The smallest non-zero count at which a dense block is no larger than both sparse forms.
fn dense_wins_at(place: BlockPlace, vt: ValueType) -> u64 {
    let dense = block_len(BlockType::Dense, place.rows, place.cols, 0, vt).unwrap_or(u128::MAX);
    let size = vt.size() as u128;
    let csr_fixed = 18 + 4 * u128::from(place.rows);
    let csr = dense.saturating_sub(csr_fixed).div_ceil(4 + size);
    let coo_index = if place.cols == 1 { 4 } else { 8 };
    let coo = dense.saturating_sub(14).div_ceil(coo_index + size);
    u64::try_from(csr.max(coo)).unwrap_or(u64::MAX)
}

pub(crate) fn choose_block_type(
    policy: BlockPolicy,
    place: BlockPlace,
    analysis: &Analysis,
) -> Result<BlockType> {
    let vt = analysis.value_type;
    if place.rows == 0 || place.cols == 0 {
        // No cells, no values: always empty, which also keeps such blocks unambiguous (the
        // runtime dialect writes them as dense blocks).
        return Ok(BlockType::Empty);
    }
    match policy {
        BlockPolicy::Auto if analysis.dense_source => Ok(if analysis.nnz == 0 {
            BlockType::Empty
        } else {
            BlockType::Dense
        }),
        BlockPolicy::Auto | BlockPolicy::Smallest => Ok([
            BlockType::Empty,
            BlockType::Dense,
            BlockType::Sparse,
            BlockType::UltraSparse,
        ]
        .into_iter()
        .filter_map(|bt| block_len(bt, place.rows, place.cols, analysis.nnz, vt).map(|l| (l, bt)))
        .min_by_key(|&(len, bt)| (len, bt))
        .map_or(BlockType::Dense, |(_, bt)| bt)),
        BlockPolicy::Dense => Ok(BlockType::Dense),
        BlockPolicy::Sparse => Ok(BlockType::Sparse),
        BlockPolicy::UltraSparse if analysis.nnz > u64::from(u32::MAX) => {
            Err(Error::invalid(format!(
                "a block with {} non-zeros cannot be ultra-sparse (at most {}); tile the matrix",
                analysis.nnz,
                u32::MAX
            )))
        }
        BlockPolicy::UltraSparse => Ok(BlockType::UltraSparse),
    }
}

/// A block's type and stored value type, chosen, and its header written.
struct Started {
    block_type: BlockType,
    analysis: Analysis,
    place: BlockPlace,
}

impl Started {
    /// Chooses the block type for `analysis` and writes the block's header at `place`.
    fn start<W: Write>(
        sink: &mut Sink<W>,
        place: BlockPlace,
        analysis: Analysis,
        options: &Options,
    ) -> Result<Started> {
        let block_type = choose_block_type(options.block_policy, place, &analysis)?;
        let vt = analysis.value_type;
        match block_type {
            BlockType::Empty => write_empty(sink, place)?,
            BlockType::Dense => start_dense(sink, place, vt)?,
            BlockType::Sparse => start_sparse(sink, place, vt, analysis.nnz)?,
            BlockType::UltraSparse => start_ultra_sparse(sink, place, vt, analysis.nnz as u32)?,
        }
        Ok(Started {
            block_type,
            analysis,
            place,
        })
    }

    /// Writes the block's rows that `window` of `matrix` holds; `first` is the block row
    /// where the window starts, `run_nonzero` the non-zeros among the window's stored values
    /// when the caller has counted them.
    fn rows<T: Element, W: Write>(
        &self,
        sink: &mut Sink<W>,
        matrix: &MatrixRef<'_, T>,
        window: BlockPlace,
        first: u32,
        run_nonzero: Option<usize>,
    ) -> Result<()> {
        let vt = self.analysis.value_type;
        let (r0, c0) = (window.row as usize, window.col as usize);
        let (nr, nc) = (window.rows as usize, window.cols as usize);
        let rows = (r0..r0 + nr).map(|r| matrix.row(r, c0, nc));
        match self.block_type {
            BlockType::Empty => Ok(()),
            BlockType::Dense => {
                if let Some(run) = matrix.contiguous(window) {
                    return sink.values_as(run, vt);
                }
                if let Some(rows) = matrix.dense_rows(window).filter(|_| vt == T::VALUE_TYPE) {
                    return sink.rows(rows, nr * nc);
                }
                rows.into_iter()
                    .try_for_each(|row| row.write_dense(sink, nc, vt))
            }
            BlockType::Sparse => {
                // No stored zeros to leave out: a sparse source's rows go out as they are
                // stored, in bulk. The analysis knows it of the whole matrix; a band of its
                // rows (written one after another) has its values counted.
                let whole = window.rows == self.place.rows;
                let run = matrix.stored_run(window);
                let no_stored_zeros = match run {
                    Some(_) if whole => self.analysis.no_stored_zeros,
                    Some(run) => run_nonzero.unwrap_or_else(|| count_nonzero(run)) == run.len(),
                    None => false,
                };
                let stored = matrix.csr_rows(window).filter(|_| no_stored_zeros);
                if let Some((stored, run)) = stored.zip(run) {
                    let len = sparse_rows_len(window.rows, run.len() as u64, vt) as usize;
                    return sink.sparse_rows(stored, len, c0, vt);
                }
                for row in rows {
                    start_sparse_row(sink, row.nnz() as u32)?;
                    row.for_each_nonzero(|c, x| write_sparse_entry(sink, c, x, vt))?;
                }
                Ok(())
            }
            BlockType::UltraSparse => {
                for (r, row) in rows.enumerate() {
                    let r = first + r as u32;
                    row.for_each_nonzero(|c, x| {
                        write_ultra_sparse_entry(sink, self.place, (r, c), x, vt)
                    })?;
                }
                Ok(())
            }
        }
    }
}

/// Writes one block of `matrix` (window `place`), placed `shift` (rows, columns) further
/// into the object (where the matrix is a tile of it).
pub(crate) fn write_block<T: Element, W: Write>(
    sink: &mut Sink<W>,
    matrix: &MatrixRef<'_, T>,
    window: BlockPlace,
    shift: (u64, u64),
    options: &Options,
) -> Result<()> {
    let place = BlockPlace {
        row: window.row + shift.0,
        col: window.col + shift.1,
        ..window
    };
    let started = Started::start(sink, place, analyse(matrix, window, options), options)?;
    started.rows(sink, matrix, window, 0, None)
}

/// The analysis of the block that `window` of `matrix` is, all its rows at hand.
fn analyse<T: Element>(
    matrix: &MatrixRef<'_, T>,
    window: BlockPlace,
    options: &Options,
) -> Analysis {
    let dense_source = matches!(matrix.layout, MatrixCells::Dense(_));
    let mut analyser = Analyser::new(window, T::VALUE_TYPE, dense_source, options);
    analyser.observe(matrix, window);
    analyser.finish()
}

/// A tile of `matrix` (window `window`) for writers that place the tiles' values themselves:
/// the bytes up to the values (position and block header) and `true` when the block is dense
/// in `T`'s own type, so that its values are the window's rows as they are; otherwise the
/// whole block and `false`.
pub(crate) fn encode_tile<T: Element>(
    matrix: &MatrixRef<'_, T>,
    window: BlockPlace,
    options: &Options,
) -> Result<(Vec<u8>, bool)> {
    let mut scratch = Sink::direct(std::io::sink(), Vec::new());
    let started = Started::start(
        &mut scratch,
        window,
        analyse(matrix, window, options),
        options,
    )?;
    let rows_follow = started.block_type == BlockType::Dense
        && started.analysis.value_type == T::VALUE_TYPE
        && cfg!(target_endian = "little");
    if !rows_follow {
        started.rows(&mut scratch, matrix, window, 0, None)?;
    }
    Ok((scratch.into_output(), rows_follow))
}

/// A matrix read in bands of whole rows, from the first, as often as asked: the source of a
/// block too large to hold.
pub trait RowBands<T> {
    /// Whether the bands hold every cell (a dense source), as [`MatrixRef::dense`] does.
    fn dense(&self) -> bool;

    /// Whether any cell is non-zero, where the source knows without a pass.
    fn nonzero(&self) -> Option<bool> {
        None
    }

    /// How many cells are non-zero, where the source counts them more cheaply than a pass
    /// over the bands (asked only when the choice needs it; the rows written are counted
    /// again and must agree).
    ///
    /// # Errors
    /// The source's.
    fn count_nonzero(&mut self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Calls `each` with each band in order, until it returns `false`.
    ///
    /// # Errors
    /// The source's errors and `each`'s.
    fn for_each_band(
        &mut self,
        each: &mut dyn FnMut(&MatrixRef<'_, T>) -> Result<bool>,
    ) -> Result<()>;
}

/// Writes `place` as one block whose rows come from `bands`, with the bytes [`write_block`]
/// gives the whole matrix: a first pass over the bands chooses the block type and value type
/// (it stops as soon as the choice is made: at the first non-zero of a dense source by
/// default), a second writes the rows.
pub(crate) fn write_block_in_bands<T: Element, W: Write>(
    sink: &mut Sink<W>,
    place: BlockPlace,
    bands: &mut dyn RowBands<T>,
    options: &Options,
) -> Result<()> {
    let mut analyser = Analyser::new(place, T::VALUE_TYPE, bands.dense(), options);
    analyser.know_nonzero(bands.nonzero());
    let count = match analyser.wants_count() {
        true => bands.count_nonzero()?,
        false => None,
    };
    let counted = count.is_some();
    if let Some(nnz) = count {
        analyser.know_nnz(nnz);
    }
    if !analyser.done() {
        bands.for_each_band(&mut |band| {
            analyser.observe(band, whole(band));
            Ok(!analyser.done())
        })?;
    }
    let analysis = analyser.finish();
    let declared = analysis.nnz;
    let started = Started::start(sink, place, analysis, options)?;
    if started.block_type == BlockType::Empty && !counted {
        return Ok(());
    }
    let changed = || Error::invalid("the source's rows changed while it was written");
    let (mut first, mut nnz) = (0u64, 0u64);
    bands.for_each_band(&mut |band| {
        let end = first + band.rows as u64;
        if band.cols as u64 != u64::from(place.cols) || end > u64::from(place.rows) {
            return Err(changed());
        }
        // The source's count is checked against the rows it gives (and a stored run's count
        // also tells the rows' encoder whether it holds zeros).
        let run_nonzero = band
            .stored_run(whole(band))
            .filter(|_| counted)
            .map(count_nonzero);
        if counted {
            nnz += match run_nonzero {
                Some(n) => n as u64,
                None => (0..band.rows)
                    .map(|r| band.row(r, 0, band.cols).nnz() as u64)
                    .sum(),
            };
        }
        if started.block_type != BlockType::Empty {
            started.rows(sink, band, whole(band), first as u32, run_nonzero)?;
        }
        first = end;
        Ok(true)
    })?;
    match first == u64::from(place.rows) && (!counted || nnz == declared) {
        true => Ok(()),
        false => Err(changed()),
    }
}

/// The window of all of `matrix`.
fn whole<T>(matrix: &MatrixRef<'_, T>) -> BlockPlace {
    BlockPlace {
        row: 0,
        col: 0,
        rows: matrix.rows as u32,
        cols: matrix.cols as u32,
    }
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
