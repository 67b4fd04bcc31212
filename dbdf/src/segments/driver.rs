//! DAPHNE's segmented layout's entry in the registry: a folder of row segments and its
//! sidecar.

use std::path::Path;

use serde_daphne::Error;

use super::WriteOptions;
use crate::driver::{ConvertOptions, Driver, OptionSpec, OutputFiles, Stored, Takes, Written};
use crate::pipe::{InputMetadata, Sink, Source};

/// DAPHNE's segmented layout (`NAME.hdfs`).
pub(crate) struct Segments;

impl Driver for Segments {
    fn names(&self) -> &'static [&'static str] {
        &["segments", "hdfs"]
    }

    fn description(&self) -> &'static str {
        "DAPHNE's segmented layout: a folder NAME.hdfs of row segments (.hdfs)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["hdfs"]
    }

    fn options(&self) -> &'static [OptionSpec] {
        &[OptionSpec {
            flag: "segments",
            keyword: "segments",
            help: "DAPHNE's segmented layout output (NAME.hdfs): N row segments, the rows split \
                   as DAPHNE splits them between N workers (default: one per core).",
            takes: Takes::Value,
            set: |o, v| {
                o.formats.get_mut::<WriteOptions>().segments = Some(v.parse()?);
                Ok(())
            },
        }]
    }

    fn open(&self, path: &Path, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        Ok(Box::new(super::source(path)?))
    }

    fn written(&self, _: &Path) -> Written {
        Written::Set("DAPHNE's segmented layout is a folder and its .meta")
    }

    fn sink_at<'p>(
        &self,
        path: &'p Path,
        options: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'p>, Error> {
        Ok(Box::new(super::sink(
            path,
            &options.formats.get::<WriteOptions>(),
        )))
    }

    /// The segments and their sidecars as objects under the prefix `NAME/`, and `NAME.meta`.
    fn sink_into<'f>(
        &self,
        files: &'f dyn OutputFiles,
        output: &Path,
        options: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Option<Box<dyn Sink + 'f>>, Error> {
        let options = options.formats.get::<WriteOptions>();
        let sink = super::sink::SegmentsSink::into_files(files, output, &options);
        Ok(Some(Box::new(sink)))
    }

    fn stored(&self) -> Stored {
        Stored::Segments
    }
}
