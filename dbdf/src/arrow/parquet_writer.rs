//! A Parquet file written a row group at a time, one column chunk after another, each by a
//! column writer of its own, made, written and dropped in turn. The Arrow crates'
//! `ArrowWriter` keeps a writer for every column of a row group at once, each with its
//! codec (zstd's two contexts): 395 MiB for a 128 MiB table of 8192 columns. Here memory
//! holds the row group's batches (at most `rows_per_group` rows) and one column chunk.

use std::io::Write;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use parquet::errors::Result;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

/// A Parquet file being written, the rows of its next row group held.
pub(super) struct ColumnsWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    schema: SchemaRef,
    /// Each column's writer maker, over a schema of that column alone (its descriptor is
    /// the file's, which the row group checks).
    columns: Vec<ArrowRowGroupWriterFactory>,
    rows_per_group: usize,
    held: Vec<RecordBatch>,
    held_rows: usize,
}

impl<W: Write + Send> ColumnsWriter<W> {
    /// A file of `schema` written to `out` with `properties` (the Arrow schema in its
    /// metadata, as `ArrowWriter` writes it), in row groups of `rows_per_group` rows.
    pub(super) fn new(
        out: W,
        schema: SchemaRef,
        properties: WriterProperties,
        rows_per_group: usize,
    ) -> Result<Self> {
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
            rows_per_group: rows_per_group.max(1),
            held: Vec::new(),
            held_rows: 0,
        })
    }

    /// Takes `batch`'s rows, writing each row group as it fills.
    pub(super) fn write(&mut self, mut batch: RecordBatch) -> Result<()> {
        while batch.num_rows() > 0 {
            let take = (self.rows_per_group - self.held_rows).min(batch.num_rows());
            self.held.push(batch.slice(0, take));
            self.held_rows += take;
            batch = batch.slice(take, batch.num_rows() - take);
            if self.held_rows == self.rows_per_group {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Writes the rows held as a row group, a column at a time.
    fn flush(&mut self) -> Result<()> {
        if self.held_rows == 0 {
            return Ok(());
        }
        let mut group = self.file.next_row_group()?;
        for (i, (field, maker)) in self.schema.fields().iter().zip(&self.columns).enumerate() {
            for mut writer in maker.create_column_writers(0)? {
                for batch in &self.held {
                    for leaf in compute_leaves(field, batch.column(i))? {
                        writer.write(&leaf)?;
                    }
                }
                writer.close()?.append_to_row_group(&mut group)?;
            }
        }
        group.close()?;
        self.held.clear();
        self.held_rows = 0;
        Ok(())
    }

    /// Writes the last row group and the footer; the output.
    pub(super) fn finish(mut self) -> Result<W> {
        self.flush()?;
        self.file.into_inner()
    }
}
