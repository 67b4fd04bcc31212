//! Objects held whole: a source for formats read whole (Binsparse, and what a
//! MatrixMarket coordinate file's entries build), and a sink for formats written whole.

use std::ops::Range;

use super::{
    band_rows, row_bytes, window_bands, Band, InputMetadata, Pieces, Sink, Source, Windows,
    BAND_BYTES,
};
use serde_daphne::Header;
use serde_daphne::{Object, Result};

/// Objects in memory as a source: each held as one band, given out in bands (copies) of
/// about [`BAND_BYTES`], so a sink's passes never hold a second whole copy.
pub struct Held {
    /// Rows per band when set, instead of about [`BAND_BYTES`].
    band_rows: Option<u64>,
    headers: Vec<Header>,
    whole: Vec<Band>,
    input_len: u64,
    metadata: InputMetadata,
}

impl Held {
    /// `objects`, read from `input_len` bytes of input, with what it records beyond the cells (`metadata`).
    ///
    /// # Errors
    /// Objects whose cells do not fit their headers.
    pub fn new(objects: Vec<Object>, input_len: u64, metadata: InputMetadata) -> Result<Held> {
        let headers: Vec<Header> = objects.iter().map(|o| o.header().clone()).collect();
        // Objects in memory justify holding them again (a sink written whole).
        let held: u128 = headers.iter().map(super::band::least_held_bytes).sum();
        let input_len = input_len.max(u64::try_from(held).unwrap_or(u64::MAX));
        let whole = objects
            .into_iter()
            .map(|o| Band::of_object(0, o))
            .collect::<Result<_>>()?;
        Ok(Held {
            band_rows: None,
            headers,
            whole,
            input_len,
            metadata,
        })
    }
}

impl Held {
    /// Gives bands of `rows` rows (rounded up to a multiple of what the sink asks), instead
    /// of about [`BAND_BYTES`]: to test sinks with bands of any height.
    pub fn band_rows(mut self, rows: u64) -> Held {
        self.band_rows = Some(rows.max(1));
        self
    }
}

impl Source for Held {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let header = &self.headers[index];
        let whole = &self.whole[index];
        let stored = whole.entries() * 12;
        let step = match self.band_rows {
            Some(rows) => rows.next_multiple_of(multiple.max(1)),
            None => band_rows(
                header,
                row_bytes(header, Some(stored)),
                multiple,
                BAND_BYTES,
            ),
        };
        window_bands(self, index, (whole.rows, whole.cols), step, each)
    }

    fn windows(&self) -> Option<&dyn Windows> {
        Some(self)
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn metadata(&self) -> InputMetadata {
        self.metadata.clone()
    }

    fn reads_in_place(&self) -> bool {
        false
    }
}

impl Windows for Held {
    fn window(&self, index: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        Ok(self.whole[index].window(rows, cols))
    }
}

/// The writer of a format written whole: told every object and what the input records beyond them.
type WriteWhole<'w> = Box<dyn FnOnce(Vec<Object>, InputMetadata) -> Result<Vec<String>> + 'w>;

/// A sink that collects each object's bands, then writes them all at once: memory holds
/// the objects, as the format's writer needs them.
pub struct Collect<'w> {
    objects: Vec<Object>,
    metadata: InputMetadata,
    holds_one: Option<&'static str>,
    write: WriteWhole<'w>,
}

impl<'w> Collect<'w> {
    /// A sink that hands the objects, and what the input records beyond them, to `write`
    /// (which gives the warnings); `holds_one` names a format of one object.
    pub fn new(
        holds_one: Option<&'static str>,
        write: impl FnOnce(Vec<Object>, InputMetadata) -> Result<Vec<String>> + 'w,
    ) -> Collect<'w> {
        Collect {
            objects: Vec::new(),
            metadata: InputMetadata::default(),
            holds_one,
            write: Box::new(write),
        }
    }
}

impl Sink for Collect<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        self.holds_one
    }

    fn write(&mut self, _: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        self.metadata = pieces.metadata();
        self.objects.push(pieces.collect()?);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        (self.write)(self.objects, self.metadata)
    }
}

/// Every object of `source`, read whole: for formats whose whole reads are their source's.
///
/// # Errors
/// The source's errors.
pub(crate) fn read_objects(source: &mut dyn Source) -> Result<Vec<Object>> {
    let mut objects = Vec::new();
    let collect = Collect::new(None, |read, _| {
        objects = read;
        Ok(Vec::new())
    });
    super::copy(source, Box::new(collect))?;
    Ok(objects)
}

/// Writes `objects` through `sink`, from a copy held as one band each: whole writes built on
/// a format's sink.
///
/// # Errors
/// The sink's errors.
pub(crate) fn write_objects(objects: &[Object], sink: Box<dyn Sink + '_>) -> Result<()> {
    let mut held = Held::new(objects.to_vec(), 0, InputMetadata::default())?;
    super::copy(&mut held, sink).map(drop)
}

/// Rows `rows` and columns `cols` of object `index` of `source`, read into memory: by the
/// source's windows where it has them, else from its bands, keeping only the window's cells
/// (a band at a time beyond them), stopping after the window's last row.
///
/// # Errors
/// A window outside the object, or no object `index`; the source's errors.
pub fn read_window(
    source: &mut dyn Source,
    index: usize,
    rows: Range<u64>,
    cols: Range<u64>,
) -> Result<Object> {
    let Some(header) = source.headers().get(index).cloned() else {
        return Err(serde_daphne::Error::invalid(format!(
            "there is no object {index}: the input holds {}",
            source.headers().len()
        )));
    };
    let (r, c) = header.shape();
    if rows.start > rows.end || rows.end > r || cols.start > cols.end || cols.end > c {
        return Err(serde_daphne::Error::invalid(format!(
            "rows {}..{} and columns {}..{} were asked for, but object {index} is {r} x {c}",
            rows.start, rows.end, cols.start, cols.end
        )));
    }
    if rows.is_empty() {
        return Band::empty(&header).window(0..0, cols).into_object(&header);
    }
    if let Some(windows) = source.windows() {
        return windows.window(index, rows, cols)?.into_object(&header);
    }
    let mut picked: Option<Band> = None;
    source.for_each_band(index, 1, &mut |band| {
        let (start, end) = (band.first_row, band.first_row + band.rows);
        if end > rows.start && start < rows.end {
            let part = band.window(start.max(rows.start)..end.min(rows.end), cols.clone());
            match &mut picked {
                Some(picked) => picked.append(part)?,
                None => picked = Some(part),
            }
        }
        Ok(end < rows.end)
    })?;
    match picked {
        Some(band) if band.rows == rows.end - rows.start => band.into_object(&header),
        _ => Err(serde_daphne::Error::invalid(format!(
            "the input gave fewer rows of object {index} than its header's {r}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_daphne::Values;

    /// Objects already in memory justify holding them whole again: a held source counts
    /// their cells as its input, so that a sink written whole takes them, however large
    /// beside the (absent) input.
    #[test]
    fn held_objects_count_their_cells_as_their_input() {
        let dense = Object::dense(1000, 3, Values::F64(vec![0.0; 3000])).unwrap();
        let csr = Object::csr(99, 5, vec![0; 100], Vec::new(), Values::F64(Vec::new())).unwrap();
        let held = Held::new(vec![dense, csr], 0, InputMetadata::default()).unwrap();
        assert_eq!(held.input_len(), 1000 * 3 * 8 + 100 * 8);
        let given = Held::new(Vec::new(), 7, InputMetadata::default()).unwrap();
        assert_eq!(given.input_len(), 7);
    }
}
