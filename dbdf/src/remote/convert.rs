//! Conversions whose input or output is an object behind a URL.
//!
//! Inputs of the formats read in place stream through the pipe with no local copy, opened
//! as a [`crate::storage::Input`] over an [`ObjectReader`] (sidecars fetched when the format
//! asks): `.dbdf` by its index or headers, then its blocks in file order, read ahead (and
//! DAPHNE's segments, the objects under the prefix `NAME.hdfs/`, each so); Parquet by its
//! footer, then its row groups; Arrow IPC by its footer, then its batches; `.npy`, numpy's,
//! scipy's and Binsparse's `.npz` and Futhark by their headers, then the rows a band or window
//! needs; CSV, MatrixMarket and SystemDS (a file, or the objects under a prefix `NAME/`,
//! listed) as streams read ahead; a Binsparse Zarr group key by key. A conversion that reads its input twice (CSV, MatrixMarket,
//! an untiled matrix whose block type depends on its non-zeros) fetches it twice. Other
//! remote inputs are downloaded first, with their sidecars, into a private temporary
//! folder, made only then. A remote output is written there, then uploaded with its
//! sidecars (the object appears only when complete), and a `.dbdf` output gets its block
//! index beside it; DAPHNE's segments are sent one by one, and `NAME.hdfs.meta` last.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_daphne::lowlevel::{remove_stale_temporaries, temporary_path, FileSet};
use serde_daphne::Result;

use super::reader::is_not_found;
use super::sets::{complete_with_sidecars, new_sidecars, segment, upload_segments};
use super::sets::{upload_with_sidecars, SIDECARS};
use super::upload::StreamingUpload;
use super::{download_to, Location, ObjectReader, RemoteObject, StorageOptions};
use crate::convert::{
    self, convert_from, convert_into, ConvertError, ConvertOptions, Format, Report,
};
use crate::driver::{Stored, Written};
use crate::native;
use crate::pipe::Source;
use crate::segments::SegmentsSource;
use crate::storage::Input;
use serde_daphne::lowlevel::parse_meta;

/// A folder of this process's own under the temporary directory, removed when dropped: where
/// remote inputs are downloaded and remote outputs written before they are sent.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A new, empty folder.
    ///
    /// # Errors
    /// I/O errors creating it, naming the folder.
    pub fn new() -> Result<Scratch> {
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
/// written in the scratch folder first. Requests are counted on each object's
/// [`super::RequestStats`] and the process's.
///
/// # Errors
/// As [`convert::convert`], and each request's error naming its URL; outputs that are
/// folders (Zarr groups, SystemDS part folders) cannot be uploaded yet, except DAPHNE's
/// segments (the objects under `NAME.hdfs/`, then `NAME.hdfs.meta`).
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
    // The input as a source: a local file's, a remote object's read in place (whose inputs
    // gather notes on refused sidecars as it is read), or its local copy's.
    let (mut source, mut notes, opened) = match Location::of_path(input).map_err(fail_at(input))? {
        Location::Local(path) => {
            let from = convert::format_of(&path, options.from, true)?;
            (
                convert::source(&path, from, options)?,
                Vec::new(),
                Vec::new(),
            )
        }
        Location::Remote(url) => match fetch_input(&url, input, options, storage, &mut scratch)? {
            Fetched::Copy(local, from, notes) => {
                let at_input =
                    |e: ConvertError| ConvertError::at(input, serde_daphne::Error::from(e));
                let from = convert::format_of(&local, from, true).map_err(at_input)?;
                let source = convert::source(&local, from, options).map_err(at_input)?;
                (source, notes, Vec::new())
            }
            Fetched::Streamed(_, source, opened) => (source, Vec::new(), opened),
        },
    };
    let mut report = match (&out_object, to.driver().written(output)) {
        (Some(object), Written::Stream) => {
            stream_up(&mut *source, input, output, object, options, &mut scratch)?
        }
        (Some(object), _) => {
            // Written under its own name, so that its extension names its format.
            let local_output = scratch_in(&mut scratch)
                .map_err(fail_at(output))?
                .0
                .join(object.file_name());
            let report = convert_from(&mut *source, input, &local_output, options)?;
            let uploaded = match to.driver().stored() {
                Stored::Segments => upload_segments(&local_output, object),
                _ => to
                    .driver()
                    .index(&local_output, options)
                    .and_then(|index| upload_with_sidecars(&local_output, object, index)),
            };
            uploaded.map_err(fail_at(output))?;
            report
        }
        (None, _) => convert_from(&mut *source, input, output, options)?,
    };
    notes.extend(opened.iter().flat_map(Input::take_notes));
    report.warnings.splice(0..0, notes);
    Ok(report)
}

/// Converts `source` (read from `input`) into a streaming upload of `object` (`output`),
/// with no local copy: its parts sent as the sink writes them, its sidecars made as a local
/// write makes them (in the scratch folder: a few bytes), then the object and its sidecars
/// made visible as one set. A failure aborts the upload: the old set stays.
fn stream_up(
    source: &mut dyn Source,
    input: &Path,
    output: &Path,
    object: &RemoteObject,
    options: &ConvertOptions,
    scratch: &mut Option<Scratch>,
) -> std::result::Result<Report, ConvertError> {
    let to = convert::format_of(output, options.to, false)?;
    let mut upload = StreamingUpload::new(object);
    let (mut report, headers) = convert_into(source, input, output, options, &mut upload)?;
    let sidecars = (|| -> Result<_> {
        let beside = scratch_in(scratch)?.0.join(object.file_name());
        let mut set = FileSet::new(false);
        let warning = to
            .driver()
            .sidecars(&mut set, &beside, headers.as_deref())?;
        set.commit()?;
        Ok((new_sidecars(&beside, object, None)?, warning))
    })();
    let (sidecars, warning) = sidecars.map_err(fail_at(output))?;
    let staged = upload.finish().map_err(fail_at(output))?;
    complete_with_sidecars(staged, object, sidecars).map_err(fail_at(output))?;
    report.warnings.extend(warning);
    Ok(report)
}

/// A remote input, fetched: a local copy (with the format asked for, if one), or a source
/// reading the object with range requests.
enum Fetched {
    /// A local copy, the format asked for, and notes on sidecars the store refused.
    Copy(PathBuf, Option<Format>, Vec<String>),
    /// A source reading the objects in place, and the objects (which gather notes on the
    /// sidecars the store refused, as the source asks for them).
    Streamed(Format, Box<dyn Source>, Vec<Input>),
}

/// Opens the object at `url` (`input` as given) for reading, as its format is stored
/// ([`Stored`]): formats read in place by ranges or streams, DAPHNE's segments and other
/// objects downloaded with their sidecars into `scratch` (made then). Without a format named,
/// the extension tells it, or the content where a driver asks for it (a `.npz`'s members).
fn fetch_input(
    url: &str,
    input: &Path,
    options: &ConvertOptions,
    storage: &StorageOptions,
    scratch: &mut Option<Scratch>,
) -> std::result::Result<Fetched, ConvertError> {
    let name = Path::new(url.rsplit('/').next().unwrap_or(url));
    let named = options.from.or_else(|| Format::of_path(name, false));
    let object = RemoteObject::new(url, storage).map_err(fail_at(input))?;
    if let Some(format) = named.filter(|f| f.stored() == Stored::Segments) {
        let (source, inputs) = open_segments(&object).map_err(fail_at(input))?;
        return Ok(Fetched::Streamed(format, Box::new(source), inputs));
    }
    let opened = ObjectReader::input_or_folder(object.clone()).map_err(fail_at(input))?;
    let told = match options.from {
        Some(format) => Some(format),
        None => Format::all()
            .into_iter()
            .find(|f| f.driver().identify_at(&opened, name))
            .or(named),
    };
    match told.filter(|f| f.driver().reads_in_place(&opened, name)) {
        Some(format) => {
            let driver = format.driver();
            let source = driver.open_at(opened.clone(), options);
            let source = source.and_then(|s| convert::projected(s, driver, options));
            Ok(Fetched::Streamed(
                format,
                source.map_err(fail_at(input))?,
                vec![opened],
            ))
        }
        None => {
            let dir = &scratch_in(scratch).map_err(fail_at(input))?.0;
            let (local, notes) = fetch_with_sidecars(&object, dir).map_err(fail_at(input))?;
            Ok(Fetched::Copy(local, options.from, notes))
        }
    }
}

/// An input of any format opened for reading, from a path or a URL: its format and its
/// source. A remote input is fetched as [`convert_urls`] fetches it, into a folder that lives
/// as long as this.
pub struct OpenedInput {
    /// The input's format.
    pub format: Format,
    /// Its objects, as a source of the pipe ([`convert::source`]).
    pub source: Box<dyn Source>,
    /// Sidecars the store refused (403), each a line: the input was read without them, as
    /// without missing ones.
    pub notes: Vec<String>,
    // Dropped after the source, which may read from it.
    _scratch: Option<Scratch>,
}

/// Opens `input` (a path or a URL) as a source of the pipe, in [`ConvertOptions::from`] or the
/// format its extension (or content, for a local file) names; with no format named, `.dbdf`.
///
/// # Errors
/// As [`convert::source`], and each request's error naming its URL.
pub fn open_input(
    input: &Path,
    options: &ConvertOptions,
    storage: &StorageOptions,
) -> std::result::Result<OpenedInput, ConvertError> {
    let local = |path: &Path, from: Option<Format>| {
        let format = from
            .or_else(|| Format::of_path(path, true))
            .unwrap_or(Format::Dbdf);
        convert::source(path, format, options).map(|source| (format, source))
    };
    match Location::of_path(input).map_err(fail_at(input))? {
        Location::Local(path) => {
            let (format, source) = local(&path, options.from)?;
            Ok(OpenedInput {
                format,
                source,
                notes: Vec::new(),
                _scratch: None,
            })
        }
        Location::Remote(url) => {
            let mut scratch = None;
            let (format, source, notes) =
                match fetch_input(&url, input, options, storage, &mut scratch)? {
                    Fetched::Copy(copy, from, notes) => {
                        let (format, source) = local(&copy, from)
                            .map_err(|e| ConvertError::at(input, serde_daphne::Error::from(e)))?;
                        (format, source, notes)
                    }
                    Fetched::Streamed(format, source, opened) => (
                        format,
                        source,
                        opened.iter().flat_map(Input::take_notes).collect(),
                    ),
                };
            Ok(OpenedInput {
                format,
                source,
                notes,
                _scratch: scratch,
            })
        }
    }
}

fn fail_at(path: &Path) -> impl Fn(serde_daphne::Error) -> ConvertError + '_ {
    move |e| ConvertError::at(path, e)
}

/// Downloads `object` and whichever of its sidecars exist into `dir`, under its name; a
/// sidecar the store refuses (403) is taken as missing, with a note.
fn fetch_with_sidecars(object: &RemoteObject, dir: &Path) -> Result<(PathBuf, Vec<String>)> {
    let local = dir.join(object.file_name());
    download_to(object, &File::create(&local)?)?;
    let mut notes = Vec::new();
    for suffix in SIDECARS {
        match object.sibling(suffix).get_optional()? {
            Ok(Some(bytes)) => {
                let mut name = local.clone().into_os_string();
                name.push(suffix);
                std::fs::write(name, &bytes)?;
            }
            Ok(None) => {}
            Err(why) => notes.push(format!("{why}; read as without it")),
        }
    }
    Ok((local, notes))
}

/// The folder of segments behind `folder` (the objects under `NAME.hdfs/`) read in place:
/// segments 1, 2, ... up to the first missing one, each opened as a remote `.dbdf` (with its
/// sidecar), and the folder's local sidecar `NAME.hdfs.meta` where there is one; the segments'
/// inputs, which gather notes. Each segment is pinned to the version its first request saw;
/// a folder rewritten meanwhile may mix segments of two writes, which the local sidecar's row
/// count catches where the counts differ.
fn open_segments(folder: &RemoteObject) -> Result<(SegmentsSource, Vec<Input>)> {
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
    let local = match folder.sibling(".meta").get_if_present()? {
        Some(bytes) => {
            let name = format!("{}.meta", folder.url());
            let text = String::from_utf8(bytes.to_vec())
                .map_err(|_| serde_daphne::Error::invalid(format!("{name} is not UTF-8 text")))?;
            Some(parse_meta(&text, Path::new(&name))?)
        }
        None => None,
    };
    Ok((SegmentsSource::of_segments(segments, local)?, inputs))
}
