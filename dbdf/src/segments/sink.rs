//! Writing a folder of segments: the object's bands, in row order, cut at the segments'
//! boundaries and written through one runtime-dialect [`DbdfWriter`] per segment, each a
//! stream into a file of the folder (a local one being filled, or an object).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{row_split, segment_path, WriteOptions};
use crate::pipe::{Band, Cells, Pieces, Sink, Want};
use crate::storage::{FileOut, LocalFolder, OutputFiles};
use serde_daphne::lowlevel::{segments_meta, sidecar_path, FileSet};
use serde_daphne::with_value_type;
use serde_daphne::DbdfWriter;
use serde_daphne::Dialect;
use serde_daphne::Header;
use serde_daphne::Options;
use serde_daphne::{DataType, Error, Result};

/// A sink writing one object as DAPHNE's segmented layout: at a path, the folder (replaced
/// in one step once every segment is written), then its local sidecar; or into an output's
/// files (the objects under a prefix, and the sidecar), which their caller puts in place.
pub struct SegmentsSink<'f> {
    folder: PathBuf,
    files: Option<&'f dyn OutputFiles>,
    segments: usize,
    warnings: Vec<String>,
}

impl<'f> SegmentsSink<'f> {
    pub(crate) fn new(folder: &Path, options: &WriteOptions) -> SegmentsSink<'f> {
        SegmentsSink {
            folder: folder.to_owned(),
            files: None,
            segments: options.count(),
            warnings: Vec::new(),
        }
    }

    /// A sink writing the folder named `folder` into `files`.
    pub(crate) fn into_files(
        files: &'f dyn OutputFiles,
        folder: &Path,
        options: &WriteOptions,
    ) -> Self {
        SegmentsSink {
            files: Some(files),
            ..SegmentsSink::new(folder, options)
        }
    }
}

/// Whether the folder at `path` holds only segments and their sidecars and indexes, which a
/// new write may replace.
pub(super) fn is_segment_folder(path: &Path) -> bool {
    let Ok(prefix) = super::folder_name(path).map(super::segment_prefix) else {
        return false;
    };
    std::fs::read_dir(path).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .all(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    })
}

/// A segment's file, shared by its writer (which takes a writer of its own) and the caller,
/// who finishes it once the writer is done.
#[derive(Clone)]
struct Shared<'f>(Arc<Mutex<Option<Box<dyn FileOut + 'f>>>>);

impl Write for Shared<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(file) => file.write(bytes),
            None => Err(std::io::Error::other(
                "internal: a segment written after its end",
            )),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// The segment being written: its number (from 0), its name, file and writer.
struct Open<'f> {
    k: usize,
    name: String,
    file: Shared<'f>,
    writer: DbdfWriter<'f>,
}

impl Open<'_> {
    /// Finishes the segment: its file, then its sidecar (`.meta`) beside it.
    fn finish(self, files: &dyn OutputFiles) -> Result<()> {
        let sidecars = self.writer.finish()?;
        let file = self.file.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        file.ok_or_else(|| Error::invalid("internal: a segment finished twice"))?
            .finish()?;
        for (suffix, bytes) in sidecars {
            files.put(&format!("{}{suffix}", self.name), &bytes)?;
        }
        Ok(())
    }
}

impl Sink for SegmentsSink<'_> {
    fn wants(&self, _: &Header) -> Want {
        Want::Bands(1)
    }

    fn holds_one(&self) -> Option<&'static str> {
        Some("DAPHNE's segmented layout")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        if let Header::Scalar { .. } = header {
            return Err(Error::invalid(
                "a scalar has no rows to split into segments",
            ));
        }
        let (folder, segments) = (&self.folder, self.segments);
        let sidecar = segments_meta(folder, header)?;
        match self.files {
            Some(files) => {
                write_segments(files, folder, segments, header, pieces)?;
                files.sidecar(".meta", sidecar.into_bytes())?;
            }
            None => {
                // The folder and its local sidecar as one set: both or neither.
                let mut set = FileSet::new(false);
                set.folder(folder, is_segment_folder, |dir| {
                    let files = LocalFolder(dir.to_owned());
                    write_segments(&files, folder, segments, header, pieces)
                })?;
                set.bytes(sidecar_path(folder), sidecar.as_bytes())?;
                set.commit()?;
            }
        }
        if header.data_type() != DataType::DenseMatrix {
            self.warnings.push(format!(
                "{}: DAPHNE's runtime reads dense matrices from segments; this {} reads back \
                 with dbdf, not with DAPHNE",
                self.folder.display(),
                header.data_type()
            ));
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(self.warnings)
    }
}

/// Writes the object's rows into `segments` segments of the folder named `folder`, each a
/// runtime-dialect stream into a file of `files` (named as in the folder), with its sidecar.
fn write_segments(
    files: &dyn OutputFiles,
    folder: &Path,
    segments: usize,
    header: &Header,
    pieces: &mut Pieces<'_>,
) -> Result<()> {
    let split = row_split(header.rows(), segments);
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        sync: false,
        ..Options::new()
    };
    let start = |k: usize| -> Result<Open<'_>> {
        let mut part = header.clone();
        super::source::set_rows(&mut part, split[k].end - split[k].start);
        let path = segment_path(folder, k + 1)?;
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let file = Shared(Arc::new(Mutex::new(Some(files.create(&name)?))));
        let mut writer = DbdfWriter::to_stream(file.clone(), &runtime)?;
        writer.begin(part)?;
        Ok(Open {
            k,
            name,
            file,
            writer,
        })
    };
    let mut open = Some(start(0)?);
    pieces.for_each(&mut |band| {
        let mut rest = Some(band);
        while let Some(band) = rest.take() {
            let Some(current) = open.as_mut() else {
                return Err(Error::invalid("rows past the object's last segment"));
            };
            let rows = &split[current.k];
            let end = band.first_row + band.rows;
            let here = if end > rows.end {
                let cols = band.first_col..band.first_col + band.cols;
                rest = Some(band.window(rows.end..end, cols.clone()));
                band.window(band.first_row..rows.end, cols)
            } else {
                band
            };
            write_band(&mut current.writer, header, rows.start, &here)?;
            let next = current.k + 1;
            if here.first_row + here.rows == rows.end && next < split.len() {
                if let Some(done) = open.take() {
                    done.finish(files)?;
                }
                open = Some(start(next)?);
            }
        }
        Ok(true)
    })?;
    let last = open
        .take()
        .ok_or_else(|| Error::invalid("no segment open"))?;
    if last.k + 1 != split.len() {
        return Err(Error::invalid(
            "the object's rows ended before its last segment",
        ));
    }
    last.finish(files)
}

/// Writes `band` (rows of the object) into its segment's writer, whose rows start at
/// `start`.
fn write_band(writer: &mut DbdfWriter<'_>, header: &Header, start: u64, band: &Band) -> Result<()> {
    if band.rows == 0 {
        return Ok(());
    }
    let row = band.first_row - start;
    match (&band.cells, header) {
        (Cells::Frame(columns), _) => writer.write_frame_rows(row, columns),
        (_, Header::Frame { .. }) => Err(Error::invalid("a matrix band for a frame")),
        _ => {
            let vt = header
                .matrix_value_type()
                .ok_or_else(|| Error::invalid("a matrix without a value type"))?;
            with_value_type!(vt, T => writer.write_tile(row, 0, &band.matrix::<T>()?))
        }
    }
}
