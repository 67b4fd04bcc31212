//! `dbdf.convert`: the crate's file-to-file conversions, options by keyword.

use dbdf::convert::{ConvertOptions, Format};
use dbdf::{binsparse, futhark};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_daphne::{BlockPolicy, DataType, Dialect, ValueType};

use crate::errors::convert_to_py;

fn format(name: &str) -> PyResult<Format> {
    Format::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown format {name:?}: dbdf, mtx, csv, npy, futhark, binsparse or systemds"
        ))
    })
}

fn value_type(name: &str) -> PyResult<ValueType> {
    ValueType::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{name:?} is not one of u8, u16, u32, u64, i8, i16, i32, i64, f32, f64"
        ))
    })
}

/// The crate's options from the keywords `dbdf.convert` takes.
fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<ConvertOptions> {
    let mut options = ConvertOptions::new();
    let mut futhark_options = futhark::WriteOptions::new();
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
            "from_format" => options.from(format(&text()?)?),
            "to_format" => options.to(format(&text()?)?),
            "data_type" => options.data_type(match text()?.as_str() {
                "dense" => DataType::DenseMatrix,
                "csr" => DataType::CsrMatrix,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "data_type must be 'dense' or 'csr', not {other:?}"
                    )))
                }
            }),
            "block" => options.block_policy(match text()?.as_str() {
                "auto" => BlockPolicy::Auto,
                "smallest" => BlockPolicy::Smallest,
                "dense" => BlockPolicy::Dense,
                "sparse" => BlockPolicy::Sparse,
                "ultra-sparse" | "ultra_sparse" => BlockPolicy::UltraSparse,
                other => return Err(PyValueError::new_err(format!("unknown block {other:?}"))),
            }),
            "tile" => {
                let (rows, cols): (u32, u32) = value.extract()?;
                if rows == 0 || cols == 0 {
                    return Err(PyValueError::new_err("tile sizes must be positive"));
                }
                options.tile(rows, cols)
            }
            "value_type" => options.value_type(value_type(&text()?)?),
            "narrow" => options.narrow(flag()?),
            "dialect" => match text()?.as_str() {
                "spec" => options.dialect(Dialect::Spec),
                "daphne" | "runtime" => options.dialect(Dialect::Runtime),
                other => {
                    return Err(PyValueError::new_err(format!(
                        "dialect must be 'spec' or 'daphne', not {other:?}"
                    )))
                }
            },
            "unguarded_labels" => options.unguarded_labels(flag()?),
            "binsparse_format" => {
                let name = text()?.to_uppercase();
                let bsp = binsparse::Format::from_name(&name).ok_or_else(|| {
                    PyValueError::new_err(format!("{name:?} is not a Binsparse format"))
                })?;
                options.binsparse_format(bsp)
            }
            "index_type" => options.index_type(value_type(&text()?)?),
            "iso" => options.iso(flag()?),
            "bint8" => options.bint8(flag()?),
            "binsparse_version" => options.binsparse_version(match text()?.as_str() {
                "0.1" => binsparse::Version::V0_1,
                "0.1.0" => binsparse::Version::V0_1_0,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "binsparse_version must be '0.1' or '0.1.0', not {other:?}"
                    )))
                }
            }),
            "zarr_format" => options.zarr_version(match value.extract::<u8>()? {
                2 => binsparse::zarr::ZarrVersion::V2,
                3 => binsparse::zarr::ZarrVersion::V3,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "zarr_format must be 2 or 3, not {other}"
                    )))
                }
            }),
            "keep_blocks" => options.keep_blocks(flag()?),
            "systemds_block_size" => options.systemds_block_size(value.extract()?),
            "systemds_parts" => options.systemds_parts(value.extract()?),
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
    Ok(options.futhark(futhark_options))
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
