//! MatrixMarket's entry in the registry.

use std::io::Write;
use std::path::Path;

use serde_daphne::{DataType, Error};

use super::{Layout, ReadOptions, WriteOptions};
use crate::driver::DUPLICATES;
use crate::driver::{ConvertOptions, Driver, Duplicates, Input, OptionSpec, Stored, Takes};
use crate::pipe::{InputMetadata, Sink, Source};

/// MatrixMarket (`.mtx`).
pub(crate) struct Mtx;

impl Driver for Mtx {
    fn names(&self) -> &'static [&'static str] {
        &["mtx", "matrixmarket"]
    }

    fn description(&self) -> &'static str {
        "MatrixMarket (.mtx)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["mtx"]
    }

    fn options(&self) -> &'static [OptionSpec] {
        &[
            DUPLICATES,
            OptionSpec {
                flag: "mtx-layout",
                keyword: "mtx_layout",
                help: "MatrixMarket output: array (every value, column by column: a dense matrix) \
                   or coordinate (the non-zeros: a CSR matrix); default, a dense matrix as \
                   array, a CSR one as coordinate.",
                takes: Takes::Value,
                set: |o, v| {
                    o.formats.get_mut::<WriteOptions>().layout = Some(v.parse::<Layout>()?);
                    Ok(())
                },
            },
        ]
    }

    fn open(&self, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        let read = ReadOptions {
            progress: options.progress.clone(),
            duplicates: options.formats.get::<Duplicates>(),
        };
        super::source(path, &read)
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    /// Read as streams, each pass's runs a few ranges in flight, into memory within a bound:
    /// an array file's values a group of rows a pass, a coordinate file's CSR arrays a group
    /// of rows a pass after a counting one.
    fn open_at(&self, input: Input, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        let read = ReadOptions {
            progress: options.progress.clone(),
            duplicates: options.formats.get::<Duplicates>(),
        };
        Ok(Box::new(super::MtxSource::open_input(&input, &read)?))
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        _: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        Ok(super::sink(out))
    }

    /// A layout is a data type: the pump turns the bands into it.
    fn data_type(
        &self,
        asked: Option<DataType>,
        options: &ConvertOptions,
    ) -> Result<Option<DataType>, Error> {
        let Some(layout) = options.formats.get::<WriteOptions>().layout else {
            return Ok(asked);
        };
        let wanted = layout.data_type();
        match asked.filter(|&given| given != wanted) {
            Some(given) => Err(Error::invalid(format!(
                "the {layout} layout writes a {wanted}, not the {given} asked for"
            ))),
            None => Ok(Some(wanted)),
        }
    }
}
