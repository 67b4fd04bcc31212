//! A MatrixMarket array file read in place with no scratch file (a remote input, which may
//! have no local disk to spare), general or symmetric: its values come column by column, so a group of rows is
//! read in a pass over every value, those of the group parsed into row-major cells. A
//! matrix within [`GROUP_BYTES`] is read in one pass and held (any window is cut from it); a
//! larger one gives its bands in order only, one group in memory, a pass a group. The first
//! pass parses and checks every value, so that a malformed file fails before any band.

use std::io::{BufRead, BufReader};
use std::ops::Range;
use std::sync::Arc;

use super::array::ArrayHead;
use super::csr_source::GROUP_BYTES;
use super::entries::Symmetry;
use super::head::MTX;
use super::negate;
use crate::pipe::BAND_BYTES;
use crate::pipe::{band_rows, bands_of_groups, row_bytes, window_bands, Band, Source, Windows};
use crate::storage::Stream;
use crate::text::parse_value;
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::{with_value_type, with_values};
use serde_daphne::{Element, Error, Header, ReadAt, Result, Values};

/// A remote array file's rows, held a group at a time.
pub(crate) struct ArrayRows {
    headers: [Header; 1],
    data: Arc<dyn ReadAt>,
    head: ArrayHead,
    /// The rows held, row-major, from row `held.start`.
    cells: Values,
    held: Range<u64>,
    /// Rows a group holds; fewer than the matrix's when it is read in several passes.
    group_rows: u64,
    input_len: u64,
}

impl ArrayRows {
    /// The array file `data` (after `head`), its first group of rows read in a pass that
    /// checks every value.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::ForeignInput`] naming the line and what is wrong (a
    /// malformed value, too few or too many values); I/O errors.
    pub(crate) fn open(data: &Arc<dyn ReadAt>, head: ArrayHead) -> Result<ArrayRows> {
        let row = head.cols * head.value_type.size() as u64;
        let group_rows = (GROUP_BYTES / row.max(1)).clamp(1, head.rows.max(1));
        let mut source = ArrayRows {
            headers: [Header::DenseMatrix {
                rows: head.rows,
                cols: head.cols,
                value_type: head.value_type,
            }],
            data: Arc::clone(data),
            cells: Values::F64(Vec::new()),
            held: 0..0,
            group_rows,
            input_len: data.size()?,
            head,
        };
        source.cells = source.read_rows(0..group_rows, true)?;
        source.held = 0..group_rows;
        Ok(source)
    }

    /// Whether the matrix is read a group of rows at a time.
    fn grouped(&self) -> bool {
        self.group_rows < self.head.rows
    }

    /// Rows `keep`, row-major, from a pass over the values: each value of those rows parsed
    /// (every value, when `check_all`; a symmetric file's values of those columns too,
    /// mirrored), the count of values checked.
    fn read_rows(&self, keep: Range<u64>, check_all: bool) -> Result<Values> {
        let head = &self.head;
        let (rows, cols, vt) = (head.rows, head.cols, head.value_type);
        let (symmetry, total) = (head.symmetry, head.values());
        // Where each column's values start: symmetric files list the lower triangle, skew
        // ones below the diagonal.
        let first = |col: u64| match symmetry {
            Symmetry::General => 0,
            Symmetry::Symmetric => col,
            Symmetry::Skew => col + 1,
        };
        let body = Stream::new(Arc::clone(&self.data), head.body_at..self.input_len)?;
        let mut reader = BufReader::with_capacity(1 << 20, body);
        let mut line = Vec::new();
        let mut line_number = head.head_lines;
        let (mut count, mut row, mut col) = (0u64, first(0), 0u64);
        Ok(with_value_type!(vt, T => {
            let mut out = zeroed_vec::<T>(((keep.end - keep.start) * cols) as usize)?;
            loop {
                line.clear();
                if reader.read_until(b'\n', &mut line)? == 0 {
                    break;
                }
                line_number += 1;
                let text = line.trim_ascii();
                if text.is_empty() {
                    continue;
                }
                if count == total {
                    return Err(head.too_many(line_number));
                }
                let mirrored = symmetry != Symmetry::General && row != col;
                let (kept, mirror_kept) = (keep.contains(&row), mirrored && keep.contains(&col));
                if kept || mirror_kept || check_all {
                    let malformed = |what: &str| {
                        let shown = String::from_utf8_lossy(text);
                        MTX.error(format!("line {line_number}: {what} {shown:?}"))
                    };
                    let value = std::str::from_utf8(text)
                        .ok()
                        .and_then(|t| parse_value(t, vt))
                        .ok_or_else(|| malformed(&format!("malformed {vt} number")))?;
                    let cell = |v| T::from_value(v).ok_or_else(|| malformed("out of range:"));
                    if kept {
                        out[((row - keep.start) * cols + col) as usize] = cell(value)?;
                    }
                    if mirrored {
                        let mirror = match symmetry {
                            Symmetry::Skew => negate(value).ok_or_else(|| {
                                malformed(&format!("no negative in {vt} for"))
                            })?,
                            _ => value,
                        };
                        if mirror_kept {
                            out[((col - keep.start) * cols + row) as usize] = cell(mirror)?;
                        }
                    }
                }
                count += 1;
                row += 1;
                while row >= rows && col < cols {
                    col += 1;
                    row = first(col);
                }
            }
            if count != total {
                return Err(head.too_few(count));
            }
            T::into_values(out)
        }))
    }

    /// Rows `rows` (held) and columns `cols`, as a dense band.
    fn cut(&self, rows: Range<u64>, cols: Range<u64>) -> Band {
        let width = self.head.cols as usize;
        let (c0, c1) = (cols.start as usize, cols.end as usize);
        let at = |r: u64| (r - self.held.start) as usize * width;
        let values = with_values!(&self.cells, v => {
            let mut out = Vec::with_capacity((rows.end - rows.start) as usize * (c1 - c0));
            for r in rows.clone() {
                out.extend_from_slice(&v[at(r) + c0..at(r) + c1]);
            }
            Element::into_values(out)
        });
        Band::dense(rows, cols, values)
    }
}

impl Source for ArrayRows {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    /// Bands of at most [`BAND_BYTES`], cut from each group of rows as it is read.
    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let header = &self.headers[index];
        let step = band_rows(header, row_bytes(header, None), multiple, BAND_BYTES).max(1);
        if !self.grouped() {
            return window_bands(self, index, header.shape(), step, each);
        }
        let (rows, cols) = (self.head.rows, self.head.cols);
        let groups: Vec<Range<u64>> = (0..rows)
            .step_by(self.group_rows as usize)
            .map(|start| start..(start + self.group_rows).min(rows))
            .collect();
        bands_of_groups(&groups, step, multiple, each, |g, band| {
            if self.held != groups[g] {
                // The old group goes first: memory holds one.
                self.cells = Values::F64(Vec::new());
                self.cells = self.read_rows(groups[g].clone(), false)?;
                self.held = groups[g].clone();
            }
            Ok(self.cut(band, 0..cols))
        })
    }

    /// Windows of a matrix held whole.
    fn windows(&self) -> Option<&dyn Windows> {
        (!self.grouped()).then_some(self as &dyn Windows)
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    /// Streamed in passes, where it is not held whole.
    fn reads_in_place(&self) -> bool {
        self.grouped()
    }
}

impl Windows for ArrayRows {
    fn window(&self, _: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        if rows.start < self.held.start || rows.end > self.held.end {
            return Err(Error::invalid(
                "a window of a MatrixMarket array file read a group of rows at a time",
            ));
        }
        Ok(self.cut(rows, cols))
    }
}

#[cfg(test)]
mod tests {
    use super::super::csr_source::tests::assert_bands_in_order;
    use super::super::{read, ReadOptions};
    use crate::mtx::source::MtxSource;
    use crate::pipe::{read_objects, Source};
    use crate::storage::Input;

    /// Array files, general, symmetric and skew, read as a remote one is (the tests' group
    /// is 64 bytes, so a few rows a pass): in bands of every height they give the whole read's matrix, and a malformed
    /// value in the last group fails the open, before any band.
    #[test]
    fn array_files_read_a_group_of_rows_a_pass_give_the_whole_read() {
        let dir = std::env::temp_dir().join(format!("dbdf_mtx_array_rows_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (13u64, 3u64, "real", "general"),
            (1, 9, "integer", "general"),
            (40, 1, "real", "general"),
            (7, 7, "real", "symmetric"),
            (6, 6, "integer", "skew-symmetric"),
        ];
        for (rows, cols, field, symmetry) in cases {
            let mut text = format!("%%MatrixMarket matrix array {field} {symmetry}\n% a comment\n");
            text.push_str(&format!("{rows} {cols}\n"));
            let values = match symmetry {
                "general" => rows * cols,
                "symmetric" => rows * (rows + 1) / 2,
                _ => rows * (rows - 1) / 2,
            };
            for k in 0..values {
                match field {
                    "real" => text.push_str(&format!("{}\n", k as f64 * 0.5 - 7.25)),
                    _ => text.push_str(&format!("{}\n", k as i64 - 4)),
                }
                if k == 5 {
                    text.push_str("  \n"); // blank lines are no values
                }
            }
            let path = dir.join(format!("a{rows}x{cols}{symmetry}.mtx"));
            std::fs::write(&path, &text).unwrap();
            let whole = read(&path).unwrap();
            let open = || {
                let input = Input::local(&path).unwrap();
                MtxSource::open_input(&input, &ReadOptions::default()).unwrap()
            };
            let mut source = open();
            let grouped = rows > (super::GROUP_BYTES / (cols * 8)).max(1);
            assert_eq!(source.windows().is_none(), grouped, "{rows}x{cols}");
            for multiple in [1, 2, 5] {
                assert_bands_in_order(&mut source, rows, multiple, &format!("{rows}x{cols}"));
            }
            assert_eq!(
                read_objects(&mut open()).unwrap(),
                vec![whole],
                "{rows}x{cols}"
            );
            // The last value malformed, and one value short.
            let last = text.trim_end().rsplit_once('\n').unwrap().0;
            for (bad, message) in [
                (format!("{last}\n1x\n"), "malformed"),
                (format!("{last}\n"), "found"),
            ] {
                std::fs::write(&path, &bad).unwrap();
                let input = Input::local(&path).unwrap();
                let e = MtxSource::open_input(&input, &ReadOptions::default())
                    .err()
                    .unwrap_or_else(|| panic!("{rows}x{cols}: {bad:?} read"));
                assert_eq!(e.kind(), serde_daphne::ErrorKind::ForeignInput, "{e}");
                assert!(e.to_string().contains(message), "{e}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
