//! Reading a rectangle of an indexed object: only the blocks that overlap it, of a dense block
//! only the rows' byte ranges inside it, of a runtime CSR matrix only the row offsets and the
//! index and value ranges they name.

use crate::error::ErrorDetails;
use std::io::{Read, Seek};
use std::ops::Range;

use crate::error::{Error, Result};
use crate::io::index::{BlockInfo, ObjectInfo, StoredBody};
use crate::io::sparse_rows::{self, RowStarts};
use crate::wire::block::{decode_block_body, BlockHead};
use crate::wire::element::widens_exactly;
use crate::wire::runtime::{check_columns, RuntimeHead};
use crate::wire::values::{convert_slice, read_le, with_value_type, with_values};
use crate::wire::{BlockType, DataType, Element, SeekSource, Source, ValueType, Values};

/// Most bytes read at once from a dense block when whole rows are wanted.
const PIECE: u64 = 4 << 20;

/// Most rows of a dense block read by one vectored read (Linux's `IOV_MAX` is 1024 buffers,
/// two per row with the bytes between rows).
const ROWS_PER_READV: u64 = 511;

/// Bytes of other columns between a window's rows in a dense block that a vectored read
/// reads into scratch rather than reading each row apart, when they are at most this many
/// or at most [`GAP_RATIO`] times a row's own: a read per row costs a system call, the
/// bytes between are copied at memory speed.
const GAP_BYTES: u64 = 16 << 10;
const GAP_RATIO: u64 = 4;

/// Most scratch bytes for those gaps per vectored read: small enough to stay in cache.
const GAP_SCRATCH: u64 = 256 << 10;

/// A rectangle of an object: rows and columns, each a half-open range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub rows: Range<u64>,
    pub cols: Range<u64>,
}

impl Window {
    pub(crate) fn shape(&self) -> (usize, usize) {
        (
            (self.rows.end - self.rows.start) as usize,
            (self.cols.end - self.cols.start) as usize,
        )
    }

    /// The part of `(row, col, rows, cols)` inside the window, if any.
    fn overlap(&self, row: u64, col: u64, rows: u64, cols: u64) -> Option<Window> {
        let r = self.rows.start.max(row)..self.rows.end.min(row + rows);
        let c = self.cols.start.max(col)..self.cols.end.min(col + cols);
        (r.start < r.end && c.start < c.end).then_some(Window { rows: r, cols: c })
    }
}

/// Where a window's values go.
pub(crate) trait WindowSink<T> {
    /// The destination of `len` values of window row `row` from window column `col`, when the
    /// sink stores cells densely (values are then read straight into it).
    fn cells(&mut self, row: usize, col: usize, len: usize) -> Option<&mut [T]>;
    /// The destinations of `len` values in each of `count` window rows from `row`, from
    /// window column `col`, when the sink stores cells densely (for one vectored read).
    fn row_cells(
        &mut self,
        row: usize,
        col: usize,
        len: usize,
        count: usize,
    ) -> Option<Vec<&mut [T]>> {
        let _ = (row, col, len, count);
        None
    }
    /// Values of window row `row` from window column `col`.
    fn row(&mut self, row: usize, col: usize, values: &[T]);
    /// One stored value.
    fn entry(&mut self, row: usize, col: usize, value: T);
}

/// Whether dense blocks hold every cell of `window` (blocks tile their object, as opening
/// checked), so that a dense sink need not be zeroed before the read.
pub(crate) fn dense_throughout(object: &ObjectInfo, window: &Window) -> bool {
    match &object.layout {
        StoredBody::Blocks => object.blocks.iter().all(|b| {
            let p = b.place;
            let (rows, cols) = (u64::from(p.rows), u64::from(p.cols));
            let dense = b.block_type == BlockType::Dense && b.value_type.is_some();
            dense || window.overlap(p.row, p.col, rows, cols).is_none()
        }),
        StoredBody::Runtime(head) => head.data_type == DataType::DenseMatrix,
    }
}

/// A dense window, row-major.
pub(crate) struct DenseSink<'a, T> {
    pub(crate) cols: usize,
    pub(crate) cells: &'a mut [T],
}

impl<T: Element> WindowSink<T> for DenseSink<'_, T> {
    fn cells(&mut self, row: usize, col: usize, len: usize) -> Option<&mut [T]> {
        let at = row * self.cols + col;
        self.cells.get_mut(at..at + len)
    }

    fn row_cells(
        &mut self,
        row: usize,
        col: usize,
        len: usize,
        count: usize,
    ) -> Option<Vec<&mut [T]>> {
        let rows = self
            .cells
            .get_mut(row * self.cols..(row + count) * self.cols)?;
        let rows = rows.chunks_exact_mut(self.cols);
        rows.map(|r| r.get_mut(col..col + len)).collect()
    }

    fn row(&mut self, row: usize, col: usize, values: &[T]) {
        let at = row * self.cols + col;
        self.cells[at..at + values.len()].copy_from_slice(values);
    }

    fn entry(&mut self, row: usize, col: usize, value: T) {
        self.cells[row * self.cols + col] = value;
    }
}

/// The non-zeros of a window, in any order: `(row, column, value)` within the window, with
/// 4-byte positions where the window's shape allows (a third less memory for `f64`).
pub(crate) enum EntrySink<T> {
    Narrow(Vec<(u32, u32, T)>),
    Wide(Vec<(usize, usize, T)>),
}

impl<T: Element> EntrySink<T> {
    pub(crate) fn for_window(window: &Window) -> Self {
        let (r, c) = window.shape();
        match u32::try_from(r.max(c)).is_ok() {
            true => EntrySink::Narrow(Vec::new()),
            false => EntrySink::Wide(Vec::new()),
        }
    }

    /// Each entry's `(row, column, value)`.
    pub(crate) fn for_each(&self, mut f: impl FnMut(usize, usize, T)) {
        match self {
            EntrySink::Narrow(v) => v.iter().for_each(|&(r, c, x)| f(r as usize, c as usize, x)),
            EntrySink::Wide(v) => v.iter().for_each(|&(r, c, x)| f(r, c, x)),
        }
    }

    fn push(&mut self, row: usize, col: usize, value: T) {
        match self {
            // The window's shape fits: so do its positions.
            EntrySink::Narrow(v) => v.push((row as u32, col as u32, value)),
            EntrySink::Wide(v) => v.push((row, col, value)),
        }
    }
}

impl<T: Element> WindowSink<T> for EntrySink<T> {
    fn cells(&mut self, _: usize, _: usize, _: usize) -> Option<&mut [T]> {
        None
    }

    fn row(&mut self, row: usize, col: usize, values: &[T]) {
        for (k, &v) in values.iter().enumerate() {
            if !v.is_zero() {
                self.push(row, col + k, v);
            }
        }
    }

    fn entry(&mut self, row: usize, col: usize, value: T) {
        if !value.is_zero() {
            self.push(row, col, value);
        }
    }
}

/// Reads the window of `object` into `sink`, converting each value exactly to `T`.
pub(crate) fn read_window<T: Element, R: Read + Seek>(
    src: &mut SeekSource<R>,
    object: &ObjectInfo,
    window: &Window,
    sink: &mut impl WindowSink<T>,
    starts: &mut RowStarts,
) -> Result<()> {
    let object_type = object.header.value_type_of(window.cols.start);
    if window.rows.is_empty() || window.cols.is_empty() {
        return Ok(());
    }
    match &object.layout {
        StoredBody::Blocks => {
            for block in &object.blocks {
                let p = block.place;
                let rows = u64::from(p.rows);
                let cols = u64::from(p.cols);
                if let Some(part) = window.overlap(p.row, p.col, rows, cols) {
                    let vt = object.header.value_type_of(p.col).or(object_type);
                    read_block(src, block, vt, window, &part, sink, starts)?;
                }
            }
            Ok(())
        }
        StoredBody::Runtime(head) => {
            let block = &object.blocks[0];
            match head.data_type {
                DataType::CsrMatrix => read_runtime_csr(src, object, head, window, sink),
                DataType::Frame => Err(Error::invalid(
                    "a frame's rows are read with DbdfFile::read_frame",
                )),
                _ => read_block(src, block, object_type, window, window, sink, starts),
            }
        }
    }
}

/// Reads the part `part` of one block into the window's sink.
fn read_block<T: Element, R: Read + Seek>(
    src: &mut SeekSource<R>,
    block: &BlockInfo,
    object_type: Option<ValueType>,
    window: &Window,
    part: &Window,
    sink: &mut impl WindowSink<T>,
    starts: &mut RowStarts,
) -> Result<()> {
    let Some(vt) = block.value_type else {
        return Ok(());
    };
    let checked = Checked {
        offset: block.range.start,
        object_type: object_type.filter(|&o| !widens_exactly(vt, o)),
    };
    // A dense part's rows, read in order from a source that reads ahead runs this long, are
    // read as they are needed (fetched whole first, they would be held twice); its header
    // is still compared with the index's.
    let bytes = part_bytes(block, part, vt.size() as u64);
    let run = bytes.end - bytes.start;
    let ahead = src.reads_ahead().is_some_and(|from| run >= from);
    match block.block_type == BlockType::Dense && ahead {
        true => src.check_header(bytes)?,
        false => src.prefetch(bytes)?,
    }
    with_value_type!(vt, S => match block.block_type {
        BlockType::Empty => Ok(()),
        BlockType::Dense => read_dense::<S, T, R>(src, block, window, part, &checked, sink),
        BlockType::Sparse => {
            read_sparse_rows::<S, T, R>(src, block, window, part, &checked, sink, starts)
        }
        _ => read_sparse::<S, T, R>(src, block, window, part, &checked, sink),
    })
}

/// The bytes of `block` that reading `part` of it needs (a remote source fetches them in one
/// request): of a dense block, its rows from the part's first to its last; from the block's
/// header on when the part starts at the block's first row (so that the header is read, and
/// checked against an index, once per walk over the block); any other block whole. Bands of
/// a tile read one after another so fetch each byte once, not the tile's rows before them
/// again for every band.
fn part_bytes(block: &BlockInfo, part: &Window, size: u64) -> Range<u64> {
    let p = block.place;
    if block.block_type != BlockType::Dense {
        return block.range.clone();
    }
    let row_bytes = u64::from(p.cols) * size;
    let end = block.body() + (part.rows.end - p.row) * row_bytes;
    match block.spec && part.rows.start == p.row {
        true => block.range.start..end,
        false => block.body() + (part.rows.start - p.row) * row_bytes..end,
    }
}

/// How stored values convert: to `T` exactly, and (for blocks stored in a type that does not
/// widen exactly to the object's) to the object's type too, as reading the whole object checks.
struct Checked {
    offset: u64,
    object_type: Option<ValueType>,
}

impl Checked {
    fn convert<S: Element, T: Element>(&self, values: &[S]) -> Result<Vec<T>> {
        if let Some(object_type) = self.object_type {
            with_value_type!(object_type, O => {
                convert_slice::<S, O>(values).map_err(|i| self.lossy(values[i], object_type))?;
            });
        }
        convert_slice::<S, T>(values).map_err(|i| self.lossy(values[i], T::VALUE_TYPE))
    }

    fn lossy<S: Element>(&self, value: S, to: ValueType) -> Error {
        Error::from(ErrorDetails::LossyConversion {
            offset: self.offset,
            value: value.into_value(),
            to,
        })
    }
}

fn read_dense<S: Element, T: Element, R: Read + Seek>(
    src: &mut SeekSource<R>,
    block: &BlockInfo,
    window: &Window,
    part: &Window,
    checked: &Checked,
    sink: &mut impl WindowSink<T>,
) -> Result<()> {
    let p = block.place;
    let size = std::mem::size_of::<S>() as u64;
    let head = block.head().unwrap_or(BlockHead {
        rows: p.rows,
        cols: p.cols,
        block_type: BlockType::Dense,
        value_type: Some(S::VALUE_TYPE),
        nnz: None,
        nnz_offset: 0,
    });
    let width = part.cols.end - part.cols.start;
    let (lc, wc) = (
        (part.cols.start - p.col) as u32,
        (part.cols.start - window.cols.start) as usize,
    );
    let whole_rows = width == u64::from(p.cols);
    // Values of the same type go straight into a dense sink, several rows at once when they
    // are contiguous there too.
    let direct = S::VALUE_TYPE == T::VALUE_TYPE && checked.object_type.is_none();
    let contiguous_out = part.cols == window.cols;
    // Rows per read: whole rows are contiguous and read in pieces; otherwise row by row.
    let per_read = if whole_rows && (!direct || contiguous_out) {
        (PIECE / (width * size).max(1)).max(1)
    } else {
        1
    };
    let mut row = part.rows.start;
    let mut buf: Vec<u8> = Vec::new();
    let (row_bytes, gap) = (width * size, (u64::from(p.cols) - width) * size);
    let vectored = direct && per_read == 1 && (gap <= GAP_BYTES || gap <= GAP_RATIO * row_bytes);
    while vectored && row < part.rows.end {
        // Several rows in one read: each row's bytes into its place in the sink, the bytes
        // of other columns between them into scratch.
        let n = ROWS_PER_READV
            .min(GAP_SCRATCH / gap.max(1) + 1)
            .min(part.rows.end - row);
        let lr = (row - p.row) as u32;
        let at = block.body() + head.dense_value_at(lr, lc);
        let wr = (row - window.rows.start) as usize;
        buf.resize((gap * (n - 1)) as usize, 0);
        let Some(mut rows) = sink.row_cells(wr, wc, width as usize, n as usize) else {
            break;
        };
        let mut gaps = buf.chunks_exact_mut(gap.max(1) as usize);
        let mut slices = Vec::with_capacity(2 * n as usize);
        for (k, cells) in rows.iter_mut().enumerate() {
            slices.push(std::io::IoSliceMut::new(bytemuck::cast_slice_mut(cells)));
            if k + 1 < n as usize && gap > 0 {
                slices.extend(gaps.next().map(std::io::IoSliceMut::new));
            }
        }
        src.read_vectored_at(at, &mut slices, "a dense block's values")?;
        if cfg!(target_endian = "big") {
            for cells in rows {
                cells.iter_mut().for_each(|x| *x = x.to_le());
            }
        }
        row += n;
    }
    while row < part.rows.end {
        let n = per_read.min(part.rows.end - row);
        let lr = (row - p.row) as u32;
        let at = block.body() + head.dense_value_at(lr, lc);
        let wr = (row - window.rows.start) as usize;
        let len = (n * width) as usize;
        if let Some(cells) = sink.cells(wr, wc, len).filter(|_| direct) {
            src.read_at(
                at,
                bytemuck::cast_slice_mut(cells),
                "a dense block's values",
            )?;
            if cfg!(target_endian = "big") {
                cells.iter_mut().for_each(|x| *x = x.to_le());
            }
        } else {
            buf.resize((n * width * size) as usize, 0);
            src.read_at(at, &mut buf, "a dense block's values")?;
            let stored: Vec<S> = crate::wire::values::decode_le(&buf)?;
            let values: Vec<T> = checked.convert(&stored)?;
            for (k, chunk) in values.chunks(width as usize).enumerate() {
                sink.row(wr + k, wc, chunk);
            }
        }
        row += n;
    }
    Ok(())
}

fn read_sparse<S: Element, T: Element, R: Read + Seek>(
    src: &mut SeekSource<R>,
    block: &BlockInfo,
    window: &Window,
    part: &Window,
    checked: &Checked,
    sink: &mut impl WindowSink<T>,
) -> Result<()> {
    let Some(head) = block.head() else {
        return Ok(());
    };
    src.seek_to(block.body());
    let data = decode_block_body(src, &head)?;
    let Some(values) = data.values() else {
        return Ok(());
    };
    let stored: Vec<S> = values.to_vec().unwrap_or_default();
    let values: Vec<T> = checked.convert(&stored)?;
    let p = block.place;
    data.for_each_position(p.cols, |k, r, c| {
        let (row, col) = (p.row + u64::from(r), p.col + u64::from(c));
        if part.rows.contains(&row) && part.cols.contains(&col) {
            sink.entry(
                (row - window.rows.start) as usize,
                (col - window.cols.start) as usize,
                values[k],
            );
        }
    });
    Ok(())
}

/// The part of a sparse (CSR) block in a window: only the rows it needs are read and decoded,
/// from where the block's rows start ([`sparse_rows`]).
fn read_sparse_rows<S: Element, T: Element, R: Read + Seek>(
    src: &mut SeekSource<R>,
    block: &BlockInfo,
    window: &Window,
    part: &Window,
    checked: &Checked,
    sink: &mut impl WindowSink<T>,
    starts: &mut RowStarts,
) -> Result<()> {
    let Some(head) = block.head() else {
        return Ok(());
    };
    let entry = 4 + std::mem::size_of::<S>() as u64;
    let starts = sparse_rows::row_starts(src, block, &head, entry, starts)?;
    let p = block.place;
    let rows = (part.rows.start - p.row) as u32..(part.rows.end - p.row) as u32;
    sparse_rows::for_each_row::<S, R>(src, &starts, p.cols, rows, |r, columns, values| {
        let row = (p.row + u64::from(r) - window.rows.start) as usize;
        // The row's values converted together (one allocation a row, not one a value).
        let converted: Vec<T> = checked.convert(values)?;
        for (&c, &value) in columns.iter().zip(&converted) {
            let col = p.col + u64::from(c);
            if part.cols.contains(&col) {
                sink.entry(row, (col - window.cols.start) as usize, value);
            }
        }
        Ok(())
    })
}

/// A window of a runtime CSR matrix: the rows' offsets, then their column indices and values.
fn read_runtime_csr<T: Element, R: Read + Seek>(
    src: &mut SeekSource<R>,
    object: &ObjectInfo,
    head: &RuntimeHead,
    window: &Window,
    sink: &mut impl WindowSink<T>,
) -> Result<()> {
    let nnz = head.nnz.unwrap_or(0);
    let (r0, r1) = (window.rows.start, window.rows.end);
    let offsets_at = head.body + 8 * r0;
    src.seek_to(offsets_at);
    let offsets: Vec<u64> = src.take_vec(r1 - r0 + 1, "the row offsets")?;
    // The whole array's rules, on the slice read: from 0, non-decreasing, within the
    // stored entries.
    if r0 == 0 && offsets[0] != 0 {
        return Err(ErrorDetails::RuntimeLayout {
            offset: offsets_at,
            message: "the row offsets do not start at 0".into(),
        }
        .into());
    }
    for (i, pair) in offsets.windows(2).enumerate() {
        if pair[1] < pair[0] {
            return Err(ErrorDetails::RuntimeLayout {
                offset: offsets_at + 8 * (i as u64 + 1),
                message: format!("row offset {} is below the previous {}", pair[1], pair[0]),
            }
            .into());
        }
    }
    let (first, last) = (offsets[0], offsets[offsets.len() - 1]);
    if last > nnz {
        return Err(ErrorDetails::SparseCountMismatch {
            offset: offsets_at,
            declared: nnz,
            counted: last,
        }
        .into());
    }
    let rebased: Vec<u64> = offsets.iter().map(|&o| o - first).collect();
    let (cols_at, values_at) = head.csr_arrays();
    let count = last - first;
    src.seek_to(cols_at + 8 * first);
    let cols: Vec<u64> = src.take_vec(count, "the column indices")?;
    check_columns(&rebased, &cols, head.cols, cols_at + 8 * first)?;
    let vt = head.value_types[0];
    let checked = Checked {
        offset: object.range.start,
        object_type: None,
    };
    with_value_type!(vt, S => {
        src.seek_to(values_at + first * std::mem::size_of::<S>() as u64);
        let stored: Vec<S> = src.take_vec(count, "the non-zero values")?;
        let values: Vec<T> = checked.convert(&stored)?;
        for (r, pair) in rebased.windows(2).enumerate() {
            for k in pair[0] as usize..pair[1] as usize {
                if window.cols.contains(&cols[k]) {
                    sink.entry(r, (cols[k] - window.cols.start) as usize, values[k]);
                }
            }
        }
    });
    Ok(())
}

/// Rows `rows` of the columns `wanted` of a runtime frame, whose rows interleave its columns:
/// read in pieces of whole rows.
pub(crate) fn read_runtime_frame<R: Read + Seek>(
    src: &mut SeekSource<R>,
    head: &RuntimeHead,
    rows: &Range<u64>,
    wanted: &[usize],
) -> Result<Vec<Values>> {
    let width = head.row_width();
    let mut starts = Vec::with_capacity(head.value_types.len());
    let mut at = 0;
    for vt in &head.value_types {
        starts.push(at);
        at += vt.size();
    }
    let count = (rows.end - rows.start) as usize;
    let mut out: Vec<Values> = wanted
        .iter()
        .map(|&c| {
            let mut v = Values::new(head.value_types[c]);
            v.reserve(count);
            v
        })
        .collect();
    let per_read = (PIECE / width.max(1)).max(1);
    let mut buf = Vec::new();
    let mut row = rows.start;
    while row < rows.end && width > 0 {
        let n = per_read.min(rows.end - row);
        buf.resize((n * width) as usize, 0);
        src.read_at(head.body + row * width, &mut buf, "the frame's rows")?;
        for record in buf.chunks_exact(width as usize) {
            for (values, &c) in out.iter_mut().zip(wanted) {
                with_values!(values, v => v.push(read_le(&record[starts[c]..])));
            }
        }
        row += n;
    }
    if width == 0 {
        // Columns of no bytes cannot exist: every value type has a size.
        return Ok(out);
    }
    Ok(out)
}
