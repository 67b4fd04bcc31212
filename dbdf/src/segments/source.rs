//! A folder of segments as one object: each segment a `.dbdf` source of its rows, windows cut
//! from the segments they overlap.

use std::ops::Range;
use std::path::Path;

use super::{folder_name, segment_path};
use crate::pipe::{Band, DbdfSource, Source, Windows};
use serde_daphne::lowlevel::{read_sidecar, Meta};
use serde_daphne::Header;
use serde_daphne::{Error, Result};

/// The object of a folder of segments (DAPHNE's segmented layout), read segment by segment.
pub struct SegmentsSource {
    segments: Vec<DbdfSource>,
    /// Each segment's path or URL.
    names: Vec<String>,
    /// Where each segment's rows start in the object, and where the last ends.
    starts: Vec<u64>,
    headers: Vec<Header>,
    input_len: u64,
}

impl SegmentsSource {
    /// Opens the folder at `folder`: its segments `NAME_segment_1`, `_2`, ... (each indexed
    /// and checked against its sidecar), and the local sidecar `folder.meta` where there is
    /// one.
    ///
    /// # Errors
    /// As [`super::read`].
    pub(crate) fn open(folder: &Path) -> Result<SegmentsSource> {
        let count = count_segments(folder)?;
        let mut segments = Vec::with_capacity(count);
        for i in 1..=count {
            let path = segment_path(folder, i)?;
            let named = path.display().to_string();
            let source = DbdfSource::open(&path).map_err(|e| in_segment(&named, e))?;
            segments.push((named, source));
        }
        SegmentsSource::of_segments(segments, read_sidecar(folder)?)
    }

    /// The object of `segments` (each named, in order, opened already: files or objects),
    /// checked against the folder's local sidecar `local`, where there is one.
    ///
    /// # Errors
    /// As [`super::read`].
    pub(crate) fn of_segments(
        named: Vec<(String, DbdfSource)>,
        local: Option<Meta>,
    ) -> Result<SegmentsSource> {
        let mut segments = Vec::with_capacity(named.len());
        let mut names = Vec::with_capacity(named.len());
        let mut starts = vec![0u64];
        let mut whole: Option<Header> = None;
        let mut input_len = 0;
        for (i, (name, source)) in (1..).zip(named) {
            let at = |e: Error| in_segment(&name, e);
            let [header] = source.headers() else {
                return Err(at(Error::invalid(format!(
                    "a segment holds one object, this one {}",
                    source.headers().len()
                ))));
            };
            let rows = header.rows();
            whole = Some(match whole {
                None => header.clone(),
                Some(so_far) => joined(&so_far, header).map_err(at)?,
            });
            starts.push(starts[i - 1] + rows);
            input_len += source.input_len();
            segments.push(source);
            names.push(name);
        }
        let header = whole.ok_or_else(|| Error::invalid("no segments"))?;
        if let Some(meta) = local {
            check_local_sidecar(&meta, &header)?;
        }
        Ok(SegmentsSource {
            segments,
            names,
            starts,
            headers: vec![header],
            input_len,
        })
    }
}

/// `error` in the segment called `name`.
fn in_segment(name: &str, error: Error) -> Error {
    Error::invalid(format!("{name}: {error}"))
}

/// How many segments the folder holds: `NAME_segment_1` to `_n`, none missing in between
/// (a missing one would drop its rows without a word).
fn count_segments(folder: &Path) -> Result<usize> {
    let name = folder_name(folder)?;
    let prefix = super::segment_prefix(name);
    let entries = std::fs::read_dir(folder).map_err(|e| {
        Error::invalid(format!(
            "{}: not a folder of segments ({e})",
            folder.display()
        ))
    })?;
    let mut numbers = Vec::new();
    for entry in entries {
        let file = entry?.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        if let Ok(i) = rest.parse::<usize>() {
            numbers.push(i);
        }
    }
    numbers.sort_unstable();
    if numbers.is_empty() {
        return Err(Error::invalid(format!(
            "{}: no segments ({prefix}1, ...): not DAPHNE's segmented layout",
            folder.display()
        )));
    }
    if let Some(missing) = (1..).zip(&numbers).find(|(want, &have)| *want != have) {
        return Err(Error::invalid(format!(
            "{}: segment {} is missing ({} segments found, numbered up to {})",
            folder.display(),
            missing.0,
            numbers.len(),
            numbers[numbers.len() - 1]
        )));
    }
    Ok(numbers.len())
}

/// The header of two consecutive parts of one object: the rows added up, all else equal.
fn joined(so_far: &Header, next: &Header) -> Result<Header> {
    let mut expected = next.clone();
    set_rows(&mut expected, so_far.rows());
    if &expected != so_far {
        return Err(Error::invalid(format!(
            "this segment ({}) does not continue the ones before it ({})",
            describe(next),
            describe(so_far)
        )));
    }
    let mut header = so_far.clone();
    set_rows(&mut header, so_far.rows() + next.rows());
    Ok(header)
}

/// Sets the rows of a matrix's or frame's header.
pub(super) fn set_rows(header: &mut Header, to: u64) {
    match header {
        Header::DenseMatrix { rows, .. }
        | Header::CsrMatrix { rows, .. }
        | Header::Frame { rows, .. } => *rows = to,
        Header::Scalar { .. } => {}
    }
}

fn describe(header: &Header) -> String {
    let (rows, cols) = header.shape();
    match header.matrix_value_type() {
        Some(vt) => format!("a {rows} x {cols} {} of {vt}", header.data_type()),
        None => format!("a {rows} x {cols} {}", header.data_type()),
    }
}

/// Checks the local sidecar (`folder.meta`) against the whole object.
fn check_local_sidecar(meta: &Meta, header: &Header) -> Result<()> {
    let (rows, cols) = header.shape();
    let value_types: Vec<_> = match header {
        Header::Frame { columns, .. } => columns.iter().map(|c| Some(c.value_type)).collect(),
        _ => vec![header.matrix_value_type()],
    };
    if (meta.rows, meta.cols) != (rows, cols) || meta.value_types != value_types {
        return Err(Error::invalid(format!(
            "{}: says {} x {} ({}), the segments hold {}",
            meta.path,
            meta.rows,
            meta.cols,
            meta.value_types
                .iter()
                .map(|vt| vt.map_or_else(|| "?".to_owned(), |vt| vt.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
            describe(header)
        )));
    }
    Ok(())
}

crate::pipe::windowed_source!(SegmentsSource {
    fn stored_bytes(&self, index: usize) -> Option<u64> {
        (index == 0).then_some(self.input_len)
    }

    fn files(&self) -> Option<Vec<(String, Range<u64>)>> {
        let rows = self.starts.windows(2).map(|w| w[0]..w[1]);
        Some(self.names.iter().cloned().zip(rows).collect())
    }
});

impl Windows for SegmentsSource {
    fn window(&self, index: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        let mut band: Option<Band> = None;
        // The segments that overlap the rows: from the last start at or before the first row.
        let first = self.starts.partition_point(|&s| s <= rows.start).max(1) - 1;
        for (k, segment) in self.segments.iter().enumerate().skip(first) {
            let (start, end) = (self.starts[k], self.starts[k + 1]);
            if start >= rows.end && band.is_some() {
                break;
            }
            let (lo, hi) = (rows.start.max(start), rows.end.min(end));
            if lo >= hi && !(band.is_none() && rows.is_empty()) {
                continue;
            }
            let mut part = segment.window(index, lo - start..hi.max(lo) - start, cols.clone())?;
            part.first_row = lo;
            match &mut band {
                None => band = Some(part),
                Some(band) => band.append(part)?,
            }
        }
        band.ok_or_else(|| Error::invalid(format!("rows {rows:?} are outside the object")))
    }
}
