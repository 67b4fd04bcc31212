//! `dbdf.convert`: the crate's file-to-file conversions, options by keyword.

use dbdf::convert::{ConvertOptions, Format};
use dbdf::{arrow, binsparse};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_daphne::{BlockPolicy, DataType, Dialect, ValueType};

use crate::errors::{convert_to_py, parse_argument};

/// The crate's options from the keywords `dbdf.convert` takes: each format's own, nested.
fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<ConvertOptions> {
    let mut options = ConvertOptions::default();
    let mut unguarded = false;
    if let Some(kwargs) = kwargs {
        for (key, value) in kwargs.iter() {
            let key: String = key.extract()?;
            if value.is_none() {
                continue;
            }
            let text = || value.extract::<String>();
            let flag = || value.extract::<bool>();
            match key.as_str() {
                "from_format" => options.from = Some(parse_argument::<Format>(&key, &text()?)?),
                "to_format" => options.to = Some(parse_argument::<Format>(&key, &text()?)?),
                "data_type" => {
                    match parse_argument::<DataType>(&key, &text()?)? {
                        DataType::Frame => return Err(PyValueError::new_err(
                            "data_type must be 'dense' or 'csr': a matrix cannot become a frame",
                        )),
                        matrix => options.data_type = Some(matrix),
                    }
                }
                "block" => {
                    options.dbdf.block_policy = parse_argument::<BlockPolicy>(&key, &text()?)?
                }
                "tile" => {
                    let (rows, cols): (u32, u32) = value.extract()?;
                    if rows == 0 || cols == 0 {
                        return Err(PyValueError::new_err("tile sizes must be positive"));
                    }
                    options.dbdf.tile = Some((rows, cols));
                }
                "value_type" => {
                    options.value_type = Some(parse_argument::<ValueType>(&key, &text()?)?)
                }
                "narrow" => options.dbdf.narrow = flag()?,
                "dialect" => {
                    let dialect = parse_argument::<Dialect>(&key, &text()?)?;
                    options.dbdf.dialect = (dialect == Dialect::Runtime).then_some(dialect);
                }
                "unguarded_labels" => unguarded = flag()?,
                "binsparse_format" => {
                    options.binsparse.format =
                        Some(parse_argument::<binsparse::Format>(&key, &text()?)?)
                }
                "index_type" => {
                    options.binsparse.index_type = parse_argument::<ValueType>(&key, &text()?)?
                }
                "iso" => options.binsparse.iso = flag()?,
                "bint8" => options.binsparse.bint8 = flag()?,
                "binsparse_version" => {
                    options.binsparse.version =
                        parse_argument::<binsparse::Version>(&key, &text()?)?
                }
                // A number in Python (zarr_format=2), as zarr-python takes it.
                "zarr_format" => {
                    options.binsparse.zarr_version = parse_argument::<binsparse::zarr::ZarrVersion>(
                        &key,
                        &value.extract::<u8>()?.to_string(),
                    )?
                }
                "keep_blocks" => options.keep_tiles = flag()?,
                "systemds_block_size" => options.systemds.block_size = value.extract()?,
                "systemds_parts" => options.systemds.parts = Some(value.extract()?),
                "segments" => options.segments.segments = Some(value.extract()?),
                "compressed" => {
                    options.npz.compressed = flag()?;
                    options.scipy.compressed = options.npz.compressed;
                }
                "nulls" => {
                    options.table_input.nulls = parse_argument::<arrow::Nulls>(&key, &text()?)?
                }
                "compression" => {
                    options.table.compression =
                        Some(parse_argument::<arrow::Compression>(&key, &text()?)?)
                }
                "row_group_rows" => {
                    let rows: usize = value.extract()?;
                    if rows == 0 {
                        return Err(PyValueError::new_err("row_group_rows must be positive"));
                    }
                    options.table.row_group_rows = Some(rows);
                }
                "labels" => options.table.labels = Some(value.extract()?),
                "columns" => options.columns = Some(crate::columns::columns_of(&value)?),
                "mtx_layout" => {
                    options.mtx.layout = Some(parse_argument::<dbdf::mtx::Layout>(&key, &text()?)?)
                }
                "futhark_bool" => options.futhark.bools = flag()?,
                "futhark_f16" => options.futhark.f16 = flag()?,
                "futhark_matrices" => options.futhark.matrices = flag()?,
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "convert() got an unexpected keyword argument {other:?}"
                    )))
                }
            }
        }
    }
    // dialect="runtime" is for DAPHNE: `.dbdf` in its dialect, CSV as it reads it.
    let daphne = options.dbdf.dialect == Some(Dialect::Runtime);
    if daphne {
        options.dbdf.guard_daphne_labels = !unguarded;
    }
    options.csv.daphne = daphne;
    Ok(options)
}

/// Converts the file `src` to `dst`; returns the conversion's warnings.
#[pyfunction]
#[pyo3(signature = (src, dst, storage_options=None, **kwargs))]
pub fn convert(
    py: Python<'_>,
    src: std::path::PathBuf,
    dst: std::path::PathBuf,
    storage_options: Option<std::collections::HashMap<String, String>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<String>> {
    let options = options(kwargs)?;
    let storage = crate::remote::storage(storage_options);
    let remote = |p: &std::path::Path| p.to_str().is_some_and(dbdf::remote::is_url);
    let report = py
        .detach(|| match remote(&src) || remote(&dst) {
            true => dbdf::remote::convert_urls(&src, &dst, &options, &storage),
            false => dbdf::convert::convert(&src, &dst, &options),
        })
        .map_err(convert_to_py)?;
    Ok(report.warnings)
}
