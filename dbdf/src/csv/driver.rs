//! CSV's entry in the registry: the CSV file and its `.meta` sidecar.

use std::io::Write;
use std::path::Path;

use serde_daphne::{Dialect, Error, Header, Options};

use super::WriteOptions;
use crate::driver::{ConvertOptions, Driver, Input, Stored};
use crate::pipe::{InputMetadata, MadeSidecars, Sink, Source};

/// Comma-separated values (`.csv`), with DAPHNE's `.meta` sidecar.
pub(crate) struct Csv;

impl Driver for Csv {
    fn names(&self) -> &'static [&'static str] {
        &["csv"]
    }

    fn description(&self) -> &'static str {
        "CSV, with DAPHNE's .meta sidecar (.csv)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["csv"]
    }

    fn open(&self, path: &Path, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        super::source(path)
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    /// Read twice, each time as streams (a few ranges in flight), with its `.meta` sidecar.
    fn open_at(&self, input: Input, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        Ok(Box::new(super::CsvSource::open_input(&input)?))
    }

    /// `.dbdf`'s runtime dialect asks for CSV as DAPHNE reads it too.
    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        let mut csv = options.formats.get::<WriteOptions>();
        csv.daphne |= options.formats.get::<Options>().dialect == Some(Dialect::Runtime);
        Ok(super::sink(out, &csv))
    }

    /// The `.meta` of one object is part of the CSV's own write: both or neither.
    fn sidecars(
        &self,
        output: &Path,
        headers: Option<&[Header]>,
    ) -> Result<(MadeSidecars, Option<String>), Error> {
        let (meta, warning) = match headers {
            Some([header]) => super::sidecar(output, header)?,
            _ => (None, None),
        };
        Ok((vec![(".meta", meta)], warning))
    }
}
