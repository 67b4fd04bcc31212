//! The `.dbdf` format's entry in the registry: read and written by the pipe's own `.dbdf`
//! source and sink ([`crate::pipe::DbdfSource`], [`crate::pipe::DbdfSink`]), with the
//! options of [`serde_daphne::Options`].

use std::path::Path;

use serde_daphne::{BlockIndex, BlockPolicy, Dialect, Error, Options};

use crate::driver::{ConvertOptions, Driver, OptionSpec, OptionValue, Takes, Written};
use crate::pipe::{DbdfSink, DbdfSource, InputMetadata, Sink, Source};

/// DAPHNE binary data (`.dbdf`).
pub(crate) struct Dbdf;

impl Driver for Dbdf {
    fn names(&self) -> &'static [&'static str] {
        &["dbdf"]
    }

    fn description(&self) -> &'static str {
        "DAPHNE binary data (.dbdf)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["dbdf"]
    }

    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }

    fn open(&self, path: &Path, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        Ok(Box::new(DbdfSource::open(path)?))
    }

    fn written(&self, _: &Path) -> Written {
        Written::File
    }

    fn sink_at<'p>(
        &self,
        path: &'p Path,
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'p>, Error> {
        let dbdf = options.dbdf_options(metadata.tile);
        let runtime = dbdf.dialect == Some(Dialect::Runtime);
        let sink = DbdfSink::create(path, &dbdf)?;
        Ok(Box::new(match runtime {
            true => sink.for_daphne_dsl(options.data_type.is_some()),
            false => sink,
        }))
    }

    fn index(&self, path: &Path, options: &ConvertOptions) -> Result<Option<BlockIndex>, Error> {
        BlockIndex::of_file(path, &options.formats.get::<Options>()).map(Some)
    }
}

fn dbdf(options: &mut ConvertOptions) -> &mut Options {
    options.formats.get_mut::<Options>()
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        flag: "block",
        keyword: "block",
        help: "How .dbdf blocks are chosen: auto, smallest, dense, sparse or ultra-sparse.",
        takes: Takes::Value,
        set: |o, v| {
            dbdf(o).block_policy = v.parse::<BlockPolicy>()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "tile",
        keyword: "tile",
        help: "Tile .dbdf output into blocks of at most R x C, e.g. 1000,1000.",
        takes: Takes::Value,
        set: |o, v| {
            dbdf(o).tile = Some(tile(v)?);
            Ok(())
        },
    },
    OptionSpec {
        flag: "narrow",
        keyword: "narrow",
        help: "Store each .dbdf block in the smallest value type that holds its values exactly.",
        takes: Takes::Flag,
        set: |o, v| {
            dbdf(o).narrow = v.flag()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "dialect",
        keyword: "dialect",
        help: "Write .dbdf (and CSV) in the spec's dialect (spec) or for DAPHNE's runtime \
               (daphne). For DAPHNE, a CSR matrix DaphneDSL would type as dense is written \
               dense unless --data-type csr.",
        takes: Takes::Value,
        set: |o, v| {
            let dialect = v.parse::<Dialect>()?;
            dbdf(o).dialect = (dialect == Dialect::Runtime).then_some(dialect);
            Ok(())
        },
    },
    OptionSpec {
        flag: "unguarded-labels",
        keyword: "unguarded_labels",
        help: "With --dialect daphne: write frame labels even where they would overflow \
               DAPHNE's frame reader (longer than 32 bytes x the columns from theirs to the \
               last).",
        takes: Takes::Flag,
        set: |o, v| {
            dbdf(o).guard_daphne_labels = !v.flag()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "keep-blocks",
        keyword: "keep_blocks",
        help: "Keep the input's own blocks as the .dbdf output's tiles: SystemDS's blocks, a \
               tiled .dbdf file's (default: one block; --tile sets other tiles).",
        takes: Takes::Flag,
        set: |o, v| {
            o.keep_tiles = v.flag()?;
            Ok(())
        },
    },
];

/// A tile size: `R,C` or a list of two, each positive.
fn tile(value: &OptionValue) -> Result<(u32, u32), Error> {
    let text = value.text();
    let (rows, cols) = text
        .split_once(',')
        .ok_or_else(|| Error::invalid("expected R,C such as 1000,1000"))?;
    let size = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::invalid(format!("{s:?} is not a positive 32-bit number")))
    };
    Ok((size(rows)?, size(cols)?))
}
