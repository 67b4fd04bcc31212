//! Parquet files on the pipe: a source whose bands are record batches of about a row group
//! (decoded on a thread of their own, compressed row groups on every core, while the sink
//! writes the band before), and a sink that writes row groups a column chunk at a time
//! (`parquet_writer.rs`) through the Arrow crates' column writers.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;

use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::{Compression as Codec, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::{FooterTail, ParquetMetaDataReader};
use parquet::file::properties::{EnabledStatistics, WriterProperties, DEFAULT_PAGE_SIZE};
use parquet::file::reader::{ChunkReader, Length};

use super::parquet_file::{chunks_of, extents_of, Checked};
use super::parquet_footer;
use super::parquet_writer::ColumnsWriter;
use super::{
    batch_of, guarded, schema_for, stream_bands, Batches, Compression, ReadOptions, TablePlan,
    Unit, WriteOptions,
};
use crate::input::Foreign;
use crate::pipe::{row_bytes, Band, InputMetadata, Pieces, Sink, Source};
use serde_daphne::lowlevel::workers;
use serde_daphne::{Error, Header, ReadAt, Result};

pub(crate) const PARQUET: Foreign = Foreign("Parquet");

/// Bytes of cells per band read (at most a row group): a band per decoding thread is in
/// memory at once, and the one written.
const ROW_GROUP_BAND_BYTES: u64 = 32 << 20;

/// A Parquet file, its footer read and every column checked at open.
pub(crate) struct ParquetSource {
    file: Checked,
    metadata: ArrowReaderMetadata,
    layout: TablePlan,
    headers: [Header; 1],
}

/// The Parquet file at `path` as a source of the pipe: a frame, or a matrix where its metadata
/// records one or `options` asks for one.
///
/// # Errors
/// A malformed footer; columns DAPHNE cannot hold (naming them); I/O errors.
pub(crate) fn source(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Box<dyn Source>> {
    source_at(Arc::new(File::open(path.as_ref())?), options)
}

/// A Parquet file read through any source of positional reads, as the `parquet` format reads one at a
/// path. From a remote source (one with a [`ReadAt::min_request`]) the footer comes with the
/// file's last bytes, and each row group is fetched whole in one request (up to
/// 64 MiB; larger ones a few MiB at a time), so a conversion fetches the file's bytes about once.
///
/// # Errors
/// As [`crate::convert::source`].
pub fn source_at(reader: Arc<dyn ReadAt>, options: &ReadOptions) -> Result<Box<dyn Source>> {
    Ok(Box::new(ParquetSource::open(reader, options)?))
}

impl ParquetSource {
    fn open(reader: Arc<dyn ReadAt>, options: &ReadOptions) -> Result<ParquetSource> {
        let len = reader.size()?;
        let mut file = Checked::new(reader, len);
        let metadata = guarded(PARQUET, || {
            let metadata = match ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()) {
                Ok(metadata) => metadata,
                // A footer the Parquet crate misreads may be one with mistyped fields.
                Err(e) => mended_metadata(&file, len)?.ok_or_else(|| PARQUET.error(e))?,
            };
            match parquet_footer::without_stray_dictionary_offsets(metadata.metadata()) {
                Ok(None) => Ok(metadata),
                Ok(Some(mended)) => {
                    ArrowReaderMetadata::try_new(Arc::new(mended), Default::default())
                        .map_err(|e| PARQUET.error(e))
                }
                Err(e) => Err(PARQUET.error(e)),
            }
        })?;
        let groups = metadata.metadata().row_groups();
        let mut rows: u64 = 0;
        for (g, group) in groups.iter().enumerate() {
            let n = u64::try_from(group.num_rows()).map_err(|_| {
                PARQUET.error(format!("row group {g} has {} rows", group.num_rows()))
            })?;
            rows = rows
                .checked_add(n)
                .ok_or_else(|| PARQUET.error("the row groups' rows overflow a u64"))?;
        }
        let layout = TablePlan::of(metadata.schema(), rows, options, PARQUET)?;
        let picked = layout.projection.as_ref().map(|(read, _)| read.as_slice());
        let schema = metadata.metadata().file_metadata().schema_descr();
        let extents: Vec<_> = match file.file.min_request() {
            0 => (groups.iter())
                .flat_map(|group| chunks_of(group, schema, picked))
                .collect(),
            _ => (groups.iter())
                .flat_map(|group| extents_of(group, schema, picked))
                .collect(),
        };
        let columns = groups
            .first()
            .map_or(0, |g| chunks_of(g, schema, picked).count());
        file = file.reading(extents, columns);
        Ok(ParquetSource {
            headers: [layout.header.clone()],
            file,
            metadata,
            layout,
        })
    }
}

/// The metadata of a footer read without its mistyped fields ([`parquet_footer`]), or `None`
/// when it has none (or is not a plain footer): the Parquet crate's error then stands.
fn mended_metadata(file: &Checked, len: u64) -> Result<Option<ArrowReaderMetadata>> {
    let fail = |e: ParquetError| PARQUET.error(e);
    if len < 12 {
        return Ok(None);
    }
    let tail = file.get_bytes(len - 8, 8).map_err(fail)?;
    let Some(tail) = <[u8; 8]>::try_from(&tail[..])
        .ok()
        .and_then(|tail| FooterTail::try_new(&tail).ok())
    else {
        return Ok(None);
    };
    let footer_len = tail.metadata_length() as u64;
    if tail.is_encrypted_footer() || footer_len > len - 12 {
        return Ok(None);
    }
    let footer = file
        .get_bytes(len - 8 - footer_len, footer_len as usize)
        .map_err(fail)?;
    let Ok(Some(mended)) = parquet_footer::without_mistyped_fields(&footer) else {
        return Ok(None);
    };
    let metadata = ParquetMetaDataReader::decode_metadata(&mended).map_err(fail)?;
    ArrowReaderMetadata::try_new(Arc::new(metadata), ArrowReaderOptions::new())
        .map(Some)
        .map_err(fail)
}

impl Source for ParquetSource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        _: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let header = &self.headers[0];
        let rows = header.shape().0;
        if rows == 0 {
            return Ok(());
        }
        let largest = self
            .metadata
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows().max(1) as u64)
            .max()
            .unwrap_or(1);
        let by_bytes = (ROW_GROUP_BAND_BYTES / row_bytes(header, None).max(1)).max(1);
        let batch = largest.min(by_bytes).min(rows) as usize;
        let projection = self.layout.projection.as_ref().map(|(read, _)| {
            ProjectionMask::roots(
                self.metadata.metadata().file_metadata().schema_descr(),
                read.iter().copied(),
            )
        });
        // Compressed row groups are decoded on every core, as pyarrow decodes them, a unit
        // (and a reader) per row group; decompressing scales with the cores, and so does
        // converting columns (bools unpacked from bits, integers stored wider or signed).
        // Uncompressed pages of the other types are copies bound by memory: one reader
        // reads them all on one thread, its buffers kept from group to group (readers made
        // per group, or a second thread, measured slower).
        let compressed = (self.metadata.metadata().row_groups().iter())
            .flat_map(|g| g.columns())
            .any(|c| c.compression() != Codec::UNCOMPRESSED);
        let fields = self.metadata.schema().fields();
        let converted = |k: &usize| {
            use arrow_schema::DataType as T;
            fields.get(*k).is_some_and(|f| {
                matches!(
                    f.data_type(),
                    T::Boolean | T::Int8 | T::Int16 | T::UInt8 | T::UInt16 | T::UInt32 | T::UInt64
                )
            })
        };
        let converted = match &self.layout.projection {
            Some((read, _)) => read.iter().any(converted),
            None => (0..fields.len()).any(|k| converted(&k)),
        };
        let per_group = compressed || converted;
        let groups: Vec<Option<usize>> = match per_group {
            true => (0..self.metadata.metadata().num_row_groups())
                .map(Some)
                .collect(),
            false => vec![None],
        };
        let mut first_row = 0;
        let units = groups
            .into_iter()
            .map(|group| {
                let (file, metadata) = (self.file.try_clone(), self.metadata.clone());
                let projection = projection.clone();
                let open = move || {
                    let builder =
                        ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata)
                            .with_batch_size(batch);
                    let builder = match group {
                        Some(g) => builder.with_row_groups(vec![g]),
                        None => builder,
                    };
                    let reader = match projection {
                        Some(mask) => builder.with_projection(mask),
                        None => builder,
                    }
                    .build()
                    .map_err(|e| PARQUET.error(e))?;
                    Ok(Box::new(reader.map(|b| b.map_err(|e| PARQUET.error(e)))) as Batches)
                };
                let unit = Unit {
                    first_row,
                    open: Box::new(open),
                };
                if let Some(g) = group {
                    first_row += self.metadata.metadata().row_group(g).num_rows().max(0) as u64;
                }
                unit
            })
            .collect();
        let threads = if per_group { workers() } else { 1 };
        stream_bands(units, threads, &self.layout, PARQUET, multiple, each)
    }

    fn input_len(&self) -> u64 {
        self.file.len()
    }

    fn stored_bytes(&self, _: usize) -> Option<u64> {
        Some(self.file.len())
    }

    fn metadata(&self) -> InputMetadata {
        InputMetadata {
            data_type: self.layout.kept,
            attributes: self.layout.attributes.clone(),
            ..InputMetadata::default()
        }
    }
}

/// The rows of a row group being gathered, as the pipe's bands (row-major, large buffers):
/// each column's array is made from them as its chunk is written.
struct Held {
    bands: Vec<Band>,
    /// The object's row where the group starts, in the first band.
    from: u64,
    /// The rows held from `from` on.
    rows: u64,
}

impl Held {
    /// Writes the first `rows` rows held as a row group, and drops the bands done with.
    fn write_group<W: Write + Send>(
        &mut self,
        writer: &mut ColumnsWriter<W>,
        schema: &SchemaRef,
        row_bytes: u64,
        rows: u64,
    ) -> Result<()> {
        let (from, end) = (self.from, self.from + rows);
        let bands = &self.bands;
        let mut columns = |range: std::ops::Range<usize>| -> Result<Vec<RecordBatch>> {
            let projected = schema
                .project(&range.clone().collect::<Vec<_>>())
                .map_err(|e| Error::invalid(format!("a band does not fit the table: {e}")))?;
            let projected = Arc::new(projected);
            let cols = range.start as u64..range.end as u64;
            bands
                .iter()
                .filter(|b| b.first_row < end && b.first_row + b.rows > from)
                .map(|b| {
                    let rows = from.max(b.first_row)..end.min(b.first_row + b.rows);
                    batch_of(b.window(rows, cols.clone()), &projected)
                })
                .collect()
        };
        writer
            .write_group(row_bytes, rows, &mut columns)
            .map_err(parquet_write_error)?;
        self.bands.retain(|b| b.first_row + b.rows > end);
        self.from = end;
        self.rows -= rows;
        Ok(())
    }
}

/// A Parquet file of one table written to `W`, row group by row group.
pub(crate) struct ParquetSink<W: Write + Send> {
    out: Option<W>,
    writer: Option<ColumnsWriter<W>>,
    options: WriteOptions,
}

/// A sink writing a Parquet file to `out` with `options`.
pub(crate) fn sink<'w, W: Write + Send + 'w>(out: W, options: &WriteOptions) -> Box<dyn Sink + 'w> {
    Box::new(ParquetSink {
        out: Some(out),
        writer: None,
        options: options.clone(),
    })
}

/// The writer's properties: compression, row group size, and a dictionary for each column
/// whose first values repeat (see [`repeats`]).
fn properties(
    options: &WriteOptions,
    first: Option<&RecordBatch>,
    rows_per_group: u64,
) -> WriterProperties {
    let codec = match options.compression.unwrap_or(Compression::Zstd) {
        Compression::Zstd => Codec::ZSTD(ZstdLevel::default()),
        Compression::Snappy => Codec::SNAPPY,
        Compression::Lz4 => Codec::LZ4_RAW,
        Compression::None => Codec::UNCOMPRESSED,
    };
    let mut builder = WriterProperties::builder()
        .set_compression(codec)
        .set_max_row_group_row_count(Some(rows_per_group as usize));
    // A column chunk of one page (a wide table's) needs no page index: it would repeat the
    // chunk's statistics and place, and the writer holds every chunk's until the footer.
    let widest = first.map_or(8, |batch| {
        let fields = batch.schema_ref().fields().iter();
        fields
            .filter_map(|f| f.data_type().primitive_width())
            .max()
            .unwrap_or(8)
    });
    if rows_per_group * widest as u64 <= DEFAULT_PAGE_SIZE as u64 {
        builder = builder
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_offset_index_disabled(true);
    }
    if let Some(batch) = first {
        for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
            if !repeats(column) {
                builder =
                    builder.set_column_dictionary_enabled(field.name().as_str().into(), false);
            }
        }
    }
    builder.build()
}

/// Values looked at to choose a column's encoding.
const SAMPLE: usize = 1 << 16;

/// Whether a column's first values repeat enough for a dictionary to pay (at most one
/// distinct value in two): the writer otherwise builds a dictionary for every row group and
/// throws it away when it outgrows its page (random 8-byte values: a sixth of the write's
/// time). One- and two-byte columns always repeat.
fn repeats(column: &ArrayRef) -> bool {
    fn distinct<T: arrow_array::ArrowPrimitiveType>(column: &ArrayRef) -> bool
    where
        T::Native: bytemuck::Pod,
    {
        let values = column.as_primitive::<T>().values();
        let sample = &values[..values.len().min(SAMPLE)];
        let mut seen = std::collections::HashSet::with_capacity(sample.len() / 2 + 1);
        for &x in sample {
            let bits: u64 = match std::mem::size_of::<T::Native>() {
                4 => u64::from(bytemuck::cast::<T::Native, u32>(x)),
                _ => bytemuck::cast::<T::Native, u64>(x),
            };
            seen.insert(bits);
            if seen.len() > sample.len() / 2 {
                return false;
            }
        }
        true
    }
    use arrow_array::types::*;
    use arrow_schema::DataType as T;
    match column.data_type() {
        T::UInt32 => distinct::<UInt32Type>(column),
        T::Int32 => distinct::<Int32Type>(column),
        T::Float32 => distinct::<Float32Type>(column),
        T::UInt64 => distinct::<UInt64Type>(column),
        T::Int64 => distinct::<Int64Type>(column),
        T::Float64 => distinct::<Float64Type>(column),
        _ => true,
    }
}

impl<W: Write + Send> Sink for ParquetSink<W> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("Parquet")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let schema = schema_for(header, &self.options, PARQUET)?;
        let Some(out) = self.out.take() else {
            return Err(Error::invalid("a Parquet file holds one table"));
        };
        let widths = schema
            .fields()
            .iter()
            .map(|f| f.data_type().primitive_width());
        let row_bytes = widths.map(|w| w.unwrap_or(8) as u64).sum::<u64>();
        let rows_per_group = self.options.rows_per_group(row_bytes.max(1)) as u64;
        let options = &self.options;
        let mut out = Some(out);
        let mut writer: Option<ColumnsWriter<W>> = None;
        // The writer starts with the first band, whose values choose the encodings.
        let mut start = |first: Option<&Band>| {
            let out = out
                .take()
                .ok_or_else(|| Error::invalid("a Parquet writer started twice"))?;
            // Only the rows whose values are looked at, not a copy of the whole band.
            let first = first
                .map(|band| {
                    let rows = band.first_row..band.first_row + band.rows.min(SAMPLE as u64);
                    let cols = band.first_col..band.first_col + band.cols;
                    batch_of(band.window(rows, cols), &schema)
                })
                .transpose()?;
            let properties = properties(options, first.as_ref(), rows_per_group);
            ColumnsWriter::new(out, schema.clone(), properties).map_err(parquet_write_error)
        };
        // The rows of the row group being gathered: whole bands, the first from row `from`.
        let mut held = Held {
            bands: Vec::new(),
            from: 0,
            rows: 0,
        };
        pieces.for_each(&mut |band| {
            let writer = match &mut writer {
                Some(writer) => writer,
                None => writer.insert(start(Some(&band))?),
            };
            held.rows += band.rows;
            held.bands.push(band);
            while held.rows >= rows_per_group {
                held.write_group(writer, &schema, row_bytes, rows_per_group)?;
            }
            Ok(true)
        })?;
        let mut writer = match writer {
            Some(writer) => writer,
            None => start(None)?,
        };
        if held.rows > 0 {
            let rows = held.rows;
            held.write_group(&mut writer, &schema, row_bytes, rows)?;
        }
        self.writer = Some(writer);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        let Some(writer) = self.writer else {
            return Err(Error::invalid("no table was written"));
        };
        let mut out = writer.finish().map_err(parquet_write_error)?;
        out.flush()?;
        Ok(Vec::new())
    }
}

/// A write error: I/O errors kept as such.
fn parquet_write_error(error: ParquetError) -> Error {
    match error {
        ParquetError::External(e) => match e.downcast::<std::io::Error>() {
            Ok(io) => Error::from(*io),
            Err(e) => match e.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(e) => PARQUET.error(e),
            },
        },
        other => PARQUET.error(other),
    }
}
