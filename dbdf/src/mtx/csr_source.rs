//! A MatrixMarket coordinate file on the pipe: its entries come in any order, so each row's
//! entries are counted first ([`super::coordinates::count`]), then rows are read into the
//! CSR arrays they make, held with 4-byte column indices (a matrix's columns fit a `u32`, as
//! a block's do: 12 bytes an `f64` entry, not 16). A matrix whose arrays fit the bound
//! ([`GROUP_BYTES`] remote, [`LOCAL_GROUP_BYTES`] local) is read in one more pass and held:
//! any window is cut from it. A larger
//! one is read a group of rows at a time, each group in a pass of its own over the file
//! (every line parsed and checked each time), and given out as bands in order only: memory
//! holds one group, whatever the file's size.

use std::ops::Range;
use std::sync::Arc;

use super::bands::Plan;
use super::coordinates::{count, CoordinateFile, CsrArrays};
use super::entries::MtxHeader;
use super::passes::Counted;
use super::ReadOptions;
use crate::driver::Duplicates;
use crate::pipe::BAND_BYTES;
use crate::pipe::{
    band_rows, bands_of_groups, row_bytes, window_bands, Band, Cells, Source, Windows,
};
use serde_daphne::with_values;
use serde_daphne::Element;
use serde_daphne::Header;
use serde_daphne::{DataType, Error, ReadAt, Result, Values};

/// The most bytes of CSR arrays (a column index and a value an entry) held at once, for a
/// remote input (within the 256 MiB a remote conversion may take, with the streams its
/// passes read) and a local one (tests: a few entries, so that small files are read in
/// several groups).
pub(crate) const GROUP_BYTES: u64 = if cfg!(test) { 64 } else { 64 << 20 };
pub(crate) const LOCAL_GROUP_BYTES: u64 = if cfg!(test) { 64 } else { 512 << 20 };

/// A coordinate file's rows, held a group at a time.
pub(crate) struct CoordinateSource {
    headers: [Header; 1],
    /// The rows held: their arrays, from row `held_from`.
    arrays: CsrArrays,
    held_from: u64,
    /// The groups of rows read in passes of their own, where there is more than one.
    groups: Option<Box<Groups>>,
    /// The values that are not zero, of every row, where known before the bands.
    nonzero: Option<u64>,
    input_len: u64,
}

/// What reading a group of rows again takes.
struct Groups {
    data: Arc<dyn ReadAt>,
    data_at: u64,
    first_line: usize,
    layout: MtxHeader,
    duplicates: Duplicates,
    /// What the first pass counted, and the groups of rows.
    counted: Counted,
    plan: Plan,
}

impl Groups {
    /// Group `g`'s CSR arrays, read in a pass over the file.
    fn read(&self, g: usize) -> Result<CsrArrays> {
        let file = CoordinateFile {
            data: &self.data,
            data_at: self.data_at,
            first_line: self.first_line,
            layout: &self.layout,
            duplicates: self.duplicates,
        };
        let read = file.place_group(&self.counted, &self.plan, g, None);
        Ok(read.map_err(|message| super::MTX.error(message))?.0)
    }

    /// Each group's rows, in order.
    fn rows(&self) -> Vec<Range<u64>> {
        let (shift, rows) = (self.counted.shift, self.layout.rows);
        let groups = self.plan.groups.iter();
        groups.map(|g| self.plan.rows(g, shift, rows)).collect()
    }
}

impl CoordinateSource {
    /// The coordinate file whose entries start at byte `data_at` (line `first_line`): its
    /// rows counted, then its first group of rows (all of them, where they fit in
    /// `group_bytes`) read.
    ///
    /// # Errors
    /// A message naming the line and what is wrong.
    pub(super) fn open(
        data: &Arc<dyn ReadAt>,
        (data_at, first_line): (u64, usize),
        layout: &MtxHeader,
        group_bytes: u64,
        options: &ReadOptions,
    ) -> std::result::Result<CoordinateSource, String> {
        let counted = count(data, data_at, layout)?;
        // Held while read: a row within its band, a column index and a value's bits an entry.
        let plan = Plan::new(&counted, group_bytes / 14);
        let file = CoordinateFile {
            data,
            data_at,
            first_line,
            layout,
            duplicates: options.duplicates,
        };
        let progress = options.progress.as_ref();
        let (arrays, nonzero) = file.place_group(&counted, &plan, 0, progress)?;
        let header = Header::matrix(
            DataType::CsrMatrix,
            layout.rows,
            layout.cols,
            arrays.values.value_type(),
        );
        let groups = (plan.groups.len() > 1).then(|| {
            Box::new(Groups {
                data: Arc::clone(data),
                data_at,
                first_line,
                layout: *layout,
                duplicates: options.duplicates,
                counted,
                plan,
            })
        });
        Ok(CoordinateSource {
            headers: [header],
            arrays,
            held_from: 0,
            groups,
            nonzero,
            input_len: data.size().map_err(|e| e.to_string())?,
        })
    }

    /// Rows `rows` (held) and columns `cols`, as a CSR band.
    fn cut(&self, rows: Range<u64>, cols: Range<u64>) -> Band {
        let a = &self.arrays;
        let (c0, c1) = (cols.start as u32, cols.end.min(u64::from(u32::MAX) + 1));
        let at = |r: u64| (r - self.held_from) as usize;
        let mut row_offsets = Vec::with_capacity((rows.end - rows.start) as usize + 1);
        row_offsets.push(0);
        // Whole rows: as many indices as they hold (no regrowing copies).
        let mut col_indices = match (c0, c1) == (0, a.cols) {
            true => Vec::with_capacity(a.offsets[at(rows.end)] - a.offsets[at(rows.start)]),
            false => Vec::new(),
        };
        // Each row's entries within the columns: a range of its sorted columns.
        let mut spans = Vec::with_capacity(row_offsets.capacity());
        for r in at(rows.start)..at(rows.end) {
            let (start, end) = (a.offsets[r], a.offsets[r + 1]);
            let row = &a.columns[start..end];
            let lo = start + row.partition_point(|&c| c < c0);
            let hi = start + row.partition_point(|&c| u64::from(c) < c1);
            col_indices.extend(a.columns[lo..hi].iter().map(|&c| (c - c0) as usize));
            row_offsets.push(col_indices.len());
            spans.push(lo..hi);
        }
        let values = with_values!(&a.values, v => {
            let mut out = Vec::with_capacity(col_indices.len());
            spans.iter().for_each(|span| out.extend_from_slice(&v[span.clone()]));
            Element::into_values(out)
        });
        Band {
            first_row: rows.start,
            first_col: cols.start,
            rows: rows.end - rows.start,
            cols: cols.end - cols.start,
            cells: Cells::Csr {
                row_offsets,
                col_indices,
                values,
            },
        }
    }
}

impl Source for CoordinateSource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    /// Bands of at most half [`BAND_BYTES`], cut from each group of rows as it is read.
    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let header = &self.headers[index];
        let stored = row_bytes(header, self.stored_bytes(index));
        // Half the pipe's band: the matrix is held, so its bands are copies (16 bytes an
        // entry beside the 12 the arrays keep), and those in flight are what the output adds
        // to the peak.
        let step = band_rows(header, stored, multiple, BAND_BYTES / 2);
        let Some(groups) = self.groups.take() else {
            return window_bands(self, index, header.shape(), step, each);
        };
        let spans = groups.rows();
        let cols = self.arrays.cols;
        let done = bands_of_groups(&spans, step, multiple, each, |g, rows| {
            let group = &spans[g];
            if (self.held_from, self.arrays.rows) != (group.start, group.end - group.start) {
                // The old group goes first: memory holds one.
                self.arrays.columns = Vec::new();
                self.arrays.values = Values::F64(Vec::new());
                self.arrays = groups.read(g)?;
                self.held_from = group.start;
            }
            Ok(self.cut(rows, 0..cols))
        });
        self.groups = Some(groups);
        done
    }

    /// Windows of a matrix held whole.
    fn windows(&self) -> Option<&dyn Windows> {
        match self.groups {
            None => Some(self),
            Some(_) => None,
        }
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    /// What a band takes in memory per entry: its index as `usize` and its value.
    fn stored_bytes(&self, _: usize) -> Option<u64> {
        let value = self.arrays.values.value_type().size() as u64;
        let entries = match &self.groups {
            Some(groups) => (0..groups.counted.fine_bands())
                .map(|f| groups.counted.fine(f) as usize)
                .sum(),
            None => self.arrays.columns.len(),
        };
        Some(entries as u64 * (8 + value))
    }

    fn count_nonzero(&mut self, _: usize) -> Result<Option<u64>> {
        Ok(self.nonzero)
    }

    /// The file is read into the CSR arrays its entries build.
    fn reads_in_place(&self) -> bool {
        false
    }
}

impl Windows for CoordinateSource {
    fn window(&self, _: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        let held = self.held_from..self.held_from + self.arrays.rows;
        if rows.start < held.start || rows.end > held.end {
            return Err(Error::invalid(
                "a window of a MatrixMarket file read a group of rows at a time",
            ));
        }
        Ok(self.cut(rows, cols))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{read, ReadOptions};
    use crate::mtx::source::MtxSource;
    use crate::pipe::{read_objects, Source};

    /// Checks that `source`'s bands, `multiple` asked for, follow each other from row 0 to
    /// `rows`, each a multiple high but the last.
    pub(in crate::mtx) fn assert_bands_in_order(
        source: &mut dyn Source,
        rows: u64,
        multiple: u64,
        what: &str,
    ) {
        let mut seen = Vec::new();
        source
            .for_each_band(0, multiple, &mut |band| {
                seen.push((band.first_row, band.rows));
                Ok(true)
            })
            .unwrap();
        let mut next = 0;
        for (i, &(first, height)) in seen.iter().enumerate() {
            assert_eq!(first, next, "{what} {multiple}: {seen:?}");
            let last = i + 1 == seen.len();
            assert!(
                last || height % multiple == 0,
                "{what} {multiple}: {seen:?}"
            );
            next += height;
        }
        assert_eq!(next, rows, "{what} {multiple}");
    }

    /// Entries in a scrambled order, general and symmetric: read a few rows at a time (the
    /// tests' group is a handful of entries), in bands of every height, they give the whole
    /// read's matrix, and the non-zeros of the whole file before the first band.
    #[test]
    fn groups_of_rows_read_in_passes_of_their_own_give_the_whole_read() {
        let dir = std::env::temp_dir().join(format!("dbdf_mtx_groups_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for symmetry in ["general", "symmetric"] {
            let (n, mut entries) = (23u64, Vec::new());
            for k in 0..90u64 {
                let (r, c) = ((k * 7 + 3) % n, (k * 11 + 5) % n);
                let (r, c) = if symmetry == "symmetric" {
                    (r.max(c), r.min(c))
                } else {
                    (r, c)
                };
                if !entries.iter().any(|&(a, b, _)| (a, b) == (r, c)) {
                    entries.push((r, c, if k % 9 == 0 { 0.0 } else { k as f64 - 40.5 }));
                }
            }
            // Scrambled: every seventh entry first, then the rest.
            entries.sort_by_key(|&(r, c, _)| ((r * 31 + c * 17) % 7, c, r));
            let mut text = format!("%%MatrixMarket matrix coordinate real {symmetry}\n");
            text.push_str(&format!("{n} {n} {}\n", entries.len()));
            for (r, c, v) in &entries {
                text.push_str(&format!("{} {} {v}\n", r + 1, c + 1));
            }
            let path = dir.join(format!("{symmetry}.mtx"));
            std::fs::write(&path, &text).unwrap();
            let whole = read(&path).unwrap();
            let mut source = MtxSource::open(&path, &ReadOptions::default()).unwrap();
            assert!(source.windows().is_none(), "{symmetry}: read in groups");
            let nonzero = entries.iter().filter(|e| e.2 != 0.0).count() as u64;
            let mirrored = entries.iter().filter(|e| e.2 != 0.0 && e.0 != e.1).count() as u64;
            let expected = nonzero + if symmetry == "symmetric" { mirrored } else { 0 };
            assert_eq!(
                source.count_nonzero(0).unwrap(),
                Some(expected),
                "{symmetry}"
            );
            for multiple in [1, 3, 5] {
                assert_bands_in_order(&mut source, n, multiple, symmetry);
            }
            let mut source = MtxSource::open(&path, &ReadOptions::default()).unwrap();
            assert_eq!(
                read_objects(&mut source).unwrap(),
                vec![whole],
                "{symmetry}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
