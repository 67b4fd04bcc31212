//! Arrow IPC files (Feather v2) on the pipe: a source whose bands are the file's record
//! batches (each checked against the file's length before it is read), of a local file or a
//! remote object's ranges, and a sink that writes a record batch per band, uncompressed by
//! default so that readers can memory-map it.

use std::io::{BufReader, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_ipc::CompressionType;

use super::{
    batch_of, guarded, schema_for, stream_bands, Batches, Compression, ReadOptions, TablePlan,
    Unit, WriteOptions, IPC,
};
use crate::pipe::{Band, InputMetadata, Pieces, Sink, Source};
use serde_daphne::Header;
use serde_daphne::{Error, Positional, ReadAt, Result};

/// `ARROW1`, at both ends of an IPC file.
const MAGIC: &[u8; 6] = b"ARROW1";

/// An Arrow IPC file, its footer and every batch's place and length checked at open.
pub(crate) struct FeatherSource {
    file: Arc<dyn ReadAt>,
    /// A file of big-endian data, held whole and made little-endian.
    swapped: Option<Arc<[u8]>>,
    layout: TablePlan,
    headers: [Header; 1],
    len: u64,
}

/// The Arrow IPC (Feather v2) file at `path` as a source of the pipe: a frame, or a matrix
/// where its metadata records one or `options` asks for one.
///
/// # Errors
/// A malformed footer or batch header; batches past the end of the file; columns DAPHNE
/// cannot hold (naming them); I/O errors. A file of big-endian data is held whole and its
/// values swapped (see `big_endian.rs`), or refused naming what it holds that is not swapped.
pub(crate) fn source(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<Box<dyn crate::pipe::Source>> {
    source_at(Arc::new(std::fs::File::open(path.as_ref())?), options)
}

/// As [`source`], for the file behind `file` (a remote object's ranges: its ends and footer,
/// each batch's header, then each batch's message and body as the bands need them).
///
/// # Errors
/// As [`source`].
pub(crate) fn source_at(
    file: Arc<dyn ReadAt>,
    options: &ReadOptions,
) -> Result<Box<dyn crate::pipe::Source>> {
    Ok(Box::new(FeatherSource::open_at(file, options)?))
}

impl FeatherSource {
    fn open_at(source: Arc<dyn ReadAt>, options: &ReadOptions) -> Result<FeatherSource> {
        let len = source.size()?;
        let mut file = Positional::new(Arc::clone(&source), len);
        let (rows, schema, big_endian) = check_blocks(&mut file, len)?;
        let layout = TablePlan::of(&schema, rows, options, IPC)?;
        let swapped = match big_endian {
            Some((footer_at, footer_len)) => {
                let mut bytes = Vec::with_capacity(len as usize);
                file.seek(SeekFrom::Start(0))?;
                file.read_to_end(&mut bytes)?;
                if bytes.len() as u64 != len {
                    return Err(Error::invalid("the file changed while it was read"));
                }
                super::big_endian::to_little_endian(&mut bytes, &schema, footer_at, footer_len)?;
                Some(Arc::from(bytes))
            }
            None => None,
        };
        Ok(FeatherSource {
            file: source,
            swapped,
            headers: [layout.header.clone()],
            layout,
            len,
        })
    }
}

/// Reads the footer and the header of every record batch, checking each place and length
/// against the file's `len` (the Arrow crate trusts them); the rows of all batches and the
/// footer's schema; for a file of big-endian data, where its footer is and its length.
fn check_blocks(
    file: &mut (impl Read + Seek),
    len: u64,
) -> Result<(u64, arrow_schema::Schema, BigEndian)> {
    let at_end = |what: &str| IPC.at(len as usize, format!("the file ends before {what}"));
    if len < 2 * MAGIC.len() as u64 + 4 {
        return Err(at_end("its magic and footer"));
    }
    let mut head = [0u8; 6];
    file.read_exact(&mut head)?;
    if &head != MAGIC {
        return Err(IPC.at(0, "not an Arrow IPC file: it does not start with ARROW1"));
    }
    let mut tail = [0u8; 10];
    file.seek(SeekFrom::Start(len - 10))?;
    file.read_exact(&mut tail)?;
    if &tail[4..] != MAGIC {
        return Err(IPC.at(len as usize - 6, "the file does not end with ARROW1"));
    }
    let footer_len = i32::from_le_bytes(tail[..4].try_into().expect("4 bytes")) as i64;
    let footer_at = len as i64 - 10 - footer_len;
    if footer_len <= 0 || footer_at < 8 {
        return Err(IPC.at(
            len as usize - 10,
            format!("a footer of {footer_len} bytes does not fit in the {len}-byte file"),
        ));
    }
    let mut footer = vec![0u8; footer_len as usize];
    file.seek(SeekFrom::Start(footer_at as u64))?;
    file.read_exact(&mut footer)?;
    let footer = arrow_ipc::root_as_footer(&footer)
        .map_err(|e| IPC.at(footer_at as usize, format!("a malformed footer: {e}")))?;
    let malformed = |what: &str| IPC.at(footer_at as usize, format!("a footer {what}"));
    let ipc_schema = footer
        .schema()
        .ok_or_else(|| malformed("without a schema"))?;
    let big_endian = !ipc_schema.endianness().equals_to_target_endianness();
    if big_endian && cfg!(target_endian = "big") {
        return Err(malformed(
            "of little-endian data, which this host does not read",
        ));
    }
    let schema = guarded(IPC, || {
        arrow_ipc::convert::try_fb_to_schema(ipc_schema).map_err(|e| IPC.error(e))
    })?;
    let mut rows: u64 = 0;
    let batches = footer.recordBatches().into_iter().flatten();
    let dictionaries = footer.dictionaries().into_iter().flatten();
    for (n, block) in batches
        .map(|b| (true, b))
        .chain(dictionaries.map(|b| (false, b)))
    {
        let (offset, meta, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
        let end = (offset >= 8 && meta >= 8 && body >= 0)
            .then(|| offset.checked_add(i64::from(meta))?.checked_add(body))
            .flatten();
        if end.is_none_or(|end| end > footer_at) {
            return Err(IPC.at(
                offset.max(0) as usize,
                format!(
                    "a block of {meta} + {body} bytes at byte {offset} lies outside the \
                     {footer_at} bytes before the footer"
                ),
            ));
        }
        let mut message = vec![0u8; meta as usize];
        file.seek(SeekFrom::Start(offset as u64))?;
        file.read_exact(&mut message)?;
        // A continuation marker and a length, or (before Arrow 0.15) the length alone.
        let skip = match message[..4] == [0xff; 4] {
            true => 8,
            false => 4,
        };
        let parsed = arrow_ipc::root_as_message(&message[skip..]).ok();
        let batch = match n {
            true => parsed.and_then(|m| m.header_as_record_batch()),
            false => parsed
                .and_then(|m| m.header_as_dictionary_batch())
                .and_then(|d| d.data()),
        };
        let what = if n {
            "a record batch"
        } else {
            "a dictionary batch"
        };
        let batch =
            batch.ok_or_else(|| IPC.at(offset as usize, format!("a block that is not {what}")))?;
        let body_at = (offset + i64::from(meta)) as u64;
        check_buffers(file, &batch, body_at, body as u64)?;
        if !n {
            continue;
        }
        let length = u64::try_from(batch.length())
            .map_err(|_| IPC.at(offset as usize, format!("{} rows", batch.length())))?;
        rows = rows
            .checked_add(length)
            .ok_or_else(|| IPC.at(offset as usize, "the batches' rows overflow a u64"))?;
    }
    let big_endian = big_endian.then_some((footer_at as usize, footer_len as usize));
    Ok((rows, schema, big_endian))
}

/// Where the footer of a file of big-endian data is, and its length; `None` for a file in the
/// host's order.
type BigEndian = Option<(usize, usize)>;

/// Memory a compressed buffer may ask for beyond the bytes its batch takes in the file (as
/// [`serde_daphne::Options::max_alloc`] allows objects): the Arrow crate allocates what the
/// buffer's first eight bytes say before it decompresses anything.
const MAX_ALLOC: u64 = 4 << 30;

/// Checks that each buffer of `batch` lies in its body (`body` bytes at `body_at`) and that
/// each compressed one asks for at most the body's size and [`MAX_ALLOC`].
fn check_buffers(
    file: &mut (impl Read + Seek),
    batch: &arrow_ipc::RecordBatch<'_>,
    body_at: u64,
    body: u64,
) -> Result<()> {
    let compressed = batch.compression().is_some();
    for buffer in batch.buffers().into_iter().flatten() {
        let (at, len) = (buffer.offset(), buffer.length());
        let fits = at >= 0
            && len >= 0
            && (at as u64)
                .checked_add(len as u64)
                .is_some_and(|end| end <= body);
        if !fits {
            return Err(IPC.at(
                body_at as usize,
                format!("a buffer of {len} bytes at {at} lies outside its {body}-byte body"),
            ));
        }
        if !compressed || len < 8 {
            continue;
        }
        let mut prefix = [0u8; 8];
        file.seek(SeekFrom::Start(body_at + at as u64))?;
        file.read_exact(&mut prefix)?;
        let asked = i64::from_le_bytes(prefix);
        // -1: stored without compression.
        if asked != -1 && (asked < 0 || asked as u64 > body + MAX_ALLOC) {
            return Err(IPC.at(
                (body_at + at as u64) as usize,
                format!(
                    "a compressed buffer says it holds {asked} bytes, more than its batch \
                     could ({body} bytes in the file and up to {MAX_ALLOC} more)"
                ),
            ));
        }
    }
    Ok(())
}

impl Source for FeatherSource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        _: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        match &self.swapped {
            Some(bytes) => self.stream(Cursor::new(Arc::clone(bytes)), multiple, each),
            None => {
                // A remote object's round trip is worth a larger read ahead of each message.
                let capacity = self.file.min_request().max(8 << 10);
                let file = Positional::new(Arc::clone(&self.file), self.len);
                self.stream(BufReader::with_capacity(capacity, file), multiple, each)
            }
        }
    }

    fn input_len(&self) -> u64 {
        self.len
    }

    fn stored_bytes(&self, _: usize) -> Option<u64> {
        Some(self.len)
    }

    fn metadata(&self) -> InputMetadata {
        InputMetadata {
            data_type: self.layout.kept,
            attributes: self.layout.attributes.clone(),
            ..InputMetadata::default()
        }
    }
}

impl FeatherSource {
    /// The bands of the file read through `file`.
    fn stream<R: Read + Seek + Send>(
        &self,
        file: R,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let reader = guarded(IPC, || {
            let projection = self
                .layout
                .projection
                .as_ref()
                .map(|(read, _)| read.clone());
            FileReader::try_new(file, projection).map_err(|e| IPC.error(e))
        })?;
        let batches: Batches = Box::new(reader.map(|b| b.map_err(|e| IPC.error(e))));
        // One unit: the file's batches are decoded in turn, on a thread of their own.
        let whole = Unit {
            first_row: 0,
            open: Box::new(move || Ok(batches)),
        };
        stream_bands(vec![whole], 1, &self.layout, IPC, multiple, each)
    }
}

/// An Arrow IPC file of one table written to `W`, a record batch per band.
pub(crate) struct FeatherSink<W: Write> {
    out: Option<W>,
    writer: Option<FileWriter<W>>,
    options: WriteOptions,
}

/// A sink writing an Arrow IPC file to `out` with `options` (compression: none by default,
/// zstd or lz4).
pub(crate) fn sink<'w, W: Write + 'w>(
    out: W,
    options: &WriteOptions,
) -> Box<dyn crate::pipe::Sink + 'w> {
    Box::new(FeatherSink {
        out: Some(out),
        writer: None,
        options: options.clone(),
    })
}

impl<W: Write> Sink for FeatherSink<W> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("an Arrow IPC file")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let schema = schema_for(header, &self.options, IPC)?;
        let Some(out) = self.out.take() else {
            return Err(Error::invalid("an Arrow IPC file holds one table"));
        };
        let codec = match self.options.compression.unwrap_or(Compression::None) {
            Compression::None => None,
            Compression::Zstd => Some(CompressionType::ZSTD),
            Compression::Lz4 => Some(CompressionType::LZ4_FRAME),
            Compression::Snappy => {
                return Err(Error::invalid(
                    "Arrow IPC compresses with zstd or lz4, not snappy",
                ))
            }
        };
        let options = IpcWriteOptions::default()
            .try_with_compression(codec)
            .map_err(|e| IPC.error(e))?;
        let mut writer =
            FileWriter::try_new_with_options(out, &schema, options).map_err(|e| IPC.error(e))?;
        pieces.for_each(&mut |band| {
            let batch = batch_of(band, &schema)?;
            writer.write(&batch).map_err(ipc_write_error)?;
            Ok(true)
        })?;
        self.writer = Some(writer);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        let Some(mut writer) = self.writer else {
            return Err(Error::invalid("no table was written"));
        };
        writer.finish().map_err(ipc_write_error)?;
        let mut out = writer.into_inner().map_err(ipc_write_error)?;
        out.flush()?;
        Ok(Vec::new())
    }
}

/// A write error: I/O errors kept as such.
fn ipc_write_error(error: arrow_schema::ArrowError) -> Error {
    match error {
        arrow_schema::ArrowError::IoError(_, io) => Error::from(io),
        other => IPC.error(other),
    }
}
