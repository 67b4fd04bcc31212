//! `dbdf.convert`: the crate's file-to-file conversions, options by keyword.

use dbdf::convert::{ConvertOptions, Format};
use dbdf::driver::OptionValue;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};
use serde_daphne::{DataType, ValueType};

use crate::errors::{convert_to_py, parse_argument};

/// The crate's options from the keywords `dbdf.convert` takes: the conversion's own, then
/// each format's, as the registry names them ([`dbdf::convert::options`]).
fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<ConvertOptions> {
    let mut options = ConvertOptions::default();
    let Some(kwargs) = kwargs else {
        return Ok(options);
    };
    for (key, value) in kwargs.iter() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        let text = || value.extract::<String>();
        match key.as_str() {
            "from_format" => options.from = Some(parse_argument::<Format>(&key, &text()?)?),
            "to_format" => options.to = Some(parse_argument::<Format>(&key, &text()?)?),
            "data_type" => match parse_argument::<DataType>(&key, &text()?)? {
                DataType::Frame => {
                    return Err(PyValueError::new_err(
                        "data_type must be 'dense' or 'csr': a matrix cannot become a frame",
                    ))
                }
                matrix => options.data_type = Some(matrix),
            },
            "value_type" => options.value_type = Some(parse_argument::<ValueType>(&key, &text()?)?),
            "columns" => options.columns = Some(crate::columns::columns_of(&value)?),
            _ => {
                let specs = dbdf::convert::options();
                let Some(spec) = specs.into_iter().find(|s| s.keyword == key) else {
                    return Err(PyTypeError::new_err(format!(
                        "convert() got an unexpected keyword argument {key:?}"
                    )));
                };
                let value = option_value(&value)?;
                options
                    .set_option(spec.flag, &value)
                    .map_err(|e| PyValueError::new_err(format!("{key}: {e}")))?;
            }
        }
    }
    Ok(options)
}

/// A keyword's value as an option takes it: a bool as a flag, a sequence (a tile, labels)
/// as a list, a number or a string as text.
fn option_value(value: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(OptionValue::Flag(flag.is_true()));
    }
    if value.is_instance_of::<PyString>() {
        return Ok(OptionValue::Text(value.extract()?));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = value.extract()?;
        let items = items.iter().map(|item| Ok(item.str()?.to_string()));
        return Ok(OptionValue::List(items.collect::<PyResult<_>>()?));
    }
    Ok(OptionValue::Text(value.str()?.to_string()))
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
