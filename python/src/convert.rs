//! `dbdf.convert`: the crate's file-to-file conversions, options by keyword.

use dbdf::convert::{ConvertOptions, Format};
use dbdf::{arrow, binsparse, futhark};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_daphne::{BlockPolicy, DataType, Dialect, ValueType};

use crate::errors::{convert_to_py, parse_argument};

/// The crate's options from the keywords `dbdf.convert` takes.
fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<ConvertOptions> {
    let mut options = ConvertOptions::new();
    let mut futhark_options = futhark::WriteOptions::new();
    let mut tables = arrow::WriteOptions::new();
    let Some(kwargs) = kwargs else {
        return Ok(options);
    };
    for (key, value) in kwargs.iter() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        let text = || value.extract::<String>();
        let flag = || value.extract::<bool>();
        options = match key.as_str() {
            "from_format" => options.from(parse_argument::<Format>(&key, &text()?)?),
            "to_format" => options.to(parse_argument::<Format>(&key, &text()?)?),
            "data_type" => match parse_argument::<DataType>(&key, &text()?)? {
                DataType::Frame => {
                    return Err(PyValueError::new_err(
                        "data_type must be 'dense' or 'csr': a matrix cannot become a frame",
                    ))
                }
                matrix => options.data_type(matrix),
            },
            "block" => options.block_policy(parse_argument::<BlockPolicy>(&key, &text()?)?),
            "tile" => {
                let (rows, cols): (u32, u32) = value.extract()?;
                if rows == 0 || cols == 0 {
                    return Err(PyValueError::new_err("tile sizes must be positive"));
                }
                options.tile(rows, cols)
            }
            "value_type" => options.value_type(parse_argument::<ValueType>(&key, &text()?)?),
            "narrow" => options.narrow(flag()?),
            "dialect" => options.dialect(parse_argument::<Dialect>(&key, &text()?)?),
            "unguarded_labels" => options.unguarded_labels(flag()?),
            "binsparse_format" => {
                options.binsparse_format(parse_argument::<binsparse::Format>(&key, &text()?)?)
            }
            "index_type" => options.index_type(parse_argument::<ValueType>(&key, &text()?)?),
            "iso" => options.iso(flag()?),
            "bint8" => options.bint8(flag()?),
            "binsparse_version" => {
                options.binsparse_version(parse_argument::<binsparse::Version>(&key, &text()?)?)
            }
            // A number in Python (zarr_format=2), as zarr-python takes it.
            "zarr_format" => options.zarr_version(parse_argument::<binsparse::zarr::ZarrVersion>(
                &key,
                &value.extract::<u8>()?.to_string(),
            )?),
            "keep_blocks" => options.keep_blocks(flag()?),
            "systemds_block_size" => options.systemds_block_size(value.extract()?),
            "systemds_parts" => options.systemds_parts(value.extract()?),
            "compressed" => options.compressed(flag()?),
            "nulls" => options.nulls(parse_argument::<arrow::Nulls>(&key, &text()?)?),
            "compression" => {
                tables = tables.compression(parse_argument::<arrow::Compression>(&key, &text()?)?);
                options
            }
            "row_group_rows" => {
                let rows: usize = value.extract()?;
                if rows == 0 {
                    return Err(PyValueError::new_err("row_group_rows must be positive"));
                }
                tables = tables.row_group_rows(rows);
                options
            }
            "labels" => {
                tables = tables.labels(value.extract()?);
                options
            }
            "futhark_bool" => {
                futhark_options = futhark_options.bools(flag()?);
                options
            }
            "futhark_f16" => {
                futhark_options = futhark_options.f16(flag()?);
                options
            }
            "futhark_matrices" => {
                futhark_options = futhark_options.matrices(flag()?);
                options
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "convert() got an unexpected keyword argument {other:?}"
                )))
            }
        };
    }
    Ok(options.futhark(futhark_options).tables(tables))
}

/// Converts the file `src` to `dst`; returns the conversion's warnings.
#[pyfunction]
#[pyo3(signature = (src, dst, **kwargs))]
pub fn convert(
    py: Python<'_>,
    src: std::path::PathBuf,
    dst: std::path::PathBuf,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<String>> {
    let options = options(kwargs)?;
    let report = py
        .detach(|| dbdf::convert::convert(&src, &dst, &options))
        .map_err(convert_to_py)?;
    Ok(report.warnings)
}
