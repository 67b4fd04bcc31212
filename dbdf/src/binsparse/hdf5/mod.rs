//! Binsparse in HDF5 (feature `hdf5`): one dataset per binary array at the root, the
//! descriptor as the root's string attribute `binsparse` (variable-length UTF-8 as the
//! references write it now; fixed-length strings as older C files have it are read too).

use std::path::Path;
use std::sync::Arc;

use h5::types::{
    FixedAscii, FixedUnicode, FloatSize, IntSize, TypeDescriptor, VarLenAscii, VarLenUnicode,
};
use hdf5_metno as h5;

mod driver;
mod ranges;
mod stream;
mod write;

pub(super) use write::{write, Hdf5Sink};

use super::{decode, Array, Binsparse};
use crate::input::Foreign;
use serde_daphne::Element;
use serde_daphne::Values;
use serde_daphne::{Error, ReadAt, Result};

/// The longest fixed-length descriptor string read.
const HDF5: Foreign = Foreign("Binsparse (HDF5)");
const FIXED_MAX: usize = 1 << 16;

fn h5_error(path: &Path, what: &str, e: h5::Error) -> Error {
    HDF5.error(format!("{}: {what}: {e}", path.display()))
}

fn descriptor(file: &h5::File, path: &Path) -> Result<String> {
    let attr = file.attr("binsparse").map_err(|e| {
        h5_error(
            path,
            "no root attribute \"binsparse\" (not a Binsparse file)",
            e,
        )
    })?;
    let read = |e| h5_error(path, "the binsparse attribute", e);
    let kind = attr.dtype().and_then(|t| t.to_descriptor()).map_err(read)?;
    Ok(match kind {
        TypeDescriptor::VarLenUnicode => attr
            .read_scalar::<VarLenUnicode>()
            .map_err(read)?
            .to_string(),
        TypeDescriptor::VarLenAscii => attr.read_scalar::<VarLenAscii>().map_err(read)?.to_string(),
        TypeDescriptor::FixedAscii(n) | TypeDescriptor::FixedUnicode(n) if n > FIXED_MAX => {
            return Err(HDF5.error(format!(
                "the binsparse attribute is a {n}-byte string (at most {FIXED_MAX})"
            )))
        }
        TypeDescriptor::FixedAscii(_) => attr
            .read_scalar::<FixedAscii<FIXED_MAX>>()
            .map_err(read)?
            .to_string(),
        TypeDescriptor::FixedUnicode(_) => attr
            .read_scalar::<FixedUnicode<FIXED_MAX>>()
            .map_err(read)?
            .to_string(),
        other => {
            return Err(HDF5.error(format!("the binsparse attribute is {other}, not a string")))
        }
    })
}

fn read_dataset(file: &h5::File, path: &Path, name: &str) -> Result<Array> {
    let fail = |e| h5_error(path, &format!("the dataset {name}"), e);
    let dataset = file.dataset(name).map_err(fail)?;
    if dataset.ndim() != 1 {
        return Err(HDF5.error(format!(
            "{}: {name} has shape {:?}; Binsparse arrays are 1-D",
            path.display(),
            dataset.shape()
        )));
    }
    let kind = dataset
        .dtype()
        .and_then(|t| t.to_descriptor())
        .map_err(fail)?;
    macro_rules! raw {
        ($t:ty) => {
            Element::into_values(dataset.read_raw::<$t>().map_err(fail)?)
        };
    }
    let values: Values = match kind {
        TypeDescriptor::Unsigned(IntSize::U1) | TypeDescriptor::Boolean => raw!(u8),
        TypeDescriptor::Unsigned(IntSize::U2) => raw!(u16),
        TypeDescriptor::Unsigned(IntSize::U4) => raw!(u32),
        TypeDescriptor::Unsigned(IntSize::U8) => raw!(u64),
        TypeDescriptor::Integer(IntSize::U1) => raw!(i8),
        TypeDescriptor::Integer(IntSize::U2) => raw!(i16),
        TypeDescriptor::Integer(IntSize::U4) => raw!(i32),
        TypeDescriptor::Integer(IntSize::U8) => raw!(i64),
        TypeDescriptor::Float(FloatSize::U4) => raw!(f32),
        TypeDescriptor::Float(FloatSize::U8) => raw!(f64),
        other => {
            return Err(HDF5.error(format!(
                "{}: {name} holds {other}, not numbers",
                path.display()
            )))
        }
    };
    Ok(Array {
        values,
        name: name.to_owned(),
        offset: None,
        first: 0,
    })
}

/// Reads a Binsparse matrix from an HDF5 file, allowing it `max_alloc` bytes of memory
/// beyond the file's size.
pub(super) fn read(path: &Path, max_alloc: u64) -> Result<Binsparse> {
    let len = std::fs::metadata(path)?.len();
    let file = h5::File::open(path).map_err(|e| h5_error(path, "cannot open as HDF5", e))?;
    read_open(&file, path, len, max_alloc)
}

/// [`read`] for an HDF5 file read by position (a remote object's ranges), named `name`,
/// with no local copy ([`ranges`]): a read that failed is the error.
pub(super) fn read_at(data: Arc<dyn ReadAt>, name: &Path, max_alloc: u64) -> Result<Binsparse> {
    let len = data.size()?;
    let (file, ranges) = ranges::open(data, name)?;
    let read = read_open(&file, name, len, max_alloc);
    read.map_err(|e| ranges.take_error().map_or(e, Error::from))
}

fn read_open(file: &h5::File, path: &Path, len: u64, max_alloc: u64) -> Result<Binsparse> {
    let text = descriptor(file, path)?;
    decode(&text, len, max_alloc, |name| read_dataset(file, path, name))
}
