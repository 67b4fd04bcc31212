//! `DenseLayout`: a tiled dense file whose tiles any process writes at their fixed places
//! (`serde_daphne::DenseLayout`), for `dbdf.store`'s lock-free writes from Dask's workers.
//! It pickles as its shape, type and tile size: a few dozen bytes per task.

use std::collections::HashMap;
use std::path::PathBuf;

use numpy::{PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_daphne::{with_value_type, ValueType};

use crate::errors::IntoPy;

/// The layout of a dense matrix in tiles of one size, each tile's values at a fixed offset.
#[pyclass(module = "dbdf._dbdf", frozen)]
pub struct DenseLayout {
    inner: serde_daphne::DenseLayout,
}

impl DenseLayout {
    fn value_type(&self) -> ValueType {
        self.inner
            .header()
            .matrix_value_type()
            .unwrap_or(ValueType::F64)
    }
}

#[pymethods]
impl DenseLayout {
    /// The layout of a `shape` matrix of `value_type` (`"f64"`, ...) in tiles of `tile`.
    #[new]
    fn new(shape: (u64, u64), value_type: &str, tile: (u32, u32)) -> PyResult<Self> {
        let vt: ValueType = crate::errors::parse_name(value_type)?;
        let inner = serde_daphne::DenseLayout::new(shape.0, shape.1, vt, tile).py_err()?;
        Ok(DenseLayout { inner })
    }

    /// Pickled as the arguments it was made with.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.get();
        let args = (
            this.inner.header().shape(),
            this.value_type().to_string(),
            this.inner.tile(),
        );
        (slf.get_type(), args).into_pyobject(py)
    }

    /// `(rows, cols)`.
    #[getter]
    fn shape(&self) -> (u64, u64) {
        self.inner.header().shape()
    }

    /// The tile size, `(rows, cols)`.
    #[getter]
    fn tile(&self) -> (u32, u32) {
        self.inner.tile()
    }

    /// The file's length in bytes.
    #[getter]
    fn file_len(&self) -> u64 {
        self.inner.file_len()
    }

    /// Creates the file under a new temporary name beside `target`, every header in place;
    /// returns its path.
    fn create_scratch(&self, py: Python<'_>, target: PathBuf) -> PyResult<PathBuf> {
        py.detach(|| self.inner.create_scratch(&target)).py_err()
    }

    /// Writes `array` (2-D, C-contiguous, the tile's shape and the matrix's dtype) as the
    /// tile whose top-left cell is (`row`, `col`) into the file at `scratch`.
    fn write_tile(
        &self,
        py: Python<'_>,
        scratch: PathBuf,
        row: u64,
        col: u64,
        array: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (rows, cols) = self.inner.tile_shape(row, col).py_err()?;
        with_value_type!(self.value_type(), T => {
            let array: PyReadonlyArray2<'_, T> = array.extract()?;
            if array.shape() != [rows, cols] {
                return Err(PyValueError::new_err(format!(
                    "the tile at ({row}, {col}) is {rows} x {cols}, the array {:?}",
                    array.shape()
                )));
            }
            let values = array
                .as_slice()
                .map_err(|_| PyValueError::new_err("a tile must be C-contiguous"))?;
            py.detach(|| self.inner.write_tile_at(&scratch, row, col, values)).py_err()
        })
    }

    /// Rows of each part of a shared upload of the file: whole rows of tiles, at least
    /// 5 MiB a part but the last (S3's smallest part) and at most 10,000 parts (its most).
    fn part_rows(&self) -> u64 {
        let (rows, cols) = self.inner.header().shape();
        let tile_rows = u64::from(self.inner.tile().0);
        let band_bytes = tile_rows * cols * self.value_type().size() as u64;
        let for_size = (5u64 << 20).div_ceil(band_bytes.max(1));
        let for_count = rows.div_ceil(tile_rows).div_ceil(10_000);
        tile_rows * for_size.max(for_count).max(1)
    }

    /// How many parts of the upload the `rows` rows from `first_row` go up as: one per
    /// 16 MiB of values (at least one), sent at once (a single stream does not fill a
    /// link); each at least 5 MiB, as the rows are (`part_rows`).
    fn parts_in(&self, rows: u64) -> usize {
        let (_, cols) = self.inner.header().shape();
        parts_for(rows * cols * self.value_type().size() as u64)
    }

    /// Sends the rows `array` holds, from `first_row` (whole rows of tiles, every column), as
    /// the parts from `first` of the shared upload `id` of `url` (`parts_in` of them, at
    /// once; `dbdf::remote::put_shared_part`): `(their tags, the file's first bytes where
    /// they hold them)`, for `complete_upload` and `block_index`.
    #[pyo3(signature = (url, storage_options, id, first, first_row, array))]
    #[allow(clippy::too_many_arguments)]
    fn put_parts<'py>(
        &self,
        py: Python<'py>,
        url: &str,
        storage_options: Option<HashMap<String, String>>,
        id: &str,
        first: usize,
        first_row: u64,
        array: &Bound<'py, PyAny>,
    ) -> PyResult<(Vec<String>, Option<Vec<u8>>)> {
        let storage = crate::remote::storage(storage_options);
        with_value_type!(self.value_type(), T => {
            let array: PyReadonlyArray2<'_, T> = array.extract()?;
            let rows = array.shape()[0] as u64;
            let values = array
                .as_slice()
                .map_err(|_| PyValueError::new_err("a part must be C-contiguous"))?;
            py.detach(|| {
                let (at, bytes) = self.inner.band_bytes(first_row, values)?;
                let prefix = (at == 0).then(|| {
                    bytes[..serde_daphne::DenseLayout::PREFIX.min(bytes.len())].to_vec()
                });
                let tags = send_parts(url, &storage, id, first, bytes, self.parts_in(rows))?;
                Ok((tags, prefix))
            })
            .py_err()
        })
    }

    /// The file's block index (`.index`), from the layout and the file's first bytes.
    fn block_index(&self, prefix: &[u8]) -> PyResult<Vec<u8>> {
        Ok(self.inner.block_index(prefix).py_err()?.to_vec())
    }

    /// Names the finished file at `scratch` `target`, synced first when `sync`.
    fn commit(
        &self,
        py: Python<'_>,
        scratch: PathBuf,
        target: PathBuf,
        sync: bool,
    ) -> PyResult<()> {
        py.detach(|| self.inner.commit(&scratch, &target, sync))
            .py_err()
    }
}

/// How many parts of a shared upload `bytes` of values go up as: one per 16 MiB (at least
/// one), sent at once, as a single stream does not fill a link.
fn parts_for(bytes: u64) -> usize {
    (bytes / (16 << 20)).max(1) as usize
}

/// Sends `bytes` as `n` parts from `first` of the shared upload `id` of `url`, at once
/// (`dbdf::remote::put_shared_part`); their tags.
fn send_parts(
    url: &str,
    storage: &dbdf::remote::StorageOptions,
    id: &str,
    first: usize,
    bytes: Vec<u8>,
    n: usize,
) -> serde_daphne::Result<Vec<String>> {
    let size = bytes.len().div_ceil(n.max(1)).max(1);
    let pieces: Vec<Vec<u8>> = bytes.chunks(size).map(<[u8]>::to_vec).collect();
    drop(bytes);
    std::thread::scope(|scope| {
        let sending: Vec<_> = (first..)
            .zip(pieces)
            .map(|(index, piece)| {
                scope.spawn(move || dbdf::remote::put_shared_part(url, storage, id, index, piece))
            })
            .collect();
        sending
            .into_iter()
            .map(|s| s.join().expect("a part's thread panicked"))
            .collect()
    })
}

/// Sends the matrix `array` (C-contiguous, of `value_type`) as a segment of DAPHNE's (the
/// runtime dialect, dense) in the parts of the shared upload `id` of its `url`: `(their
/// tags, the segment's .meta)`, for `complete_segments`.
#[pyfunction]
#[pyo3(signature = (url, storage_options, id, value_type, array))]
pub fn put_segment(
    py: Python<'_>,
    url: &str,
    storage_options: Option<HashMap<String, String>>,
    id: &str,
    value_type: &str,
    array: &Bound<'_, PyAny>,
) -> PyResult<(Vec<String>, Vec<u8>)> {
    use serde_daphne::{DataType, DbdfWriter, Dialect, Header, Options};
    let storage = crate::remote::storage(storage_options);
    let vt: ValueType = crate::errors::parse_name(value_type)?;
    with_value_type!(vt, T => {
        let array: PyReadonlyArray2<'_, T> = array.extract()?;
        let view = array.as_array();
        py.detach(|| {
            let (rows, cols) = (view.nrows() as u64, view.ncols() as u64);
            let runtime = Options { dialect: Some(Dialect::Runtime), ..Options::new() };
            let mut bytes = Vec::new();
            let mut writer = DbdfWriter::to_stream(&mut bytes, &runtime)?;
            writer.begin(Header::matrix(DataType::DenseMatrix, rows, cols, vt))?;
            writer.write_dense_tile(0, 0, view)?;
            let sidecars = writer.finish()?;
            let meta = sidecars.into_iter().find(|(s, _)| *s == ".meta").map(|(_, b)| b);
            let meta = meta.ok_or_else(|| serde_daphne::Error::invalid("internal: no .meta"))?;
            let n = parts_for(bytes.len() as u64);
            Ok((send_parts(url, &storage, id, 0, bytes, n)?, meta))
        })
        .py_err()
    })
}

/// Completes the segments' shared uploads of the folder at `url`, each `(id, tags, .meta)`
/// in row order, with the folder's sidecar last, for a matrix of `shape` and `value_type`
/// (`dbdf::remote::complete_shared_segments`).
#[pyfunction]
#[pyo3(signature = (url, storage_options, segments, shape, value_type))]
pub fn complete_segments(
    py: Python<'_>,
    url: &str,
    storage_options: Option<HashMap<String, String>>,
    segments: Vec<(String, Vec<String>, Vec<u8>)>,
    shape: (u64, u64),
    value_type: &str,
) -> PyResult<()> {
    let storage = crate::remote::storage(storage_options);
    let vt: ValueType = crate::errors::parse_name(value_type)?;
    let header =
        serde_daphne::Header::matrix(serde_daphne::DataType::DenseMatrix, shape.0, shape.1, vt);
    py.detach(|| dbdf::remote::complete_shared_segments(url, &storage, segments, &header))
        .py_err()
}

/// A new scratch folder beside `target`, named for `writer`, and in it the folder where
/// writers in any process put their segments before `commit_segments`: `(scratch, staged)`
/// (`dbdf::segments::stage`).
#[pyfunction]
pub fn stage_segments(target: PathBuf, writer: &str) -> PyResult<(PathBuf, PathBuf)> {
    dbdf::segments::stage(&target, writer).py_err()
}

/// Removes a scratch folder of `stage_segments`, which tasks of a failed job may still be
/// writing into (`dbdf::segments::discard`).
#[pyfunction]
pub fn discard_scratch(py: Python<'_>, scratch: PathBuf) {
    py.detach(|| dbdf::segments::discard(&scratch))
}

/// Puts the folder of segments `staged` in place at `folder` (`dbdf::segments::commit`);
/// with `parts` (a job's `(segment file, rows)`, in row order), moved into `staged` first,
/// after `folder`'s segments where `append` (`dbdf::segments::commit_parts`).
#[pyfunction]
#[pyo3(signature = (staged, folder, parts=None, append=false))]
pub fn commit_segments(
    py: Python<'_>,
    staged: PathBuf,
    folder: PathBuf,
    parts: Option<Vec<(PathBuf, u64)>>,
    append: bool,
) -> PyResult<()> {
    py.detach(|| match parts {
        Some(parts) => dbdf::segments::commit_parts(&staged, &folder, &parts, append),
        None => dbdf::segments::commit(&staged, &folder),
    })
    .py_err()
}

/// The segments of the folder of segments at `folder` (a path or a URL), in row order, each
/// as `(path or URL, first_row, rows)`: opened and checked as one object
/// (`dbdf::pipe::Source::files`).
#[pyfunction]
#[pyo3(signature = (folder, storage_options=None))]
pub fn segment_files(
    py: Python<'_>,
    folder: PathBuf,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<Vec<(String, u64, u64)>> {
    use dbdf::pipe::Source;
    use dbdf::remote::Location;
    let storage = crate::remote::storage(storage_options);
    py.detach(|| {
        let (source, url): (Box<dyn Source>, _) = match crate::remote::locate(&folder).py_err()? {
            Location::Local(path) => (Box::new(dbdf::segments::source(path).py_err()?), None),
            Location::Remote(url) => {
                let options = dbdf::convert::ConvertOptions::default();
                let opened = dbdf::remote::open_input(&folder, &options, &storage)
                    .map_err(crate::errors::convert_to_py)?;
                (opened.source, Some(url))
            }
        };
        let files = source.files().ok_or_else(|| {
            PyValueError::new_err(format!(
                "{} is not a folder of DAPHNE's segments",
                dbdf::remote::redact(&folder.to_string_lossy())
            ))
        })?;
        Ok(files
            .into_iter()
            .map(|(name, rows)| {
                // A segment's URL as given, secrets and all (its name as the source shows
                // it has them hidden), named under the folder as `dbdf` names its objects.
                let name = match &url {
                    Some(url) => format!("{url}/{}", name.rsplit('/').next().unwrap_or(&name)),
                    None => name,
                };
                (name, rows.start, rows.end - rows.start)
            })
            .collect())
    })
}

/// The file name of segment `i` (from 1) of a folder named `folder_name`
/// (`dbdf::segments::segment_name`).
#[pyfunction]
pub fn segment_name(folder_name: &str, i: usize) -> String {
    dbdf::segments::segment_name(folder_name, i)
}

/// Whether a write to `target` makes a folder of DAPHNE's segments: `to_format` names the
/// segments format, or, without one, `target`'s extension does (`dbdf::convert::Format`,
/// as `dbdf convert` decides).
#[pyfunction]
#[pyo3(signature = (target, to_format=None))]
pub fn writes_segments(target: PathBuf, to_format: Option<&str>) -> PyResult<bool> {
    use dbdf::convert::Format;
    let format = match to_format {
        Some(name) => Some(crate::errors::parse_name::<Format>(name)?),
        None => Format::of_path(&target, false),
    };
    Ok(format.is_some_and(|f| f.stored() == dbdf::driver::Stored::Segments))
}

/// What names a version of the local file at `path`: `(size, modification time in ns)`
/// (`dbdf::plan::Stamp`); a URL, `()`: the store pins each read to the version it opened.
#[pyfunction]
pub fn stamp(path: &str) -> PyResult<Option<(u64, i64)>> {
    if dbdf::remote::is_url(path) {
        return Ok(None);
    }
    let stamp = dbdf::plan::Stamp::of(std::path::Path::new(path)).py_err()?;
    Ok(Some((stamp.size, stamp.mtime_ns)))
}

/// Refuses the file at `path` when it is no longer the version `(size, mtime_ns)` a plan
/// named (`dbdf::plan::Stamp::check`): an `OSError` naming it.
#[pyfunction]
pub fn check_stamp(path: &str, version: (u64, i64)) -> PyResult<()> {
    let (size, mtime_ns) = version;
    let stamp = dbdf::plan::Stamp { size, mtime_ns };
    stamp.check(std::path::Path::new(path)).py_err()
}

/// `text` with the secrets of its URLs shown as `****` (`dbdf::remote::redact`).
#[pyfunction]
pub fn redact(text: &str) -> String {
    dbdf::remote::redact(text).into_owned()
}

/// Part sizes along an axis of `n`: `per` each, the last what is left
/// (`dbdf::plan::bands`).
#[pyfunction]
pub fn bands(n: u64, per: u64) -> Vec<u64> {
    dbdf::plan::bands(n, per)
}

/// Whether `path` names an object behind a URL, not a local path (`dbdf::remote::is_url`).
#[pyfunction]
pub fn is_url(path: &str) -> bool {
    dbdf::remote::is_url(path)
}

/// The names of a matrix's `n` columns seen as a table (`dbdf::plan::column_names`).
#[pyfunction]
pub fn matrix_column_names(n: u64) -> Vec<String> {
    let header = serde_daphne::Header::matrix(
        serde_daphne::DataType::DenseMatrix,
        0,
        n,
        serde_daphne::ValueType::F64,
    );
    dbdf::plan::column_names(&header)
}

/// Refuses a Spark column of SQL type `sql_type` that no segment can hold
/// (`dbdf::plan::check_spark_column`).
#[pyfunction]
pub fn check_spark_column(name: &str, sql_type: &str) -> PyResult<()> {
    dbdf::plan::check_spark_column(name, sql_type).py_err()
}
