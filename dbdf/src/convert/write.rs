//! The output side of conversions: type changes, then each target format.

use serde_daphne::__private::error::ErrorImpl;
use std::io::Write;
use std::path::Path;

use super::{ConvertError, ConvertOptions, Format, Input, Report};
use crate::{binsparse, csv, futhark, mtx, npy, systemds};
use serde_daphne::__private::io::meta::DAPHNE_SPARSITY_THRESHOLD;
use serde_daphne::__private::io::meta::{daphne_types_as_csr, write_sidecar, write_sidecar_for};
use serde_daphne::__private::io::{sidecar_path, write_atomically};
use serde_daphne::__private::wire::Header;
use serde_daphne::Error;
use serde_daphne::{DataType, Object, ValueType, Values};

/// Writes what was read from `input` (in `from`) to `output` in `to`: value and data type
/// changes first, then the target format. `output` `-` is standard output, built in memory
/// first so that a failure writes nothing.
///
/// # Errors
/// As [`super::convert`].
pub fn write(
    input: &Path,
    output: &Path,
    from: Format,
    to: Format,
    read: Input,
    options: &ConvertOptions,
) -> Result<Report, ConvertError> {
    let Input {
        mut objects,
        binsparse: binsparse_input,
    } = read;
    let mut report = Report::default();
    for object in &mut objects {
        if let Some(vt) = options.value_type {
            *object = object.convert(vt).map_err(|e| ConvertError::at(input, e))?;
        }
        if let Some(data_type) = options.data_type {
            retype(object, data_type).map_err(|e| ConvertError::at(input, e))?;
        }
    }
    if options.daphne && to == Format::Dbdf {
        for object in &mut objects {
            for_daphne_dsl(object, options.data_type.is_some(), output, &mut report)?;
        }
    }
    let single = |what: &str| -> Result<&Object, ConvertError> {
        match &objects[..] {
            [one] => Ok(one),
            many => Err(ConvertError::message(
                input,
                format!("holds {} objects, but {what} holds one", many.len()),
            )),
        }
    };
    let to_file = output != Path::new("-");
    let at_input = |e: Error| ConvertError::at(input, e);
    match to {
        Format::Dbdf => {
            // Kept SystemDS blocks stay the tiles, unless a tile is asked for.
            let kept = (options.keep_blocks && from == Format::Systemds)
                .then(|| objects.first().and_then(|o| o.blocks().first()))
                .flatten()
                .map(|b| (b.place.rows.max(1), b.place.cols.max(1)));
            let dbdf = options.dbdf_options(kept);
            // Kept blocks with nothing asking otherwise go out as they are, without a
            // second copy of the matrix.
            let as_stored = kept.is_some()
                && options.tile.is_none()
                && options.block.is_none()
                && !options.narrow
                && options.value_type.is_none()
                && options.data_type.is_none()
                && !options.daphne;
            write_output(output, |w| {
                for object in &objects {
                    if as_stored {
                        object.encode(&mut *w)
                    } else {
                        object.write_with(&mut *w, &dbdf)
                    }
                    .map_err(|e| ConvertError::at(output, e))?;
                }
                Ok(())
            })?;
            if options.daphne && to_file {
                write_sidecar_for(output).map_err(|e| remove_and_fail(output, e))?;
            }
        }
        Format::Mtx => {
            let object = single("MatrixMarket")?;
            write_output(output, |w| mtx::write(object, w).map_err(at_input))?;
        }
        Format::Npy => {
            let object = single(".npy")?;
            write_output(output, |w| npy::to_writer(w, object).map_err(at_input))?;
        }
        Format::Futhark => {
            write_output(output, |w| {
                futhark::to_writer(w, &objects, &options.futhark).map_err(at_input)
            })?;
        }
        Format::Binsparse => {
            let object = single("Binsparse")?;
            // Binsparse to Binsparse keeps the format and the user attributes.
            let (source_format, attributes) = match binsparse_input {
                Some((format, attributes)) => (Some(format), attributes),
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
            if binsparse::is_hdf5(output) || binsparse::is_zarr(output) {
                // HDF5 is a file format: no streaming to standard output.
                binsparse::write_with(output, object, &bsp)
                    .map_err(|e| ConvertError::at(output, e))?;
            } else {
                write_output(output, |w| {
                    binsparse::to_writer(w, object, &bsp).map_err(at_input)
                })?;
            }
        }
        Format::Systemds => {
            let object = single("a SystemDS matrix")?;
            if !to_file {
                return Err(ConvertError::message(
                    output,
                    "SystemDS output is a file and its .mtd: give a path, not -",
                ));
            }
            let sysds = options.systemds_options();
            systemds::write_reporting(output, object, &sysds, options.progress.as_ref())
                .map_err(|e| ConvertError::at(output, e))?;
        }
        Format::Csv => {
            let object = single("CSV")?;
            write_output(output, |w| {
                csv::write(object, w, options.daphne).map_err(at_input)
            })?;
            if to_file {
                csv_sidecar(output, object.header(), &mut report)?;
            }
        }
    }
    Ok(report)
}

/// Writes the `.meta` sidecar of a CSV file, so that its types survive; where DAPHNE's
/// sidecars cannot name them (16-bit types), the CSV stands alone and the report says so.
pub(super) fn csv_sidecar(
    output: &Path,
    header: &Header,
    report: &mut Report,
) -> Result<(), ConvertError> {
    match write_sidecar(output, header).map_err(Error::into_details) {
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
    write: impl FnOnce(&mut dyn Write) -> Result<(), E>,
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
    let result = write_atomically(output, |file| {
        let file = serde_daphne::__private::io::Preallocating::new(file);
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        if let Err(f) = write(&mut writer) {
            failure = Some(f);
            return Err(ErrorImpl::Io(std::io::Error::other("failed")).into());
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

/// A CSR matrix DaphneDSL would type as dense (denser than DAPHNE's sparsity threshold, or
/// without cells) becomes a DenseMatrix, which is what `readMatrix` will ask the file for;
/// when CSR was asked for explicitly it stays, with a warning saying what follows.
fn for_daphne_dsl(
    object: &mut Object,
    explicit: bool,
    output: &Path,
    report: &mut Report,
) -> Result<(), ConvertError> {
    // The count the sidecar records and DaphneDSL types the read by: stored entries,
    // explicit zeros included (not the non-zero values, which can be fewer).
    let ((rows, cols), nnz) = (object.shape(), object.entries());
    if object.data_type() != DataType::CsrMatrix || daphne_types_as_csr(rows, cols, nnz) {
        return Ok(());
    }
    if !explicit {
        return retype(object, DataType::DenseMatrix).map_err(|e| ConvertError::at(output, e));
    }
    let density = match rows * cols {
        0 => "no cells".to_owned(),
        cells => format!("density {:.3}", nnz as f64 / cells as f64),
    };
    report.warnings.push(format!(
        "{}: warning: DaphneDSL's readMatrix types this {rows} x {cols} CSR matrix \
         ({density}, not below {DAPHNE_SPARSITY_THRESHOLD}) as dense and will fail on it; \
         DAPHNE's C++ reader reads it as CSR",
        output.display()
    ));
    Ok(())
}

/// Changes a matrix's data type in place (only its header changes; no copy of the blocks).
fn retype(object: &mut Object, data_type: DataType) -> serde_daphne::Result<()> {
    let placeholder = Object::dense(0, 0, Values::U8(Vec::new()))?;
    *object = std::mem::replace(object, placeholder).with_data_type(data_type)?;
    Ok(())
}

/// A sidecar that could not be written: the data file goes too, so nothing half-done stays.
fn remove_and_fail(output: &Path, error: Error) -> ConvertError {
    let _ = std::fs::remove_file(output);
    ConvertError::at(&sidecar_path(output), error)
}
