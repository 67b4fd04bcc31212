//! `dbdf.convert`: the crate's file-to-file conversions, options by keyword.

use dbdf::convert::{ConvertOptions, Format};
use dbdf::{arrow, binsparse, csv, futhark, npz, scipy, systemds};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_daphne::{BlockPolicy, DataType, Dialect, Options, ValueType};

use crate::errors::{convert_to_py, parse_argument};

/// The crate's options from the keywords `dbdf.convert` takes: each format's own, nested.
fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<ConvertOptions> {
    let mut options = ConvertOptions::new();
    let mut dbdf = Options::new();
    let mut unguarded = false;
    let mut bsp = binsparse::WriteOptions::new();
    let mut sysds = systemds::WriteOptions::new();
    let mut compressed = false;
    let mut futhark_options = futhark::WriteOptions::new();
    let mut tables = arrow::WriteOptions::new();
    let mut table_input = arrow::ReadOptions::new();
    let mut keep_blocks = false;
    if let Some(kwargs) = kwargs {
        for (key, value) in kwargs.iter() {
            let key: String = key.extract()?;
            if value.is_none() {
                continue;
            }
            let text = || value.extract::<String>();
            let flag = || value.extract::<bool>();
            match key.as_str() {
                "from_format" => options = options.from(parse_argument::<Format>(&key, &text()?)?),
                "to_format" => options = options.to(parse_argument::<Format>(&key, &text()?)?),
                "data_type" => {
                    match parse_argument::<DataType>(&key, &text()?)? {
                        DataType::Frame => return Err(PyValueError::new_err(
                            "data_type must be 'dense' or 'csr': a matrix cannot become a frame",
                        )),
                        matrix => options = options.data_type(matrix),
                    }
                }
                "block" => dbdf = dbdf.block_policy(parse_argument::<BlockPolicy>(&key, &text()?)?),
                "tile" => {
                    let (rows, cols): (u32, u32) = value.extract()?;
                    if rows == 0 || cols == 0 {
                        return Err(PyValueError::new_err("tile sizes must be positive"));
                    }
                    dbdf = dbdf.tile(rows, cols);
                }
                "value_type" => {
                    options = options.value_type(parse_argument::<ValueType>(&key, &text()?)?)
                }
                "narrow" => dbdf = dbdf.narrow(flag()?),
                "dialect" => {
                    let dialect = parse_argument::<Dialect>(&key, &text()?)?;
                    dbdf.dialect = (dialect == Dialect::Runtime).then_some(dialect);
                }
                "unguarded_labels" => unguarded = flag()?,
                "binsparse_format" => {
                    bsp = bsp.format(parse_argument::<binsparse::Format>(&key, &text()?)?)
                }
                "index_type" => bsp = bsp.index_type(parse_argument::<ValueType>(&key, &text()?)?),
                "iso" => bsp = bsp.iso(flag()?),
                "bint8" => bsp = bsp.bint8(flag()?),
                "binsparse_version" => {
                    bsp = bsp.version(parse_argument::<binsparse::Version>(&key, &text()?)?)
                }
                // A number in Python (zarr_format=2), as zarr-python takes it.
                "zarr_format" => {
                    bsp = bsp.zarr_version(parse_argument::<binsparse::zarr::ZarrVersion>(
                        &key,
                        &value.extract::<u8>()?.to_string(),
                    )?)
                }
                "keep_blocks" => keep_blocks = flag()?,
                "systemds_block_size" => sysds = sysds.block_size(value.extract()?),
                "systemds_parts" => sysds = sysds.parts(value.extract()?),
                "compressed" => compressed = flag()?,
                "nulls" => {
                    table_input = table_input.nulls(parse_argument::<arrow::Nulls>(&key, &text()?)?)
                }
                "compression" => {
                    tables =
                        tables.compression(parse_argument::<arrow::Compression>(&key, &text()?)?)
                }
                "row_group_rows" => {
                    let rows: usize = value.extract()?;
                    if rows == 0 {
                        return Err(PyValueError::new_err("row_group_rows must be positive"));
                    }
                    tables = tables.row_group_rows(rows);
                }
                "labels" => tables = tables.labels(value.extract()?),
                "futhark_bool" => futhark_options = futhark_options.bools(flag()?),
                "futhark_f16" => futhark_options = futhark_options.f16(flag()?),
                "futhark_matrices" => futhark_options = futhark_options.matrices(flag()?),
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "convert() got an unexpected keyword argument {other:?}"
                    )))
                }
            }
        }
    }
    // dialect="runtime" is for DAPHNE: `.dbdf` in its dialect, CSV as it reads it.
    let daphne = dbdf.dialect == Some(Dialect::Runtime);
    if daphne {
        dbdf = dbdf.guard_daphne_labels(!unguarded);
    }
    Ok(options
        .dbdf(dbdf)
        .csv(csv::WriteOptions::new().daphne(daphne))
        .futhark(futhark_options)
        .binsparse(bsp)
        .systemds_input(systemds::ReadOptions::new().keep_blocks(keep_blocks))
        .systemds(sysds)
        .npz(npz::WriteOptions::new().compressed(compressed))
        .scipy(scipy::WriteOptions::new().compressed(compressed))
        .table_input(table_input)
        .table(tables))
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
