//! A Parquet file written a row group at a time, one column chunk after another, each by a
//! column writer of its own, made, written and dropped in turn. The Arrow crates'
//! `ArrowWriter` keeps a writer for every column of a row group at once, each with its
//! codec (zstd's two contexts): 395 MiB for a 128 MiB table of 8192 columns. Here memory
//! holds the row group's rows as the caller keeps them and a few columns' arrays, made from
//! those rows as their chunks are written (arrays of every column held until the group is
//! written would be many small allocations among the footer's, which the allocator cannot
//! give back: a third of the peak for 8192 columns).
//!
//! The footer is held encoded. The crate's file writer keeps every column chunk's metadata
//! as structs until its footer, about 740 bytes a chunk (1 GiB of 8192 columns: 131,072
//! chunks, 92 MiB), where the encoded footer takes 78. So each row group is written by a
//! file writer of its own, over the one output: its magic dropped, its page indexes kept,
//! its footer dropped but for the group's metadata (it counts from the file's start, so its
//! offsets are the file's), kept as bytes; the file's footer is spliced from them at the end ([`super::parquet_footer::with_row_groups`]).

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use parquet::errors::{ParquetError, Result};
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::TypePtr;

use super::parquet_footer::{row_group_of, with_row_groups};

/// The bytes of cells of the columns made at once for a row group.
const COLUMNS_BYTES: u64 = 1 << 20;

/// Bytes of zeros a row group's file writer is given at a time to count past the file's
/// earlier bytes.
const FILLER: usize = 16 << 20;

/// The bytes a Parquet file starts and ends with.
const MAGIC: &[u8; 4] = b"PAR1";

/// A Parquet file being written.
pub(super) struct ColumnsWriter<W: Write + Send> {
    out: Output<W>,
    schema: SchemaRef,
    /// The file's Parquet schema and properties (the Arrow schema in their metadata).
    root: TypePtr,
    properties: WriterPropertiesPtr,
    /// Each column's writer maker, over a schema of that column alone (its descriptor is
    /// the file's, which the row group checks).
    columns: Vec<ArrowRowGroupWriterFactory>,
    /// The row groups written: their Thrift `RowGroup`s, one after another.
    groups: Vec<u8>,
    count: usize,
    rows: i64,
    filler: Vec<u8>,
}

/// The output as each row group's file writer sees it: the magic a file writer writes first
/// is dropped, and what it writes while `held` is `Some` is kept there instead.
struct Output<W> {
    out: W,
    at: u64,
    skip: u64,
    held: Option<Vec<u8>>,
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let dropped = self.skip.min(buf.len() as u64);
        self.skip -= dropped;
        let rest = &buf[dropped as usize..];
        match &mut self.held {
            Some(held) => held.extend_from_slice(rest),
            None => {
                self.out.write_all(rest)?;
                self.at += rest.len() as u64;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write + Send> ColumnsWriter<W> {
    /// A file of `schema` written to `out` with `properties` (the Arrow schema in its
    /// metadata, as `ArrowWriter` writes it).
    pub(super) fn new(out: W, schema: SchemaRef, properties: WriterProperties) -> Result<Self> {
        let converter = ArrowSchemaConverter::new().with_coerce_types(properties.coerce_types());
        let writer = ArrowWriter::try_new(std::io::sink(), Arc::clone(&schema), Some(properties))?;
        let (file, _) = writer.into_serialized_writer()?;
        // The file's properties shared, not copied: they name every column.
        let properties = Arc::clone(file.properties());
        let root = file.schema_descr().root_schema_ptr();
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
        let mut out = Output {
            out,
            at: 0,
            skip: 0,
            held: None,
        };
        out.write_all(MAGIC)?;
        Ok(ColumnsWriter {
            out,
            schema,
            root,
            properties,
            columns,
            groups: Vec::new(),
            count: 0,
            rows: 0,
            filler: Vec::new(),
        })
    }

    /// A file writer for one row group (or the footer) over the output, counting from the
    /// file's start: its magic and as many bytes as the file has beyond the magic are
    /// written to it and dropped, from `filler` (zeros never read, so never in memory: a
    /// static would be 16 MiB of the binary).
    fn file_writer(&mut self) -> Result<SerializedFileWriter<&mut Output<W>>> {
        let mut fill = self.out.at - MAGIC.len() as u64;
        if fill > 0 && self.filler.is_empty() {
            self.filler = vec![0; FILLER];
        }
        self.out.skip = self.out.at;
        let (root, properties) = (Arc::clone(&self.root), Arc::clone(&self.properties));
        let mut file = SerializedFileWriter::new(&mut self.out, root, properties)?;
        while fill > 0 {
            let n = fill.min(FILLER as u64) as usize;
            file.write_all(&self.filler[..n])?;
            fill -= n as u64;
        }
        Ok(file)
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
        let schema = Arc::clone(&self.schema);
        let makers = std::mem::take(&mut self.columns);
        let mut file = self.file_writer()?;
        let written = (|| -> Result<_> {
            let mut group = file.next_row_group()?;
            for c0 in (0..n).step_by(width as usize) {
                let range = c0..(c0 + width as usize).min(n);
                let pieces =
                    columns(range.clone()).map_err(|e| ParquetError::External(e.into()))?;
                for (i, c) in range.enumerate() {
                    let field = &schema.fields()[c];
                    for mut writer in makers[c].create_column_writers(0)? {
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
            // Then its page indexes and a footer, held.
            file.flush()?;
            let held_from = file.bytes_written() as i64;
            file.inner_mut().held = Some(Vec::new());
            Ok((held_from, file.finish()?))
        })();
        drop(file);
        self.columns = makers;
        let (held_from, written) = written?;
        let held = self.out.held.take().unwrap_or_default();
        let group = written.row_group(0);
        let indexes_end = (group.columns().iter())
            .flat_map(|c| {
                let end = |at: Option<i64>, len: Option<i32>| Some(at? + i64::from(len?));
                [
                    end(c.column_index_offset(), c.column_index_length()),
                    end(c.offset_index_offset(), c.offset_index_length()),
                ]
            })
            .flatten()
            .fold(held_from, i64::max);
        let indexes = usize::try_from(indexes_end - held_from).unwrap_or(usize::MAX);
        self.out.write_all(held.get(..indexes).ok_or_else(|| {
            ParquetError::General("a row group's page indexes overran its footer".into())
        })?)?;
        self.rows += group.num_rows();
        // The group writer's own footer holds the group, at the file's offsets: taken from
        // there, numbered (the crate writes ordinals only while they fit an i16).
        let footer = &held[indexes..held.len().saturating_sub(8).max(indexes)];
        let ordinal = i16::try_from(self.count).ok();
        let one = row_group_of(footer, ordinal).map_err(ParquetError::General)?;
        self.groups.extend_from_slice(&one);
        self.count += 1;
        Ok(())
    }

    /// Writes the footer; the output.
    pub(super) fn finish(mut self) -> Result<W> {
        // A footer of no row groups, as the crate writes it (schema, key-value metadata,
        // column orders), with the row groups written spliced in.
        let mut file = self.file_writer()?;
        file.flush()?;
        file.inner_mut().held = Some(Vec::new());
        file.finish()?;
        drop(file);
        let mut held = self.out.held.take().unwrap_or_default();
        held.truncate(held.len().saturating_sub(8));
        let footer = with_row_groups(&held, self.rows, &self.groups, self.count as u64)
            .map_err(ParquetError::General)?;
        let len = u32::try_from(footer.len())
            .map_err(|_| ParquetError::General("the footer passes 4 GiB".into()))?;
        self.out.write_all(&footer)?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(MAGIC)?;
        self.out.flush()?;
        Ok(self.out.out)
    }
}
