//! Conversions whose input or output is an object behind a URL.
//!
//! Every remote input streams through the pipe with no local copy, opened as a
//! [`crate::storage::Input`] over an [`ObjectReader`] (sidecars fetched when the format
//! asks): `.dbdf` by its index or headers, then its blocks in file order, read ahead (and
//! DAPHNE's segments, the objects under the prefix `NAME.hdfs/`, each so); Parquet by its
//! footer, then its row groups; Arrow IPC by its footer, then its batches; `.npy`, numpy's,
//! scipy's and Binsparse's `.npz` and Futhark by their headers, then the rows a band or
//! window needs; CSV, MatrixMarket and SystemDS (a file, or the objects under a prefix
//! `NAME/`, listed) as streams read ahead; a Binsparse Zarr group key by key, an HDF5 file
//! by the HDF5 library's reads. A conversion that reads its input twice (CSV, MatrixMarket,
//! an untiled matrix whose block type depends on its non-zeros) fetches it twice. A format
//! without [`crate::driver::Driver::open_at`] is refused, never downloaded. A remote output
//! in a format written as one stream (a `.dbdf` too, with the block index its writer makes)
//! goes up as it is written (a streaming upload); others are written in a private temporary
//! folder, made only then, and uploaded with their sidecars (the object appears only when
//! complete); outputs of several files (Zarr groups, SystemDS output, DAPHNE's segments)
//! file by file under their prefix, their metadata last ([`super::folders`]).

use std::path::{Path, PathBuf};

use serde_daphne::lowlevel::{remove_stale_temporaries, temporary_path};
use serde_daphne::Result;

use super::folders::{upload_folder, PrefixWrite};
use super::reader::is_not_found;
use super::sets::upload_with_sidecars;
use super::sets::{complete_with_sidecars, segment, NewSidecar};
use super::upload::StreamingUpload;
use super::{Location, ObjectReader, RemoteObject, StorageOptions};
use crate::convert::{
    self, convert_from, convert_into, convert_into_files, ConvertError, ConvertOptions, Format,
    Report,
};
use crate::driver::{Stored, Written};
use crate::native;
use crate::pipe::Source;
use crate::segments::SegmentsSource;
use crate::storage::Input;
use serde_daphne::lowlevel::parse_meta;

/// A folder of this process's own under the temporary directory, removed when dropped: where
/// remote outputs not written as one stream are written before they are sent.
pub(crate) struct Scratch(pub PathBuf);

impl Scratch {
    /// A new, empty folder.
    ///
    /// # Errors
    /// I/O errors creating it, naming the folder.
    pub(crate) fn new() -> Result<Scratch> {
        // Named as every temporary is; what killed conversions left goes first.
        let base = std::env::temp_dir().join("dbdf-remote");
        remove_stale_temporaries(&base);
        let dir = temporary_path(&base);
        std::fs::create_dir(&dir).map_err(|e| {
            let why = format!(
                "the scratch folder {} (TMPDIR) cannot be made: {e}",
                dir.display()
            );
            std::io::Error::new(e.kind(), why)
        })?;
        Ok(Scratch(dir))
    }
}

/// The scratch folder of a conversion, made when first asked for: inputs read in place
/// need none.
fn scratch_in(scratch: &mut Option<Scratch>) -> Result<&Scratch> {
    Ok(match scratch {
        Some(made) => made,
        none => none.insert(Scratch::new()?),
    })
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Converts `input` to `output`, either of which may be a URL (the other a path, or `-` for
/// standard output), as [`convert::convert`] does between paths. An output in a format
/// written as one stream goes up as a streaming upload, with no local copy; others are
/// written file by file into the objects (a Zarr group, SystemDS output, HDF5 with its head
/// last), or, where the store cannot take them so, in the scratch folder first. Requests
/// are counted on each object's [`super::RequestStats`] and the process's.
///
/// # Errors
/// As [`convert::convert`], and each request's error naming its URL. A folder output (a
/// Zarr group, SystemDS part files, DAPHNE's segments) goes up as the objects under the
/// prefix `NAME/`, its sidecar last; a failed write leaves the old set.
pub fn convert_urls(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    storage: &StorageOptions,
) -> std::result::Result<Report, ConvertError> {
    let mut scratch = None;
    let out_object = match Location::of_path(output).map_err(fail_at(output))? {
        Location::Remote(url) => Some(RemoteObject::new(&url, storage).map_err(fail_at(output))?),
        Location::Local(_) => None,
    };
    let to = convert::format_of(output, options.to, false)?;
    // A file written only to be uploaded (and removed) need not reach the disk first.
    let synced = ConvertOptions {
        sync: options.sync && out_object.is_none(),
        ..options.clone()
    };
    let options = &synced;
    // The input as a source: a local file's, or a remote object's read in place (whose
    // inputs gather notes on refused sidecars as it is read).
    let (mut source, opened) = match Location::of_path(input).map_err(fail_at(input))? {
        Location::Local(path) => {
            let from = convert::format_of(&path, options.from, true)?;
            (convert::source(&path, from, options)?, Vec::new())
        }
        Location::Remote(url) => {
            let opened = open_remote(&url, input, options, storage, None)?;
            (opened.source, opened.inputs)
        }
    };
    let mut report = match (&out_object, to.driver().written(output)) {
        (Some(object), Written::Stream | Written::FileOrStream) => {
            stream_up(&mut *source, input, output, object, options)?
        }
        (Some(object), _) => 'written: {
            // File by file into the objects, where the format writes so.
            let files = PrefixWrite::new(object);
            if let Some(report) = convert_into_files(&mut *source, input, output, options, &files)?
            {
                files.commit().map_err(fail_at(output))?;
                break 'written report;
            }
            // Written under its own name, so that its extension names its format.
            let local_output = scratch_in(&mut scratch)
                .map_err(fail_at(output))?
                .0
                .join(object.file_name());
            let report = convert_from(&mut *source, input, &local_output, options)?;
            let uploaded = match local_output.is_dir() {
                true => upload_folder(&local_output, object),
                false => upload_with_sidecars(&local_output, object, None),
            };
            uploaded.map_err(fail_at(output))?;
            report
        }
        (None, _) => convert_from(&mut *source, input, output, options)?,
    };
    let notes = opened.iter().flat_map(Input::take_notes);
    report.warnings.splice(0..0, notes);
    Ok(report)
}

/// Converts `source` (read from `input`) into a streaming upload of `object` (`output`),
/// with no local copy: its parts sent as the sink writes them, its sidecars made in memory
/// as a local write makes them, then the object and its sidecars made visible as one set.
/// A failure aborts the upload: the old set stays.
fn stream_up(
    source: &mut dyn Source,
    input: &Path,
    output: &Path,
    object: &RemoteObject,
    options: &ConvertOptions,
) -> std::result::Result<Report, ConvertError> {
    let to = convert::format_of(output, options.to, false)?;
    let mut upload = StreamingUpload::new(object);
    let converted = convert_into(source, input, output, options, &mut upload)?;
    let mut report = converted.report;
    let headers = converted.headers.as_deref();
    let (own, warning) = to
        .driver()
        .sidecars(output, headers)
        .map_err(fail_at(output))?;
    let mut sidecars: Vec<NewSidecar> = Vec::new();
    // The sink's own (a `.dbdf`'s index) in place of any of that name.
    for (suffix, bytes) in own.into_iter().chain(converted.sidecars) {
        let sidecar = object.sibling(suffix);
        sidecars.retain(|(other, _)| other.url() != sidecar.url());
        sidecars.push((sidecar, bytes));
    }
    let staged = upload.finish().map_err(fail_at(output))?;
    complete_with_sidecars(staged, object, sidecars).map_err(fail_at(output))?;
    report.warnings.extend(warning);
    Ok(report)
}

/// Opens the object at `url` (`input` as given) in place, as its format is stored
/// ([`Stored`]): by ranges or streams, DAPHNE's segments segment by segment. Without a
/// format named, the extension tells it, or the content where a driver asks for it (a
/// `.npz`'s members), else `otherwise`.
///
/// # Errors
/// An input whose format nothing tells, or that the format reads from local files only;
/// request errors naming the URL.
fn open_remote(
    url: &str,
    input: &Path,
    options: &ConvertOptions,
    storage: &StorageOptions,
    otherwise: Option<Format>,
) -> std::result::Result<InPlace, ConvertError> {
    let name = Path::new(url.rsplit('/').next().unwrap_or(url));
    let named = options.from.or_else(|| Format::of_path(name, false));
    let object = RemoteObject::new(url, storage).map_err(fail_at(input))?;
    if let Some(format) = named.filter(|f| f.stored() == Stored::Segments) {
        let (source, inputs) = open_segments(&object).map_err(fail_at(input))?;
        let source = Box::new(source);
        return Ok(InPlace {
            format,
            source,
            inputs,
        });
    }
    let opened = ObjectReader::input_or_folder(object).map_err(fail_at(input))?;
    let told = match options.from {
        Some(format) => Some(format),
        None => Format::all()
            .into_iter()
            .find(|f| f.driver().identify_at(&opened, name))
            .or(named),
    };
    let format = told
        .or(otherwise)
        .ok_or_else(|| convert::untold(input, true))?;
    if format.stored() != Stored::Ranges {
        return Err(ConvertError::message(
            input,
            format!("{format} files are read from local files only (its driver has no open_at): copy the object first"),
        ));
    }
    let driver = format.driver();
    let source = driver.open_at(opened.clone(), options);
    let source = source.and_then(|s| convert::projected(s, driver, options));
    Ok(InPlace {
        format,
        source: source.map_err(fail_at(input))?,
        inputs: vec![opened],
    })
}

/// A remote input read in place: its format, its source, and the inputs the source reads
/// (which gather notes on the sidecars the store refused, as the source asks for them).
struct InPlace {
    format: Format,
    source: Box<dyn Source>,
    inputs: Vec<Input>,
}

/// An input of any format opened for reading, from a path or a URL (read in place): its
/// format and its source.
pub struct OpenedInput {
    /// The input's format.
    pub format: Format,
    /// Its objects, as a source of the pipe ([`convert::source`]).
    pub source: Box<dyn Source>,
    /// Sidecars the store refused (403), each a line: the input was read without them, as
    /// without missing ones.
    pub notes: Vec<String>,
}

/// Opens `input` (a path or a URL) as a source of the pipe, in [`ConvertOptions::from`] or the
/// format its extension (or content) names; with no format named, `.dbdf`.
///
/// # Errors
/// As [`convert::source`], and each request's error naming its URL.
pub fn open_input(
    input: &Path,
    options: &ConvertOptions,
    storage: &StorageOptions,
) -> std::result::Result<OpenedInput, ConvertError> {
    match Location::of_path(input).map_err(fail_at(input))? {
        Location::Local(path) => {
            let format = options
                .from
                .or_else(|| Format::of_path(&path, true))
                .unwrap_or(Format::Dbdf);
            Ok(OpenedInput {
                format,
                source: convert::source(&path, format, options)?,
                notes: Vec::new(),
            })
        }
        Location::Remote(url) => {
            let opened = open_remote(&url, input, options, storage, Some(Format::Dbdf))?;
            Ok(OpenedInput {
                format: opened.format,
                source: opened.source,
                notes: opened.inputs.iter().flat_map(Input::take_notes).collect(),
            })
        }
    }
}

fn fail_at(path: &Path) -> impl Fn(serde_daphne::Error) -> ConvertError + '_ {
    move |e| ConvertError::at(path, e)
}

/// The folder of segments behind `folder` (the objects under `NAME.hdfs/`) read in place: its
/// local sidecar `NAME.hdfs.meta` (put last by a write, deleted while one runs: without it,
/// the folder is refused), then segments 1, 2, ... up to the first missing one, each opened as
/// a remote `.dbdf` (with its sidecar); the segments' inputs, which gather notes. Each segment
/// is pinned to the version its first request saw; a folder rewritten meanwhile may mix
/// segments of two writes, which the local sidecar's row count catches where they differ.
fn open_segments(folder: &RemoteObject) -> Result<(SegmentsSource, Vec<Input>)> {
    let sidecar = folder.sibling(".meta");
    let Some(bytes) = sidecar.get_if_present()? else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "{} has no sidecar {}: not a folder of DAPHNE's segments, or one being written",
                folder.url(),
                sidecar.url()
            ),
        )
        .into());
    };
    let name = sidecar.url();
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|_| serde_daphne::Error::invalid(format!("{name} is not UTF-8 text")))?;
    let local = Some(parse_meta(&text, Path::new(name))?);
    let mut segments = Vec::new();
    let mut inputs = Vec::new();
    for i in 1.. {
        let object = segment(folder, i);
        let input = match ObjectReader::input(object.clone()) {
            Ok(input) => input,
            Err(e) if i > 1 && is_not_found(&e) => break,
            Err(e) => return Err(e),
        };
        segments.push((object.url().to_owned(), native::source_at(&input)?));
        inputs.push(input);
    }
    Ok((SegmentsSource::of_segments(segments, local)?, inputs))
}
