//! Binsparse in NumPy's `.npz` container (stored as `numpy.savez` writes it; deflated as
//! `numpy.savez_compressed` writes it is read too): a zip of one `.npy` array per binary array, plus
//! `binsparse.npy`, a 0-D unicode array holding the descriptor (as the Python reference
//! stores it).

use std::io::Write;

use serde_json::{Map, Value as Json};

use super::{decode, encode, invalid, Array, Binsparse, WriteOptions};
use crate::error::Result;
use crate::interop::npy;
use crate::interop::zip::{members, ZipWriter};
use crate::model::Object;
use crate::options::Options;

const DESCRIPTOR: &str = "binsparse.npy";

/// Reads a Binsparse matrix from the bytes of an `.npz` archive, allowing the matrix the
/// default [`Options::max_alloc`] of memory beyond the archive's size.
///
/// # Errors
/// As [`read_npz_with`].
pub fn read_npz(bytes: &[u8]) -> Result<Binsparse> {
    read_npz_with(bytes, &Options::new())
}

/// Reads a Binsparse matrix from the bytes of an `.npz` archive, allowing the matrix
/// `options.get_max_alloc()` bytes of memory beyond the archive's size.
///
/// # Errors
/// [`crate::Error::ForeignInput`] with the byte offset for a malformed archive, array or
/// descriptor (unsorted or out-of-range indices, wrong lengths); [`crate::Error::NotConvertible`]
/// for what DAPHNE cannot hold (complex values, a non-zero fill value, Hermitian structures,
/// more than two dimensions); [`crate::Error::AllocationLimit`] for a matrix that would take
/// more memory than that.
pub fn read_npz_with(bytes: &[u8], options: &Options) -> Result<Binsparse> {
    let members = members(bytes, options.get_max_alloc())?;
    let find = |name: &str| members.iter().find(|m| m.name == format!("{name}.npy"));
    let descriptor = find("binsparse")
        .ok_or_else(|| invalid("the archive has no binsparse.npy (not a Binsparse file)"))?;
    // Offsets of problems inside a member count from the archive's start where the member
    // is stored; inflated members have none to give.
    let shift = |e: crate::Error, at: Option<usize>| match at {
        Some(at) => e.shifted(at),
        None => e.without_offset(),
    };
    let text = npy::parse(&descriptor.data)
        .and_then(|a| a.string())
        .map_err(|e| shift(e, descriptor.offset))?;
    decode(&text, bytes.len() as u64, options.get_max_alloc(), |name| {
        let member = find(name).ok_or_else(|| invalid(format!("the archive has no {name}.npy")))?;
        let array = npy::parse(&member.data).map_err(|e| shift(e, member.offset))?;
        if array.shape.len() != 1 {
            return Err(invalid(format!(
                "{name}.npy has shape {:?}; Binsparse arrays are 1-D",
                array.shape
            )));
        }
        Ok(Array {
            values: array.values().map_err(|e| shift(e, member.offset))?,
            name: name.to_owned(),
            offset: member.offset.map(|at| at + array.data_offset),
        })
    })
}

/// Writes `object` as a Binsparse `.npz` archive (`attributes` go beside the `binsparse`
/// key of the descriptor).
///
/// # Errors
/// [`crate::Error::NotConvertible`] for a frame, a vector format for a matrix that is not
/// `n` x 1, or an index that does not fit the index type; I/O errors.
pub fn write_npz<W: Write>(
    writer: W,
    object: &Object,
    attributes: &Map<String, Json>,
    options: &WriteOptions,
) -> Result<()> {
    let (descriptor, arrays) = encode(object, attributes, options)?;
    let mut zip = ZipWriter::new(writer);
    for (name, values) in &arrays {
        let mut header = Vec::new();
        npy::write_header(
            &mut header,
            npy::descr(values.value_type()),
            &[values.len() as u64],
        )?;
        zip.member(&format!("{name}.npy"), &[&header, &values.le_bytes()])?;
    }
    let units: Vec<u8> = descriptor
        .chars()
        .flat_map(|c| u32::from(c).to_le_bytes())
        .collect();
    let mut header = Vec::new();
    npy::write_header(
        &mut header,
        &format!("<U{}", descriptor.chars().count()),
        &[],
    )?;
    zip.member(DESCRIPTOR, &[&header, &units])?;
    zip.finish()?;
    Ok(())
}

/// [`write_npz`] into a new vector.
///
/// # Errors
/// As [`write_npz`].
pub fn to_npz(
    object: &Object,
    attributes: &Map<String, Json>,
    options: &WriteOptions,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_npz(&mut out, object, attributes, options)?;
    Ok(out)
}
