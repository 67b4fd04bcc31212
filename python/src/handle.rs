//! The lazy handle: a file's index (headers only) and reads of whole objects or windows.

use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyDict;
use serde_daphne::CsrIndex;
use serde_daphne::CsrParts;
use serde_daphne::FileReader;
use serde_daphne::Header;
use serde_daphne::ObjectInfo;
use serde_daphne::ReadAt;
use serde_daphne::{
    with_value_type, DbdfFile, Dense, Dialect, Element, Object, Options, Result, ValueType,
};

use crate::decoded::{csr, decode, dims, CsrSource, Decoded};
use dbdf::pipe::Projection;

/// A file, an object behind a URL or a Python `bytes` object, indexed; a file's path, for
/// more handles on it.
pub struct Source(pub DbdfFile<FileReader>, pub Option<std::path::PathBuf>);

/// A Python `bytes` object read at any offset, where it is: it is immutable, and held as long
/// as the source. Reads take the paths of files (several blocks at once, on every core).
#[derive(Debug)]
struct InMemory(PyBackedBytes);

impl ReadAt for InMemory {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.0.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|start| self.0.get(start..start.checked_add(buf.len())?))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
}

impl Source {
    pub fn open(path: &std::path::Path, options: &Options) -> Result<Source> {
        options
            .open(path)
            .map(|file| Source(file, Some(path.to_owned())))
    }

    pub fn from_bytes(bytes: PyBackedBytes, options: &Options) -> Result<Source> {
        let file = options.open_at(std::sync::Arc::new(InMemory(bytes)), None)?;
        Ok(Source(file, None))
    }

    /// Another handle on the same file and index, for reads of its own.
    pub fn handle(&self) -> Result<DbdfFile<FileReader>> {
        self.0.try_clone()
    }

    pub fn objects(&self) -> &[ObjectInfo] {
        self.0.objects()
    }

    /// Object `index`, checked to fit `max_alloc` when held whole (it is decoded next).
    pub fn object_at(&mut self, index: usize) -> Result<Object> {
        self.0.object_checked(index)
    }

    fn window(&mut self, index: usize, rows: (u64, u64), cols: (u64, u64)) -> Result<Object> {
        let (rows, cols) = (rows.0..rows.1, cols.0..cols.1);
        self.0.read_window_object(index, rows, cols)
    }

    fn frame(&mut self, index: usize, rows: (u64, u64), labels: &[&str]) -> Result<Object> {
        let rows = rows.0..rows.1;
        self.0.read_frame(index, rows, labels)
    }

    /// Every object (or only `only`), decoded; of frames, only the `columns` picked.
    pub fn decode_all(
        &mut self,
        only: Option<usize>,
        columns: Option<&Projection>,
    ) -> Result<Vec<Decoded>> {
        let indices: Vec<usize> = match only {
            Some(i) => vec![i],
            None => (0..self.objects().len()).collect(),
        };
        indices
            .into_iter()
            .map(|i| {
                if let (Some(columns), Some(info)) = (columns, self.objects().get(i)) {
                    let (picked, positions) = dbdf::pipe::project(&info.header, columns)?;
                    let rows = 0..picked.shape().0;
                    return decode(self.0.read_frame_columns(i, rows, &positions)?);
                }
                self.decode_at(i)
            })
            .collect()
    }

    /// Object `index`, decoded.
    fn decode_at(&mut self, i: usize) -> Result<Decoded> {
        match self.objects().get(i).map(|o| &o.header) {
            Some(&Header::DenseMatrix { value_type, .. }) => self.dense_at(i, value_type),
            Some(&Header::CsrMatrix { value_type, .. }) => self.csr_at(i, value_type),
            Some(Header::Frame { .. }) => self.frame_at(i),
            // Other objects, and an index past the last (whose error this reports).
            _ => self.object_at(i).and_then(decode),
        }
    }

    /// Dense matrix `index` read straight into one vector of `value_type` (a tiled file's
    /// tiles on every core, each row into its place), as `Dense<T>` reads it.
    fn dense_at(&mut self, index: usize, value_type: ValueType) -> Result<Decoded> {
        with_value_type!(value_type, T => {
            let dense: Dense<T> = self.0.read_object(index)?;
            let (rows, cols) = dense.0.dim();
            let values = match dense.0.is_standard_layout() {
                true => dense.0.into_raw_vec_and_offset().0,
                false => dense.0.iter().copied().collect(),
            };
            Ok(Decoded::Dense { rows, cols, values: T::into_values(values) })
        })
    }

    /// Frame `index`, each column read straight into one vector (blocks of rows into their
    /// places, on every core), as `DbdfFile::read_frame_columns` reads it.
    fn frame_at(&mut self, index: usize) -> Result<Decoded> {
        let (rows, cols) = self.objects()[index].header.shape();
        let all: Vec<usize> = (0..cols as usize).collect();
        decode(self.0.read_frame_columns(index, 0..rows, &all)?)
    }

    /// CSR matrix `index` read straight into scipy's index type (one sparse block on every
    /// core), as [`DbdfFile::read_csr_parts`] reads it.
    fn csr_at(&mut self, index: usize, value_type: ValueType) -> Result<Decoded> {
        let info = &self.objects()[index];
        let (shape, stored) = (dims(info.header.shape(), info.range.start)?, info.stored());
        with_value_type!(value_type, T => csr::<T>(shape, stored, ObjectOf(self, index)))
    }
}

/// Object `index` of a source, read as CSR arrays.
struct ObjectOf<'s>(&'s mut Source, usize);

impl CsrSource for ObjectOf<'_> {
    fn read<T: Element, I: CsrIndex>(self) -> Result<CsrParts<T, I>> {
        self.0 .0.read_csr_parts(self.1)
    }
}

/// Reading options from the Python keywords.
pub fn read_options(dialect: Option<&str>, max_alloc: Option<u64>) -> PyResult<Options> {
    let mut options = Options::new();
    if let Some(bytes) = max_alloc {
        options.max_alloc = bytes;
    }
    if let Some(name) = dialect {
        options.dialect = Some(crate::errors::parse_name::<Dialect>(name)?);
    }
    Ok(options)
}

/// An open `.dbdf` file (or buffer): its index, and reads of objects and windows.
#[pyclass(module = "dbdf._dbdf", name = "Index")]
pub struct Index {
    source: Mutex<Option<Source>>,
    /// The requests of a file behind a URL.
    stats: Option<std::sync::Arc<dbdf::remote::RequestStats>>,
}

impl Index {
    pub fn new(source: Source) -> Index {
        Index {
            source: Mutex::new(Some(source)),
            stats: None,
        }
    }

    /// With the requests of a file behind a URL counted.
    pub fn with_stats(
        mut self,
        stats: Option<std::sync::Arc<dbdf::remote::RequestStats>>,
    ) -> Index {
        self.stats = stats;
        self
    }

    pub(crate) fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Source) -> Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = self.source.lock().unwrap_or_else(|e| e.into_inner());
            match guard.as_mut() {
                Some(source) => f(source).map_err(crate::errors::to_py),
                None => Err(PyValueError::new_err("I/O operation on a closed dbdf file")),
            }
        })
    }

    /// `f` of object `index`'s description (its header and blocks), with the file open.
    fn with_object<T: Send>(
        &self,
        py: Python<'_>,
        index: usize,
        f: impl FnOnce(&ObjectInfo) -> Result<T> + Send,
    ) -> PyResult<T> {
        self.with(py, |s| match s.objects().get(index) {
            Some(info) => f(info),
            None => Err(serde_daphne::Error::invalid(format!(
                "there is no object {index}"
            ))),
        })
    }
}

#[pymethods]
impl Index {
    /// The requests made for a file behind a URL, and the bytes they fetched (`None` for
    /// local files).
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(stats) = &self.stats else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        out.set_item("requests", stats.requests())?;
        out.set_item("bytes_fetched", stats.bytes_fetched())?;
        out.set_item("bytes_sent", stats.bytes_sent())?;
        Ok(Some(out))
    }

    /// The objects' headers and blocks, as dictionaries.
    fn objects<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let infos: Vec<ObjectInfo> = self.with(py, |s| Ok(s.objects().to_vec()))?;
        infos.iter().map(|info| describe(py, info)).collect()
    }

    /// The sizes of the partitions engines read object `index` in, `rows` rows in all
    /// (`dbdf::plan::partitions`): rows, then columns; `segment_starts` the first rows of a
    /// folder's segments (this file its first).
    fn partitions(
        &self,
        py: Python<'_>,
        index: usize,
        rows: u64,
        segment_starts: Vec<u64>,
    ) -> PyResult<(Vec<u64>, Vec<u64>)> {
        self.with_object(py, index, |info| {
            Ok(dbdf::plan::partitions(info, rows, &segment_starts))
        })
    }

    /// Object `index` read as a Spark table (`dbdf::plan::spark_table`): the positions of
    /// the columns `picked` (none: all), and the schema as Spark's JSON. `shown` names the
    /// object in errors.
    #[pyo3(signature = (index, picked, layout, row_index, shown))]
    fn spark_table(
        &self,
        py: Python<'_>,
        index: usize,
        picked: Vec<String>,
        layout: &str,
        row_index: Option<&str>,
        shown: &str,
    ) -> PyResult<(Vec<u64>, String)> {
        let layout = crate::errors::parse_name::<dbdf::plan::Layout>(layout)?;
        self.with_object(py, index, |info| {
            let picked: Vec<&str> = picked.iter().map(String::as_str).collect();
            let table = dbdf::plan::spark_table(&info.header, &picked, layout, row_index, shown)?;
            Ok((table.columns, table.schema.to_string()))
        })
    }

    /// About how many bytes a row of object `index` takes (`dbdf::plan::row_bytes`).
    fn row_bytes(&self, py: Python<'_>, index: usize) -> PyResult<u64> {
        self.with_object(py, index, |info| {
            Ok(dbdf::plan::row_bytes(info, info.header.rows()))
        })
    }

    /// Object `index` whole.
    fn read<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        self.with(py, |s| s.object_at(index).and_then(decode))?
            .into_py(py)
    }

    /// Rows `r0..r1` and columns `c0..c1` of matrix `index` (or of a frame's columns).
    fn window<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        rows: (u64, u64),
        cols: (u64, u64),
    ) -> PyResult<Bound<'py, PyAny>> {
        self.with(py, |s| s.window(index, rows, cols).and_then(decode))?
            .into_py(py)
    }

    /// Rows `r0..r1` of the frame `index`'s columns named `labels` (all when empty).
    fn frame<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        rows: (u64, u64),
        labels: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.with(py, |s| {
            let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            s.frame(index, rows, &labels).and_then(decode)
        })?
        .into_py(py)
    }

    /// Releases the file (and its memory map).
    fn close(&self) {
        *self.source.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.source
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

/// One object's index entry as a dictionary.
fn describe<'py>(py: Python<'py>, info: &ObjectInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let header = &info.header;
    d.set_item("data_type", header.data_type().to_string())?;
    d.set_item("shape", (header.rows(), header.cols()))?;
    d.set_item("dialect", info.dialect.to_string())?;
    d.set_item("range", (info.range.start, info.range.end))?;
    match header {
        Header::Frame { columns, .. } => {
            let labels: Vec<&str> = columns.iter().map(|c| c.label.as_str()).collect();
            let types: Vec<&str> = columns.iter().map(|c| c.value_type.name()).collect();
            d.set_item("labels", labels)?;
            d.set_item("value_types", types)?;
        }
        other => d.set_item("value_type", other.matrix_value_type().map(|v| v.name()))?,
    }
    let blocks: Vec<_> = info
        .blocks
        .iter()
        .map(|b| {
            let block = PyDict::new(py);
            block.set_item("row", b.place.row)?;
            block.set_item("col", b.place.col)?;
            block.set_item("shape", (b.place.rows, b.place.cols))?;
            block.set_item("block_type", b.block_type.to_string())?;
            block.set_item("value_type", b.value_type.map(|v| v.name()))?;
            block.set_item("nnz", b.nnz())?;
            block.set_item("range", (b.range.start, b.range.end))?;
            Ok(block)
        })
        .collect::<PyResult<_>>()?;
    d.set_item("blocks", blocks)?;
    Ok(d)
}
