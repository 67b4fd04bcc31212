//! NumPy's `.npy` arrays: 0-, 1- and 2-D arrays of the numeric types DAPHNE has, little- or
//! big-endian, C or Fortran order on input; version 1.0, little-endian, C order on output.
//! Binsparse's NPZ container is a zip of these.
//!
//! ```
//! use dbdf::npy;
//! use serde_daphne::{Object, Values};
//!
//! let m = Object::dense(2, 2, Values::I32(vec![1, 2, 3, 4]))?;
//! let bytes = npy::to_vec(&m)?;
//! assert_eq!(npy::from_slice(&bytes)?, m);
//! # Ok::<(), serde_daphne::Error>(())
//! ```

use std::io::Write;
use std::path::Path;

use crate::input::Foreign;
use serde_daphne::Result;
pub(crate) mod stream;

pub use stream::{NpySink, NpySource};

use serde_daphne::__private::io::write_buffered;
use serde_daphne::__private::model::Object;
use serde_daphne::__private::wire::values::{decode_values, with_values, write_le};
use serde_daphne::__private::wire::{DataType, ValueType, Values};

const NPY: Foreign = Foreign("NumPy .npy");

const MAGIC: &[u8] = b"\x93NUMPY";

/// What an array's `descr` says its elements are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Descr {
    /// A number of a DAPHNE value type; `true` for big-endian.
    Number(ValueType, bool),
    /// NumPy's `bool` (`|b1`): one byte, 0 or 1.
    Bool,
    /// A fixed-length unicode string of this many UTF-32 code units; `true` for big-endian.
    Unicode(usize, bool),
}

impl Descr {
    pub(crate) fn parse(text: &str) -> Option<Descr> {
        let (order, code) = text.split_at_checked(1)?;
        let big = match order {
            "<" | "|" | "=" => false,
            ">" => true,
            _ => return None,
        };
        if let Some(n) = code.strip_prefix('U') {
            return n.parse().ok().map(|n| Descr::Unicode(n, big));
        }
        let vt = match code {
            "b1" => return Some(Descr::Bool),
            "u1" => ValueType::U8,
            "i1" => ValueType::I8,
            "u2" => ValueType::U16,
            "i2" => ValueType::I16,
            "u4" => ValueType::U32,
            "i4" => ValueType::I32,
            "u8" => ValueType::U64,
            "i8" => ValueType::I64,
            "f4" => ValueType::F32,
            "f8" => ValueType::F64,
            _ => return None,
        };
        Some(Descr::Number(vt, big))
    }

    fn item_size(&self) -> usize {
        match self {
            Descr::Number(vt, _) => vt.size(),
            Descr::Bool => 1,
            Descr::Unicode(n, _) => 4 * n,
        }
    }
}

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

/// The text between the quotes (or parentheses) after `key` in the header dict.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let rest = &header[header.find(&format!("'{key}'"))? + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    if let Some(quoted) = rest.strip_prefix('\'') {
        return Some(&quoted[..quoted.find('\'')?]);
    }
    if let Some(tuple) = rest.strip_prefix('(') {
        return Some(&tuple[..tuple.find(')')?]);
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// What a `.npy` header says: element type, shape, order and where the data starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NpyHeader {
    pub(crate) descr: Descr,
    pub(crate) shape: Vec<u64>,
    pub(crate) fortran: bool,
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
    let header = String::from_utf8_lossy(header);
    let bad = |what: &str| NPY.at(start, format!("{what} in the header {header:?}"));
    let descr = dict_value(&header, "descr")
        .and_then(Descr::parse)
        .ok_or_else(|| {
            bad("an unsupported or missing 'descr' (numbers of DAPHNE's types, bool, unicode)")
        })?;
    let fortran = match dict_value(&header, "fortran_order") {
        Some("True") => true,
        Some("False") => false,
        _ => return Err(bad("no 'fortran_order'")),
    };
    let shape: Vec<u64> = dict_value(&header, "shape")
        .ok_or_else(|| bad("no 'shape'"))?
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u64>().map_err(|_| bad("a malformed 'shape'")))
        .collect::<Result<_>>()?;
    Ok(NpyHeader {
        descr,
        shape,
        fortran,
        data_offset,
    })
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
            Descr::Unicode(..) => Err(NPY.at(
                self.data_offset,
                "an array of strings where numbers were expected",
            )),
        }
    }

    /// A 0-D unicode array (how NumPy stores a Python string) as a string.
    pub(crate) fn string(&self) -> Result<String> {
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

/// Reads a `.npy` file as a DenseMatrix: 0-D as 1 x 1, 1-D as a column, 2-D as it is.
///
/// # Errors
/// I/O errors, and as [`from_slice`].
pub fn read(path: impl AsRef<Path>) -> Result<Object> {
    stream::read_whole(path.as_ref())
}

/// The `.npy` file at `path` as a source of the pipe ([`NpySource`]).
///
/// # Errors
/// As [`read`], for a malformed header.
pub fn source(path: impl AsRef<Path>) -> Result<NpySource> {
    NpySource::open(path.as_ref())
}

/// A sink of the pipe writing a `.npy` array to `out` ([`NpySink`]).
pub fn sink(out: &mut dyn Write) -> NpySink<'_> {
    NpySink::new(out)
}

/// Reads a `.npy` array in memory as a DenseMatrix (see [`read`]).
///
/// # Errors
/// [`ErrorKind::ForeignInput`](serde_daphne::ErrorKind::ForeignInput) with the byte offset for anything malformed or other than 0-, 1-
/// or 2-D arrays of numbers; [`ErrorKind::OutOfMemory`](serde_daphne::ErrorKind::OutOfMemory).
pub fn from_slice(bytes: &[u8]) -> Result<Object> {
    let array = parse(bytes)?;
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
        serde_daphne::__private::wire::Element::into_values(out)
    })
}

/// Writes a version 1.0 header for an array of `descr` and `shape`, padded so that the data
/// starts on a 64-byte boundary.
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
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    out.write_all(MAGIC)?;
    out.write_all(&[1, 0])?;
    out.write_all(&(header.len() as u16).to_le_bytes())?;
    out.write_all(header.as_bytes())?;
    Ok(())
}

/// Writes a matrix as a `.npy` file (see [`to_writer`]), atomically.
///
/// # Errors
/// As [`to_writer`].
pub fn write(path: impl AsRef<Path>, object: &Object) -> Result<()> {
    write_buffered(path.as_ref(), |out| to_writer(out, object))
}

/// [`to_writer`] into a new vector.
///
/// # Errors
/// As [`to_writer`].
pub fn to_vec(object: &Object) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    to_writer(&mut out, object)?;
    Ok(out)
}

/// Writes a matrix as a version 1.0, C-order, 2-D `.npy` array.
///
/// # Errors
/// [`ErrorKind::NotConvertible`](serde_daphne::ErrorKind::NotConvertible) for a frame (its columns have their own types); I/O errors;
/// [`ErrorKind::OutOfMemory`](serde_daphne::ErrorKind::OutOfMemory).
pub fn to_writer<W: Write>(mut out: W, object: &Object) -> Result<()> {
    if object.data_type() == DataType::Frame {
        return Err(NPY.cannot_hold(
            "a Frame",
            "an array has one dtype; convert each column on its own",
        ));
    }
    let (rows, cols) = object.shape();
    let values = object.dense_values_ref()?;
    write_header(&mut out, descr(values.value_type()), &[rows, cols])?;
    with_values!(&*values, v => write_le(&mut out, v))?;
    Ok(())
}
