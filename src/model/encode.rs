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
    write_empty, write_sparse_entry, write_ultra_sparse_entry,
};
use crate::wire::element::narrow_probe;
use crate::wire::runtime;
use crate::wire::sink::Sink;
use crate::wire::values::{count_nonzero, with_values};
use crate::wire::{BlockPlace, BlockType, DataType, Element, Header, ValueType, Values};

/// A borrowed matrix to write.
pub(crate) struct MatrixRef<'a, T> {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) layout: Layout<'a, T>,
}

/// How a borrowed matrix holds its values.
pub(crate) enum Layout<'a, T> {
    /// `rows * cols` values, row-major.
    Dense(&'a [T]),
    /// CSR arrays with a proper `row_offsets` (starting at 0), columns increasing in a row.
    Csr {
        row_offsets: &'a [usize],
        col_indices: &'a [usize],
        values: &'a [T],
    },
}

/// One row of a window onto a matrix.
enum Row<'a, T> {
    Dense(&'a [T]),
    /// Entries of the row inside the window; `first` is the window's first column.
    Sparse {
        cols: &'a [usize],
        values: &'a [T],
        first: usize,
    },
}

impl<T: Element> Row<'_, T> {
    fn nnz(&self) -> usize {
        match self {
            Row::Dense(v) => count_nonzero(v),
            Row::Sparse { values, .. } => count_nonzero(values),
        }
    }

    /// Calls `f(column within the window, value)` for each non-zero, in column order.
    fn for_each_nonzero(&self, mut f: impl FnMut(u32, T) -> Result<()>) -> Result<()> {
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

    fn write_dense<W: Write>(&self, sink: &mut Sink<W>, width: usize, vt: ValueType) -> Result<()> {
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
    pub(crate) fn dense(rows: usize, cols: usize, data: &'a [T]) -> Self {
        MatrixRef {
            rows,
            cols,
            layout: Layout::Dense(data),
        }
    }

    /// The window's values as one contiguous row-major run, when the matrix is dense and the
    /// window spans whole rows (or is one row).
    fn contiguous(&self, window: BlockPlace) -> Option<&'a [T]> {
        let Layout::Dense(data) = self.layout else {
            return None;
        };
        let (r0, c0) = (window.row as usize, window.col as usize);
        let (nr, nc) = (window.rows as usize, window.cols as usize);
        (nc == self.cols || nr == 1).then(|| {
            let start = r0 * self.cols + c0;
            &data[start..start + nr * nc]
        })
    }

    /// The `(columns, values)` of each row of a CSR matrix's window that spans whole rows.
    fn csr_rows(
        &self,
        window: BlockPlace,
    ) -> Option<impl Iterator<Item = (&'a [usize], &'a [T])> + 'a> {
        let Layout::Csr {
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
    fn stored_run(&self, window: BlockPlace) -> Option<&'a [T]> {
        match self.layout {
            Layout::Dense(_) => self.contiguous(window),
            Layout::Csr {
                row_offsets,
                values,
                ..
            } if window.cols as usize == self.cols => {
                let (r0, nr) = (window.row as usize, window.rows as usize);
                Some(&values[row_offsets[r0]..row_offsets[r0 + nr]])
            }
            Layout::Csr { .. } => None,
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

    fn row(&self, r: usize, first: usize, width: usize) -> Row<'a, T> {
        match self.layout {
            Layout::Dense(data) => {
                let start = r * self.cols + first;
                Row::Dense(&data[start..start + width])
            }
            Layout::Csr {
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

/// Tile size in force: the option, capped at the largest block dimension.
pub(crate) fn tile_dims(options: &Options) -> (u64, u64) {
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
    for place in places(rows, cols, tile_dims(options)) {
        write_block(sink, matrix, place, (0, 0), options)?;
    }
    Ok(())
}

/// Writes a frame object: each column as its own blocks (`rows x 1`, or tiles of it).
pub(crate) fn write_frame<W: Write>(
    sink: &mut Sink<W>,
    rows: usize,
    columns: &[(String, Values)],
    options: &Options,
) -> Result<()> {
    if options.runtime_writer()? {
        return runtime::write_frame(sink, rows as u64, columns, options.guard_daphne_labels);
    }
    write_header(sink, &Header::frame_of(rows as u64, columns))?;
    if rows == 0 || columns.is_empty() {
        // No values and no one value type: the blocks of an object without cells are empty.
        for place in places(rows as u64, columns.len() as u64, tile_dims(options)) {
            write_empty(sink, place)?;
        }
        return Ok(());
    }
    let (tile_rows, _) = tile_dims(options);
    for (col, (label, values)) in columns.iter().enumerate() {
        if values.len() != rows {
            return Err(Error::invalid(format!(
                "frame column \"{label}\" has {} values but the frame has {rows} rows",
                values.len()
            )));
        }
        with_values!(values, v => {
            let column = MatrixRef::dense(rows, 1, v);
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
            Layout::Csr {
                row_offsets,
                col_indices,
                values,
            },
        ) => runtime::write_csr(sink, rows, cols, row_offsets, col_indices, values),
        (DataType::CsrMatrix, Layout::Dense(data)) => {
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
        (_, Layout::Dense(data)) => runtime::write_dense(sink, rows, cols, data),
        (_, Layout::Csr { .. }) => {
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

fn write_header<W: Write>(sink: &mut Sink<W>, header: &Header) -> Result<()> {
    let mut bytes = Vec::with_capacity(header.encoded_len());
    header.encode(&mut bytes)?;
    sink.bytes(&bytes)
}

/// What the analysis of a block found.
struct Analysis {
    /// Non-zeros, exact unless counting stopped at `dense_wins_at`.
    nnz: u64,
    value_type: ValueType,
    /// Whether the source holds every cell (so `Auto` keeps the block dense).
    dense_source: bool,
    /// Whether every value the source stores for the block was counted as non-zero (so a
    /// sparse source's rows can be written as stored).
    no_stored_zeros: bool,
}

fn analyse<T: Element>(
    matrix: &MatrixRef<'_, T>,
    place: BlockPlace,
    options: &Options,
) -> Analysis {
    let (r0, c0) = (place.row as usize, place.col as usize);
    let (nr, nc) = (place.rows as usize, place.cols as usize);
    let dense_source = matches!(matrix.layout, Layout::Dense(_));
    // Once this many non-zeros are seen, the choice is made and counting can stop. At least 1
    // where an all-zero block becomes empty: that needs a count of zero over the whole window.
    let stop_at = match options.block_policy {
        _ if options.narrow => u64::MAX,
        BlockPolicy::Dense => 0,
        BlockPolicy::Auto if dense_source => 1,
        BlockPolicy::Auto | BlockPolicy::Smallest => dense_wins_at(place, T::VALUE_TYPE).max(1),
        BlockPolicy::Sparse | BlockPolicy::UltraSparse => u64::MAX,
    };
    let mut nnz = 0u64;
    let mut narrower = options.narrow.then(|| Narrower::new(T::VALUE_TYPE));
    if stop_at == 0 {
        return Analysis {
            nnz,
            value_type: T::VALUE_TYPE,
            dense_source,
            no_stored_zeros: false,
        };
    }
    if let (None, Some(run)) = (&narrower, matrix.stored_run(place)) {
        // Counted in cache-sized pieces so that a dense block stops early.
        for piece in run.chunks(1 << 14) {
            nnz += count_nonzero(piece) as u64;
            if nnz >= stop_at {
                break;
            }
        }
        return Analysis {
            nnz,
            value_type: T::VALUE_TYPE,
            dense_source,
            // Equal only when counting ran to the end and met no zero.
            no_stored_zeros: nnz == run.len() as u64,
        };
    }
    for r in r0..r0 + nr {
        let row = matrix.row(r, c0, nc);
        match &mut narrower {
            Some(n) => {
                let _ = row.for_each_nonzero(|_, x| {
                    nnz += 1;
                    n.observe(x);
                    Ok(())
                });
            }
            None => nnz += row.nnz() as u64,
        }
        if nnz >= stop_at {
            break;
        }
    }
    Analysis {
        nnz,
        value_type: narrower.map_or(T::VALUE_TYPE, |n| n.choice()),
        dense_source,
        no_stored_zeros: false,
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

fn choose_block_type(
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

/// Writes one block of `matrix` (window `place`), placed `shift` (rows, columns) further
/// into the object (where the matrix is a tile of it).
pub(crate) fn write_block<T: Element, W: Write>(
    sink: &mut Sink<W>,
    matrix: &MatrixRef<'_, T>,
    window: BlockPlace,
    shift: (u64, u64),
    options: &Options,
) -> Result<()> {
    let analysis = analyse(matrix, window, options);
    let block_type = choose_block_type(options.block_policy, window, &analysis)?;
    let vt = analysis.value_type;
    let place = BlockPlace {
        row: window.row + shift.0,
        col: window.col + shift.1,
        ..window
    };
    let (r0, c0) = (window.row as usize, window.col as usize);
    let (nr, nc) = (window.rows as usize, window.cols as usize);
    let rows = (r0..r0 + nr).map(|r| matrix.row(r, c0, nc));
    match block_type {
        BlockType::Empty => write_empty(sink, place),
        BlockType::Dense => {
            start_dense(sink, place, vt)?;
            if let Some(run) = matrix.contiguous(window) {
                return sink.values_as(run, vt);
            }
            rows.into_iter()
                .try_for_each(|row| row.write_dense(sink, nc, vt))
        }
        BlockType::Sparse => {
            start_sparse(sink, place, vt, analysis.nnz)?;
            // No stored zeros to leave out: a sparse source's rows go out as they are stored.
            if let Some(stored) = matrix.csr_rows(window).filter(|_| analysis.no_stored_zeros) {
                let len = sparse_rows_len(window.rows, analysis.nnz, vt) as usize;
                return sink.sparse_rows(stored, len, c0, vt);
            }
            for row in rows {
                start_sparse_row(sink, row.nnz() as u32)?;
                row.for_each_nonzero(|c, x| write_sparse_entry(sink, c, x, vt))?;
            }
            Ok(())
        }
        BlockType::UltraSparse => {
            start_ultra_sparse(sink, place, vt, analysis.nnz as u32)?;
            for (r, row) in rows.enumerate() {
                row.for_each_nonzero(|c, x| {
                    write_ultra_sparse_entry(sink, place, (r as u32, c), x, vt)
                })?;
            }
            Ok(())
        }
    }
}

/// Finds the smallest value type that holds every observed value exactly (the rule of
/// [`Value::narrows_to`], computed from typed summaries instead of per-value conversions).
struct Narrower {
    source: ValueType,
    /// Types smaller than the source, in order of preference.
    candidates: Vec<ValueType>,
    /// Whether every value seen is an integer, and their range.
    integers: bool,
    min: i64,
    max: i64,
    /// Whether `f32` holds every value seen bit-exactly.
    f32_exact: bool,
}

impl Narrower {
    fn new(source: ValueType) -> Self {
        let mut candidates: Vec<ValueType> = ValueType::ALL
            .into_iter()
            .filter(|vt| vt.size() < source.size())
            .collect();
        // Smallest first; at equal size the source's own kind, then unsigned, signed, float.
        let kind = |vt: ValueType| {
            if vt.is_float() {
                2
            } else if vt.is_signed_int() {
                1
            } else {
                0
            }
        };
        candidates.sort_by_key(|&vt| (vt.size(), kind(vt) != kind(source), kind(vt)));
        Narrower {
            source,
            candidates,
            integers: true,
            min: i64::MAX,
            max: i64::MIN,
            f32_exact: true,
        }
    }

    #[inline]
    fn observe<T: Element>(&mut self, x: T) {
        let probe = narrow_probe(x);
        match probe.integer {
            Some(i) => {
                self.min = self.min.min(i);
                self.max = self.max.max(i);
            }
            None => self.integers = false,
        }
        self.f32_exact &= probe.f32_exact;
    }

    fn holds(&self, vt: ValueType) -> bool {
        let range = |lo: i64, hi: i64| {
            self.integers && (self.min > self.max || (lo <= self.min && self.max <= hi))
        };
        match vt {
            ValueType::U8 => range(0, u8::MAX.into()),
            ValueType::U16 => range(0, u16::MAX.into()),
            ValueType::U32 => range(0, u32::MAX.into()),
            ValueType::I8 => range(i8::MIN.into(), i8::MAX.into()),
            ValueType::I16 => range(i16::MIN.into(), i16::MAX.into()),
            ValueType::I32 => range(i32::MIN.into(), i32::MAX.into()),
            ValueType::F32 => self.f32_exact,
            // Never smaller than a source type: not a candidate.
            ValueType::U64 | ValueType::I64 | ValueType::F64 => false,
        }
    }

    fn choice(&self) -> ValueType {
        self.candidates
            .iter()
            .copied()
            .find(|&vt| self.holds(vt))
            .unwrap_or(self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Value;

    #[test]
    fn narrowing_picks_the_smallest_exact_type() {
        let pick = |source, values: &[Value]| {
            let mut n = Narrower::new(source);
            for &v in values {
                crate::codes::with_value!(v, x => n.observe(x));
            }
            let choice = n.choice();
            // The typed summaries agree with the one conversion rule.
            assert!(
                values.iter().all(|v| v.narrows_to(choice)),
                "{values:?} as {choice}"
            );
            choice
        };
        assert_eq!(pick(ValueType::U64, &[Value::U64(200)]), ValueType::U8);
        assert_eq!(pick(ValueType::U64, &[Value::U64(300)]), ValueType::U16);
        assert_eq!(
            pick(ValueType::I64, &[Value::I64(-3), Value::I64(100)]),
            ValueType::I8
        );
        assert_eq!(pick(ValueType::I64, &[Value::I64(5)]), ValueType::I8);
        assert_eq!(pick(ValueType::F64, &[Value::F64(0.5)]), ValueType::F32);
        assert_eq!(pick(ValueType::F64, &[Value::F64(0.1)]), ValueType::F64);
        assert_eq!(pick(ValueType::F64, &[Value::F64(3.0)]), ValueType::U8);
        assert_eq!(pick(ValueType::F64, &[Value::F64(-0.0)]), ValueType::F32);
        assert_eq!(pick(ValueType::U8, &[Value::U8(1)]), ValueType::U8);
    }

    /// The typed summaries choose exactly what the one conversion rule (`narrows_to`) would.
    fn agrees_with_the_conversion_rule<T: Element>(values: &[T]) {
        let mut n = Narrower::new(T::VALUE_TYPE);
        values.iter().for_each(|&x| n.observe(x));
        let reference = n
            .candidates
            .iter()
            .copied()
            .find(|&vt| values.iter().all(|x| x.into_value().narrows_to(vt)))
            .unwrap_or(T::VALUE_TYPE);
        assert_eq!(n.choice(), reference, "{values:?}");
    }

    proptest::proptest! {
        #[test]
        fn typed_narrowing_matches_the_rule(
            bits in proptest::collection::vec(proptest::prelude::any::<u64>(), 1..4),
            small in proptest::collection::vec(-70_000i64..70_000, 1..4),
            scale in 0u32..70,
        ) {
            // Raw bits reach NaN payloads and huge values; small integers and their scaled
            // versions reach every candidate's edges.
            let scaled: Vec<i64> = small.iter().map(|&x| x.saturating_mul(1i64 << scale.min(40))).collect();
            agrees_with_the_conversion_rule(&bits.iter().map(|&b| f64::from_bits(b)).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&bits.iter().map(|&b| f32::from_bits(b as u32)).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&bits);
            agrees_with_the_conversion_rule(&bits.iter().map(|&b| b as i64).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&scaled);
            agrees_with_the_conversion_rule(&scaled.iter().map(|&x| x as f64).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&scaled.iter().map(|&x| x as f32 * 0.5).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&scaled.iter().map(|&x| x.unsigned_abs()).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&small.iter().map(|&x| x as i32).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&small.iter().map(|&x| x as u32).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&small.iter().map(|&x| x as i16).collect::<Vec<_>>());
        }
    }

    #[test]
    fn typed_narrowing_edges() {
        agrees_with_the_conversion_rule(&[i64::MAX]);
        agrees_with_the_conversion_rule(&[i64::MIN]);
        agrees_with_the_conversion_rule(&[u64::MAX]);
        agrees_with_the_conversion_rule(&[1u64 << 63]);
        agrees_with_the_conversion_rule(&[(1i64 << 24) + 1]);
        agrees_with_the_conversion_rule(&[1i64 << 40, -(1i64 << 50)]);
        agrees_with_the_conversion_rule(&[9.223_372_036_854_776e18f64]);
        agrees_with_the_conversion_rule(&[-9.223_372_036_854_776e18f64]);
        agrees_with_the_conversion_rule(&[-0.0f64, 1.0]);
        agrees_with_the_conversion_rule(&[-0.0f32]);
        agrees_with_the_conversion_rule(&[f64::NAN, f64::INFINITY]);
        agrees_with_the_conversion_rule(&[65535.0f32, -1.0]);
    }

    #[test]
    fn tiles_cover_in_row_major_order() {
        let all: Vec<_> = places(3, 5, (2, 2))
            .map(|p| (p.row, p.col, p.rows, p.cols))
            .collect();
        assert_eq!(
            all,
            vec![
                (0, 0, 2, 2),
                (0, 2, 2, 2),
                (0, 4, 2, 1),
                (2, 0, 1, 2),
                (2, 2, 1, 2),
                (2, 4, 1, 1)
            ]
        );
        let big: Vec<_> = places(0, 5_000_000_000, (1, u64::from(u32::MAX)))
            .map(|p| (p.col, p.cols))
            .collect();
        assert_eq!(big, vec![(0, u32::MAX), (4_294_967_295, 705_032_705)]);
    }

    #[test]
    fn dense_wins_once_sparse_forms_are_no_smaller() {
        let place = BlockPlace {
            row: 0,
            col: 0,
            rows: 10,
            cols: 10,
        };
        let at = dense_wins_at(place, ValueType::F64);
        let len = |bt, n| block_len(bt, 10, 10, n, ValueType::F64).unwrap();
        assert!(len(BlockType::Sparse, at) >= len(BlockType::Dense, 0));
        assert!(len(BlockType::UltraSparse, at) >= len(BlockType::Dense, 0));
        assert!(
            len(BlockType::Sparse, at - 1) < len(BlockType::Dense, 0)
                || len(BlockType::UltraSparse, at - 1) < len(BlockType::Dense, 0)
        );
    }
}
