//! Whole objects in a format named by the tests, read and written through `dbdf::convert`
//! (every format's one codec, its pipe).

use std::path::Path;

use dbdf::convert::{self, ConvertOptions};
use serde_daphne::{Object, Result};

/// The first object of the file at `path` in `format`.
pub(crate) fn read(path: impl AsRef<Path>, format: &str) -> Result<Object> {
    let options = ConvertOptions::default();
    Ok(convert::read(path.as_ref(), format.parse()?, &options)?.remove(0))
}

/// `object` written to `path` in `format`, as a conversion writes it.
pub(crate) fn write(path: impl AsRef<Path>, object: &Object, format: &str) -> Result<()> {
    let options = ConvertOptions::default();
    let objects = std::slice::from_ref(object);
    convert::write(path.as_ref(), objects, format.parse()?, &options)?;
    Ok(())
}

/// The bytes of `object` as a file in `format`.
pub(crate) fn to_vec(object: &Object, format: &str) -> Result<Vec<u8>> {
    let options = ConvertOptions::default();
    convert::to_vec(std::slice::from_ref(object), format.parse()?, &options)
}

/// The first object of `bytes`, a file in `format`.
pub(crate) fn from_slice(bytes: &[u8], format: &str) -> Result<Object> {
    let options = ConvertOptions::default();
    Ok(convert::from_slice(bytes, format.parse()?, &options)?.remove(0))
}
