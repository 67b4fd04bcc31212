//! MatrixMarket array files (every value, column by column) on the pipe: a local one through
//! a binary column-major scratch file beside it ([`MtxArraySource`]); their head, which the
//! remote one's reader ([`super::array_rows`]) shares.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::entries::Symmetry;
use super::head::{parse_head, read_head, MTX};
use crate::input::read_exact_at;
use crate::input::write_le;
use crate::pipe::{Band, Windows};
use crate::storage::Stream;
use crate::text::parse_value;
use serde_daphne::lowlevel::scratch_file;
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::with_value_type;
use serde_daphne::Element;
use serde_daphne::Header;
use serde_daphne::ReadAt;
use serde_daphne::Result;
use serde_daphne::ValueType;

/// A general local MatrixMarket array file on the pipe. Its values come column by column,
/// the other way round from the rows sinks take, so the one documented intermediate: the
/// first read parses every value into an unnamed scratch file beside the input (or in the
/// temporary directory), in binary, column-major; windows then read each column's part with
/// positional reads. Memory holds a band; the disk a binary copy of the matrix. Integer
/// files without this crate's type comment are read once more first: they are `u64` when a
/// value exceeds `i64::MAX`.
pub(crate) struct MtxArraySource {
    scratch: File,
    headers: [Header; 1],
    input_len: u64,
}

/// What the lines before a general array file's values say, and where the values start.
pub(super) struct ArrayHead {
    pub(super) rows: u64,
    pub(super) cols: u64,
    pub(super) value_type: ValueType,
    /// Which values are listed: every one, or a square matrix's lower triangle (with its
    /// diagonal, or without for a skew-symmetric one).
    pub(super) symmetry: Symmetry,
    /// The byte after the size line, and the lines up to it.
    pub(super) body_at: u64,
    pub(super) head_lines: usize,
}

impl ArrayHead {
    /// The head of the array file `data`; `None` for files the array sources do not take
    /// (coordinate files, symmetric ones that are not square, integer files no type
    /// holds), which the whole read reads or refuses.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::ForeignInput`] for a malformed head; I/O errors.
    pub(super) fn read(data: &Arc<dyn ReadAt>) -> Result<Option<ArrayHead>> {
        let mut reader =
            BufReader::with_capacity(64 << 10, Stream::new(Arc::clone(data), 0..u64::MAX)?);
        let (head, body_at, head_lines) = read_head(&mut reader).map_err(|e| MTX.error(e))?;
        let head = parse_head(&head).map_err(|e| MTX.error(e))?;
        let [rows, cols] = head.dims[..] else {
            return Ok(None);
        };
        if head.coordinate || (head.symmetry != Symmetry::General && rows != cols) {
            return Ok(None);
        }
        let value_type = match head.value_type {
            ValueType::I64 if !head.typed_by_comment => match integer_type(data, head_lines)? {
                Some(vt) => vt,
                None => return Ok(None), // the whole read says what is wrong
            },
            vt => vt,
        };
        Ok(Some(ArrayHead {
            rows,
            cols,
            value_type,
            symmetry: head.symmetry,
            body_at,
            head_lines,
        }))
    }

    /// How many values are listed.
    pub(super) fn values(&self) -> u64 {
        let n = self.rows;
        match self.symmetry {
            Symmetry::General => self.rows * self.cols,
            Symmetry::Symmetric => n * (n + 1) / 2,
            Symmetry::Skew => n * n.saturating_sub(1) / 2,
        }
    }

    /// The error for a value on line `line_number` beyond those the size line declares.
    pub(super) fn too_many(&self, line_number: usize) -> serde_daphne::Error {
        MTX.error(format!(
            "line {line_number}: more than the {} values the size line declares",
            self.values()
        ))
    }

    /// The error for a file that ends after `count` values, fewer than declared.
    pub(super) fn too_few(&self, count: u64) -> serde_daphne::Error {
        MTX.error(format!(
            "expected {} values after the size line, found {count}",
            self.values()
        ))
    }
}

impl MtxArraySource {
    /// Reads the values of the general array file `data` at `path` (after `head`) into the
    /// scratch file, beside the input or, where its folder takes none, in the temporary folder.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::ForeignInput`] naming the line and what is wrong (a
    /// malformed value, too few or too many values); I/O errors.
    pub(crate) fn open(
        data: &Arc<dyn ReadAt>,
        head: &ArrayHead,
        path: &Path,
    ) -> Result<MtxArraySource> {
        let input_len = data.size()?;
        let body = Stream::new(Arc::clone(data), head.body_at..input_len)?;
        let mut reader = BufReader::with_capacity(1 << 20, body);
        let (rows, cols, vt) = (head.rows, head.cols, head.value_type);
        let mut line_number = head.head_lines;
        let in_temp = || scratch_file(&std::env::temp_dir().join("dbdf"));
        let scratch = scratch_file(path).or_else(|_| in_temp())?;
        let mut out = BufWriter::with_capacity(1 << 20, &scratch);
        let mut line = String::new();
        let mut count = 0u64;
        with_value_type!(vt, T => loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                break;
            }
            line_number += 1;
            if line.trim().is_empty() {
                continue;
            }
            if count == rows * cols {
                return Err(head.too_many(line_number));
            }
            let value = parse_value(&line, vt).and_then(T::from_value).ok_or_else(|| {
                MTX.error(format!("line {line_number}: malformed {vt} number {:?}", line.trim()))
            })?;
            write_le(&mut out, &[value])?;
            count += 1;
        });
        if count != rows * cols {
            return Err(head.too_few(count));
        }
        out.flush()?;
        drop(out);
        Ok(MtxArraySource {
            scratch,
            headers: [Header::DenseMatrix {
                rows,
                cols,
                value_type: vt,
            }],
            input_len,
        })
    }
}

crate::pipe::windowed_source!(MtxArraySource);

impl Windows for MtxArraySource {
    fn window(&self, _: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        let (all_rows, _) = self.headers[0].shape();
        let (nr, nc) = (
            (rows.end - rows.start) as usize,
            (cols.end - cols.start) as usize,
        );
        let vt = self.headers[0]
            .matrix_value_type()
            .unwrap_or(ValueType::F64);
        let values = with_value_type!(vt, T => {
            let mut out = zeroed_vec::<T>(nr * nc)?;
            let mut column = zeroed_vec::<T>(nr)?;
            let size = std::mem::size_of::<T>() as u64;
            for (k, c) in cols.clone().enumerate() {
                let at = (c * all_rows + rows.start) * size;
                read_exact_at(&self.scratch, bytemuck::cast_slice_mut(&mut column), at)?;
                for (r, &x) in column.iter().enumerate() {
                    out[r * nc + k] = x;
                }
            }
            T::into_values(out)
        });
        Ok(Band::dense(rows, cols, values))
    }
}

/// The value type of an integer array file without a type comment, from a first pass over
/// its values (after line `head_lines`): `i64`, or `u64` when a value exceeds `i64::MAX`.
/// `None` for a file the whole read refuses (a negative value beside such a one, or a value
/// that is no integer), whose error it words.
fn integer_type(data: &Arc<dyn ReadAt>, head_lines: usize) -> Result<Option<ValueType>> {
    let all = Stream::new(Arc::clone(data), 0..u64::MAX)?;
    let mut reader = BufReader::with_capacity(1 << 20, all);
    let mut line = String::new();
    let (mut lines, mut negative, mut beyond) = (0usize, false, false);
    while reader.read_line(&mut line)? > 0 {
        lines += 1;
        let text = line.trim();
        if lines > head_lines && !text.is_empty() {
            match text.parse::<i64>() {
                Ok(x) => negative |= x < 0,
                Err(_) if text.parse::<u64>().is_ok() => beyond = true,
                Err(_) => return Ok(None),
            }
        }
        line.clear();
    }
    Ok(match (negative, beyond) {
        (true, true) => None,
        (_, true) => Some(ValueType::U64),
        _ => Some(ValueType::I64),
    })
}
