//! One pipe for every conversion: each format is a [`Source`] of bands of rows and a
//! [`Sink`] of them, and [`pump`] moves the bands from any source to any sink, with the
//! progress callback, cancellation and value type changes in one place.
//!
//! A source gives each object's header first, then its cells a band of rows at a time, in
//! order (and, where it can read any rectangle cheaply, through [`Windows`]). A sink says
//! what it wants of each object ([`Want`]: bands whose height is a multiple of some number,
//! or tiles) and how many passes it makes over it ([`Sink::passes`]: two for a target that
//! must know a count before the cells, such as MatrixMarket's size line or a `.dbdf` block
//! whose type depends on its non-zeros); the pump reads the source once per pass. Memory
//! holds the bands in flight, so a conversion is bounded by a band, not by the matrix.
//! Sources that cannot give rows in order (a MatrixMarket coordinate file) build an
//! intermediate and say so in their docs.

mod band;
mod dbdf;
mod held;
mod in_place;
mod projected;
mod regroup;
mod spill;

pub(crate) use band::row_bytes;
pub use band::{band_rows, Band, Cells};
#[cfg(feature = "remote")]
pub(crate) use dbdf::streamed_sidecars;
pub use dbdf::{DbdfSink, DbdfSource};
pub(crate) use held::{read_objects, write_objects};
pub use held::{read_window, Collect, Held};
pub(crate) use in_place::{source_in_field, InPlaceOrHeld};
pub(crate) use projected::Projected;
pub use projected::{project, Projection};
pub(crate) use regroup::{bands_of_groups, Regroup};
pub(crate) use spill::Spilled;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_daphne::lowlevel::Progress;
use serde_daphne::Header;
use serde_daphne::Options;
use serde_daphne::{DataType, Error, Result, ValueType};

/// Bytes of cells per band where the sink leaves the height to the source.
pub const BAND_BYTES: u64 = 16 << 20;

/// The objects of an input and their cells, band by band.
pub trait Source: Send {
    /// The objects' headers, in order, known before any cell is read.
    fn headers(&self) -> &[Header];

    /// Calls `each` with the bands of rows of object `index` in order, every column, each a
    /// multiple of `multiple` rows high (the last may be shorter), until it returns `false`.
    /// Called again, it starts over (a second pass). By default, windows of whole rows,
    /// about [`BAND_BYTES`] each.
    ///
    /// # Errors
    /// Malformed input, I/O errors, and `each`'s errors.
    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let header = &self.headers()[index];
        let step = band_rows(
            header,
            row_bytes(header, self.stored_bytes(index)),
            multiple,
            BAND_BYTES,
        );
        let Some(windows) = self.windows() else {
            return Err(Error::invalid(
                "a source without windows gives its own bands",
            ));
        };
        window_bands(windows, index, header.shape(), step, each)
    }

    /// Calls `each` with the object's cells as tiles in the source's own order (each cell
    /// in one tile, tiles in any order), where that is cheaper than rows (SystemDS's
    /// blocks, a tiled `.dbdf` file's blocks in file order); `None` for sources without
    /// such an order.
    fn for_each_tile(
        &mut self,
        index: usize,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Option<Result<()>> {
        let _ = (index, each);
        None
    }

    /// The size of the tiles [`Source::for_each_tile`] gives of object `index` (rows,
    /// columns; on the grid from (0, 0), cut at the edges), if it gives any. The pump takes
    /// them where a sink takes tiles in any order and they are the tiles it wants, or the
    /// source has no [`Windows`] to cut those from.
    fn own_tiles(&self, index: usize) -> Option<(u32, u32)> {
        let _ = index;
        None
    }

    /// Reads of any rectangle, where the source has them cheaply (a file with fixed-size
    /// cells, objects in memory).
    fn windows(&self) -> Option<&dyn Windows> {
        None
    }

    /// Whether a sink that can read this source either way should read its bands in order
    /// rather than narrow windows: each window fetches its own span of whole rows (an
    /// object in a store), so a row of narrow windows would fetch those rows once for each.
    fn prefers_bands(&self) -> bool {
        false
    }

    /// Bytes of input in all, for progress.
    fn input_len(&self) -> u64;

    /// Input bytes object `index` takes, where known (to size bands of CSR matrices).
    fn stored_bytes(&self, index: usize) -> Option<u64> {
        let _ = index;
        None
    }

    /// Whether object `index` has a non-zero cell, where the source knows without a pass.
    fn nonzero(&self, index: usize) -> Option<bool> {
        let _ = index;
        None
    }

    /// How many cells of object `index` are non-zero, where the source can count them more
    /// cheaply than a pass over its bands (a CSR matrix's values alone); `None` otherwise.
    ///
    /// # Errors
    /// Malformed input, I/O errors.
    fn count_nonzero(&mut self, index: usize) -> Result<Option<u64>> {
        let _ = index;
        Ok(None)
    }

    /// The files (paths or URLs) its one object's rows are in, with their rows, in order: a
    /// folder's segments; `None` for one file.
    fn files(&self) -> Option<Vec<(String, Range<u64>)>> {
        None
    }

    /// What the input says beyond its cells that a sink of the same family may keep.
    fn metadata(&self) -> InputMetadata {
        InputMetadata::default()
    }

    /// Whether the input is read as the bands are asked for (in place or streamed), rather
    /// than read whole and held in memory (a layout the format's source does not stream).
    fn reads_in_place(&self) -> bool {
        true
    }
}

/// Implements [`Source`] for a type that reads any rectangle of its objects (it is its own
/// [`Windows`]) from its fields `headers` and `input_len`, with any further methods given in
/// braces: the one shell of every windowed source.
macro_rules! windowed_source {
    ($type:ty $({ $($more:item)* })?) => {
        impl $crate::pipe::Source for $type {
            fn headers(&self) -> &[serde_daphne::Header] {
                &self.headers
            }

            fn windows(&self) -> Option<&dyn $crate::pipe::Windows> {
                Some(self)
            }

            fn input_len(&self) -> u64 {
                self.input_len
            }

            $($($more)*)?
        }
    };
}
pub(crate) use windowed_source;

/// Calls `each` with windows of whole rows, `step` rows each, of object `index` (`shape`),
/// until it returns `false`.
///
/// # Errors
/// The windows' errors and `each`'s.
pub(crate) fn window_bands(
    windows: &dyn Windows,
    index: usize,
    (rows, cols): (u64, u64),
    step: u64,
    each: &mut dyn FnMut(Band) -> Result<bool>,
) -> Result<()> {
    let step = step.max(1);
    for r0 in (0..rows).step_by(step as usize) {
        if !each(windows.window(index, r0..(r0 + step).min(rows), 0..cols)?)? {
            break;
        }
    }
    Ok(())
}

/// Calls `each` with the tiles of at most `tr x tc` of object `index` (`shape`), a row of
/// tiles after another, read as windows, until it returns `false`.
///
/// # Errors
/// The windows' errors and `each`'s.
pub(crate) fn window_tiles(
    windows: &dyn Windows,
    index: usize,
    (rows, cols): (u64, u64),
    (tr, tc): (u64, u64),
    each: &mut dyn FnMut(Band) -> Result<bool>,
) -> Result<()> {
    let (tr, tc) = (tr.max(1), tc.max(1));
    for r0 in (0..rows).step_by(tr as usize) {
        for c0 in (0..cols).step_by(tc as usize) {
            let tile = windows.window(index, r0..(r0 + tr).min(rows), c0..(c0 + tc).min(cols))?;
            if !each(tile)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Reads of any rectangle of a source's objects, from any thread.
pub trait Windows: Sync {
    /// Rows `rows` and columns `cols` of object `index`.
    ///
    /// # Errors
    /// As [`Source::for_each_band`].
    fn window(&self, index: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band>;
}

/// What an input records beyond its cells, for outputs that can record it too. Each field
/// is one kind of record, whichever format gives it; a sink keeps what its format can say.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct InputMetadata {
    /// The data type the input records its matrices were, where its bands come in another
    /// (a table's metadata records a CSR matrix read in dense bands).
    pub data_type: Option<DataType>,
    /// The size of the input's own tiles, rows and columns, where it stores its first object
    /// in tiles of one size on the grid from (0, 0) (SystemDS's blocks, a tiled `.dbdf`
    /// file's blocks): a `.dbdf` output keeps them when asked to
    /// ([`ConvertOptions::keep_tiles`](crate::convert::ConvertOptions::keep_tiles)).
    pub tile: Option<(u32, u32)>,
    /// How the input stores the matrix, in Binsparse's names for layouts (`"CSR"`, `"CSC"`,
    /// `"COO"`, `"DMAT"`, ...: the spec's vocabulary, common to sparse formats): a Binsparse
    /// file's or a scipy archive's. Outputs that can store it so keep it where none is asked
    /// (Binsparse).
    pub layout: Option<&'static str>,
    /// The user's own attributes the input carries (a Binsparse descriptor's, a Parquet or
    /// Arrow schema's metadata), which outputs that hold attributes keep under their own.
    pub attributes: serde_json::Map<String, serde_json::Value>,
    /// The names the input gives its objects, in order (a numpy archive's arrays): outputs
    /// that name their objects keep them where none are asked.
    pub names: Vec<String>,
}

impl InputMetadata {
    /// The input's user attributes with `asked` over them: what an output that holds
    /// attributes writes.
    pub(crate) fn attributes_under(
        &self,
        asked: &serde_json::Map<String, serde_json::Value>,
    ) -> serde_json::Map<String, serde_json::Value> {
        let mut attributes = self.attributes.clone();
        attributes.extend(asked.clone());
        attributes
    }
}

/// What a sink wants of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// Bands of whole rows, each a multiple of this many rows high (the last may be
    /// shorter).
    Bands(u64),
    /// Tiles of at most `rows x cols` on the grid from (0, 0), a row of tiles after another;
    /// sources without [`Windows`] give bands of `rows` instead.
    Tiles(u64, u64),
}

/// The objects of an output, written band by band.
pub trait Sink {
    /// What the sink wants of an object with `header`.
    fn wants(&self, header: &Header) -> Want {
        let _ = header;
        Want::Bands(1)
    }

    /// How many times the sink reads an object with `header` (for progress).
    fn passes(&self, header: &Header) -> u32 {
        let _ = header;
        1
    }

    /// The format's name when it holds one object only (`"MatrixMarket"`), for the error
    /// naming an input of several.
    fn holds_one(&self) -> Option<&'static str> {
        None
    }

    /// Writes the object with `header`, taking its cells from `pieces` (once per pass).
    ///
    /// # Errors
    /// What the target cannot hold; the source's errors; I/O errors.
    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()>;

    /// Finishes the output (atomically: until now nothing is at its path); warnings about
    /// what the output's readers will make of it, one line each.
    ///
    /// # Errors
    /// I/O errors.
    fn finish(self: Box<Self>) -> Result<Vec<String>>;

    /// [`Sink::finish`], and the sidecars of an output written as one stream, which the
    /// caller puts beside it as one set: `(suffix, bytes)`, `None` for a sidecar of the
    /// format this output has not (an old one goes). By default none.
    ///
    /// # Errors
    /// As [`Sink::finish`].
    fn finish_with_sidecars(self: Box<Self>) -> Result<(Vec<String>, MadeSidecars)> {
        Ok((self.finish()?, Vec::new()))
    }
}

/// The sidecars a sink made ([`Sink::finish_with_sidecars`]): `(suffix, bytes)`, `None` for
/// one to delete.
pub type MadeSidecars = Vec<(&'static str, Option<Vec<u8>>)>;

/// What a pump does besides moving cells.
#[derive(Clone, Default)]
pub struct PumpOptions {
    /// Converts every value to this type, exactly or not at all.
    pub value_type: Option<ValueType>,
    /// The data type of output matrices.
    pub data_type: Option<DataType>,
    /// Hears how far the pump has come, in bytes of input (each pass counted).
    pub progress: Option<Progress>,
    /// Stops the pump between bands when set, with an [`std::io::ErrorKind::Interrupted`]
    /// error.
    pub cancel: Option<Arc<AtomicBool>>,
}

/// Which side of the pump an error came from.
#[derive(Debug)]
pub enum Failed {
    /// Reading the input.
    Source(Error),
    /// Writing the output.
    Sink(Error),
}

/// The error, whichever side.
impl From<Failed> for Error {
    fn from(failed: Failed) -> Error {
        match failed {
            Failed::Source(e) | Failed::Sink(e) => e,
        }
    }
}

/// Moves every object of `source` into `sink`, then finishes it; the warnings it gives.
///
/// # Errors
/// [`Failed`], saying which side failed. A failure leaves no output.
pub fn pump(
    source: &mut dyn Source,
    mut sink: Box<dyn Sink + '_>,
    options: &PumpOptions,
) -> std::result::Result<Vec<String>, Failed> {
    let headers = output_headers(source.headers(), options).map_err(Failed::Source)?;
    if let (Some(what), n @ 2..) = (sink.holds_one(), headers.len()) {
        return Err(Failed::Source(Error::invalid(format!(
            "holds {n} objects, but {what} holds one"
        ))));
    }
    let work: u128 = headers
        .iter()
        .map(|h| {
            let (rows, cols) = h.shape();
            u128::from(rows.max(1)) * u128::from(cols.max(1)) * u128::from(sink.passes(h))
        })
        .sum();
    let progress = Tally {
        total: work.max(1),
        done: std::sync::Mutex::new(0),
        input: source.input_len(),
        report: options.progress.clone(),
    };
    for (index, header) in headers.iter().enumerate() {
        let mut pieces = Pieces {
            source: &mut *source,
            index,
            header,
            want: sink.wants(header),
            options,
            progress: &progress,
            source_failed: false,
        };
        if let Err(e) = sink.write(header, &mut pieces) {
            return Err(match pieces.source_failed {
                true => Failed::Source(e),
                false => Failed::Sink(e),
            });
        }
    }
    let warnings = sink.finish().map_err(Failed::Sink)?;
    if let Some(report) = &options.progress {
        report(progress.input, progress.input);
    }
    Ok(warnings)
}

/// [`pump`] without value or data type changes, progress or cancellation; the error
/// whichever side it came from.
///
/// # Errors
/// As [`pump`].
pub fn copy(source: &mut dyn Source, sink: Box<dyn Sink + '_>) -> Result<Vec<String>> {
    pump(source, sink, &PumpOptions::default()).map_err(Error::from)
}

/// Writes every object of `source` to a `.dbdf` file at `output` with `options`
/// (atomically), through [`DbdfSink`].
///
/// # Errors
/// The source's errors and [`serde_daphne::DbdfWriter`]'s. Nothing is left at `output`.
pub fn to_dbdf(source: &mut dyn Source, output: &std::path::Path, options: &Options) -> Result<()> {
    copy(source, Box::new(DbdfSink::create(output, options)?)).map(drop)
}

/// The headers of `headers`' objects as a sink gets them from the pump with `options`.
///
/// # Errors
/// A data type change the objects cannot take.
pub(crate) fn output_headers(headers: &[Header], options: &PumpOptions) -> Result<Vec<Header>> {
    headers.iter().map(|h| retype(h, options)).collect()
}

/// The header as the sink sees it: value type and data type changed as asked.
fn retype(header: &Header, options: &PumpOptions) -> Result<Header> {
    let mut header = header.clone();
    if let Some(vt) = options.value_type {
        header = match header {
            Header::Frame { rows, mut columns } => {
                columns.iter_mut().for_each(|c| c.value_type = vt);
                Header::Frame { rows, columns }
            }
            Header::Scalar { .. } => Header::Scalar { value_type: vt },
            other => {
                let (rows, cols) = other.shape();
                Header::matrix(other.data_type(), rows, cols, vt)
            }
        };
    }
    if let Some(data_type) = options.data_type {
        let (rows, cols) = header.shape();
        header = match (header, data_type) {
            (header, _) if header.data_type() == data_type => header,
            (Header::DenseMatrix { value_type, .. } | Header::CsrMatrix { value_type, .. }, _)
                if data_type.is_matrix() =>
            {
                Header::matrix(data_type, rows, cols, value_type)
            }
            (header, _) => {
                return Err(Error::invalid(format!(
                    "a {} cannot become a {data_type}",
                    header.data_type()
                )))
            }
        };
    }
    Ok(header)
}

/// How far a pump has come: cells moved, of all the passes' cells; shared by the threads
/// that read windows.
struct Tally {
    total: u128,
    /// Held while reporting, so reports never go backwards.
    done: std::sync::Mutex<u128>,
    input: u64,
    report: Option<Progress>,
}

impl Tally {
    /// Counts `cells` more and reports the share of the input they stand for.
    fn add(&self, cells: u128) {
        let Some(report) = &self.report else {
            return;
        };
        let Ok(mut done) = self.done.lock() else {
            return;
        };
        *done += cells;
        let share = u128::from(self.input) * *done / self.total;
        report((share as u64).min(self.input), self.input);
    }
}

/// An object's cells as a sink reads them: the pump's view of the source.
pub struct Pieces<'p> {
    source: &'p mut dyn Source,
    index: usize,
    header: &'p Header,
    want: Want,
    options: &'p PumpOptions,
    progress: &'p Tally,
    /// Whether a pass failed in the source (or converting its values).
    source_failed: bool,
}

impl Pieces<'_> {
    /// Whether [`Pieces::for_each_in_any_order`] gives the source's own tiles.
    pub(crate) fn takes_own_tiles(&self) -> bool {
        let Some((r, c)) = self.source.own_tiles(self.index) else {
            return false;
        };
        self.want == Want::Tiles(u64::from(r), u64::from(c)) || self.source.windows().is_none()
    }

    /// Whether a pass failed reading the source (or converting its values), not in the
    /// sink.
    pub(crate) fn source_failed(&self) -> bool {
        self.source_failed
    }

    /// The object's header, as the sink writes it.
    pub fn header(&self) -> &Header {
        self.header
    }

    /// The data type of the object in the source: the layout of its bands (CSR bands for
    /// CSR matrices, dense bands for the others).
    pub(crate) fn source_data_type(&self) -> DataType {
        self.source.headers()[self.index].data_type()
    }

    /// Whether the object has a non-zero cell, where the source knows without a pass.
    pub fn nonzero(&self) -> Option<bool> {
        match self.options.value_type {
            None => self.source.nonzero(self.index),
            Some(_) => None,
        }
    }

    /// How many cells are non-zero, where the source counts them more cheaply than a pass
    /// (only without a value type change, which may turn `-0.0` into `0`).
    ///
    /// # Errors
    /// The source's.
    pub fn count_nonzero(&mut self) -> Result<Option<u64>> {
        match self.options.value_type {
            None => self.source.count_nonzero(self.index),
            Some(_) => Ok(None),
        }
    }

    /// Whether the source's bands in order cost less than its windows
    /// ([`Source::prefers_bands`]).
    pub(crate) fn prefers_bands(&self) -> bool {
        self.source.prefers_bands()
    }

    /// Input bytes the object takes, where the source knows.
    pub fn stored_bytes(&self) -> Option<u64> {
        self.source.stored_bytes(self.index)
    }

    /// What the source keeps beyond the cells.
    pub fn metadata(&self) -> InputMetadata {
        self.source.metadata()
    }

    /// Reads of any rectangle of the object, where the source has them, in the value types
    /// the sink writes (as every band of [`Pieces::for_each`]).
    pub fn windows(&self) -> Option<impl Windows + '_> {
        let windows = self.source.windows()?;
        Some(ObjectWindows {
            windows,
            index: self.index,
            header: self.header,
            value_type: self.options.value_type,
            progress: self.progress,
        })
    }

    /// Every band of the object, in one object of its header (memory holds it whole: for
    /// targets written whole).
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::AllocationLimit`] for an object whose cells (a dense
    /// matrix's or a frame's; a sparse matrix's row offsets) would take more memory than the
    /// input and the default allowance ([`serde_daphne::Options::max_alloc`]) justify, before
    /// anything is read; as [`Pieces::for_each`].
    pub fn collect(&mut self) -> Result<serde_daphne::Object> {
        let least = band::least_held_bytes(self.header);
        let allowance = serde_daphne::Options::new().max_alloc;
        serde_daphne::lowlevel::check_alloc(0, least, self.source.input_len(), allowance)?;
        // A dense matrix read by a window comes straight into its vector, no band appended
        // to another: a whole read as fast as the format's own (not when it may be cancelled).
        let uncancellable = self.options.cancel.is_none();
        if let (&Header::DenseMatrix { rows, cols, .. }, true) = (self.header, uncancellable) {
            let windows = self.windows().filter(|_| rows > 0 && cols > 0);
            match windows.map(|w| w.window(0, 0..rows, 0..cols)) {
                Some(Ok(band)) => return band.into_object(self.header),
                Some(Err(e)) => return Err(self.blame(e, false)),
                None => {}
            }
        }
        let mut whole: Option<Band> = None;
        self.for_each(&mut |band| {
            match &mut whole {
                Some(whole) => whole.append(band)?,
                None => whole = Some(band),
            }
            Ok(true)
        })?;
        match whole {
            Some(band) => band.into_object(self.header),
            None => Band::empty(self.header).into_object(self.header),
        }
    }

    /// One pass: calls `each` with the object's pieces in order (bands of rows, or tiles
    /// where the sink wants them and the source has windows), until it returns `false`.
    ///
    /// # Errors
    /// The source's errors (also kept for [`pump`] to blame the input), and `each`'s.
    pub fn for_each(&mut self, each: &mut dyn FnMut(Band) -> Result<bool>) -> Result<()> {
        self.pass(false, each)
    }

    /// One pass over the source's own tiles in its own order (each once, in any order)
    /// where it has them ([`Source::for_each_tile`]), else as
    /// [`Pieces::for_each`]: for sinks that take tiles in any order.
    ///
    /// # Errors
    /// As [`Pieces::for_each`].
    pub(crate) fn for_each_in_any_order(
        &mut self,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        self.pass(true, each)
    }

    fn pass(&mut self, any_order: bool, each: &mut dyn FnMut(Band) -> Result<bool>) -> Result<()> {
        let own_tiles = any_order && self.takes_own_tiles();
        let (rows, cols) = self.header.shape();
        let value_type = self.options.value_type;
        let header = self.header;
        let cancel = self.options.cancel.clone();
        let progress = self.progress;
        let mut sink_error = false;
        let mut step = |band: Band| -> Result<bool> {
            if cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(Error::from(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the conversion was cancelled",
                )));
            }
            let cells = u128::from(band.rows) * u128::from(band.cols.max(1));
            let band = match value_type {
                Some(vt) => band.convert(vt)?,
                None => band.conform(header)?,
            };
            let more = each(band).inspect_err(|_| sink_error = true)?;
            progress.add(cells);
            Ok(more)
        };
        if own_tiles {
            if let Some(result) = self.source.for_each_tile(self.index, &mut step) {
                return match result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(self.blame(e, sink_error)),
                };
            }
        }
        let windows = self.source.windows();
        let result = match (self.want, windows) {
            (Want::Tiles(tr, tc), Some(windows)) => {
                window_tiles(windows, self.index, (rows, cols), (tr, tc), &mut step)
            }
            (Want::Tiles(multiple, _) | Want::Bands(multiple), _) => {
                self.source.for_each_band(self.index, multiple, &mut step)
            }
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) => Err(self.blame(e, sink_error)),
        }
    }

    /// Notes a source's error for [`pump`] to blame the input; gives the error back.
    fn blame(&mut self, error: Error, in_sink: bool) -> Error {
        self.source_failed |= !in_sink;
        error
    }
}

/// A source's windows over one object as a sink reads them: the values converted as the
/// pump converts its bands (to the asked value type, or to the header's types where the
/// source's blocks hold narrower ones), and counted for progress.
struct ObjectWindows<'p> {
    windows: &'p dyn Windows,
    index: usize,
    header: &'p Header,
    value_type: Option<ValueType>,
    progress: &'p Tally,
}

impl Windows for ObjectWindows<'_> {
    /// Rows `rows` and columns `cols` of the object (these windows are of one object: `index`
    /// is not used).
    fn window(&self, _: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        let band = self.windows.window(self.index, rows, cols)?;
        let band = match self.value_type {
            Some(value_type) => band.convert(value_type)?,
            None => band.conform(self.header)?,
        };
        self.progress
            .add(u128::from(band.rows) * u128::from(band.cols.max(1)));
        Ok(band)
    }
}
