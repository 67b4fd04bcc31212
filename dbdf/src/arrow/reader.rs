//! A `.dbdf` object as Arrow record batches pulled one at a time ([`DbdfBatchReader`]): what
//! Arrow's stream interface hands DuckDB, Polars and pyarrow. Each batch is a window of rows
//! read through the lazy reader, of the picked columns only (a frame's other columns' blocks
//! are not read); the table is the one the Arrow sink writes ([`schema_for`]).

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use serde_daphne::{with_values, DbdfFile, Element, Error, FileReader, Header, Result};

use super::{batch_of, schema_for, WriteOptions, IPC};
use crate::pipe::{band_rows, Band, Cells, Projection};

/// Bytes of cells a batch holds unless asked otherwise: a few of them in memory at once, and
/// few enough batches that handing each over costs nothing.
const BATCH_BYTES: u64 = 8 << 20;

/// The record batches of one object of a `.dbdf` file (a local file or one behind a URL, as
/// [`crate::remote::open_dbdf`] opens it), in row order: a frame as a table of its columns,
/// a matrix as a table of one column per matrix column (`c0`, `c1`, ...), each of the Arrow
/// type of its value type, as the Parquet and Arrow IPC outputs write them. Memory holds one
/// batch.
///
/// ```
/// use arrow_array::RecordBatchReader;
/// use dbdf::arrow::DbdfBatchReader;
/// use serde_daphne::{DbdfFile, Object, Values};
///
/// let path = std::env::temp_dir().join("doc_batch_reader.dbdf");
/// let m = Object::dense(3, 2, Values::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))?;
/// serde_daphne::to_file(&path, &m)?;
/// let columns = "c1".parse()?;
/// let reader = DbdfBatchReader::new(DbdfFile::open(&path)?, 0, Some(&columns), Some(2))?;
/// assert_eq!(reader.schema().field(0).name(), "c1");
/// let rows: Vec<usize> = reader.map(|batch| batch.unwrap().num_rows()).collect();
/// assert_eq!(rows, [2, 1]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DbdfBatchReader {
    file: DbdfFile<FileReader>,
    index: usize,
    header: Header,
    schema: SchemaRef,
    /// The picked columns' positions in the object, in the table's order.
    columns: Vec<usize>,
    /// The rows still to read.
    rows: Range<u64>,
    batch_rows: u64,
}

impl DbdfBatchReader {
    /// The batches of object `index` of `file`: of the `columns` picked (by label, a
    /// matrix's `c<j>`, or position; every column by default), `batch_rows` rows each but
    /// the last (by default about 8 MiB of cells, in whole tiles).
    ///
    /// # Errors
    /// No object `index`; a scalar; a column the object lacks or picked twice; a matrix
    /// wider than the Arrow outputs write.
    pub fn new(
        file: DbdfFile<FileReader>,
        index: usize,
        columns: Option<&Projection>,
        batch_rows: Option<u64>,
    ) -> Result<DbdfBatchReader> {
        let Some(info) = file.objects().get(index) else {
            return Err(Error::invalid(format!(
                "there is no object {index}: the file holds {}",
                file.objects().len()
            )));
        };
        let header = info.header.clone();
        let full = schema_for(&header, &WriteOptions::default(), IPC)?;
        let columns = match columns {
            Some(picked) => {
                let names: Vec<&str> = full.fields().iter().map(|f| f.name().as_str()).collect();
                picked.positions(&names)?
            }
            None => (0..full.fields().len()).collect(),
        };
        let schema = Arc::new(full.project(&columns).map_err(|e| IPC.error(e))?);
        let batch_rows = match batch_rows {
            Some(rows) => rows.max(1),
            None => {
                let row_bytes = match &header {
                    Header::Frame { columns: all, .. } => columns
                        .iter()
                        .map(|&c| all[c].value_type.size() as u64)
                        .sum(),
                    _ => span(&columns).map_or(0, |s| s.end - s.start) * value_size(&header),
                };
                // Whole tiles where a band of them is a few batches at most: each block a
                // batch touches is then read once. A block of every row is read in windows.
                let tile = info.blocks.first().map_or(1, |b| b.place.rows as u64);
                let whole = tile < header.rows() && tile * row_bytes <= 4 * BATCH_BYTES;
                band_rows(
                    &header,
                    row_bytes,
                    if whole { tile } else { 1 },
                    BATCH_BYTES,
                )
            }
        };
        let rows = 0..header.shape().0;
        Ok(DbdfBatchReader {
            file,
            index,
            header,
            schema,
            columns,
            rows,
            batch_rows,
        })
    }

    /// The next batch's rows read.
    fn read(&mut self, rows: Range<u64>) -> Result<RecordBatch> {
        let n = rows.end - rows.start;
        let columns = match (&self.header, span(&self.columns)) {
            (Header::Frame { .. }, _) => {
                let frame =
                    self.file
                        .read_frame_columns(self.index, rows.clone(), &self.columns)?;
                frame.into_columns()?
            }
            (_, None) => Vec::new(),
            (_, Some(span)) => {
                let window =
                    self.file
                        .read_window_object(self.index, rows.clone(), span.clone())?;
                let band = Band::of_object(rows.start, window)?;
                let values = match band.cells {
                    Cells::Dense(values) => values,
                    _ => band.dense_values()?,
                };
                let (width, first) = ((span.end - span.start) as usize, span.start as usize);
                with_values!(&values, v => self.columns.iter().map(|&c| {
                    let column = v.iter().skip(c - first).step_by(width).copied();
                    Element::into_values(column.collect::<Vec<_>>())
                }).collect())
            }
        };
        let band = Band {
            first_row: rows.start,
            first_col: 0,
            rows: n,
            cols: columns.len() as u64,
            cells: Cells::Frame(columns),
        };
        batch_of(band, &self.schema)
    }
}

/// The columns from the first picked to the last, which a matrix's window reads.
fn span(columns: &[usize]) -> Option<Range<u64>> {
    let first = *columns.iter().min()? as u64;
    let last = *columns.iter().max()? as u64;
    Some(first..last + 1)
}

/// Bytes of a matrix's value.
fn value_size(header: &Header) -> u64 {
    header.matrix_value_type().map_or(8, |vt| vt.size() as u64)
}

impl Iterator for DbdfBatchReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    /// The next batch; after an error, none.
    fn next(&mut self) -> Option<Self::Item> {
        if self.rows.is_empty() {
            return None;
        }
        let end = self
            .rows
            .end
            .min(self.rows.start.saturating_add(self.batch_rows));
        let rows = self.rows.start..end;
        match self.read(rows) {
            Ok(batch) => {
                self.rows.start = end;
                Some(Ok(batch))
            }
            Err(e) => {
                self.rows.start = self.rows.end;
                Some(Err(ArrowError::ExternalError(Box::new(e))))
            }
        }
    }
}

impl RecordBatchReader for DbdfBatchReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
