//! Binsparse in NumPy's `.npz` container (stored as `numpy.savez` writes it; deflated as
//! `numpy.savez_compressed` writes it is read too): a zip of one `.npy` array per binary array, plus
//! `binsparse.npy`, a 0-D unicode array holding the descriptor (as the Python reference
//! stores it).

use std::io::Write;

use super::{decode, encode, Array, Binsparse, WriteOptions, BINSPARSE};
use crate::npy;
use crate::zip::{members, ZipWriter};
use serde_daphne::Object;
use serde_daphne::Result;

const DESCRIPTOR: &str = "binsparse.npy";

/// Reads a Binsparse matrix from the bytes of an `.npz` archive, allowing the matrix
/// `max_alloc` bytes of memory beyond the archive's size.
pub(super) fn read(bytes: &[u8], max_alloc: u64) -> Result<Binsparse> {
    let members = members(bytes, max_alloc)?;
    let find = |name: &str| members.iter().find(|m| m.name == format!("{name}.npy"));
    let descriptor = find("binsparse").ok_or_else(|| {
        BINSPARSE.error("the archive has no binsparse.npy (not a Binsparse file)")
    })?;
    // Offsets of problems inside a member count from the archive's start where the member
    // is stored; inflated members have none to give.
    let shift = |e: serde_daphne::Error, at: Option<usize>| match at {
        Some(at) => e.relocated(Some(at as u64)),
        None => e.relocated(None),
    };
    let text = npy::parse(&descriptor.data)
        .and_then(|a| a.string())
        .map_err(|e| shift(e, descriptor.offset))?;
    decode(&text, bytes.len() as u64, max_alloc, |name| {
        let member =
            find(name).ok_or_else(|| BINSPARSE.error(format!("the archive has no {name}.npy")))?;
        let array = npy::parse(&member.data).map_err(|e| shift(e, member.offset))?;
        if array.shape.len() != 1 {
            return Err(BINSPARSE.error(format!(
                "{name}.npy has shape {:?}; Binsparse arrays are 1-D",
                array.shape
            )));
        }
        Ok(Array {
            values: array.values().map_err(|e| shift(e, member.offset))?,
            name: name.to_owned(),
            offset: member.offset.map(|at| at + array.data_offset),
            first: 0,
        })
    })
}

/// Writes `object` as a Binsparse `.npz` archive.
pub(super) fn write<W: Write>(writer: W, object: &Object, options: &WriteOptions) -> Result<()> {
    let (descriptor, arrays) = encode(object, options)?;
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
    finish(zip, &descriptor)
}

/// Adds the descriptor member (a 0-D unicode array) and the central directory.
pub(super) fn finish<W: Write>(mut zip: ZipWriter<W>, descriptor: &str) -> Result<()> {
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
