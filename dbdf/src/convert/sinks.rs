//! The output side of conversions: each target format's sink, fed by the pipe.

use std::io::Write;
use std::path::Path;

use super::{ConvertError, ConvertOptions, Report};
use crate::driver::{Driver, Written};
use crate::pipe::{self, Failed, InputMetadata, MadeSidecars, PumpOptions, Sink, Source};
use serde_daphne::lowlevel::temporary_path;
use serde_daphne::lowlevel::{appended, sidecar_path, FileSet};
use serde_daphne::{Error, Header};

/// Converts what `source` (read from `input`) holds to `output`: value and data type changes
/// on the way, then the output format's sink (by default the extension's; see
/// [`crate::driver::Written`] for how each is written), built from that format's options in
/// `options`. `output` `-` is standard output, built first (in memory, or a file written at
/// a path in a temporary file) so that a failure prints nothing.
///
/// Sinks: `.dbdf` tile by tile or one block from bands read twice
/// ([`DbdfSink`](crate::pipe::DbdfSink)); `.npy`,
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
    let to = super::format_of(output, options.to, false)?.driver();
    let (pump_options, metadata, headers) = prepared(&*source, to, output, options)?;
    let mut pump = |sink: Box<dyn Sink + '_>, output_side: bool| {
        pipe::pump(&mut *source, sink, &pump_options)
            .map_err(|f| blame(f, input, output, output_side))
    };
    let mut report = Report::default();
    let to_stdout = output == Path::new("-");
    match to.written(output) {
        Written::Set(what) if to_stdout => {
            return Err(ConvertError::message(
                output,
                format!("{what}: give a path, not -"),
            ))
        }
        // Standard output: a file in the temporary directory first, so that a failure
        // prints nothing (and the format has one writer); it is deleted once printed, so
        // it needs no sync.
        Written::File | Written::FileOrStream if to_stdout => {
            // Named as every temporary is, with the format's extension after it.
            let extension = to.extensions().first().copied().unwrap_or("out");
            let mut path = temporary_path(&std::env::temp_dir().join("stdout")).into_os_string();
            path.push(format!(".{extension}"));
            let path = std::path::PathBuf::from(path);
            let unsynced = ConvertOptions {
                sync: false,
                ..options.clone()
            };
            let sink = to
                .sink_at(&path, &unsynced, &metadata)
                .map_err(|e| ConvertError::at(output, e))?;
            report.warnings = pump(sink, true)?;
            print_and_remove(&path)
                .map_err(|e| ConvertError::message(output, format!("standard output: {e}")))?;
        }
        Written::File | Written::FileOrStream | Written::Set(_) => {
            let sink = to
                .sink_at(output, options, &metadata)
                .map_err(|e| ConvertError::at(output, e))?;
            report.warnings = pump(sink, true)?;
        }
        Written::Stream => {
            // The sidecars are part of the file's own write: both or neither.
            let mut sidecar_warning = None;
            let made: std::cell::Cell<MadeSidecars> = Default::default();
            let sidecars = |set: &mut FileSet| -> Result<(), Error> {
                let (own, warning) = to.sidecars(output, headers.as_deref())?;
                sidecar_warning = warning;
                // The sink's own after the format's: the same name, the sink's bytes.
                for (suffix, bytes) in own.into_iter().chain(made.take()) {
                    let path = appended(output, suffix);
                    match bytes {
                        Some(bytes) => set.bytes(&path, bytes.as_slice())?,
                        None => set.remove(path),
                    }
                }
                Ok(())
            };
            write_output_with(output, options.sync, sidecars, |out| {
                let converted = convert_into(&mut *source, input, output, options, out)?;
                report = converted.report;
                made.set(converted.sidecars);
                Ok(())
            })?;
            report.warnings.extend(sidecar_warning);
        }
    }
    Ok(report)
}

/// What [`convert_into`] wrote: its report, the output's headers (what the format's
/// sidecars describe), where known, and the sidecars the sink made
/// ([`Sink::finish_with_sidecars`]).
pub(crate) struct Converted {
    pub(crate) report: Report,
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) headers: Option<Vec<Header>>,
    pub(crate) sidecars: MadeSidecars,
}

/// [`convert_from`] into `out`, for an output named `output` that is written as one stream
/// ([`Written::Stream`], [`Written::FileOrStream`]) and put in place by the caller (with
/// the sidecars made, as one set).
///
/// # Errors
/// As [`convert_from`].
pub(crate) fn convert_into(
    source: &mut dyn Source,
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    out: &mut (dyn Write + Send),
) -> Result<Converted, ConvertError> {
    let to = super::format_of(output, options.to, false)?.driver();
    let (pump_options, metadata, headers) = prepared(&*source, to, output, options)?;
    let sink = to
        .sink(out, options, &metadata)
        .map_err(|e| ConvertError::at(output, e))?;
    let mut sidecars = Vec::new();
    let sink = Box::new(MakingSidecars {
        sink,
        sidecars: &mut sidecars,
    });
    let warnings =
        pipe::pump(source, sink, &pump_options).map_err(|f| blame(f, input, output, false))?;
    Ok(Converted {
        report: Report { warnings },
        headers,
        sidecars,
    })
}

/// [`convert_from`] file by file into `files` (the objects of an output in object storage),
/// for an output named `output` that its format writes so
/// ([`crate::driver::Driver::sink_into`]); `None`, with nothing read or written, for one it
/// writes at a path only. The caller puts the files in place.
///
/// # Errors
/// As [`convert_from`].
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
pub(crate) fn convert_into_files(
    source: &mut dyn Source,
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    files: &dyn crate::storage::OutputFiles,
) -> Result<Option<Report>, ConvertError> {
    let to = super::format_of(output, options.to, false)?.driver();
    let (pump_options, metadata, _) = prepared(&*source, to, output, options)?;
    let sink = to
        .sink_into(files, output, options, &metadata)
        .map_err(|e| ConvertError::at(output, e))?;
    let Some(sink) = sink else {
        return Ok(None);
    };
    let warnings =
        pipe::pump(source, sink, &pump_options).map_err(|f| blame(f, input, output, true))?;
    Ok(Some(Report { warnings }))
}

/// A sink whose sidecars are kept when it finishes.
struct MakingSidecars<'s, 'm> {
    sink: Box<dyn Sink + 's>,
    sidecars: &'m mut MadeSidecars,
}

impl Sink for MakingSidecars<'_, '_> {
    fn wants(&self, header: &Header) -> pipe::Want {
        self.sink.wants(header)
    }

    fn passes(&self, header: &Header) -> u32 {
        self.sink.passes(header)
    }

    fn holds_one(&self) -> Option<&'static str> {
        self.sink.holds_one()
    }

    fn write(&mut self, header: &Header, pieces: &mut pipe::Pieces<'_>) -> Result<(), Error> {
        self.sink.write(header, pieces)
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>, Error> {
        let (warnings, sidecars) = self.sink.finish_with_sidecars()?;
        *self.sidecars = sidecars;
        Ok(warnings)
    }
}

/// What pumping `source` into the sink of `to` at `output` takes: the pump's options (the
/// data type the format or the input asks for), the input's metadata, and the output's
/// headers where they can be told before.
fn prepared(
    source: &dyn Source,
    to: &dyn Driver,
    output: &Path,
    options: &ConvertOptions,
) -> Result<(PumpOptions, InputMetadata, Option<Vec<Header>>), ConvertError> {
    let metadata = source.metadata();
    let asked = to
        .data_type(options.data_type, options)
        .map_err(|e| ConvertError::at(output, e))?;
    let pump_options = PumpOptions {
        value_type: options.value_type,
        // A table's metadata may record a CSR matrix, read in dense bands.
        data_type: asked.or(metadata.data_type),
        progress: options.progress.clone(),
        cancel: None,
    };
    let headers = pipe::output_headers(source.headers(), &pump_options).ok();
    Ok((pump_options, metadata, headers))
}

/// Where an error of the pump belongs: the output for a sink of a format written at a path
/// (`output_side`), the input for values a format cannot hold.
fn blame(failed: Failed, input: &Path, output: &Path, output_side: bool) -> ConvertError {
    match failed {
        Failed::Source(e) => ConvertError::at(input, e),
        Failed::Sink(e) if output_side => ConvertError::at(output, e),
        Failed::Sink(e) => ConvertError::at(input, e),
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
