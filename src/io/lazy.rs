//! `DbdfFile`: a file opened lazily. Opening reads headers only; objects, windows, frame
//! rows and blocks are read on demand, each touching only the bytes it needs.

use crate::error::ErrorDetails;
use crate::wire::read_at::ReadAt;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use ndarray::Array2;
use serde::de::DeserializeOwned;
use sprs::CsMat;

use super::file_reader::{Backing, FileReader};
use crate::de::Deserializer;
use crate::error::{Error, Result};
use crate::io::index::{index_all, ObjectInfo, StoredBody};
use crate::io::meta::read_sidecar;
use crate::io::progress::Progress;
use crate::io::sparse_rows::RowStarts;
use crate::io::window::{
    dense_throughout, read_runtime_frame, read_window, DenseSink, EntrySink, Window,
};
use crate::model::csr::{CsrFill, RowCounts};
use crate::model::detect::read_object;
use crate::model::{Block, Meta, Object};
use crate::options::{check_alloc, Options};
use crate::wire::block::decode_block_body;
use crate::wire::element::widens_exactly;
use crate::wire::values::{with_value_type, zeroed_vec};
use crate::wire::{
    BlockData, BlockPlace, BlockType, DataType, Element, Header, SeekSource, ValueType,
};

/// A DAPHNE file opened lazily, like safetensors' `safe_open`: [`DbdfFile::open`] reads
/// every object's header and every block's header (seeking past block values), so opening
/// costs O(number of blocks) whatever the file's size. Reads then touch only what they need.
///
/// ```
/// use ndarray::array;
/// use serde_daphne::{DbdfFile, Options};
///
/// let path = std::env::temp_dir().join("serde_daphne_doc_dbdf_file.dbdf");
/// let m = array![[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
/// let tiled = Options { tile: Some((2, 2)), ..Options::new() };
/// tiled.to_file(&path, &serde_daphne::DenseView(m.view()))?;
///
/// let mut file = DbdfFile::open(&path)?;
/// assert_eq!(file.objects()[0].header.shape(), (3, 3));
/// assert_eq!(file.objects()[0].blocks.len(), 4);
/// let window = file.read_window::<f64>(0, 1..3, 0..2)?; // reads 3 of the 4 blocks
/// assert_eq!(window, array![[4.0, 5.0], [7.0, 8.0]]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Debug)]
pub struct DbdfFile<R = FileReader> {
    pub(super) src: SeekSource<R>,
    /// Shared by the handles [`DbdfFile::try_clone`] makes (a file of a million blocks has
    /// an index of a hundred MiB).
    pub(super) objects: Arc<Vec<ObjectInfo>>,
    pub(super) options: Options,
    pub(super) hint: Option<Meta>,
    /// The file, for positional reads on every core, where it is read with plain reads.
    pub(super) positional: Option<Arc<dyn ReadAt>>,
    /// Where the rows of the sparse blocks read so far start.
    pub(super) sparse_rows: RowStarts,
    /// The file's path, when opened by one: another handle opens it again.
    pub(super) path: Option<std::path::PathBuf>,
}

impl DbdfFile<FileReader> {
    /// Opens the file at `path` and indexes it, using a `.meta` sidecar beside it (as
    /// [`crate::from_file`] does) for the first object. [`Options::open`] opens with options,
    /// and [`Options::open_reader`], [`Options::open_at`] and [`Options::open_indexed`] open
    /// other inputs.
    ///
    /// # Errors
    /// I/O errors; any malformed header or block header, blocks that do not tile their
    /// object, block values past the end of the file, with their byte offsets; an invalid or
    /// disagreeing sidecar.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Options::new().open(path)
    }
}

impl Options {
    /// Opens the file at `path` with these options ([`Options::dialect`],
    /// [`Options::max_alloc`], [`Options::memory_map`]), as [`DbdfFile::open`] does with the
    /// defaults.
    ///
    /// # Errors
    /// As [`DbdfFile::open`].
    pub fn open(&self, path: impl AsRef<Path>) -> Result<DbdfFile> {
        let path = path.as_ref();
        let hint = read_sidecar(path)?;
        // Unbuffered: the source keeps its own window and reads values straight into place.
        let file = FileReader::open(path, self)?;
        let positional = match &file.0 {
            Backing::Plain(plain) => plain.positional_handle()?,
            _ => None,
        };
        let parallel = positional.is_some();
        let mut file = DbdfFile::build(file, self, hint)?;
        file.src = file.src.with_parallel_reads(parallel);
        file.positional = positional;
        file.path = Some(path.to_owned());
        Ok(file)
    }

    /// Opens and indexes the objects of a seekable reader, from its start to its end.
    ///
    /// ```
    /// use std::io::Cursor;
    /// use serde_daphne::{Dense, Options};
    ///
    /// let bytes = serde_daphne::to_vec(&Dense(ndarray::array![[1.0f64, 2.0]]))?;
    /// let mut file = Options::new().open_reader(Cursor::new(bytes))?;
    /// assert_eq!(file.read_window::<f64>(0, 0..1, 1..2)?[[0, 0]], 2.0);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`DbdfFile::open`].
    pub fn open_reader<R: Read + Seek>(&self, reader: R) -> Result<DbdfFile<R>> {
        DbdfFile::build(reader, self, None)
    }
}

impl DbdfFile<FileReader> {
    /// Another handle on the file at `path`, which this one indexed: its own file handle (a
    /// duplicated descriptor would share its offset), the same index, not read again.
    pub(super) fn reopen(&self, path: &Path) -> Result<Self> {
        let file = FileReader::open(path, &self.options)?;
        let positional = match &file.0 {
            Backing::Plain(plain) => plain.positional_handle()?,
            _ => None,
        };
        let mut reader = file;
        let len = reader.seek(SeekFrom::End(0))?;
        if len != self.src.len() {
            return Err(Error::invalid(format!(
                "the file changed while it was read: {len} bytes, indexed at {}",
                self.src.len()
            )));
        }
        let src = SeekSource::new(reader, len).with_parallel_reads(positional.is_some());
        Ok(DbdfFile {
            src,
            objects: Arc::clone(&self.objects),
            options: self.options.clone(),
            hint: self.hint.clone(),
            positional,
            sparse_rows: RowStarts::new(),
            path: Some(path.to_owned()),
        })
    }
}

impl<R: Read + Seek> DbdfFile<R> {
    fn build(mut reader: R, options: &Options, hint: Option<Meta>) -> Result<Self> {
        let len = reader.seek(SeekFrom::End(0))?;
        DbdfFile::build_from(SeekSource::new(reader, len), options, hint)
    }

    pub(super) fn build_from(
        mut src: SeekSource<R>,
        options: &Options,
        hint: Option<Meta>,
    ) -> Result<Self> {
        let objects = index_all(&mut src, options, hint.clone())?;
        Ok(DbdfFile {
            src,
            objects: Arc::new(objects),
            options: options.clone(),
            hint,
            positional: None,
            sparse_rows: RowStarts::new(),
            path: None,
        })
    }

    /// The objects, in file order.
    pub fn objects(&self) -> &[ObjectInfo] {
        &self.objects[..]
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> u64 {
        self.src.len()
    }

    /// The same file and index, read through `wrap(reader)`: a reader that counts or
    /// throttles the bytes, for instance, and reads the same bytes from the same position.
    ///
    /// ```
    /// use std::io::Cursor;
    /// use serde_daphne::{DbdfFile, Dense};
    ///
    /// let bytes = serde_daphne::to_vec(&Dense(ndarray::array![[1.0f64, 2.0]]))?;
    /// let file = serde_daphne::Options::new().open_reader(Cursor::new(bytes))?;
    /// let mut file = file.map_reader(std::io::BufReader::new);
    /// let m = file.read_window::<f64>(0, 0..1, 1..2)?;
    /// assert_eq!(m[[0, 0]], 2.0);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    #[doc(hidden)]
    pub fn map_reader<S: Read + Seek>(self, wrap: impl FnOnce(R) -> S) -> DbdfFile<S> {
        DbdfFile {
            src: self.src.map_reader(wrap),
            objects: self.objects,
            options: self.options,
            hint: self.hint,
            // Reads around the wrapper would escape it (a progress count, say).
            positional: None,
            sparse_rows: self.sparse_rows,
            path: self.path,
        }
    }

    pub(super) fn object(&self, index: usize) -> Result<&ObjectInfo> {
        self.objects.get(index).ok_or_else(|| {
            Error::invalid(format!(
                "object {index} does not exist: the file holds {} objects",
                self.objects.len()
            ))
        })
    }

    /// Reads object `index` whole as any type the serde path reads (`Array2<T>` through
    /// [`crate::Dense`], `CsMat<T>` through [`crate::Csr`], `Vec` of records for frames,
    /// [`Object`]), converting values exactly as [`crate::from_slice`] does.
    ///
    /// # Errors
    /// As [`crate::from_slice`]; [`crate::ErrorKind::InvalidValue`] for an index past the last object
    /// or a type that reads more than one object.
    pub fn read_object<T: DeserializeOwned>(&mut self, index: usize) -> Result<T> {
        let object = self.object(index)?;
        let (range, dialect) = (object.range.clone(), object.dialect);
        let options = Options {
            dialect: Some(dialect),
            ..self.options.clone()
        };
        let len = self.src.len();
        self.src.seek_to(range.start);
        let mut de = Deserializer::from_source_with(&mut self.src, &options);
        if let Some(hint) = self.hint.clone().filter(|_| index == 0) {
            de = de.with_hint(hint);
        }
        if let Some(file) = &self.positional {
            de = de.with_file(Arc::clone(file), len);
        }
        let value = T::deserialize(&mut de)?;
        if de.offset() != range.end {
            return Err(Error::invalid(format!(
                "the type read {} bytes from object {index} at byte {}, which has {}: read \
                 several objects with from_file",
                de.offset() - range.start,
                range.start,
                range.end - range.start
            )));
        }
        Ok(value)
    }

    /// Object `index` as an [`Object`], checked as [`crate::from_slice`] checks it.
    ///
    /// # Errors
    /// As [`DbdfFile::read_object`].
    pub fn object_at(&mut self, index: usize) -> Result<Object> {
        let object = self.object(index)?;
        let (start, dialect) = (object.range.start, object.dialect);
        let hint = self.hint.clone().filter(|_| index == 0);
        self.src.seek_to(start);
        read_object(&mut self.src, Some(dialect), hint.as_ref())
    }

    /// [`DbdfFile::object_at`], after checking that holding the object whole in its natural
    /// form ([`ObjectInfo::natural_bytes`]) stays within [`Options::max_alloc`] beyond its
    /// bytes in the file, as typed reads check: for callers that go on to materialize it
    /// with [`Object::into_dense_vec`], [`Object::into_csr_parts`] or [`Object::into_columns`]
    /// (a few bytes of empty blocks can describe a matrix of any size).
    ///
    /// # Errors
    /// [`crate::ErrorKind::AllocationLimit`]; as [`DbdfFile::object_at`].
    #[doc(hidden)]
    pub fn object_checked(&mut self, index: usize) -> Result<Object> {
        let needed = self.object(index)?.natural_bytes();
        self.check_alloc(index, needed)?;
        self.object_at(index)
    }

    /// The window `rows x cols` of matrix `index` as a dense array, reading only the blocks
    /// that overlap it and, of dense blocks, only the byte ranges of its rows. Cells no block
    /// stores are zero.
    ///
    /// # Errors
    /// [`crate::ErrorKind::ShapeMismatch`] for a window outside the object; [`crate::ErrorKind::DataTypeMismatch`]
    /// for frames; [`crate::ErrorKind::LossyConversion`] when a value read does not convert exactly to
    /// `T`; [`crate::ErrorKind::AllocationLimit`] beyond [`Options::max_alloc`]; any malformed block
    /// read, with its offset.
    pub fn read_window<T: Element>(
        &mut self,
        index: usize,
        rows: Range<u64>,
        cols: Range<u64>,
    ) -> Result<Array2<T>> {
        let window = self.matrix_window(index, rows, cols)?;
        let (r, c) = window.shape();
        self.check_alloc(
            index,
            (r as u128) * (c as u128) * std::mem::size_of::<T>() as u128,
        )?;
        let mut cells = zeroed_vec(r * c)?;
        read_window(
            &mut self.src,
            &self.objects[index],
            &window,
            &mut DenseSink {
                cols: c,
                cells: &mut cells,
            },
            &mut self.sparse_rows,
        )?;
        Array2::from_shape_vec((r, c), cells).map_err(|e| Error::invalid(e.to_string()))
    }

    /// [`DbdfFile::read_window`] into a buffer of the caller's (row-major, exactly
    /// `rows x cols` long), for reading many windows without allocating each.
    ///
    /// # Errors
    /// As [`DbdfFile::read_window`]; [`crate::ErrorKind::InvalidValue`] for a buffer of another length.
    #[doc(hidden)]
    pub fn read_window_into<T: Element>(
        &mut self,
        index: usize,
        rows: Range<u64>,
        cols: Range<u64>,
        out: &mut [T],
    ) -> Result<()> {
        let window = self.matrix_window(index, rows, cols)?;
        let (r, c) = window.shape();
        if out.len() as u128 != r as u128 * c as u128 {
            return Err(Error::invalid(format!(
                "a buffer of {} values cannot hold a {r} x {c} window",
                out.len()
            )));
        }
        // Zeros go where no block stores values; a window of dense blocks is written whole.
        if !dense_throughout(&self.objects[index], &window) {
            out.fill(T::zeroed());
        }
        let sink = &mut DenseSink {
            cols: c,
            cells: out,
        };
        read_window(
            &mut self.src,
            &self.objects[index],
            &window,
            sink,
            &mut self.sparse_rows,
        )
    }

    /// The window `rows x cols` of matrix `index` as a CSR matrix (stored zeros left out),
    /// reading as [`DbdfFile::read_window`] does; a runtime-dialect CSR matrix reads the
    /// window's row offsets first, then only the index and value ranges they name.
    ///
    /// # Errors
    /// As [`DbdfFile::read_window`].
    pub fn read_window_csr<T: Element>(
        &mut self,
        index: usize,
        rows: Range<u64>,
        cols: Range<u64>,
    ) -> Result<CsMat<T>> {
        let window = self.matrix_window(index, rows, cols)?;
        let (r, c) = window.shape();
        self.check_alloc(index, (r as u128 + 1) * 8)?;
        let mut sink = EntrySink::for_window(&window);
        read_window(
            &mut self.src,
            &self.objects[index],
            &window,
            &mut sink,
            &mut self.sparse_rows,
        )?;
        let mut counts = RowCounts::new(r)?;
        sink.for_each(|row, _, _| counts.add(row));
        let mut fill = CsrFill::new(counts.into_offsets())?;
        sink.for_each(|row, col, value| {
            fill.push(row, col, value);
        });
        drop(sink);
        let (indptr, indices, data) = fill
            .finish()
            .ok_or_else(|| Error::invalid("a window's entries did not add up"))?;
        CsMat::try_new((r, c), indptr, indices, data)
            .map_err(|(.., e)| Error::invalid(format!("window as CSR: {e}")))
    }

    /// A read's memory beyond the object's own bytes stays within [`Options::max_alloc`].
    /// The window `rows x cols` of object `index` as an [`Object`] of the same data type and
    /// value type (a frame's columns in that range of rows): what `dbdf slice` writes.
    ///
    /// # Errors
    /// As [`DbdfFile::read_window`] and [`DbdfFile::read_frame`].
    pub fn read_window_object(
        &mut self,
        index: usize,
        rows: Range<u64>,
        cols: Range<u64>,
    ) -> Result<Object> {
        let header = self.object(index)?.header.clone();
        let (r, c) = (
            (rows.end.saturating_sub(rows.start)),
            cols.end.saturating_sub(cols.start),
        );
        match header {
            Header::Frame { .. } => {
                check_window(self.object(index)?, &rows, &cols)?;
                let wanted: Vec<usize> = (cols.start as usize..cols.end as usize).collect();
                if wanted.is_empty() {
                    // The rows, without columns (`Object::frame` would count none).
                    let rows32 = u32::try_from(r).map_err(|_| {
                        Error::invalid("a window of no columns and 2^32 rows or more")
                    })?;
                    let header = Header::Frame {
                        rows: r,
                        columns: Vec::new(),
                    };
                    return Ok(Object::single(header, rows32, 0, BlockData::Empty));
                }
                self.read_frame_columns(index, rows, &wanted)
            }
            Header::CsrMatrix { value_type, .. } => with_value_type!(value_type, T => {
                let m = self.read_window_csr::<T>(index, rows, cols)?;
                let (indptr, indices, data) = m.into_raw_storage();
                Object::csr(r, c, indptr, indices, T::into_values(data))
            }),
            header => {
                let value_type = header.matrix_value_type().unwrap_or(ValueType::F64);
                with_value_type!(value_type, T => {
                    let m = self.read_window::<T>(index, rows, cols)?;
                    let (values, _) = m.into_raw_vec_and_offset();
                    Object::dense(r, c, T::into_values(values))
                })
            }
        }
    }

    pub(super) fn check_alloc(&self, index: usize, bytes: u128) -> Result<()> {
        let range = &self.objects[index].range;
        check_alloc(
            range.start,
            bytes,
            range.end - range.start,
            self.options.max_alloc,
        )
    }

    fn matrix_window(&self, index: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Window> {
        let object = self.object(index)?;
        let data_type = object.header.data_type();
        if data_type == DataType::Frame {
            return Err(ErrorDetails::DataTypeMismatch {
                offset: object.range.start,
                expected: "a matrix (read a frame's rows with read_frame)",
                found: data_type,
            }
            .into());
        }
        check_window(object, &rows, &cols)?;
        Ok(Window { rows, cols })
    }

    /// Rows `rows` of the columns `labels` of frame `index` (every column when `labels` is
    /// empty), in the order given, as a frame [`Object`] whose columns have the frame's
    /// value types.
    ///
    /// # Errors
    /// [`crate::ErrorKind::FrameMismatch`] for a label the frame lacks; [`crate::ErrorKind::DataTypeMismatch`] for
    /// matrices; [`crate::ErrorKind::ShapeMismatch`] for rows outside the frame; malformed blocks.
    pub fn read_frame(
        &mut self,
        index: usize,
        rows: Range<u64>,
        labels: &[&str],
    ) -> Result<Object> {
        let object = self.object(index)?;
        let Header::Frame { columns, .. } = &object.header else {
            return Err(ErrorDetails::DataTypeMismatch {
                offset: object.range.start,
                expected: "a frame",
                found: object.header.data_type(),
            }
            .into());
        };
        let wanted: Vec<usize> = if labels.is_empty() {
            (0..columns.len()).collect()
        } else {
            labels
                .iter()
                .map(|label| {
                    columns
                        .iter()
                        .position(|c| c.label == *label)
                        .ok_or_else(|| {
                            Error::from(ErrorDetails::FrameMismatch {
                                path: String::new(),
                                message: format!("the frame has no column labelled \"{label}\""),
                            })
                        })
                })
                .collect::<Result<_>>()?
        };
        self.read_frame_columns(index, rows, &wanted)
    }

    /// Rows `rows` of the columns at `wanted` (indexes, in the order given) of frame
    /// `index`: [`DbdfFile::read_frame`] by position, for frames whose labels repeat.
    ///
    /// # Errors
    /// As [`DbdfFile::read_frame`]; a column index the frame lacks.
    #[doc(hidden)]
    pub fn read_frame_columns(
        &mut self,
        index: usize,
        rows: Range<u64>,
        wanted: &[usize],
    ) -> Result<Object> {
        let object = self.object(index)?;
        let width = object.header.cols();
        if let Some(&bad) = wanted.iter().find(|&&c| c as u64 >= width) {
            return Err(Error::invalid(format!("the frame has no column {bad}")));
        }
        check_window(object, &rows, &(0..width))?;
        let object = object.clone();
        let width: u128 = wanted
            .iter()
            .map(|&c| columns_of(&object)[c].value_type.size() as u128)
            .sum();
        self.check_alloc(index, u128::from(rows.end - rows.start) * width)?;
        let columns = columns_of(&object);
        #[cfg(unix)]
        let positional = match &self.positional {
            Some(file) => {
                super::frame_columns::read_dense_frame_columns(&**file, &object, &rows, wanted)?
            }
            None => None,
        };
        #[cfg(not(unix))]
        let positional = None;
        let values = match &object.layout {
            _ if positional.is_some() => positional.unwrap_or_default(),
            StoredBody::Runtime(head) => read_runtime_frame(&mut self.src, head, &rows, wanted)?,
            StoredBody::Blocks => {
                let mut out = Vec::with_capacity(wanted.len());
                for &col in wanted {
                    let window = Window {
                        rows: rows.clone(),
                        cols: col as u64..col as u64 + 1,
                    };
                    out.push(with_value_type!(columns[col].value_type, T => {
                        let mut cells = zeroed_vec::<T>(window.shape().0)?;
                        let mut sink = DenseSink { cols: 1, cells: &mut cells };
                        read_window(
                            &mut self.src,
                            &object,
                            &window,
                            &mut sink,
                            &mut self.sparse_rows,
                        )?;
                        T::into_values(cells)
                    }));
                }
                out
            }
        };
        let labelled = wanted.iter().map(|&c| columns[c].label.clone()).zip(values);
        Object::frame(labelled.collect())
    }

    /// The blocks of object `index`, decoded one at a time in file order (a runtime-dialect
    /// object, one block in the file, is read whole).
    ///
    /// # Errors
    /// As [`DbdfFile::read_object`] for a bad index; each item carries its block's errors.
    pub fn blocks(&mut self, index: usize) -> Result<impl Iterator<Item = Result<Block>> + '_> {
        self.blocks_skipping(index, Vec::new())
    }

    /// [`DbdfFile::blocks`], passing over (not reading) the blocks marked in `skip`.
    fn blocks_skipping(&mut self, index: usize, skip: Vec<bool>) -> Result<Blocks<'_, R>> {
        let object = self.object(index)?.clone();
        Ok(Blocks {
            file: self,
            index,
            object,
            next: 0,
            runtime: None,
            skip,
        })
    }

    /// Checks every object, block by block, as reading the whole file would, in memory
    /// bounded by the largest block. A dense block whose value type widens exactly to its
    /// object's has nothing to check beyond its length (which opening checked): any bytes are
    /// valid values, so it is not read.
    ///
    /// # Errors
    /// The first problem found, with its offset.
    pub fn validate(&mut self) -> Result<()> {
        self.validate_with_progress(None)
    }

    /// [`DbdfFile::validate`], telling `progress` after each block how far into the file
    /// it has come.
    ///
    /// # Errors
    /// As [`DbdfFile::validate`].
    pub fn validate_with_progress(&mut self, progress: Option<&Progress>) -> Result<()> {
        let total = self.file_len();
        for index in 0..self.objects.len() {
            let object = &self.objects[index];
            let skip: Vec<bool> = object
                .blocks
                .iter()
                .map(|b| {
                    let target = object.header.value_type_of(b.place.col);
                    b.block_type == BlockType::Dense
                        && matches!(object.layout, StoredBody::Blocks)
                        && b.value_type
                            .zip(target)
                            .is_some_and(|(s, t)| widens_exactly(s, t))
                })
                .collect();
            let ends: Vec<u64> = object.blocks.iter().map(|b| b.range.end).collect();
            let object_end = object.range.end;
            let blocks = self.blocks_skipping(index, skip)?;
            for (i, block) in blocks.enumerate() {
                block?;
                if let Some(report) = progress {
                    report(ends.get(i).copied().unwrap_or(object_end), total);
                }
            }
        }
        Ok(())
    }
}

fn columns_of(object: &ObjectInfo) -> &[crate::wire::Column] {
    match &object.header {
        Header::Frame { columns, .. } => columns,
        _ => &[],
    }
}

fn check_window(object: &ObjectInfo, rows: &Range<u64>, cols: &Range<u64>) -> Result<()> {
    let (r, c) = object.header.shape();
    if rows.start > rows.end || rows.end > r || cols.start > cols.end || cols.end > c {
        return Err(ErrorDetails::ShapeMismatch {
            offset: object.range.start,
            expected: format!(
                "rows {}..{} and columns {}..{} were asked for",
                rows.start, rows.end, cols.start, cols.end
            ),
            rows: r,
            cols: c,
        }
        .into());
    }
    Ok(())
}

/// An object's blocks, decoded one at a time: see [`DbdfFile::blocks`].
pub(crate) struct Blocks<'f, R> {
    file: &'f mut DbdfFile<R>,
    index: usize,
    object: ObjectInfo,
    next: usize,
    runtime: Option<std::vec::IntoIter<Block>>,
    /// Blocks to pass over without reading (validation of values that cannot be wrong).
    skip: Vec<bool>,
}

impl<R: Read + Seek> Iterator for Blocks<'_, R> {
    type Item = Result<Block>;

    fn next(&mut self) -> Option<Result<Block>> {
        if let StoredBody::Runtime(_) = self.object.layout {
            if self.runtime.is_none() {
                let blocks = match self.file.object_at(self.index) {
                    Ok(object) => object.into_parts().1,
                    Err(e) => {
                        self.runtime = Some(Vec::new().into_iter());
                        return Some(Err(e));
                    }
                };
                self.runtime = Some(blocks.into_iter());
            }
            return self.runtime.as_mut().and_then(Iterator::next).map(Ok);
        }
        while self.skip.get(self.next) == Some(&true) {
            self.next += 1;
        }
        let info = self.object.blocks.get(self.next)?.clone();
        self.next += 1;
        let head = info.head()?;
        let src = &mut self.file.src;
        src.seek_to(info.body());
        let result = decode_block_body(src, &head).and_then(|data| {
            check_values(&self.object.header, info.place, &data, info.range.start)?;
            Ok(Block {
                place: info.place,
                data,
            })
        });
        if result.is_err() {
            // Nothing after an error is trusted.
            self.next = self.object.blocks.len();
        }
        Some(result)
    }
}

/// A block's values must convert exactly to its object's type (what reading the object
/// whole checks).
fn check_values(
    header: &Header,
    place: BlockPlace,
    data: &crate::wire::BlockData,
    offset: u64,
) -> Result<()> {
    crate::model::object::check_block_values(header, place, data, offset)
}
