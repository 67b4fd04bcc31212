//! A Parquet file written a row group at a time, one column chunk after another, each by a
//! column writer of its own, made, written and dropped in turn. The Arrow crates'
//! `ArrowWriter` keeps a writer for every column of a row group at once, each with its
//! codec (zstd's two contexts): 395 MiB for a 128 MiB table of 8192 columns. Here memory
//! holds the row group's rows as the caller keeps them and a few columns' arrays, made from
//! those rows as their chunks are written (arrays of every column held until the group is
//! written would be many small allocations among the footer's, which the allocator cannot
//! give back: a third of the peak for 8192 columns).

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use parquet::errors::{ParquetError, Result};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

/// The bytes of cells of the columns made at once for a row group.
const COLUMNS_BYTES: u64 = 1 << 20;

/// A Parquet file being written.
pub(super) struct ColumnsWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    schema: SchemaRef,
    /// Each column's writer maker, over a schema of that column alone (its descriptor is
    /// the file's, which the row group checks).
    columns: Vec<ArrowRowGroupWriterFactory>,
}

impl<W: Write + Send> ColumnsWriter<W> {
    /// A file of `schema` written to `out` with `properties` (the Arrow schema in its
    /// metadata, as `ArrowWriter` writes it).
    pub(super) fn new(out: W, schema: SchemaRef, properties: WriterProperties) -> Result<Self> {
        let converter = ArrowSchemaConverter::new().with_coerce_types(properties.coerce_types());
        let writer = ArrowWriter::try_new(out, Arc::clone(&schema), Some(properties))?;
        let (file, _) = writer.into_serialized_writer()?;
        // The file's properties shared, not copied: they name every column.
        let properties = Arc::clone(file.properties());
        let columns = schema
            .fields()
            .iter()
            .map(|field| {
                let alone = Arc::new(Schema::new(vec![Arc::clone(field)]));
                let root = converter.convert(&alone)?.root_schema_ptr();
                let nowhere =
                    SerializedFileWriter::new(std::io::sink(), root, Arc::clone(&properties))?;
                Ok(ArrowRowGroupWriterFactory::new(&nowhere, alone))
            })
            .collect::<Result<_>>()?;
        Ok(ColumnsWriter {
            file,
            schema,
            columns,
        })
    }

    /// Writes a row group whose rows hold `row_bytes` bytes of cells, a few columns at a
    /// time: `columns(range)` gives the group's rows of the columns in `range`, as batches
    /// (pieces of the group, in row order) of those columns alone.
    pub(super) fn write_group(
        &mut self,
        row_bytes: u64,
        rows: u64,
        columns: &mut dyn FnMut(Range<usize>) -> serde_daphne::Result<Vec<RecordBatch>>,
    ) -> Result<()> {
        let n = self.schema.fields().len();
        let cell_bytes = (row_bytes / n.max(1) as u64).max(1);
        let width = (COLUMNS_BYTES / (cell_bytes * rows.max(1))).clamp(1, n.max(1) as u64);
        let mut group = self.file.next_row_group()?;
        for c0 in (0..n).step_by(width as usize) {
            let range = c0..(c0 + width as usize).min(n);
            let pieces = columns(range.clone()).map_err(|e| ParquetError::External(e.into()))?;
            for (i, c) in range.enumerate() {
                let field = &self.schema.fields()[c];
                for mut writer in self.columns[c].create_column_writers(0)? {
                    for piece in &pieces {
                        for leaf in compute_leaves(field, piece.column(i))? {
                            writer.write(&leaf)?;
                        }
                    }
                    writer.close()?.append_to_row_group(&mut group)?;
                }
            }
        }
        group.close()?;
        Ok(())
    }

    /// Writes the footer; the output.
    pub(super) fn finish(self) -> Result<W> {
        self.file.into_inner()
    }
}
