//! The output side of conversions: each target format's sink, fed by the pipe.

use std::io::Write;
use std::path::Path;

use super::{ConvertError, ConvertOptions, Format, Report};
use crate::pipe::{self, DbdfSink, Failed, InputMetadata, PumpOptions, Sink, Source};
use crate::{binsparse, csv, futhark, mtx, npy, systemds};
use serde_daphne::lowlevel::{sidecar_path, FileSet};
use serde_daphne::Dialect;
use serde_daphne::Error;

/// Converts what `source` (read from `input`) holds to `output`: value and data type changes
/// on the way, then the output format's sink (by default the extension's), built from that
/// format's options in `options`. `output` `-` is standard output, built first (in memory, a
/// `.dbdf` in a temporary file) so that a failure prints nothing.
///
/// Sinks: `.dbdf` tile by tile or one block from bands read twice ([`DbdfSink`]); `.npy`,
/// CSV and MatrixMarket band by band (MatrixMarket in two passes, to count the entries the
/// size line gives first); SystemDS block rows on every core from sources with windows;
/// Futhark, Binsparse, SystemDS frames (and SystemDS matrices from sources without
/// windows) hold the object.
///
/// # Errors
/// As [`super::convert`].
pub fn convert_from(
    source: &mut dyn Source,
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
) -> Result<Report, ConvertError> {
    let to = super::format_of(output, options.to, false)?;
    let to_file = output != Path::new("-");
    let metadata = source.metadata();
    let asked = match (to, options.mtx.layout) {
        // A MatrixMarket layout is a data type: the pump turns the bands into it.
        (Format::Mtx, Some(layout)) => {
            let wanted = layout.data_type();
            if let Some(given) = options.data_type.filter(|&d| d != wanted) {
                return Err(ConvertError::message(
                    output,
                    format!("the {layout} layout writes a {wanted}, not the {given} asked for"),
                ));
            }
            Some(wanted)
        }
        _ => options.data_type,
    };
    let pump_options = PumpOptions {
        value_type: options.value_type,
        // A table's metadata may record a CSR matrix, read in dense bands.
        data_type: asked.or(metadata.data_type),
        progress: options.progress.clone(),
        cancel: None,
    };
    let headers = pipe::output_headers(source.headers(), &pump_options);
    // Where an error of the sink belongs: the output for formats written to a path, the
    // input for values a format cannot hold.
    let blame = |failed: Failed, output_side: bool| match failed {
        Failed::Source(e) => ConvertError::at(input, e),
        Failed::Sink(e) if output_side => ConvertError::at(output, e),
        Failed::Sink(e) => ConvertError::at(input, e),
    };
    let mut pump = |sink: Box<dyn Sink + '_>, output_side: bool| {
        pipe::pump(&mut *source, sink, &pump_options).map_err(|f| blame(f, output_side))
    };
    let mut report = Report::default();
    match to {
        Format::Dbdf => {
            // Standard output: a file in the temporary directory first, so that a failure
            // prints nothing (and the format has one writer).
            let path = match to_file {
                true => output.to_owned(),
                false => {
                    std::env::temp_dir().join(format!("dbdf-stdout-{}.dbdf", std::process::id()))
                }
            };
            // A file that is deleted once printed needs no sync.
            let mut dbdf = options.dbdf_options(metadata.tile);
            dbdf.sync = to_file && options.sync;
            let runtime = dbdf.dialect == Some(Dialect::Runtime);
            let mut sink =
                DbdfSink::create(&path, &dbdf).map_err(|e| ConvertError::at(output, e))?;
            if runtime {
                sink = sink.for_daphne_dsl(options.data_type.is_some());
            }
            report.warnings = pump(Box::new(sink), true)?;
            if !to_file {
                print_and_remove(&path)
                    .map_err(|e| ConvertError::message(output, format!("standard output: {e}")))?;
            }
        }
        Format::Systemds => {
            if !to_file {
                return Err(ConvertError::message(
                    output,
                    "SystemDS output is a file and its .mtd: give a path, not -",
                ));
            }
            let sink = systemds::sink(output, &options.systemds);
            report.warnings = pump(Box::new(sink), true)?;
        }
        Format::Segments => {
            if !to_file {
                return Err(ConvertError::message(
                    output,
                    "DAPHNE's segmented layout is a folder and its .meta: give a path, not -",
                ));
            }
            let sink = crate::segments::sink(output, &options.segments);
            report.warnings = pump(Box::new(sink), true)?;
        }
        Format::Binsparse if binsparse::is_hdf5(output) || binsparse::is_zarr(output) => {
            let binsparse = options.binsparse.clone().keeping(&metadata);
            pump(binsparse::path_sink(output, &binsparse), true)?;
        }
        #[cfg(not(feature = "parquet"))]
        Format::Parquet | Format::Arrow => return Err(super::without_tables(output)),
        _ => {
            // CSV's `.meta` is part of the CSV's own write: both or neither.
            let mut sidecar_warning = None;
            let sidecars = |set: &mut FileSet| -> Result<(), Error> {
                if to == Format::Csv {
                    sidecar_warning = match headers.as_deref() {
                        Ok([header]) => csv::add_sidecar(set, output, header)?,
                        _ => {
                            set.remove(sidecar_path(output));
                            None
                        }
                    };
                }
                Ok(())
            };
            write_output_with(output, options.sync, sidecars, |out| {
                let sink = stream_sink(to, out, options, &metadata)
                    .map_err(|e| ConvertError::at(output, e))?;
                pump(sink, false).map(drop)
            })?;
            report.warnings.extend(sidecar_warning);
        }
    }
    Ok(report)
}

/// The sink of a format written as one stream to `out`, built from that format's own
/// options.
///
/// # Errors
/// A format written at a path (`.dbdf`, SystemDS).
fn stream_sink<'w>(
    to: Format,
    out: &'w mut (dyn Write + Send),
    options: &ConvertOptions,
    metadata: &InputMetadata,
) -> Result<Box<dyn Sink + 'w>, Error> {
    Ok(match to {
        Format::Mtx => Box::new(mtx::sink(out)),
        Format::Npy => Box::new(npy::sink(out)),
        Format::Csv => Box::new(csv::sink(out, &options.csv)),
        Format::Futhark => Box::new(futhark::sink(out, &options.futhark)),
        Format::Binsparse => {
            let binsparse = options.binsparse.clone().keeping(metadata);
            Box::new(binsparse::sink(out, &binsparse))
        }
        Format::Scipy => Box::new(crate::scipy::sink(out, &options.scipy)),
        Format::Npz => Box::new(crate::npz::sink(out, &options.npz)),
        #[cfg(feature = "parquet")]
        Format::Parquet => {
            let table = options.table.clone().keeping(metadata);
            Box::new(crate::arrow::parquet::sink(out, &table))
        }
        #[cfg(feature = "parquet")]
        Format::Arrow => {
            let table = options.table.clone().keeping(metadata);
            Box::new(crate::arrow::feather::sink(out, &table))
        }
        other => {
            return Err(Error::invalid(format!(
                "{other} is written at a path, not as one stream"
            )))
        }
    })
}

/// Writes the bytes `write` produces to `output` (`-` is standard output), atomically for
/// files: on failure nothing is left behind (the `dbdf` tool's outputs all go through here).
///
/// # Errors
/// `write`'s own error, or a [`ConvertError`] naming `output` for what failed around it.
pub fn write_output<E: From<ConvertError>>(
    output: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> Result<(), E>,
) -> Result<(), E> {
    write_output_with(output, true, |_| Ok(()), write)
}

/// Copies the finished file at `path` to standard output (by the kernel where it can, so
/// the file is never held in memory) and deletes it and any sidecar.
fn print_and_remove(path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::open(path);
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(sidecar_path(path));
    let mut stdout = std::io::stdout().lock();
    std::io::copy(&mut file?, &mut stdout)?;
    stdout.flush()
}

/// [`write_output`], the sync to disk before the rename optional, with the sidecars
/// `sidecars` adds (a file's only) put in place
/// together with the file, or not at all ([`FileSet`]).
fn write_output_with<E: From<ConvertError>>(
    output: &Path,
    sync: bool,
    sidecars: impl FnOnce(&mut FileSet) -> Result<(), Error>,
    write: impl FnOnce(&mut (dyn Write + Send)) -> Result<(), E>,
) -> Result<(), E> {
    if output == Path::new("-") {
        // Built in memory first, so a failure prints nothing.
        let mut bytes = Vec::new();
        write(&mut bytes)?;
        return std::io::stdout()
            .write_all(&bytes)
            .map_err(|e| ConvertError::message(output, format!("standard output: {e}")).into());
    }
    let mut failure = None;
    let mut set = FileSet::new(sync);
    let result = set.buffered(output, |out| {
        write(out).map_err(|f| {
            failure = Some(f);
            Error::from(std::io::Error::other("failed"))
        })
    });
    let result = result
        .and_then(|()| sidecars(&mut set))
        .and_then(|()| set.commit());
    match (failure, result) {
        (Some(f), _) => Err(f),
        (None, Err(e)) => Err(ConvertError::at(output, e).into()),
        (None, Ok(())) => Ok(()),
    }
}
