//! The columns of a table a caller picks (`columns=`): labels or positions, resolved by the
//! `dbdf` crate's rule, as `dbdf convert --columns` resolves them.

use dbdf::pipe::Projection;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::errors::IntoPy;

/// `columns=`: one label, or a sequence of labels (`str`) and positions (`int`).
pub fn columns_of(value: &Bound<'_, PyAny>) -> PyResult<Projection> {
    let picks: Vec<String> = match value.extract::<String>() {
        Ok(label) => vec![label],
        Err(_) => value
            .try_iter()
            .map_err(|_| PyTypeError::new_err("columns= takes labels (str) and positions (int)"))?
            .map(|item| {
                let item = item?;
                match item.extract::<String>() {
                    Ok(label) => Ok(label),
                    Err(_) => item.extract::<usize>().map(|p| p.to_string()).map_err(|_| {
                        PyTypeError::new_err("columns= takes labels (str) and positions (int)")
                    }),
                }
            })
            .collect::<PyResult<_>>()?,
    };
    Projection::new(picks).py_err()
}

/// Where each pick of `columns` is among `labels` (a frame's), in the order picked.
#[pyfunction]
pub fn pick_columns(labels: Vec<String>, columns: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    columns_of(columns)?.positions(&labels).py_err()
}
