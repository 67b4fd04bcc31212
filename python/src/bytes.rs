//! New `bytes` objects filled in place: `PyBytes::new` copies a finished buffer, and
//! `PyBytes::new_with` zeroes the object first, each a pass over fresh memory (page faults
//! included) that an encoding written once into the object does not need.

use std::mem::MaybeUninit;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A new `bytes` object of `len` bytes, which `fill` must initialize completely (it may
/// release the GIL: the object is not visible to other Python code until it is returned).
/// When `fill` fails, the object is freed and its error returned.
pub fn filled<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut [MaybeUninit<u8>]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = pyo3::ffi::Py_ssize_t::try_from(len)
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err(len))?;
    // SAFETY: `PyBytes_FromStringAndSize` with a null pointer returns a new, owned `bytes`
    // object of `len` uninitialized bytes (or null with an exception set, which
    // `from_owned_ptr_or_err` turns into the error); the object is referenced only here until
    // it is returned, so its buffer may be written (with or without the GIL). The buffer
    // pointer is valid for `len` bytes while the object lives, which the `Bound` ensures
    // across `fill`. `MaybeUninit<u8>` admits uninitialized bytes, and the object is given
    // to Python only after `fill` succeeded, which it does only once every byte is written.
    unsafe {
        let object = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size);
        let bytes = Bound::from_owned_ptr_or_err(py, object)?.cast_into_unchecked::<PyBytes>();
        let buffer = pyo3::ffi::PyBytes_AsString(object).cast::<MaybeUninit<u8>>();
        fill(std::slice::from_raw_parts_mut(buffer, len))?;
        Ok(bytes)
    }
}
