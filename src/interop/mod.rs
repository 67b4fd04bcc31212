//! Moving matrices between DAPHNE objects and neighbouring formats: Futhark's binary values,
//! NumPy's `.npy` arrays, Binsparse and SystemDS binary blocks.

pub mod binsparse;
pub mod futhark;
pub mod npy;
pub mod systemds;
mod zip;

use crate::error::{Error, Result};

/// `len` zeros for offsets and indices, or [`Error::OutOfMemory`] instead of an abort.
pub(crate) fn zeros(len: usize) -> Result<Vec<usize>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory {
        bytes: len as u128 * 8,
    })?;
    v.resize(len, 0);
    Ok(v)
}
