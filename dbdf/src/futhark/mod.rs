//! Futhark's binary data format: the values a compiled Futhark program reads from standard
//! input and writes with `-b` (`futhark dataset --binary`).
//!
//! Each value is `b`, the version byte 2, the rank (one byte), a four-character type
//! (`"  i8"` ... `" f64"`, `"bool"`), one `u64` per dimension and the values in row-major
//! order, all little-endian; a file may hold several values back to back, with ASCII
//! whitespace before each. Mapping to DAPHNE (see the README's decisions):
//!
//! - a rank-0 value is a 1 x 1 DenseMatrix, a 1-D array of `n` values an `n` x 1 column, a 2-D
//!   array a DenseMatrix; ranks above 2 and the text format are refused;
//! - `bool` is read as `u8` (0 or 1, anything else is refused), `f16` is widened to `f32`
//!   (exactly); writing either needs [`WriteOptions::bools`] / [`WriteOptions::f16`].
//!
//! ```
//! use dbdf::convert::{self, ConvertOptions, Format};
//! use serde_daphne::{Object, Values};
//!
//! let futhark: Format = "futhark".parse()?;
//! let column = Object::dense(3, 1, Values::F64(vec![1.5, -2.0, 0.25]))?;
//! let bytes = convert::to_vec(&[column.clone()], futhark, &ConvertOptions::default())?;
//! assert_eq!(&bytes[..7], b"b\x02\x01 f64"); // a 1-D array of f64
//! assert_eq!(convert::from_slice(&bytes, futhark, &ConvertOptions::default())?, [column]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Whole objects are read and written through the pipe ([`crate::convert::read`],
//! [`crate::convert::write`] and their in-memory twins); this module's options choose how.

mod driver;
mod half;
mod pipe;

pub(crate) use driver::Futhark;
use std::io::Write;
use std::path::Path;

use crate::input::decode_values;
use crate::input::write_le;
use crate::input::{Cursor, Foreign};
use serde_daphne::with_values;
use serde_daphne::ValueType;
use serde_daphne::Values;
use serde_daphne::{Error, Result};

use half::{f16_to_f32, f32_to_f16};
pub(crate) use pipe::{FutharkSink, FutharkSource};

const FUTHARK: Foreign = Foreign("Futhark");
/// The only version of the binary format there is.
const VERSION: u8 = 2;

/// How [`crate::convert::write`] maps DAPHNE objects onto Futhark values. Plain data, as every format's
/// options: set the fields that differ from [`WriteOptions::default`] (1 x 1 objects as
/// scalars, `n` x 1 as 1-D arrays, `u8` as `u8`, `f32` as `f32`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Writes every object as a 2-D array, also 1 x 1 and `n` x 1 ones.
    pub matrices: bool,
    /// Writes `u8` objects as Futhark `bool` (every value must be 0 or 1).
    pub bools: bool,
    /// Writes `f32` objects as Futhark `f16` (every value must be exact in `f16`).
    pub f16: bool,
}

/// A Futhark element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Plain(ValueType),
    Bool,
    F16,
}

impl Kind {
    fn from_name(name: &[u8; 4]) -> Option<Kind> {
        Some(match name {
            b"  i8" => Kind::Plain(ValueType::I8),
            b" i16" => Kind::Plain(ValueType::I16),
            b" i32" => Kind::Plain(ValueType::I32),
            b" i64" => Kind::Plain(ValueType::I64),
            b"  u8" => Kind::Plain(ValueType::U8),
            b" u16" => Kind::Plain(ValueType::U16),
            b" u32" => Kind::Plain(ValueType::U32),
            b" u64" => Kind::Plain(ValueType::U64),
            b" f32" => Kind::Plain(ValueType::F32),
            b" f64" => Kind::Plain(ValueType::F64),
            b" f16" => Kind::F16,
            b"bool" => Kind::Bool,
            _ => return None,
        })
    }

    fn name(self) -> &'static [u8; 4] {
        match self {
            Kind::Plain(ValueType::I8) => b"  i8",
            Kind::Plain(ValueType::I16) => b" i16",
            Kind::Plain(ValueType::I32) => b" i32",
            Kind::Plain(ValueType::I64) => b" i64",
            Kind::Plain(ValueType::U8) => b"  u8",
            Kind::Plain(ValueType::U16) => b" u16",
            Kind::Plain(ValueType::U32) => b" u32",
            Kind::Plain(ValueType::U64) => b" u64",
            Kind::Plain(ValueType::F32) => b" f32",
            Kind::Plain(ValueType::F64) => b" f64",
            Kind::F16 => b" f16",
            Kind::Bool => b"bool",
        }
    }

    fn size(self) -> usize {
        match self {
            Kind::Plain(vt) => vt.size(),
            Kind::Bool => 1,
            Kind::F16 => 2,
        }
    }

    /// The DAPHNE value type values of this kind are read as.
    fn value_type(self) -> ValueType {
        match self {
            Kind::Plain(vt) => vt,
            Kind::Bool => ValueType::U8,
            Kind::F16 => ValueType::F32,
        }
    }

    /// The values in `data` (found at byte `data_at` of the input): bools checked, `f16`
    /// widened.
    fn decode(self, data: &[u8], data_at: u64) -> Result<Values> {
        Ok(match self {
            Kind::Plain(vt) => decode_values(vt, data)?,
            Kind::Bool => {
                if let Some(k) = data.iter().position(|&b| b > 1) {
                    return Err(FUTHARK.at(
                        data_at as usize + k,
                        format!("the bool value {} is neither 0 nor 1", data[k]),
                    ));
                }
                Values::U8(data.to_vec())
            }
            Kind::F16 => Values::F32(
                data.chunks_exact(2)
                    .map(|h| f16_to_f32(u16::from_le_bytes([h[0], h[1]])))
                    .collect(),
            ),
        })
    }

    /// The kind `options` write values of `value_type` as.
    fn of(value_type: ValueType, options: &WriteOptions) -> Kind {
        match value_type {
            ValueType::U8 if options.bools => Kind::Bool,
            ValueType::F32 if options.f16 => Kind::F16,
            vt => Kind::Plain(vt),
        }
    }

    /// Writes `values` (of [`Kind::value_type`]) as this kind.
    ///
    /// # Errors
    /// A value the kind cannot hold; I/O errors.
    fn write(self, writer: &mut dyn Write, values: &Values) -> Result<()> {
        match (self, values) {
            (Kind::Bool, Values::U8(v)) => {
                if let Some(x) = v.iter().find(|&&x| x > 1) {
                    return Err(FUTHARK.cannot_hold(
                        format!("the u8 value {x}"),
                        "only 0 and 1 are bools; write without the bool option",
                    ));
                }
                writer.write_all(v)?;
            }
            (Kind::F16, Values::F32(v)) => {
                let mut half = Vec::with_capacity(2 * v.len());
                for &x in v {
                    let h = f32_to_f16(x).ok_or_else(|| {
                        FUTHARK.cannot_hold(
                            format!("the f32 value {x:?}"),
                            "f16 cannot hold it exactly; write without the f16 option",
                        )
                    })?;
                    half.extend_from_slice(&h.to_le_bytes());
                }
                writer.write_all(&half)?;
            }
            _ => with_values!(values, v => write_le(writer, v))?,
        }
        Ok(())
    }

    /// The header of a value of this kind holding a `rows x cols` matrix.
    fn head(self, (rows, cols): (u64, u64), options: &WriteOptions) -> Vec<u8> {
        let shape: Vec<u64> = match (rows, cols) {
            _ if options.matrices => vec![rows, cols],
            (1, 1) => vec![],
            (n, 1) => vec![n],
            (r, c) => vec![r, c],
        };
        let mut head = vec![b'b', VERSION, shape.len() as u8];
        head.extend_from_slice(self.name());
        shape
            .iter()
            .for_each(|d| head.extend_from_slice(&d.to_le_bytes()));
        head
    }
}

/// A value's header: its element type, its shape as a matrix, and its values' bytes.
#[derive(Clone, Copy, Debug)]
struct Head {
    kind: Kind,
    rows: u64,
    cols: u64,
    len: u64,
}

impl Head {
    /// Reads the header at the cursor (its `b`), checking that the values fit in the bytes
    /// `left(at)` says the input has from position `at` on.
    fn read(cursor: &mut Cursor<'_>, left: impl Fn(usize) -> u64) -> Result<Head> {
        let start = cursor.pos;
        let head = cursor.take(7, "a value's header")?;
        if head[1] != VERSION {
            return Err(cursor.error(
                start + 1,
                format!(
                    "binary format version {} (only version {VERSION} exists)",
                    head[1]
                ),
            ));
        }
        let rank = head[2];
        let name: [u8; 4] = head[3..7].try_into().expect("four bytes");
        let kind = Kind::from_name(&name).ok_or_else(|| {
            cursor.error(
                start + 3,
                format!(
                    "unknown type {:?} (i8..i64, u8..u64, f16, f32, f64, bool)",
                    String::from_utf8_lossy(&name)
                ),
            )
        })?;
        let dims = cursor.take(8 * usize::from(rank), "the dimensions")?;
        let shape: Vec<u64> = dims
            .chunks_exact(8)
            .map(|d| u64::from_le_bytes(d.try_into().expect("eight bytes")))
            .collect();
        let (rows, cols) = match shape[..] {
            [] => (1, 1),
            [n] => (n, 1),
            [r, c] => (r, c),
            _ => {
                return Err(cursor.error(
                    start + 2,
                    format!(
                        "a rank-{rank} array of shape {shape:?} has no DAPHNE counterpart \
                         (matrices are 2-D)"
                    ),
                ))
            }
        };
        let available = left(cursor.pos);
        let len = shape
            .iter()
            .try_fold(kind.size() as u64, |acc, &d| acc.checked_mul(d))
            .filter(|&len| len <= available)
            .ok_or_else(|| {
                cursor.error(
                    cursor.pos,
                    format!(
                        "the shape {shape:?} of {} needs more bytes than the input has left \
                         ({available})",
                        String::from_utf8_lossy(&name).trim(),
                    ),
                )
            })?;
        Ok(Head {
            kind,
            rows,
            cols,
            len,
        })
    }
}

/// The Futhark binary data file at `path` as a source of the pipe (a boxed [`Source`](crate::pipe::Source)).
///
/// # Errors
/// [`serde_daphne::ErrorKind::ForeignInput`] with the byte offset for a text-format value,
/// another version, an unknown type, a rank above 2 or a file that ends early; I/O errors.
pub(crate) fn source(path: impl AsRef<Path>) -> Result<Box<dyn crate::pipe::Source>> {
    Ok(Box::new(FutharkSource::open(path.as_ref())?))
}

/// A sink of the pipe writing Futhark binary values to `out` (a boxed [`Sink`](crate::pipe::Sink)).
pub(crate) fn sink<'w>(
    out: &'w mut dyn Write,
    options: &WriteOptions,
) -> Box<dyn crate::pipe::Sink + 'w> {
    Box::new(FutharkSink::new(out, options))
}

/// Frames have no Futhark form.
fn refused_frame() -> Error {
    FUTHARK.cannot_hold(
        "a Frame",
        "Futhark values are arrays of one type; convert each column on its own",
    )
}

/// `error`, naming object `index` where it is a value the format cannot hold.
fn in_object(error: Error, index: usize) -> Error {
    error.with_context(format_args!("object {index}"))
}
