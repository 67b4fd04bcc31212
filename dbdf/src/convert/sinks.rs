//! The output side of conversions: each target format's sink, fed by the pipe.

use serde_daphne::__private_0_1_0::{into_details, ErrorImpl};
use std::io::Write;
use std::path::Path;

use super::{ConvertError, ConvertOptions, Format, Report};
use crate::pipe::{self, Collect, DbdfSink, Failed, Kept, PumpOptions, Sink, Source};
use crate::{binsparse, csv, futhark, mtx, npy, systemds};
use serde_daphne::__private_0_1_0::write_atomically_synced;
use serde_daphne::lowlevel::sidecar_path;
use serde_daphne::lowlevel::write_sidecar;
use serde_daphne::Error;
use serde_daphne::Header;
use serde_daphne::{Object, ValueType};

/// Converts what `source` (read from `input`) holds to `output`: value and data type changes
/// on the way, then the output format's sink (by default the extension's). `output` `-` is
/// standard output, built first (in memory, a `.dbdf` in a temporary file) so that a failure
/// prints nothing.
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
    let kept = source.kept();
    let pump_options = PumpOptions {
        value_type: options.value_type,
        // A table's metadata may record a CSR matrix, read in dense bands.
        data_type: options.data_type.or(kept.data_type),
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
    let warnings = match to {
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
            let dbdf = options
                .dbdf_options(kept.blocks)
                .sync(to_file && !options.no_sync);
            let mut sink =
                DbdfSink::create(&path, &dbdf).map_err(|e| ConvertError::at(output, e))?;
            if options.daphne {
                sink = sink.for_daphne_dsl(options.data_type.is_some());
            }
            let warnings = pump(Box::new(sink), true)?;
            if !to_file {
                print_and_remove(&path)
                    .map_err(|e| ConvertError::message(output, format!("standard output: {e}")))?;
            }
            warnings
        }
        Format::Mtx => {
            write_output_synced(output, !options.no_sync, |w| {
                pump(Box::new(mtx::sink(w)), false).map(drop)
            })?;
            Vec::new()
        }
        Format::Npy => {
            write_output_synced(output, !options.no_sync, |w| {
                pump(Box::new(npy::sink(w)), false).map(drop)
            })?;
            Vec::new()
        }
        Format::Csv => {
            let csv_options = csv::WriteOptions::new().daphne(options.daphne);
            write_output_synced(output, !options.no_sync, |w| {
                pump(Box::new(csv::sink(w, &csv_options)), false).map(drop)
            })?;
            let mut report = Report::default();
            if let (true, Ok([header])) = (to_file, headers.as_deref()) {
                csv_sidecar(output, header, &mut report)?;
            }
            report.warnings
        }
        Format::Futhark => {
            let futhark = &options.futhark;
            write_output_synced(output, !options.no_sync, |w| {
                pump(Box::new(futhark::sink(w, futhark)), false).map(drop)
            })?;
            Vec::new()
        }
        Format::Binsparse => {
            let one = Some("Binsparse");
            #[cfg(feature = "zarr")]
            let zarr = binsparse::is_zarr(output);
            #[cfg(not(feature = "zarr"))]
            let zarr = false;
            if zarr {
                #[cfg(feature = "zarr")]
                {
                    let bsp = binsparse_options(options, kept.clone());
                    pump(Box::new(binsparse::zarr::sink(output, &bsp)), true)?;
                }
            } else if binsparse::is_hdf5(output) || binsparse::is_zarr(output) {
                // HDF5 (and Zarr without the feature, which refuses it) is written whole.
                let write = |objects: Vec<Object>, kept: Kept| {
                    let bsp = binsparse_options(options, kept);
                    binsparse::write_with(output, &objects[0], &bsp)?;
                    Ok(Vec::new())
                };
                pump(Box::new(Collect::new(one, Box::new(write))), true)?;
            } else {
                let bsp = binsparse_options(options, kept.clone());
                write_output_synced(output, !options.no_sync, |w| {
                    pump(Box::new(binsparse::sink(w, &bsp)), false).map(drop)
                })?;
            }
            Vec::new()
        }
        Format::Scipy => {
            let scipy = crate::scipy::WriteOptions::new().compressed(options.compressed);
            write_output_synced(output, !options.no_sync, |w| {
                pump(crate::scipy::sink(w, &scipy), false).map(drop)
            })?;
            Vec::new()
        }
        Format::Npz => {
            let npz = crate::npz::WriteOptions::new().compressed(options.compressed);
            write_output_synced(output, !options.no_sync, |w| {
                pump(crate::npz::sink(w, &npz), false).map(drop)
            })?;
            Vec::new()
        }
        #[cfg(feature = "parquet")]
        Format::Parquet | Format::Arrow => {
            let tables = &options.tables.1;
            let parquet = to == Format::Parquet;
            write_output_synced(output, !options.no_sync, |w| {
                let sink: Box<dyn Sink + '_> = match parquet {
                    true => Box::new(crate::arrow::parquet::sink(w, tables)),
                    false => Box::new(crate::arrow::feather::sink(w, tables)),
                };
                pump(sink, false).map(drop)
            })?;
            Vec::new()
        }
        #[cfg(not(feature = "parquet"))]
        Format::Parquet | Format::Arrow => return Err(super::without_tables(output)),
        Format::Systemds => {
            if !to_file {
                return Err(ConvertError::message(
                    output,
                    "SystemDS output is a file and its .mtd: give a path, not -",
                ));
            }
            let sink = systemds::sink(output, &options.systemds_options())
                .progress(options.progress.clone());
            pump(Box::new(sink), true)?
        }
    };
    Ok(Report { warnings })
}

/// The options of Binsparse output: the asked format or the input's when it was Binsparse
/// (whose user attributes are kept too), then CSR for CSR matrices and DMAT for dense ones.
fn binsparse_options(options: &ConvertOptions, kept: Kept) -> binsparse::WriteOptions {
    let (source_format, attributes) = match kept.binsparse {
        Some((format, attributes)) => (binsparse::Format::from_name(format), attributes),
        None => (None, serde_json::Map::new()),
    };
    let mut bsp = binsparse::WriteOptions::new()
        .attributes(attributes)
        .index_type(options.index_type.unwrap_or(ValueType::U64))
        .iso(options.iso)
        .bint8(options.bint8)
        .version(options.binsparse_version);
    if let Some(format) = options.binsparse_format.or(source_format) {
        bsp = bsp.format(format);
    }
    #[cfg(feature = "zarr")]
    {
        bsp = bsp.zarr_version(options.zarr_version);
    }
    bsp
}

/// Writes the `.meta` sidecar of a CSV file, so that its types survive; where DAPHNE's
/// sidecars cannot name them (16-bit types), the CSV stands alone and the report says so.
pub(super) fn csv_sidecar(
    output: &Path,
    header: &Header,
    report: &mut Report,
) -> Result<(), ConvertError> {
    match write_sidecar(output, header).map_err(into_details) {
        Err(ErrorImpl::NotInDialect { what, .. }) => {
            report.warnings.push(format!(
                "{}: no .meta sidecar: DAPHNE's sidecars cannot name {what}, so the values \
                 read back as i64",
                output.display()
            ));
            Ok(())
        }
        other => other.map_err(|e| remove_and_fail(output, Error::from(e))),
    }
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
    write_output_synced(output, true, write)
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

/// [`write_output`], the sync to disk before the rename optional.
///
/// # Errors
/// As [`write_output`].
pub fn write_output_synced<E: From<ConvertError>>(
    output: &Path,
    sync: bool,
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
    let result = write_atomically_synced(output, sync, |file| {
        let file = serde_daphne::__private_0_1_0::Preallocating::new(file);
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        if let Err(f) = write(&mut writer) {
            failure = Some(f);
            return Err(Error::from(std::io::Error::other("failed")));
        }
        writer.flush()?;
        Ok(())
    });
    match (failure, result) {
        (Some(f), _) => Err(f),
        (None, Err(e)) => Err(ConvertError::at(output, e).into()),
        (None, Ok(())) => Ok(()),
    }
}

/// A sidecar that could not be written: the data file goes too, so nothing half-done stays.
fn remove_and_fail(output: &Path, error: Error) -> ConvertError {
    let _ = std::fs::remove_file(output);
    ConvertError::at(&sidecar_path(output), error)
}
