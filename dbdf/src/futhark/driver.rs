//! Futhark binary data's entry in the registry.

use std::io::Write;
use std::path::Path;

use serde_daphne::Error;

use super::pipe::FutharkSource;
use super::WriteOptions;
use crate::driver::{ConvertOptions, Driver, Input, OptionSpec, Stored, Takes};
use crate::pipe::{InputMetadata, Sink, Source};

/// Futhark binary data (`.fut`).
pub(crate) struct Futhark;

impl Driver for Futhark {
    fn names(&self) -> &'static [&'static str] {
        &["futhark", "fut"]
    }

    fn description(&self) -> &'static str {
        "Futhark binary data (.fut)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["fut"]
    }

    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }

    fn open(&self, path: &Path, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        super::source(path)
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    /// A request per value's header, then the rows each band or window needs.
    fn open_at(&self, input: Input, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        Ok(Box::new(FutharkSource::open_at(input.data)?))
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        Ok(super::sink(out, &options.formats.get::<WriteOptions>()))
    }
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        flag: "futhark-bool",
        keyword: "futhark_bool",
        help: "Futhark output: write u8 matrices as Futhark bools (values must be 0 or 1).",
        takes: Takes::Flag,
        set: |o, v| {
            o.formats.get_mut::<WriteOptions>().bools = v.flag()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "futhark-f16",
        keyword: "futhark_f16",
        help: "Futhark output: write f32 matrices as f16 (values must be exact in f16).",
        takes: Takes::Flag,
        set: |o, v| {
            o.formats.get_mut::<WriteOptions>().f16 = v.flag()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "futhark-matrices",
        keyword: "futhark_matrices",
        help: "Futhark output: write every matrix as a 2-D array (not 1 x 1 as a scalar and \
               n x 1 as a 1-D array).",
        takes: Takes::Flag,
        set: |o, v| {
            o.formats.get_mut::<WriteOptions>().matrices = v.flag()?;
            Ok(())
        },
    },
];
