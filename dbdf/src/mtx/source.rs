//! A MatrixMarket file on the pipe, one named source whichever way the file is read: an
//! array file streamed through a scratch file, a coordinate file as the CSR arrays its
//! entries build (they come in any order), a symmetric array file read whole.

use std::path::Path;

use super::array::MtxArraySource;
use super::csr_source::CoordinateSource;
use super::{coordinate_arrays, read_with, ReadOptions, MTX};
use crate::pipe::{Band, Held, InputMetadata, Source, Windows};
use serde_daphne::Header;
use serde_daphne::Result;

/// A MatrixMarket file as a source of the pipe ([`super::source`]).
pub struct MtxSource(Read);

enum Read {
    Array(MtxArraySource),
    Coordinates(CoordinateSource),
    Whole(Held),
}

impl MtxSource {
    /// Opens the file at `path` and reads what it must before the first band.
    pub(crate) fn open(path: &Path, options: &ReadOptions) -> Result<MtxSource> {
        if let Some(array) = MtxArraySource::open(path)? {
            return Ok(MtxSource(Read::Array(array)));
        }
        let len = std::fs::metadata(path)?.len();
        let progress = options.progress.as_ref();
        let coordinates =
            coordinate_arrays(path, progress).map_err(|message| MTX.error(message))?;
        if let Some(arrays) = coordinates {
            return Ok(MtxSource(Read::Coordinates(CoordinateSource::new(
                arrays, len,
            ))));
        }
        let object = read_with(path, options)?;
        let held = Held::new(vec![object], len, InputMetadata::default())?;
        Ok(MtxSource(Read::Whole(held)))
    }

    /// Whether the file streams (a general array file, through a scratch file) rather than
    /// being held as the matrix's arrays.
    pub fn reads_in_place(&self) -> bool {
        matches!(self.0, Read::Array(_))
    }

    fn inner(&self) -> &dyn Source {
        match &self.0 {
            Read::Array(s) => s,
            Read::Coordinates(s) => s,
            Read::Whole(s) => s,
        }
    }

    fn inner_mut(&mut self) -> &mut dyn Source {
        match &mut self.0 {
            Read::Array(s) => s,
            Read::Coordinates(s) => s,
            Read::Whole(s) => s,
        }
    }
}

impl Source for MtxSource {
    fn headers(&self) -> &[Header] {
        self.inner().headers()
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        self.inner_mut().for_each_band(index, multiple, each)
    }

    fn windows(&self) -> Option<&dyn Windows> {
        self.inner().windows()
    }

    fn input_len(&self) -> u64 {
        self.inner().input_len()
    }

    fn stored_bytes(&self, index: usize) -> Option<u64> {
        self.inner().stored_bytes(index)
    }

    fn nonzero(&self, index: usize) -> Option<bool> {
        self.inner().nonzero(index)
    }

    fn count_nonzero(&mut self, index: usize) -> Result<Option<u64>> {
        self.inner_mut().count_nonzero(index)
    }
}
