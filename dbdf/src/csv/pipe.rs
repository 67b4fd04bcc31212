//! CSV on the pipe: a source that reads the file twice (a first pass checks every record and
//! finds the shape, each column's type without a sidecar, and where bands of rows start; then
//! bands are parsed on every core, in order), and a sink that writes each band's records.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::bands::{Plan, Source as Bands};
use super::{write_labels, write_records};
use crate::pipe::{Band, Cells, Pieces, Regroup, Sink, Source};
use serde_daphne::__private::io::read_sidecar;
use serde_daphne::__private::model::Hint;
use serde_daphne::__private::wire::header::Column;
use serde_daphne::__private::wire::Header;
use serde_daphne::{DataType, Result};

/// Bytes of values per band of rows as the first pass plans them: several bands per core
/// for all but small files.
const BAND: u64 = 4 << 20;

/// A CSV file (with its `.meta` sidecar, if there is one), checked by a first pass.
pub struct CsvSource {
    path: PathBuf,
    sidecar: Option<Hint>,
    plan: Plan,
    headers: [Header; 1],
    input_len: u64,
}

impl CsvSource {
    /// Opens the CSV file at `path` and reads it once: every malformed record is found here,
    /// before anything is written.
    ///
    /// # Errors
    /// As [`super::read`]; I/O errors.
    pub fn open(path: &Path) -> Result<CsvSource> {
        let sidecar = read_sidecar(path)?;
        let bands = Bands {
            path,
            sidecar: sidecar.as_ref(),
            progress: None,
        };
        // Bands of about 4 MiB of values (at most 8 bytes each).
        let plan = bands.scan(|start| BAND / (8 * start.width as u64).max(1))?;
        let header = header(&plan);
        Ok(CsvSource {
            path: path.to_owned(),
            input_len: plan.end,
            sidecar,
            plan,
            headers: [header],
        })
    }
}

impl Source for CsvSource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        _: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let bands = Bands {
            path: &self.path,
            sidecar: self.sidecar.as_ref(),
            progress: None,
        };
        let (frame, cols) = (self.plan.frame(), self.plan.start.width as u64);
        let mut regroup = Regroup::new(multiple);
        let mut more = true;
        bands.for_each_band(&self.plan, &mut |first_row, lanes| {
            let rows = match frame {
                true => lanes.first().map_or(0, |l| l.len() as u64),
                false => lanes[0].len() as u64 / cols.max(1),
            };
            let cells = match frame {
                true => Cells::Frame(lanes),
                false => Cells::Dense(lanes.into_iter().next().expect("one lane")),
            };
            let band = Band {
                first_row,
                first_col: 0,
                rows,
                cols,
                cells,
            };
            more = regroup.push(band, each)?;
            Ok(more)
        })?;
        if more {
            regroup.finish(each)?;
        }
        Ok(())
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn nonzero(&self, _: usize) -> Option<bool> {
        Some(self.plan.nonzero)
    }
}

/// The header the plan gives: a frame when the file has labels, else a dense matrix.
fn header(plan: &Plan) -> Header {
    match &plan.start.labels {
        Some(labels) => Header::Frame {
            rows: plan.rows,
            columns: labels
                .iter()
                .zip(&plan.types)
                .map(|(label, &value_type)| Column {
                    label: label.clone(),
                    value_type,
                })
                .collect(),
        },
        None => Header::matrix(
            DataType::DenseMatrix,
            plan.rows,
            plan.start.width as u64,
            plan.types[0],
        ),
    }
}

/// Writes one object as CSV, a band of records at a time; frames get a header record unless
/// written for DAPHNE (whose `.meta` sidecar holds the labels).
pub struct CsvSink<'w> {
    out: &'w mut dyn Write,
    for_daphne: bool,
}

impl<'w> CsvSink<'w> {
    /// A sink writing to `out`.
    pub fn new(out: &'w mut dyn Write, for_daphne: bool) -> CsvSink<'w> {
        CsvSink { out, for_daphne }
    }
}

impl Sink for CsvSink<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("CSV")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let mut writer = csv::WriterBuilder::new().from_writer(&mut *self.out);
        if let Header::Frame { columns, .. } = header {
            if !self.for_daphne {
                write_labels(&mut writer, columns.iter().map(|c| c.label.as_str()))?;
            }
        }
        pieces.for_each(&mut |band| {
            let first = band.first_row;
            write_records(&mut writer, &band.into_object(header)?, first)?;
            Ok(true)
        })?;
        writer.flush()?;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}
