//! The `.dbdf` format's entry in the registry: read and written by the pipe's own `.dbdf`
//! source and sink ([`crate::pipe::DbdfSource`], [`crate::pipe::DbdfSink`]), with the
//! options of [`serde_daphne::Options`].

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use serde_daphne::{BlockIndex, BlockPolicy, DbdfFile, Dialect, Error, ErrorKind, Options};

use crate::driver::{ConvertOptions, Driver, OptionSpec, OptionValue, Stored, Takes, Written};
use crate::pipe::{DbdfSink, DbdfSource, InputMetadata, Sink, Source};
use crate::storage::Input;

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

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    /// Its block index if there is one, else a walk over its headers; then its blocks in
    /// file order, read ahead (a tiled matrix's bands whole rows of tiles).
    fn open_at(&self, input: Input, _: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        Ok(Box::new(source_at(&input)?))
    }

    fn written(&self, _: &Path) -> Written {
        Written::FileOrStream
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        let dbdf = options.dbdf_options(metadata.tile);
        let sink = DbdfSink::to_stream(out, &dbdf)?;
        Ok(Box::new(for_daphne(sink, &dbdf, options)))
    }

    fn sink_at<'p>(
        &self,
        path: &'p Path,
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'p>, Error> {
        let dbdf = options.dbdf_options(metadata.tile);
        let sink = DbdfSink::create(path, &dbdf)?;
        Ok(Box::new(for_daphne(sink, &dbdf, options)))
    }
}

/// In DAPHNE's runtime dialect, CSR matrices typed as DaphneDSL will read them (unless a data
/// type was asked for).
fn for_daphne<'w>(sink: DbdfSink<'w>, dbdf: &Options, options: &ConvertOptions) -> DbdfSink<'w> {
    match dbdf.dialect == Some(Dialect::Runtime) {
        true => sink.for_daphne_dsl(options.data_type.is_some()),
        false => sink,
    }
}

/// The `.dbdf` input as a source of the pipe read in place ([`open_input`]), its blocks in
/// file order through a [`crate::storage::ReadAhead`]; a block index it could not use is a note on `input`.
///
/// # Errors
/// As [`open_input`].
pub(crate) fn source_at(input: &Input) -> Result<DbdfSource, Error> {
    let ahead = input.read_ahead()?;
    let opened = open_input(&ahead, &Options::new())?;
    if let Some(why) = opened.stale_index {
        input.note(format!(
            "{}: its block index was not used ({why})",
            input.name
        ));
    }
    let fetched = input.is_fetched();
    Ok(DbdfSource::from_file(opened.file)
        .in_file_order()
        .fetched(fetched))
}

/// A `.dbdf` input opened in place ([`open_input`]), and how.
pub(crate) struct OpenedFile {
    pub(crate) file: DbdfFile,
    /// Whether its block index (`NAME.index`) opened it (which the remote layer reports).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) indexed: bool,
    /// Why a block index beside it was not used, if one was there (it did not match the
    /// input, or the store refused it).
    pub(crate) stale_index: Option<String>,
}

/// Opens the `.dbdf` input lazily: through its block index (`NAME.index`) if there is one
/// and it matches (its first bytes then, two reads in all), else by a walk over its headers
/// (read ahead for a remote one: at most one request per block), with its `.meta` sidecar
/// when the walk finds DAPHNE's runtime dialect. A `.meta` the store refuses is read as
/// missing, with a note on `input`.
///
/// # Errors
/// As [`serde_daphne::Options::open_at`], and the sidecars' reads.
pub(crate) fn open_input(input: &Input, options: &Options) -> Result<OpenedFile, Error> {
    let mut stale_index = None;
    let index = input.sidecar(".index")?.unwrap_or_else(|why| {
        stale_index = Some(why);
        None
    });
    if let Some(bytes) = index {
        let opened = BlockIndex::from_slice(&bytes)
            .and_then(|index| options.open_indexed(Arc::clone(&input.data), Arc::new(index)));
        match opened {
            Ok(file) => {
                return Ok(OpenedFile {
                    file,
                    indexed: true,
                    stale_index,
                })
            }
            Err(e) if e.kind() == ErrorKind::StaleIndex => stale_index = Some(e.to_string()),
            Err(e) => return Err(e),
        }
    }
    let walked = options.open_at(Arc::clone(&input.data), None);
    let runtime = walked
        .as_ref()
        .map_or(true, |f| f.objects()[0].dialect == Dialect::Runtime);
    let file = match runtime {
        true => match input.meta()? {
            Some(text) => options.open_at(Arc::clone(&input.data), Some(&text))?,
            None => walked?,
        },
        false => walked?,
    };
    Ok(OpenedFile {
        file,
        indexed: false,
        stale_index,
    })
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
