//! A toy matrix format, "TOY1": the magic `TOY1`, the number of rows and of columns as
//! little-endian `u64`s, then the cells as little-endian `f64`s, row by row. Its source and
//! sink plug into `dbdf`'s pipe, and its driver ([`Toy`]) into `dbdf`'s format registry, so
//! `dbdf::convert` converts it to and from every format `dbdf` knows, in bounded memory,
//! using only public items of `serde_daphne` and `dbdf`.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use dbdf::convert::ConvertOptions;
use dbdf::driver::Driver;
use dbdf::pipe::{Band, InputMetadata, Pieces, Sink, Source, Want};
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::{DataType, Element, Error, Header, Result, ValueType, Values};

const MAGIC: &[u8; 4] = b"TOY1";
const HEAD: u64 = 20;
const FORMAT: &str = "TOY1";

/// A TOY1 file as a source of bands of rows.
pub struct ToySource {
    file: File,
    headers: Vec<Header>,
    len: u64,
    /// Rows per band.
    band_rows: u64,
}

impl ToySource {
    /// Opens a TOY1 file, checking its head and its length against its shape.
    ///
    /// # Errors
    /// I/O errors; a foreign-input error, with its byte offset, for a malformed file.
    pub fn open(path: &Path) -> Result<ToySource> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let mut head = [0u8; HEAD as usize];
        file.read_exact(&mut head)
            .map_err(|_| Error::foreign(FORMAT, Some(0), format!("{len} bytes: no head")))?;
        if &head[..4] != MAGIC {
            return Err(Error::foreign(FORMAT, Some(0), "not a TOY1 file (magic)"));
        }
        let field = |at: usize| u64::read_le(&head[at..]).unwrap_or(0);
        let (rows, cols) = (field(4), field(12));
        let cells = rows.checked_mul(cols).and_then(|n| n.checked_mul(8));
        if cells.and_then(|n| n.checked_add(HEAD)) != Some(len) {
            return Err(Error::foreign(
                FORMAT,
                Some(4),
                format!("a {rows} x {cols} matrix does not fit a file of {len} bytes"),
            ));
        }
        let header = Header::matrix(DataType::DenseMatrix, rows, cols, ValueType::F64);
        Ok(ToySource {
            file,
            headers: vec![header],
            len,
            band_rows: (1 << 20) / (cols.max(1) * 8) + 1,
        })
    }

    /// Bands of `rows` rows instead of about 1 MiB each (for tests).
    pub fn with_band_rows(mut self, rows: u64) -> ToySource {
        self.band_rows = rows.max(1);
        self
    }
}

impl Source for ToySource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let (rows, cols) = self.headers[index].shape();
        let step = self.band_rows.div_ceil(multiple.max(1)) * multiple.max(1);
        self.file.seek(SeekFrom::Start(HEAD))?;
        let mut r0 = 0;
        while r0 < rows {
            let r1 = (r0 + step).min(rows);
            let mut bytes = zeroed_vec::<u8>(((r1 - r0) * cols * 8) as usize)?;
            self.file.read_exact(&mut bytes)?;
            let values = Values::F64(f64::decode_le(&bytes)?);
            if !each(Band::dense(r0..r1, 0..cols, values))? {
                break;
            }
            r0 = r1;
        }
        Ok(())
    }

    fn input_len(&self) -> u64 {
        self.len
    }
}

/// TOY1 in `dbdf`'s format registry: `dbdf::convert::Format::register(&Toy)` once, and
/// conversions take `.toy` files (and `--from toy`, `to: "toy".parse()`).
pub struct Toy;

impl Driver for Toy {
    fn names(&self) -> &'static [&'static str] {
        &["toy"]
    }

    fn description(&self) -> &'static str {
        "TOY1 matrices (.toy)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["toy"]
    }

    fn open(&self, path: &Path, _: &ConvertOptions) -> Result<Box<dyn Source>> {
        Ok(Box::new(ToySource::open(path)?))
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        _: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>> {
        Ok(Box::new(ToySink::new(out)))
    }
}

/// A TOY1 file written from bands of rows: one matrix, any value type (converted to `f64`
/// exactly where it can be, refused where not).
pub struct ToySink<'w> {
    out: Box<dyn Write + 'w>,
    written: bool,
}

impl ToySink<'static> {
    /// Creates (truncates) the file at `path`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(path: &Path) -> Result<ToySink<'static>> {
        Ok(ToySink::new(BufWriter::new(File::create(path)?)))
    }
}

impl<'w> ToySink<'w> {
    /// Writes to `out`.
    pub fn new(out: impl Write + 'w) -> ToySink<'w> {
        ToySink {
            out: Box::new(out),
            written: false,
        }
    }
}

impl Sink for ToySink<'_> {
    fn wants(&self, _header: &Header) -> Want {
        Want::Bands(1)
    }

    fn holds_one(&self) -> Option<&'static str> {
        Some("a TOY1 file")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        if header.data_type() == DataType::Frame {
            return Err(Error::not_convertible(
                "a Frame",
                FORMAT,
                "TOY1 holds matrices",
            ));
        }
        let (rows, cols) = header.shape();
        self.out.write_all(MAGIC)?;
        u64::write_le(&[rows, cols], &mut self.out)?;
        let out = &mut self.out;
        pieces.for_each(&mut |band| {
            let values = band.dense_values()?.convert(ValueType::F64).map_err(|at| {
                Error::not_convertible(
                    format!("the value at {at} of a band"),
                    FORMAT,
                    "it has no exact f64",
                )
            })?;
            let values = f64::try_from_values(values)
                .map_err(|other| Error::invalid(format!("{} values", other.value_type())))?;
            f64::write_le(&values, out)?;
            Ok(true)
        })?;
        self.written = true;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<String>> {
        if !self.written {
            return Err(Error::invalid("no matrix was written"));
        }
        self.out.flush()?;
        Ok(Vec::new())
    }
}
