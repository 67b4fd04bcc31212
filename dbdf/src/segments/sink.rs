//! Writing a folder of segments: the object's bands, in row order, cut at the segments'
//! boundaries and written through one runtime-dialect [`DbdfWriter`] per segment.

use std::path::{Path, PathBuf};

use super::{row_split, segment_path, WriteOptions};
use crate::pipe::{Band, Cells, Pieces, Sink, Want};
use serde_daphne::lowlevel::FileSet;
use serde_daphne::with_value_type;
use serde_daphne::DbdfWriter;
use serde_daphne::Dialect;
use serde_daphne::Header;
use serde_daphne::Options;
use serde_daphne::{DataType, Error, Result};

/// A sink writing one object as DAPHNE's segmented layout: the folder (replaced in one step
/// once every segment is written), then its local sidecar.
pub struct SegmentsSink {
    folder: PathBuf,
    segments: usize,
    warnings: Vec<String>,
}

impl SegmentsSink {
    pub(crate) fn new(folder: &Path, options: &WriteOptions) -> SegmentsSink {
        SegmentsSink {
            folder: folder.to_owned(),
            segments: options.count(),
            warnings: Vec::new(),
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

/// The segment being written: its number (from 0), its rows and its writer.
struct Open {
    k: usize,
    writer: DbdfWriter<'static>,
}

impl Sink for SegmentsSink {
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
        let split = row_split(header.rows(), self.segments);
        let runtime = Options {
            dialect: Some(Dialect::Runtime),
            sync: false,
            ..Options::new()
        };
        let folder = self.folder.clone();
        // The folder and its local sidecar as one set: both or neither.
        let mut set = FileSet::new(false);
        set.folder(&self.folder, is_segment_folder, |dir| {
            // Named as in the final folder, written in the temporary one.
            let start = |k: usize| -> Result<Open> {
                let mut part = header.clone();
                super::source::set_rows(&mut part, split[k].end - split[k].start);
                let name = segment_path(&folder, k + 1)?;
                let path = dir.join(name.file_name().unwrap_or_default());
                let mut writer = DbdfWriter::create_with(&path, &runtime)?;
                writer.begin(part)?;
                Ok(Open { k, writer })
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
                            done.writer.finish()?;
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
            last.writer.finish().map(drop)
        })?;
        set.segments_sidecar(&self.folder, header)?;
        set.commit()?;
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

/// Writes `band` (rows of the object) into its segment's writer, whose rows start at
/// `start`.
fn write_band(writer: &mut DbdfWriter, header: &Header, start: u64, band: &Band) -> Result<()> {
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
