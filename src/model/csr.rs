//! Building CSR arrays from entries that arrive in any order, in two passes over a source:
//! count each row's entries ([`RowCounts`]), turn the counts into row offsets by a running
//! sum, place every entry in its row ([`CsrFill`]), then put each row in column order. Every
//! reader and converter that assembles CSR uses this one routine. And CSR arrays with
//! indices of other types ([`CsrIndex`]).

use crate::error::ErrorDetails;
use std::ops::Range;

use crate::codes::ValueType;
use crate::error::{Error, Result};
use crate::wire::values::zeroed_vec;

/// The first pass: how many entries each row has.
#[derive(Debug)]
pub struct RowCounts {
    /// `counts[r + 1]` is row `r`'s count, so that a running sum gives the offsets in place.
    counts: Vec<usize>,
}

impl RowCounts {
    /// Counts for `rows` rows, all zero.
    ///
    /// # Errors
    /// [`crate::ErrorKind::OutOfMemory`] when `rows + 1` offsets do not fit memory.
    pub fn new(rows: usize) -> Result<RowCounts> {
        let len = rows
            .checked_add(1)
            .ok_or(Error::from(ErrorDetails::OutOfMemory { bytes: u128::MAX }))?;
        Ok(RowCounts {
            counts: zeroed_vec(len)?,
        })
    }

    /// One more entry in `row` (which must be below the number of rows).
    #[inline]
    pub fn add(&mut self, row: usize) {
        self.counts[row + 1] += 1;
    }

    /// `n` more entries in `row`.
    #[inline]
    pub fn add_n(&mut self, row: usize, n: usize) {
        self.counts[row + 1] += n;
    }

    /// The row offsets: `rows + 1` running sums of the counts, starting at 0.
    pub fn into_offsets(mut self) -> Vec<usize> {
        for r in 1..self.counts.len() {
            self.counts[r] += self.counts[r - 1];
        }
        self.counts
    }
}

/// The second pass: entries placed in the rows the first pass counted.
#[derive(Debug)]
pub struct CsrFill<T> {
    row_offsets: Vec<usize>,
    /// Where each row's next entry goes.
    next: Vec<usize>,
    col_indices: Vec<usize>,
    values: Vec<T>,
}

impl<T: Copy + bytemuck::Zeroable + Send> CsrFill<T> {
    /// Room for the entries that `row_offsets` (from [`RowCounts::into_offsets`]) counts.
    ///
    /// # Errors
    /// [`crate::ErrorKind::OutOfMemory`].
    pub fn new(row_offsets: Vec<usize>) -> Result<CsrFill<T>> {
        let nnz = row_offsets.last().copied().unwrap_or(0);
        let mut next = zeroed_vec(row_offsets.len())?;
        next.copy_from_slice(&row_offsets);
        let (mut col_indices, mut values) = (zeroed_vec(nnz)?, zeroed_vec(nnz)?);
        // Entries land anywhere: have the fresh pages zeroed on every core first.
        crate::pages::fault_in_on_every_core(&mut col_indices);
        crate::pages::fault_in_on_every_core(&mut values);
        Ok(CsrFill {
            col_indices,
            values,
            next,
            row_offsets,
        })
    }

    /// Places an entry; `false` when its row already holds as many as were counted (the
    /// source gave more on the second pass than on the first).
    #[inline]
    pub fn push(&mut self, row: usize, col: usize, value: T) -> bool {
        let k = self.next[row];
        if k == self.row_offsets[row + 1] {
            return false;
        }
        self.col_indices[k] = col;
        self.values[k] = value;
        self.next[row] = k + 1;
        true
    }

    /// The CSR arrays `(row_offsets, col_indices, values)`, each row in column order; `None`
    /// when a row received fewer entries than counted.
    pub fn finish(self) -> Option<(Vec<usize>, Vec<usize>, Vec<T>)> {
        let CsrFill {
            row_offsets,
            next,
            mut col_indices,
            mut values,
        } = self;
        if next[..next.len() - 1] != row_offsets[1..] {
            return None;
        }
        drop(next);
        // Entries of a row may arrive out of column order (blocks side by side, blocks or
        // records in any order).
        sort_rows(&row_offsets, &mut col_indices, &mut values);
        Some((row_offsets, col_indices, values))
    }
}

/// Sorts by column the rows of CSR arrays whose columns are out of order (the others are
/// only looked at), each value moving with its column.
pub fn sort_rows<T: Copy>(row_offsets: &[usize], col_indices: &mut [usize], values: &mut [T]) {
    for w in row_offsets.windows(2) {
        let (start, end) = (w[0], w[1]);
        if col_indices[start..end].windows(2).any(|p| p[1] < p[0]) {
            let mut row: Vec<(usize, T)> = col_indices[start..end]
                .iter()
                .copied()
                .zip(values[start..end].iter().copied())
                .collect();
            // Stable: a cell given twice keeps its entries in the order they came.
            row.sort_by_key(|&(c, _)| c);
            for (k, (c, x)) in row.into_iter().enumerate() {
                col_indices[start + k] = c;
                values[start + k] = x;
            }
        }
    }
}

/// The integer types CSR offsets and indices can be read as: sprs's index types (`u16`,
/// `u32`, `u64`, `usize`, `i32`, `i64`, ...) that are plain bytes.
pub trait CsrIndex: sprs::SpIndex + bytemuck::Pod {
    /// The value type of the same width and sign, for errors.
    fn value_type() -> ValueType {
        let signed = Self::min_value() < Self::zero();
        match (signed, std::mem::size_of::<Self>()) {
            (false, 1) => ValueType::U8,
            (false, 2) => ValueType::U16,
            (false, 4) => ValueType::U32,
            (true, 1) => ValueType::I8,
            (true, 2) => ValueType::I16,
            (true, 4) => ValueType::I32,
            (true, _) => ValueType::I64,
            (false, _) => ValueType::U64,
        }
    }
}

impl<I: sprs::SpIndex + bytemuck::Pod> CsrIndex for I {}

/// `indices` as `I`, every one known to fit: moved when `I` has `usize`'s layout (all fit
/// in its sign), else copied into fresh memory faulted in first (see `pages`).
pub(crate) fn convert_indices<I: CsrIndex>(indices: Vec<usize>) -> Result<Vec<I>> {
    let indices = match bytemuck::allocation::try_cast_vec::<usize, I>(indices) {
        Ok(moved) => return Ok(moved),
        Err((_, indices)) => indices,
    };
    let mut out: Vec<I> = Vec::new();
    out.try_reserve_exact(indices.len()).map_err(|_| {
        Error::from(ErrorDetails::OutOfMemory {
            bytes: (indices.len() * std::mem::size_of::<I>()) as u128,
        })
    })?;
    crate::pages::fault_in_spare(&mut out, indices.len());
    out.extend(indices.iter().map(|&i| I::from_usize_unchecked(i)));
    Ok(out)
}

/// Checks CSR arrays as sprs's checked constructor does, the columns on every core: `rows +
/// 1` offsets from 0, never decreasing, ending at the number of indices, which is the number
/// of values; each row's indices inside `0..cols` and strictly increasing.
///
/// # Errors
/// [`crate::ErrorKind::InvalidValue`] naming the first fault (the first row, for the columns).
pub(crate) fn check_arrays<I: CsrIndex>(
    (rows, cols): (usize, usize),
    indptr: &[I],
    indices: &[I],
    values: usize,
) -> Result<()> {
    if indptr.len() != rows + 1 {
        return Err(invalid(format!(
            "{} row offsets for {rows} rows",
            indptr.len()
        )));
    }
    if indices.len() != values {
        return Err(invalid(format!(
            "{} indices for {values} values",
            indices.len()
        )));
    }
    // Branch-free, so that it vectorizes; the loop below names the first fault.
    let proper = indptr.first() == Some(&I::zero())
        && indptr[1..]
            .iter()
            .zip(indptr)
            .fold(0u32, |descents, (b, a)| descents | u32::from(b < a))
            == 0
        && indptr.last().and_then(|l| l.try_index()) == Some(values);
    if proper {
        return check_columns(cols, indptr, indices);
    }
    let mut previous = 0;
    for (r, offset) in indptr.iter().enumerate() {
        match offset.try_index() {
            Some(o) if (r > 0 || o == 0) && o >= previous && o <= values => previous = o,
            _ => {
                return Err(invalid(format!(
                    "row offset {offset:?} at {r} (after {previous})"
                )))
            }
        }
    }
    if previous != values {
        return Err(invalid(format!(
            "the last row offset is {previous}, not {values}"
        )));
    }
    check_columns(cols, indptr, indices)
}

fn invalid(message: String) -> Error {
    Error::invalid(format!("not a valid CSR matrix: {message}"))
}

/// The columns' half of [`check_arrays`], for offsets known to be valid.
///
/// # Errors
/// As [`check_arrays`].
pub(crate) fn check_columns<I: CsrIndex>(cols: usize, indptr: &[I], indices: &[I]) -> Result<()> {
    let rows = indptr.len() - 1;
    let fault = |rows: Range<usize>| match columns_hold(indptr, indices, cols, rows.clone()) {
        true => None,
        false => first_column_fault(indptr, indices, cols, rows),
    };
    // Small arrays (a tile's) are checked here: no threads to start for them.
    let faults = match indices.len() < 1 << 20 {
        true => vec![fault(0..rows)],
        false => {
            let runs = crate::threads::runs_of_rows(rows, indices.len(), |e| {
                indptr.partition_point(|o| o.index_unchecked() < e)
            });
            crate::threads::on_every_core(runs, fault)
        }
    };
    match faults.into_iter().flatten().next() {
        Some(message) => Err(invalid(message)),
        None => Ok(()),
    }
}

/// Whether the column indices of `rows` all lie in `0..cols` and increase strictly within
/// each row, by passes that vectorize: the indices' least and greatest, and the descents
/// (an index not above the one before it), which must all be where rows start.
fn columns_hold<I: CsrIndex>(indptr: &[I], indices: &[I], cols: usize, rows: Range<usize>) -> bool {
    let (s, e) = (
        indptr[rows.start].index_unchecked(),
        indptr[rows.end].index_unchecked(),
    );
    let run = &indices[s..e];
    let Some(&first) = run.first() else {
        return true;
    };
    // One pass for the three, descents counted in `u32` per piece: lanes as wide as the
    // indices vectorize wider than `usize` ones (measured faster).
    let (mut lo, mut hi, mut descents) = (first, first, 0usize);
    for (next, prev) in run[1..].chunks(1 << 16).zip(run.chunks(1 << 16)) {
        let mut piece = 0u32;
        for (&next, &prev) in next.iter().zip(prev) {
            lo = lo.min(next);
            hi = hi.max(next);
            piece += u32::from(next <= prev);
        }
        descents += piece as usize;
    }
    if lo.try_index().is_none() || hi.try_index().is_none_or(|h| h >= cols) {
        return false;
    }
    if descents == 0 {
        return true;
    }
    let starts = &indptr[rows.start + 1..rows.end];
    if run.len() * 16 < starts.len() {
        // Far fewer entries than rows: each descent looked up among the row starts.
        return run.windows(2).enumerate().all(|(k, w)| {
            w[1] > w[0]
                || starts
                    .binary_search_by(|o| o.index_unchecked().cmp(&(s + k + 1)))
                    .is_ok()
        });
    }
    // Each row start once (empty rows repeat an offset), without a branch per row.
    let (mut at_row_starts, mut previous) = (0usize, s);
    for offset in starts {
        let b = offset.index_unchecked();
        let start = b != previous && b < e;
        let (at, before) = if start { (b, b - 1) } else { (s, s) };
        at_row_starts += usize::from(start && indices[at] <= indices[before]);
        previous = b;
    }
    descents == at_row_starts
}

/// The first faulty column index of `rows`, described.
fn first_column_fault<I: CsrIndex>(
    indptr: &[I],
    indices: &[I],
    cols: usize,
    rows: Range<usize>,
) -> Option<String> {
    for r in rows {
        let row = &indices[indptr[r].index_unchecked()..indptr[r + 1].index_unchecked()];
        // The next column allowed: inside the columns and above the previous one is one
        // unsigned comparison (a negative index is taken as the largest).
        let mut next = 0usize;
        for &i in row {
            let c = i.try_index().unwrap_or(usize::MAX);
            if c.wrapping_sub(next) >= cols - next {
                let after = match next {
                    0 => String::new(),
                    n => format!(", after {}", n - 1),
                };
                return Some(format!(
                    "column index {i:?} in row {r} (of {cols} columns{after})"
                ));
            }
            next = c + 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_in_any_order_give_sorted_rows() {
        // The 3 x 4 matrix [[0, 5, 0, 6], [0, 0, 0, 0], [7, 0, 8, 0]], entries shuffled.
        let entries = [(2, 2, 8.0), (0, 3, 6.0), (2, 0, 7.0), (0, 1, 5.0)];
        let mut counts = RowCounts::new(3).unwrap();
        entries.iter().for_each(|&(r, _, _)| counts.add(r));
        let mut fill = CsrFill::<f64>::new(counts.into_offsets()).unwrap();
        for &(r, c, x) in &entries {
            assert!(fill.push(r, c, x));
        }
        assert!(!fill.push(1, 0, 1.0), "row 1 was counted empty");
        let (offsets, cols, values) = fill.finish().unwrap();
        assert_eq!(offsets, [0, 2, 2, 4]);
        assert_eq!(cols, [1, 3, 0, 2]);
        assert_eq!(values, [5.0, 6.0, 7.0, 8.0]);
    }

    #[test]
    fn a_row_left_short_is_reported() {
        let mut counts = RowCounts::new(2).unwrap();
        counts.add_n(1, 2);
        let mut fill = CsrFill::<u8>::new(counts.into_offsets()).unwrap();
        assert!(fill.push(1, 0, 1));
        assert!(fill.finish().is_none());
    }

    /// Arrays with far fewer entries than rows take the path that looks each descent up
    /// among the row starts: a descent inside a row is found, one at a row start is not.
    #[test]
    fn a_descent_inside_a_row_is_found_among_many_empty_rows() {
        let rows = 64;
        let mut indptr = vec![0usize; rows + 1];
        // Row 10 holds columns 5 and 7, row 40 columns 2 and 3: the descent 7 -> 2 is at
        // row 40's start.
        indptr[11..].fill(2);
        indptr[41..].fill(4);
        assert!(check_arrays((rows, 8), &indptr, &[5, 7, 2, 3], 4).is_ok());
        let message = check_arrays((rows, 8), &indptr, &[5, 7, 3, 2], 4)
            .unwrap_err()
            .to_string();
        assert!(message.contains("row 40"), "{message}");
        let message = check_arrays((rows, 8), &indptr, &[7, 5, 2, 3], 4)
            .unwrap_err()
            .to_string();
        assert!(message.contains("row 10"), "{message}");
    }

    #[test]
    fn offsets_that_descend_or_do_not_start_at_zero_are_named() {
        let message = check_arrays((3, 4), &[0usize, 2, 1, 2], &[0, 1], 2)
            .unwrap_err()
            .to_string();
        assert!(message.contains("row offset 1 at 2 (after 2)"), "{message}");
        let message = check_arrays((2, 4), &[1usize, 1, 2], &[0, 1], 2)
            .unwrap_err()
            .to_string();
        assert!(message.contains("row offset 1 at 0"), "{message}");
        let message = check_arrays((2, 4), &[0i32, 1, 1], &[0, 1], 2)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("the last row offset is 1, not 2"),
            "{message}"
        );
    }
}
