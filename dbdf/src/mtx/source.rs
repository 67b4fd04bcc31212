//! A MatrixMarket file on the pipe, one named source whichever way the file is read: a local
//! array file streamed through a scratch file, a remote one a group of rows a pass, a
//! coordinate file as the CSR arrays its entries build (they come in any order), a local
//! symmetric array file read whole.

use std::path::Path;
use std::sync::Arc;

use super::array::{ArrayHead, MtxArraySource};
use super::array_rows::ArrayRows;
use super::csr_source::{CoordinateSource, GROUP_BYTES, LOCAL_GROUP_BYTES};
use super::entries::Symmetry;
use super::{coordinate_layout, read_data_text, ReadOptions, MTX};
use crate::pipe::{source_in_field, Held, InputMetadata, Source};
use crate::storage::Input;
use serde_daphne::{ReadAt, Result};

/// A MatrixMarket file as a source of the pipe ([`super::source`]).
pub struct MtxSource(Read);

enum Read {
    Array(MtxArraySource),
    ArrayRows(ArrayRows),
    Coordinates(CoordinateSource),
    Whole(Held),
}

impl MtxSource {
    /// Opens the file at `path` and reads what it must before the first band.
    pub(crate) fn open(path: &Path, options: &ReadOptions) -> Result<MtxSource> {
        let data: Arc<dyn ReadAt> = Arc::new(std::fs::File::open(path)?);
        MtxSource::read(&data, Some(path), options)
    }

    /// [`MtxSource::open`] for an input wherever it is kept, read as streams (a remote one
    /// in place, a few ranges in flight).
    pub(crate) fn open_input(input: &Input, options: &ReadOptions) -> Result<MtxSource> {
        MtxSource::read(&input.data, None, options)
    }

    /// `data` (the file at `path`, for a local one) read as far as the first band needs.
    fn read(
        data: &Arc<dyn ReadAt>,
        path: Option<&Path>,
        options: &ReadOptions,
    ) -> Result<MtxSource> {
        if let Some(head) = ArrayHead::read(data)? {
            match path {
                None => return Ok(MtxSource(Read::ArrayRows(ArrayRows::open(data, head)?))),
                Some(path) if head.symmetry == Symmetry::General => {
                    let array = MtxArraySource::open(data, &head, path)?;
                    return Ok(MtxSource(Read::Array(array)));
                }
                Some(_) => {} // a local symmetric file: read whole, below
            }
        }
        let len = data.size()?;
        let coordinates = coordinate_layout(data).map_err(|message| MTX.error(message))?;
        if let Some((layout, at, lines)) = coordinates {
            let bound = match path {
                Some(_) => LOCAL_GROUP_BYTES,
                None => GROUP_BYTES,
            };
            let source = CoordinateSource::open(data, (at, lines + 1), &layout, bound, options);
            let source = source.map_err(|message| MTX.error(message))?;
            return Ok(MtxSource(Read::Coordinates(source)));
        }
        let object = read_data_text(data, options).map_err(|message| MTX.error(message))?;
        let held = Held::new(vec![object], len, InputMetadata::default())?;
        Ok(MtxSource(Read::Whole(held)))
    }
}

impl Read {
    fn source(&self) -> &dyn Source {
        match self {
            Read::Array(s) => s,
            Read::ArrayRows(s) => s,
            Read::Coordinates(s) => s,
            Read::Whole(s) => s,
        }
    }

    fn source_mut(&mut self) -> &mut dyn Source {
        match self {
            Read::Array(s) => s,
            Read::ArrayRows(s) => s,
            Read::Coordinates(s) => s,
            Read::Whole(s) => s,
        }
    }
}

source_in_field!(MtxSource, 0);
