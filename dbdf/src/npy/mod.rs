//! NumPy's `.npy` arrays: 0-, 1- and 2-D arrays of the numeric types DAPHNE has, little- or
//! big-endian, C or Fortran order on input; version 1.0, little-endian, C order on output.
//! Binsparse's NPZ container is a zip of these.
//!
//! Read and written through [`crate::convert`], as every format:
//!
//! ```
//! use dbdf::convert::{self, ConvertOptions, Format};
//! use serde_daphne::{Object, Values};
//!
//! let npy: Format = "npy".parse()?;
//! let options = ConvertOptions::default();
//! let m = Object::dense(2, 2, Values::I32(vec![1, 2, 3, 4]))?;
//! let bytes = convert::to_vec(&[m.clone()], npy, &options)?;
//! assert_eq!(convert::from_slice(&bytes, npy, &options)?, [m]);
//! # Ok::<(), serde_daphne::Error>(())
//! ```

pub(crate) use driver::Npy;
use std::io::Write;
use std::path::Path;

use crate::input::Foreign;
use serde_daphne::Result;
mod driver;
mod header;
mod records;
pub(crate) mod stream;

pub(crate) use header::{Descr, NpyHeader, Record};

pub(crate) use stream::{band_of_bytes, object_header};
pub(crate) use stream::{NpySink, NpySource};

use crate::input::decode_values;
use crate::input::write_le;
use serde_daphne::with_values;
use serde_daphne::Object;
use serde_daphne::ValueType;
use serde_daphne::Values;

const NPY: Foreign = Foreign("NumPy .npy");

const MAGIC: &[u8] = b"\x93NUMPY";

/// The `descr` this crate writes for a value type.
pub(crate) fn descr(value_type: ValueType) -> &'static str {
    match value_type {
        ValueType::U8 => "|u1",
        ValueType::I8 => "|i1",
        ValueType::U16 => "<u2",
        ValueType::I16 => "<i2",
        ValueType::U32 => "<u4",
        ValueType::I32 => "<i4",
        ValueType::U64 => "<u8",
        ValueType::I64 => "<i8",
        ValueType::F32 => "<f4",
        ValueType::F64 => "<f8",
    }
}

/// A parsed array that still borrows its data.
pub(crate) struct Array<'a> {
    pub(crate) descr: Descr,
    pub(crate) shape: Vec<u64>,
    pub(crate) fortran: bool,
    pub(crate) data: &'a [u8],
    /// Offset of `data` in the bytes parsed.
    pub(crate) data_offset: usize,
}

impl NpyHeader {
    /// Bytes of data the shape needs, if that fits a `u128`.
    pub(crate) fn data_len(&self) -> Option<u128> {
        self.shape
            .iter()
            .try_fold(self.descr.item_size() as u128, |acc, &d| {
                acc.checked_mul(u128::from(d))
            })
    }

    /// The array as a matrix: 0-D as 1 x 1, 1-D as a column.
    pub(crate) fn matrix_shape(&self) -> Result<(u64, u64)> {
        match self.shape[..] {
            [] => Ok((1, 1)),
            [n] => Ok((n, 1)),
            [r, c] => Ok((r, c)),
            _ => Err(NPY.at(
                0,
                format!(
                    "{}-D arrays have no DAPHNE counterpart (1-D and 2-D only)",
                    self.shape.len()
                ),
            )),
        }
    }

    /// Checks that `available` bytes of data are exactly what the shape needs.
    pub(crate) fn check_data_len(&self, available: u64) -> Result<()> {
        let expected = self.data_len();
        if expected != Some(u128::from(available)) {
            return Err(NPY.at(
                self.data_offset,
                format!(
                    "an array of shape {:?} and descr {:?} needs {} bytes of data, there are \
                     {available}",
                    self.shape,
                    self.descr,
                    expected.map_or("more".to_string(), |e| e.to_string()),
                ),
            ));
        }
        Ok(())
    }
}

/// Bytes that hold the header's length field, at most.
pub(crate) const PREAMBLE_LEN: usize = 12;

/// The whole header's length (preamble included) from the first [`PREAMBLE_LEN`] bytes.
pub(crate) fn header_len(bytes: &[u8]) -> Result<usize> {
    if !bytes.starts_with(MAGIC) || bytes.len() < 10 {
        return Err(NPY.at(0, "not a .npy array (no \\x93NUMPY magic)"));
    }
    match bytes[6] {
        1 => Ok(10 + usize::from(u16::from_le_bytes([bytes[8], bytes[9]]))),
        2 | 3 if bytes.len() >= 12 => {
            Ok(12 + u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize)
        }
        v => Err(NPY.at(6, format!("unsupported .npy version {v}"))),
    }
}

/// Parses the header at the start of `bytes` (which need hold no data).
pub(crate) fn parse_header(bytes: &[u8]) -> Result<NpyHeader> {
    let data_offset = header_len(bytes)?;
    let start = if bytes[6] == 1 { 10 } else { 12 };
    let header = bytes
        .get(start..data_offset)
        .ok_or_else(|| NPY.at(start, "the header runs past the end of the array"))?;
    // Versions 1 and 2 are Latin-1, version 3 UTF-8.
    let text: String = match bytes[6] {
        3 => String::from_utf8_lossy(header).into_owned(),
        _ => header.iter().map(|&b| char::from(b)).collect(),
    };
    header::parse_dict(&text, start, data_offset)
}

/// Parses the header and checks that the data is exactly as long as the shape says.
pub(crate) fn parse(bytes: &[u8]) -> Result<Array<'_>> {
    let header = parse_header(bytes)?;
    let data = &bytes[header.data_offset..];
    header.check_data_len(data.len() as u64)?;
    Ok(Array {
        descr: header.descr,
        shape: header.shape,
        fortran: header.fortran,
        data,
        data_offset: header.data_offset,
    })
}

impl Array<'_> {
    /// The elements as values, in storage order (bool as `u8`, checked to be 0 or 1).
    pub(crate) fn values(&self) -> Result<Values> {
        match self.descr {
            Descr::Number(vt, big) => {
                if !big || vt.size() == 1 {
                    return decode_values(vt, self.data);
                }
                let mut swapped = self.data.to_vec();
                swapped
                    .chunks_exact_mut(vt.size())
                    .for_each(<[u8]>::reverse);
                decode_values(vt, &swapped)
            }
            Descr::Bool => {
                if let Some(k) = self.data.iter().position(|&b| b > 1) {
                    return Err(NPY.at(
                        self.data_offset + k,
                        format!("the bool value {} is neither 0 nor 1", self.data[k]),
                    ));
                }
                Ok(Values::U8(self.data.to_vec()))
            }
            Descr::Unicode(..) | Descr::Bytes(..) => Err(NPY.at(
                self.data_offset,
                "an array of strings where numbers were expected",
            )),
            Descr::Record(_) => Err(NPY.at(
                self.data_offset,
                "a record array where numbers were expected",
            )),
        }
    }

    /// A 0-D unicode or byte string array (how NumPy stores a Python string) as a string.
    pub(crate) fn string(&self) -> Result<String> {
        if let Descr::Bytes(_) = self.descr {
            let end = self
                .data
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(self.data.len());
            return String::from_utf8(self.data[..end].to_vec())
                .map_err(|_| NPY.at(self.data_offset, "a byte string that is not UTF-8"));
        }
        let Descr::Unicode(_, big) = self.descr else {
            return Err(NPY.at(self.data_offset, "a number where a string was expected"));
        };
        let mut text = String::new();
        for (k, unit) in self.data.chunks_exact(4).enumerate() {
            let unit: [u8; 4] = unit.try_into().expect("four bytes");
            let code = if big {
                u32::from_be_bytes(unit)
            } else {
                u32::from_le_bytes(unit)
            };
            if code == 0 {
                break;
            }
            text.push(char::from_u32(code).ok_or_else(|| {
                NPY.at(
                    self.data_offset + 4 * k,
                    format!("{code:#x} is not a character"),
                )
            })?);
        }
        Ok(text)
    }
}

/// The `.npy` file at `path` as a source of the pipe (a boxed [`Source`](crate::pipe::Source)).
///
/// # Errors
/// I/O errors; a malformed header.
pub(crate) fn source(path: impl AsRef<Path>) -> Result<Box<dyn crate::pipe::Source>> {
    Ok(Box::new(NpySource::open(path.as_ref())?))
}

/// A sink of the pipe writing a `.npy` array to `out` (a boxed [`Sink`](crate::pipe::Sink)).
pub(crate) fn sink(out: &mut dyn Write) -> Box<dyn crate::pipe::Sink + '_> {
    Box::new(NpySink::new(out))
}

/// A `.npy` array in memory (a member of a `.npz` archive) as a DenseMatrix: 0-D as 1 x 1,
/// 1-D as a column, 2-D as it is; a record array as a frame.
///
/// # Errors
/// [`ErrorKind::ForeignInput`](serde_daphne::ErrorKind::ForeignInput) with the byte offset for anything malformed or other than 0-, 1-
/// or 2-D arrays of numbers; [`ErrorKind::OutOfMemory`](serde_daphne::ErrorKind::OutOfMemory).
pub(crate) fn from_slice(bytes: &[u8]) -> Result<Object> {
    let array = parse(bytes)?;
    if let Descr::Record(record) = &array.descr {
        let header = NpyHeader {
            descr: array.descr.clone(),
            shape: array.shape.clone(),
            fortran: array.fortran,
            data_offset: array.data_offset,
        };
        stream::object_header(&header)?;
        let fields = 0..record.fields.len();
        let columns =
            records::decode_columns(array.data, record, fields, array.data_offset as u64)?;
        let labelled = record.fields.iter().map(|f| f.name.clone()).zip(columns);
        return Object::frame(labelled.collect()).map_err(|e| NPY.at(0, e.to_string()));
    }
    let (rows, cols) = match array.shape[..] {
        [] => (1, 1),
        [n] => (n, 1),
        [r, c] => (r, c),
        _ => {
            return Err(NPY.at(
                0,
                format!(
                    "{}-D arrays have no DAPHNE counterpart (1-D and 2-D only)",
                    array.shape.len()
                ),
            ))
        }
    };
    let mut values = array.values()?;
    if array.fortran && rows > 1 && cols > 1 {
        values = transpose(&values, cols as usize, rows as usize);
    }
    Object::dense(rows, cols, values).map_err(|e| NPY.at(0, e.to_string()))
}

/// The transpose of a row-major `rows` x `cols` matrix.
pub(crate) fn transpose(values: &Values, rows: usize, cols: usize) -> Values {
    with_values!(values, v => {
        let mut out = Vec::with_capacity(v.len());
        for c in 0..cols {
            out.extend((0..rows).map(|r| v[r * cols + c]));
        }
        serde_daphne::Element::into_values(out)
    })
}

/// Writes a header for an array of `descr` (a type string, or a record's field list) and
/// `shape`, padded so that the data starts on a 64-byte boundary: version 1.0 as numpy
/// writes it, 2.0 for a header over 64 KiB, 3.0 for labels beyond Latin-1 (as numpy does).
pub(crate) fn write_header<W: Write + ?Sized>(
    out: &mut W,
    descr: &str,
    shape: &[u64],
) -> Result<()> {
    let dims = match shape {
        [n] => format!("{n},"),
        _ => shape
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    };
    let descr = match descr.starts_with('[') {
        true => descr.to_string(),
        false => format!("'{descr}'"),
    };
    let mut header = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': ({dims}), }}");
    // numpy leaves room for the first dimension to grow to 21 digits (appending in place).
    let first = shape.first().map_or(0, |d| d.to_string().len());
    if !shape.is_empty() {
        header.push_str(&" ".repeat(21usize.saturating_sub(first)));
    }
    let latin1 = header.chars().all(|c| u32::from(c) < 256);
    let (version, preamble) = match (latin1, header.len() + 75 <= usize::from(u16::MAX)) {
        (true, true) => (1, 10),
        (true, false) => (2, 12),
        (false, _) => (3, 12),
    };
    let bytes_of = |text: &str| -> Vec<u8> {
        match version {
            3 => text.as_bytes().to_vec(),
            _ => text.chars().map(|c| c as u8).collect(),
        }
    };
    while (preamble + bytes_of(&header).len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let header = bytes_of(&header);
    out.write_all(MAGIC)?;
    out.write_all(&[version, 0])?;
    match version {
        1 => out.write_all(&(header.len() as u16).to_le_bytes())?,
        _ => out.write_all(&(header.len() as u32).to_le_bytes())?,
    }
    out.write_all(&header)?;
    Ok(())
}

/// [`to_writer`] into a new vector.
///
/// # Errors
/// As [`to_writer`].
pub(crate) fn to_vec(object: &Object) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    to_writer(&mut out, object)?;
    Ok(out)
}

/// Writes a matrix as a version 1.0, C-order, 2-D `.npy` array; a frame as a 1-D record
/// array (a field per column, its label the name; packed, little-endian).
///
/// # Errors
/// I/O errors; [`ErrorKind::OutOfMemory`](serde_daphne::ErrorKind::OutOfMemory).
pub(crate) fn to_writer<W: Write>(mut out: W, object: &Object) -> Result<()> {
    if let serde_daphne::Header::Frame { rows, columns } = object.header() {
        write_header(&mut out, &records::frame_descr(columns), &[*rows])?;
        let mut bytes = Vec::new();
        records::encode_records(&object.columns()?, &mut bytes);
        out.write_all(&bytes)?;
        return Ok(());
    }
    let (rows, cols) = object.shape();
    let values = object.dense_values_ref()?;
    write_header(&mut out, descr(values.value_type()), &[rows, cols])?;
    with_values!(&*values, v => write_le(&mut out, v))?;
    Ok(())
}
