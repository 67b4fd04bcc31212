//! MatrixMarket: coordinate and array, real/integer/pattern, general/symmetric/skew-symmetric
//! on input; general on output: a dense matrix as an `array` file (every value, column by
//! column, as the format orders them and as scipy's `mmwrite` and fast_matrix_market write
//! a dense array), a CSR matrix (or a scalar) as a `coordinate` file (every non-zero, 1-based,
//! in row-major order).
//!
//! Output has a comment naming the value type, so that this tool reads it back to the same
//! type and bits (`f32` values are printed as the `f64` they widen to, exactly).

mod array;
mod array_rows;
mod bands;
mod chunks;
mod coordinates;
mod csr_source;
mod driver;
mod entries;
mod head;
mod passes;
mod source;

pub(crate) use driver::Mtx;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use crate::driver::Duplicates;
use crate::pipe::{Band, Cells, Pieces, Sink, Spilled, Windows, BAND_BYTES};
use crate::storage::Stream;
use crate::text::{format_value, parse_value};
use entries::{MtxHeader, Symmetry};
use head::{parse_head, read_head, Head, MTX, TYPE_COMMENT};
use serde_daphne::lowlevel::Progress;
use serde_daphne::lowlevel::{first_name, parse_name};
use serde_daphne::Header;
use serde_daphne::{DataType, Error, Object, ReadAt, Result, Value, ValueType, Values};

pub(crate) use source::MtxSource;

/// How MatrixMarket files are read. Plain data, as every format's options: set the fields
/// that differ from [`ReadOptions::default`] (no progress reports).
#[derive(Clone, Default)]
pub struct ReadOptions {
    /// Tells `progress` of the bytes of coordinate data read.
    pub progress: Option<Progress>,
    /// What a coordinate file's cell given twice does: refused (the default) or summed.
    pub duplicates: Duplicates,
}

impl std::fmt::Debug for ReadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOptions")
            .field("progress", &self.progress.as_ref().map(|_| "..."))
            .field("duplicates", &self.duplicates)
            .finish()
    }
}

/// How a matrix is laid out in a MatrixMarket file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Layout {
    /// Every value, column by column: a dense matrix.
    Array,
    /// Every non-zero with its row and column: a sparse matrix.
    Coordinate,
}

const LAYOUT_NAMES: &[(&str, Layout)] =
    &[("array", Layout::Array), ("coordinate", Layout::Coordinate)];

/// `array` or `coordinate`.
impl std::str::FromStr for Layout {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        parse_name(text, "a MatrixMarket layout", LAYOUT_NAMES)
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(first_name(LAYOUT_NAMES, self))
    }
}

impl Layout {
    /// The data type a matrix is written in this layout as.
    pub(crate) fn data_type(self) -> DataType {
        match self {
            Layout::Array => DataType::DenseMatrix,
            Layout::Coordinate => DataType::CsrMatrix,
        }
    }
}

/// How MatrixMarket files are written. Plain data, as every format's options: set the fields
/// that differ from [`WriteOptions::default`] (each matrix in its own layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Every matrix in this layout, instead of a dense matrix as an `array` file and a CSR
    /// matrix as a `coordinate` file.
    pub layout: Option<Layout>,
}

/// The first object of the MatrixMarket file at `path`, through its source: the whole read
/// the tests compare other reads with.
#[cfg(test)]
pub(crate) fn read(path: &Path) -> Result<Object> {
    let mut source = MtxSource::open(path, &ReadOptions::default())?;
    Ok(crate::pipe::read_objects(&mut source)?.remove(0))
}

/// The MatrixMarket file at `path` as a source of the pipe (a boxed [`Source`](crate::pipe::Source)): array files
/// through a scratch file; coordinate files (whose entries come in any order) as the CSR
/// arrays they build, and symmetric array files as the whole matrix, held.
///
/// # Errors
/// [`serde_daphne::ErrorKind::ForeignInput`] naming the line and what is wrong; I/O errors.
pub(crate) fn source(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<Box<dyn crate::pipe::Source>> {
    Ok(Box::new(MtxSource::open(path.as_ref(), options)?))
}

/// A sink of the pipe writing MatrixMarket to `out` (a boxed [`Sink`]).
pub(crate) fn sink(out: &mut dyn Write) -> Box<dyn crate::pipe::Sink + '_> {
    Box::new(MtxSink::new(out))
}

fn read_data_text(data: &Arc<dyn ReadAt>, options: &ReadOptions) -> Result<Object, String> {
    match coordinate_layout(data)? {
        Some((layout, at, lines)) => {
            let file = coordinates::CoordinateFile {
                data,
                data_at: at,
                first_line: lines + 1,
                layout: &layout,
                duplicates: options.duplicates,
            };
            coordinates::read(&file, options.progress.as_ref())
        }
        None => {
            let mut text = String::new();
            Stream::new(Arc::clone(data), 0..u64::MAX)
                .and_then(|mut all| all.read_to_string(&mut text))
                .map_err(|e| e.to_string())?;
            read_text(&text)
        }
    }
}

/// A coordinate file's layout, where its entries start (byte and line); `None` for an
/// array file.
pub(super) fn coordinate_layout(
    data: &Arc<dyn ReadAt>,
) -> Result<Option<(MtxHeader, u64, usize)>, String> {
    let file = Stream::new(Arc::clone(data), 0..u64::MAX).map_err(|e| e.to_string())?;
    let mut reader = std::io::BufReader::with_capacity(64 << 10, file);
    let (head, at, lines) = read_head(&mut reader)?;
    if !head.to_lowercase().contains("coordinate") {
        return Ok(None);
    }
    let header = parse_head(&head)?;
    let [rows, cols, entries] = header.dims[..] else {
        return Err(format!(
            "line {}: expected rows, columns and entries",
            header.size_line
        ));
    };
    let layout = MtxHeader {
        rows,
        cols,
        entries,
        value_type: header.value_type,
        typed_by_comment: header.typed_by_comment,
        pattern: header.pattern,
        symmetry: header.symmetry,
    };
    Ok(Some((layout, at, lines)))
}

/// Reads a MatrixMarket array file's text whole into a DenseMatrix (coordinate files are
/// read by `coordinates.rs`).
///
/// # Errors
/// A message naming the line and what is wrong.
fn read_text(text: &str) -> Result<Object, String> {
    let Head {
        coordinate,
        mut value_type,
        typed_by_comment,
        symmetry,
        size_line,
        dims,
        ..
    } = parse_head(text)?;
    if coordinate {
        return Err("a coordinate file, read as an array".into());
    }
    let lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .skip(size_line);
    let entries: Vec<(usize, &str)> = lines.filter(|(_, l)| !l.trim().is_empty()).collect();
    // Integers are read in the widest type that holds them: i64, or u64 past i64::MAX.
    if value_type == ValueType::I64 && !typed_by_comment {
        let field = str::trim;
        // (A 19-digit bound first: most fields are shorter and need no parse here.)
        let beyond_i64 = |word: &str| {
            word.len() >= 19 && word.parse::<i64>().is_err() && word.parse::<u64>().is_ok()
        };
        if let Some(&(n, _)) = entries.iter().find(|(_, l)| beyond_i64(field(l))) {
            if let Some(&(m, l)) = entries.iter().find(|(_, l)| field(l).starts_with('-')) {
                return Err(format!(
                    "line {m}: the negative {} and line {n}'s integer above i64::MAX share no \
                     value type",
                    field(l)
                ));
            }
            value_type = ValueType::U64;
        }
    }
    let [rows, cols] = dims[..] else {
        return Err(format!("line {size_line}: expected rows and columns"));
    };
    read_array(&entries, rows, cols, value_type, symmetry)
}

/// The negative of `value` in its type, if the type has one.
pub(super) fn negate(value: Value) -> Option<Value> {
    Some(match value {
        Value::F64(x) => Value::F64(-x),
        Value::F32(x) => Value::F32(-x),
        Value::I8(x) => Value::I8(x.checked_neg()?),
        Value::I16(x) => Value::I16(x.checked_neg()?),
        Value::I32(x) => Value::I32(x.checked_neg()?),
        Value::I64(x) => Value::I64(x.checked_neg()?),
        other if other.is_zero() => other,
        _ => return None,
    })
}

fn read_array(
    entries: &[(usize, &str)],
    rows: u64,
    cols: u64,
    value_type: ValueType,
    symmetry: Symmetry,
) -> Result<Object, String> {
    let (r, c) = (rows as usize, cols as usize);
    let mut cells = Values::zeros(value_type, r.checked_mul(c).ok_or("too large")?)
        .map_err(|e| e.to_string())?;
    // Column-major; symmetric files list the lower triangle, skew ones below the diagonal.
    let mut positions = Vec::new();
    for j in 0..c {
        let first = match symmetry {
            Symmetry::General => 0,
            Symmetry::Symmetric => j,
            Symmetry::Skew => j + 1,
        };
        positions.extend((first..r).map(|i| (i, j)));
    }
    if entries.len() != positions.len() {
        return Err(format!(
            "expected {} values after the size line, found {}",
            positions.len(),
            entries.len()
        ));
    }
    for (&(n, line), &(i, j)) in entries.iter().zip(&positions) {
        let value = parse_value(line, value_type)
            .ok_or_else(|| format!("line {n}: malformed {value_type} number {:?}", line.trim()))?;
        cells.set(i * c + j, value);
        if i != j && symmetry != Symmetry::General {
            let mirrored = if symmetry == Symmetry::Skew {
                negate(value).ok_or(format!("line {n}: {value} has no negative in its type"))?
            } else {
                value
            };
            cells.set(j * c + i, mirrored);
        }
    }
    Object::dense(rows, cols, cells).map_err(|e| e.to_string())
}

/// Writes one matrix as general MatrixMarket (see the module's description): a dense
/// matrix's values column by column, from windows of whole columns (or of one column's rows,
/// for a matrix taller than a band), read from the source's windows or, for a source whose
/// rows come only in order, from its bands spilled to a scratch file first; a CSR matrix in
/// two passes over the bands of the source: one counts the entries (the size line gives them
/// first), one writes them. Memory holds a band.
pub(crate) struct MtxSink<'w> {
    out: &'w mut dyn Write,
}

impl<'w> MtxSink<'w> {
    /// A sink writing to `out`.
    pub(crate) fn new(out: &'w mut dyn Write) -> MtxSink<'w> {
        MtxSink { out }
    }
}

impl Sink for MtxSink<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("MatrixMarket")
    }

    fn passes(&self, header: &Header) -> u32 {
        match header.data_type() {
            DataType::DenseMatrix => 1,
            _ => 2,
        }
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let data_type = header.data_type();
        if !data_type.is_matrix() && data_type != DataType::Scalar {
            return Err(refused(data_type));
        }
        let value_type = header.matrix_value_type().unwrap_or(ValueType::F64);
        if data_type == DataType::DenseMatrix {
            write_head(self.out, value_type, header.shape(), None)?;
            let out = &mut *self.out;
            let mut write = |band: Band| write_columns(out, value_type, &band);
            if let Some(windows) = pieces.windows() {
                return for_each_column_run(&windows, header, &mut write);
            }
            let spilled = Spilled::new(pieces, header.shape().1, value_type)?;
            return for_each_column_run(&spilled, header, &mut write);
        }
        let mut count = 0u64;
        pieces.for_each(&mut |band| {
            band.for_each_nonzero(|_, _, _| count += 1);
            Ok(true)
        })?;
        write_head(self.out, value_type, header.shape(), Some(count))?;
        let (out, mut written) = (&mut *self.out, 0u64);
        pieces.for_each(&mut |band| {
            // A band's non-zeros come row by row, columns increasing: already in order.
            let mut failed = Ok(());
            band.for_each_nonzero(|r, c, v| {
                if failed.is_ok() {
                    written += 1;
                    failed = write_entry(out, value_type, (r, c), v);
                }
            });
            failed.map(|()| true)
        })?;
        if written != count {
            return Err(Error::invalid("the input changed while it was read"));
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Frames and other data types have no MatrixMarket form.
fn refused(data_type: DataType) -> Error {
    MTX.cannot_hold(
        format!("a {data_type}"),
        "MatrixMarket has no labels or column types",
    )
}

/// The banner, the value type comment and the size line of a general file: `array` without
/// `entries`, `coordinate` with them.
fn write_head(
    out: &mut dyn Write,
    value_type: ValueType,
    (rows, cols): (u64, u64),
    entries: Option<u64>,
) -> Result<()> {
    let field = match value_type.is_float() {
        true => "real",
        false => "integer",
    };
    let (layout, size) = match entries {
        Some(n) => ("coordinate", format!("{rows} {cols} {n}")),
        None => ("array", format!("{rows} {cols}")),
    };
    writeln!(out, "%%MatrixMarket matrix {layout} {field} general")?;
    writeln!(out, "{TYPE_COMMENT}{}", value_type.name())?;
    writeln!(out, "{size}")?;
    Ok(())
}

/// Calls `each` with windows of the dense matrix of `header` in the `array` layout's order:
/// runs of whole columns of at most [`BAND_BYTES`], left to right, or, where one column is
/// larger, each column in runs of rows.
fn for_each_column_run(
    windows: &dyn Windows,
    header: &Header,
    each: &mut dyn FnMut(Band) -> Result<()>,
) -> Result<()> {
    let (rows, cols) = header.shape();
    let size = header.matrix_value_type().map_or(8, ValueType::size) as u64;
    let column_bytes = rows.max(1).saturating_mul(size);
    let (run_rows, run_cols) = match BAND_BYTES / column_bytes {
        0 => ((BAND_BYTES / size).max(1), 1),
        n => (rows.max(1), n),
    };
    for c0 in (0..cols).step_by(run_cols as usize) {
        for r0 in (0..rows).step_by(run_rows as usize) {
            let rows = r0..(r0 + run_rows).min(rows);
            each(windows.window(0, rows, c0..(c0 + run_cols).min(cols))?)?;
        }
    }
    Ok(())
}

/// Writes a dense band's values column by column, one a line.
fn write_columns(out: &mut dyn Write, value_type: ValueType, band: &Band) -> Result<()> {
    let densified;
    let values = match &band.cells {
        Cells::Dense(values) => values,
        _ => {
            densified = band.dense_values()?;
            &densified
        }
    };
    let (rows, cols) = (band.rows as usize, band.cols as usize);
    for c in 0..cols {
        for r in 0..rows {
            let v = values
                .get(r * cols + c)
                .ok_or_else(|| Error::invalid("a dense band shorter than its shape"))?;
            let at = (band.first_row + r as u64, band.first_col + c as u64);
            writeln!(out, "{}", value_text(value_type, at, v)?)?;
        }
    }
    Ok(())
}

/// Writes one entry (0-based), 1-based.
fn write_entry(
    out: &mut dyn Write,
    value_type: ValueType,
    (r, c): (u64, u64),
    v: Value,
) -> Result<()> {
    let text = value_text(value_type, (r, c), v)?;
    writeln!(out, "{} {} {text}", r + 1, c + 1)?;
    Ok(())
}

/// The text of the value at (`r`, `c`) (0-based) of a matrix of `value_type`.
fn value_text(value_type: ValueType, (r, c): (u64, u64), v: Value) -> Result<String> {
    let v = v.convert(value_type).unwrap_or(v);
    // f32 values as the f64 they widen to: exact for readers of `real` as f64.
    let v = match v {
        Value::F32(x) if !x.is_nan() => Value::F64(f64::from(x)),
        other => other,
    };
    format_value(v).map_err(|e| MTX.cannot_hold(format!("the entry ({}, {})", r + 1, c + 1), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::Range;
    use std::sync::Mutex;

    /// Windows that record what is asked of them.
    struct Asked(Mutex<Vec<(Range<u64>, Range<u64>)>>);

    impl Windows for Asked {
        fn window(&self, _: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
            self.0.lock().unwrap().push((rows.clone(), cols.clone()));
            Ok(Band::dense(rows, cols, Values::F64(Vec::new())))
        }
    }

    fn runs(rows: u64, cols: u64) -> Vec<(Range<u64>, Range<u64>)> {
        let asked = Asked(Mutex::new(Vec::new()));
        let header = Header::matrix(DataType::DenseMatrix, rows, cols, ValueType::F64);
        for_each_column_run(&asked, &header, &mut |_| Ok(())).unwrap();
        asked.0.into_inner().unwrap()
    }

    #[test]
    fn array_files_are_read_in_runs_of_whole_columns_or_of_one_columns_rows() {
        // 1000 columns of 4096 f64 rows: 512 whole columns make a band.
        assert_eq!(runs(4096, 1000), [(0..4096, 0..512), (0..4096, 512..1000)]);
        // A column of 3e6 f64 rows is larger than a band: each in runs of 2^21 rows.
        let band_rows = BAND_BYTES / 8;
        assert_eq!(
            runs(3_000_000, 2),
            [
                (0..band_rows, 0..1),
                (band_rows..3_000_000, 0..1),
                (0..band_rows, 1..2),
                (band_rows..3_000_000, 1..2),
            ]
        );
        assert!(runs(0, 3).is_empty() && runs(3, 0).is_empty());
    }
}
