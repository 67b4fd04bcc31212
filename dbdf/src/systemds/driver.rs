//! SystemDS binary blocks' entry in the registry: a file or a folder of parts, with its
//! `.mtd`, read in place wherever it is kept.

use std::path::Path;

use serde_daphne::Error;

use super::{metadata_path, ReadOptions, WriteOptions};
use crate::driver::{ConvertOptions, Driver, Format, Input, OptionSpec, OutputFiles, Stored};
use crate::driver::{Takes, Written};
use crate::pipe::{InputMetadata, Sink, Source};

/// SystemDS binary blocks.
pub(crate) struct Systemds;

impl Driver for Systemds {
    fn names(&self) -> &'static [&'static str] {
        &["systemds"]
    }

    fn description(&self) -> &'static str {
        "SystemDS binary blocks, a file or Spark's directory of parts (a .mtd beside it)"
    }

    /// A file or folder without a known extension but with a `.mtd` beside it.
    fn identify(&self, path: &Path, named: Option<Format>) -> bool {
        named.is_none() && metadata_path(path).is_file()
    }

    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }

    fn open(&self, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        super::source(path, &options.formats.get::<ReadOptions>())
    }

    fn open_at(&self, input: Input, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        let read = options.formats.get::<ReadOptions>();
        Ok(Box::new(super::SystemdsSource::open_at(&input, &read)?))
    }

    /// An object or a folder (a prefix) without a known extension but with a `.mtd` beside
    /// it: a request for the `.mtd`.
    fn identify_at(&self, input: &Input, name: &Path) -> bool {
        Format::of_path(name, false).is_none() && matches!(input.sidecar(".mtd"), Ok(Ok(Some(_))))
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    fn written(&self, _: &Path) -> Written {
        Written::Set("SystemDS output is a file and its .mtd")
    }

    fn sink_at<'p>(
        &self,
        path: &'p Path,
        options: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'p>, Error> {
        Ok(super::sink(path, &options.formats.get::<WriteOptions>()))
    }

    fn sink_into<'f>(
        &self,
        files: &'f dyn OutputFiles,
        _: &Path,
        options: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Option<Box<dyn Sink + 'f>>, Error> {
        let options = options.formats.get::<WriteOptions>();
        Ok(Some(Box::new(super::write::SystemdsSink::into_files(
            files, &options,
        ))))
    }
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        flag: "systemds-block-size",
        keyword: "systemds_block_size",
        help: "SystemDS output: the block size (default 1000, SystemDS's).",
        takes: Takes::Value,
        set: |o, v| {
            o.formats.get_mut::<WriteOptions>().block_size = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "parts",
        keyword: "systemds_parts",
        help: "SystemDS output: a directory of N part files written in parallel, as Spark \
               writes them (default: one file up to 128 MiB, else one part per 128 MiB).",
        takes: Takes::Value,
        set: |o, v| {
            o.formats.get_mut::<WriteOptions>().parts = Some(v.parse()?);
            Ok(())
        },
    },
];
