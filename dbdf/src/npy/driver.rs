//! NumPy `.npy`'s entry in the registry.

use std::io::Write;
use std::path::Path;

use serde_daphne::Error;

use crate::driver::{ConvertOptions, Driver, Input, Stored};
use crate::pipe::{InputMetadata, Sink, Source};

/// NumPy `.npy`.
pub(crate) struct Npy;

impl Driver for Npy {
    fn names(&self) -> &'static [&'static str] {
        &["npy"]
    }

    fn description(&self) -> &'static str {
        "NumPy arrays and record arrays (.npy)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["npy"]
    }

    fn open(&self, path: &Path, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        super::source(path)
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    /// Its header, then the rows each band or window needs, by range: bands in order read
    /// ahead, several ranges in flight.
    fn open_at(&self, input: Input, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        let ahead = input.read_ahead()?;
        Ok(Box::new(super::stream::NpySource::open_at(ahead.data)?))
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        _: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        Ok(super::sink(out))
    }
}
