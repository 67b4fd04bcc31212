//! What the neighbouring formats' readers and writers share: errors that name the format and
//! the byte offset, and a cursor over bytes.

use std::fmt::Display;
use std::io::{self, Write};

use serde_daphne::{with_value_type, Element, Error, Result, Value, ValueType, Values};

/// A neighbouring format as its errors name it, such as `Futhark` or `NPZ (zip)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Foreign(pub(crate) &'static str);

impl Foreign {
    /// Malformed input at byte `offset` of the file.
    pub(crate) fn at(self, offset: usize, message: impl Display) -> Error {
        Error::foreign(self.0, Some(offset as u64), message)
    }

    /// Malformed input where the container has no byte offsets (HDF5, `.mtd` JSON).
    pub(crate) fn error(self, message: impl Display) -> Error {
        Error::foreign(self.0, None, message)
    }

    /// Malformed input in the file at `path`, which has no byte offsets to give.
    pub(crate) fn in_file(self, path: &std::path::Path, message: impl Display) -> Error {
        self.error(format_args!("{}: {message}", path.display()))
    }

    /// Malformed input at byte `offset` of the file named `file`.
    pub(crate) fn at_in(self, file: &str, offset: usize, message: impl Display) -> Error {
        self.at(offset, format_args!("{file}: {message}"))
    }

    /// A DAPHNE object (`what`) that this format cannot hold exactly, and why.
    pub(crate) fn cannot_hold(self, what: impl Into<String>, reason: impl Into<String>) -> Error {
        not_convertible(what, self.0, reason)
    }
}

/// `what` has no exact counterpart in `to`, for `reason`.
pub(crate) fn not_convertible(
    what: impl Into<String>,
    to: &'static str,
    reason: impl Into<String>,
) -> Error {
    Error::not_convertible(what, to, reason)
}

/// A value of a neighbouring format with no exact counterpart in DAPHNE.
pub(crate) fn not_in_daphne(what: impl Into<String>, reason: impl Into<String>) -> Error {
    not_convertible(what, "DAPHNE", reason)
}

/// Reads `dst.len()` bytes at `at` of `file` without moving a shared cursor (threads read
/// parts of one file at once).
///
/// # Errors
/// I/O errors, such as a file shorter than `at + dst.len()`.
pub(crate) fn read_exact_at(file: &std::fs::File, dst: &mut [u8], at: u64) -> Result<()> {
    #[cfg(unix)]
    std::os::unix::fs::FileExt::read_exact_at(file, dst, at)?;
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek};
        let mut file = file;
        file.seek(std::io::SeekFrom::Start(at))?;
        file.read_exact(dst)?;
    }
    Ok(())
}

/// Reads over bytes that start at byte `base` of a file, reporting file offsets (and the
/// file's name, where it has one) in its errors.
pub(crate) struct Cursor<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
    base: usize,
    format: Foreign,
    file: Option<&'a str>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`, the whole input.
    pub(crate) fn new(bytes: &'a [u8], format: Foreign) -> Self {
        Cursor {
            bytes,
            pos: 0,
            base: 0,
            format,
            file: None,
        }
    }

    /// A cursor over bytes found at `base` of the input (errors give input offsets).
    pub(crate) fn at_base(bytes: &'a [u8], base: u64, format: Foreign) -> Self {
        Cursor {
            base: base as usize,
            ..Cursor::new(bytes, format)
        }
    }

    /// The same, for bytes found at `base` in a file named `file`.
    pub(crate) fn in_file(bytes: &'a [u8], base: u64, format: Foreign, file: &'a str) -> Self {
        Cursor {
            base: base as usize,
            file: Some(file),
            ..Cursor::new(bytes, format)
        }
    }

    /// An error at `at` (a position in `bytes`).
    pub(crate) fn error(&self, at: usize, message: impl Display) -> Error {
        match self.file {
            Some(file) => self.format.at_in(file, self.base + at, message),
            None => self.format.at(self.base + at, message),
        }
    }

    /// Bytes left after the position.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes, or an error naming `what` when fewer remain.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let rest = self.remaining();
        if rest < n {
            return Err(self.error(
                self.pos,
                format!("{what} needs {n} bytes, the input has {rest} left (a truncated file?)"),
            ));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn i32_be(&mut self, what: &str) -> Result<i32> {
        self.array(what).map(i32::from_be_bytes)
    }

    pub(crate) fn i64_be(&mut self, what: &str) -> Result<i64> {
        self.array(what).map(i64::from_be_bytes)
    }

    /// A big-endian `i32` count or size, which must not be negative.
    pub(crate) fn len32_be(&mut self, what: &str) -> Result<usize> {
        let at = self.pos;
        let n = self.i32_be(what)?;
        usize::try_from(n).map_err(|_| self.error(at, format!("{what} is negative ({n})")))
    }
}

/// The little-endian `u16`, `u32` or `u64` at `at`, or `None` past the end (random access,
/// for containers read from their end, such as zip).
pub(crate) fn le_at<T: Element>(bytes: &[u8], at: usize) -> Option<T> {
    T::read_le(bytes.get(at..)?)
}

/// Writes `values` little-endian: [`Element::write_le`] with the writer first, as the
/// formats' writers spell it.
pub(crate) fn write_le<T: Element, W: Write + ?Sized>(out: &mut W, values: &[T]) -> io::Result<()> {
    T::write_le(values, out)
}

/// Little-endian `bytes` (whole values) as values of `value_type`.
pub(crate) fn decode_values(value_type: ValueType, bytes: &[u8]) -> Result<Values> {
    with_value_type!(value_type, T => T::decode_le(bytes).map(T::into_values))
}

/// How many of `values` are not zero ([`Element::count_nonzero`]).
pub(crate) fn count_nonzero<T: Element>(values: &[T]) -> usize {
    T::count_nonzero(values)
}

/// An integer array's elements (of any width and sign) as indices below `bound`: `Err` with
/// the first element out of range and its value, or `Err(None)` for floating-point values.
pub(crate) fn index_values(
    values: &Values,
    bound: u64,
) -> std::result::Result<Vec<usize>, Option<(usize, i128)>> {
    fn checked<T: Copy + Into<i128>>(
        v: &[T],
        bound: u64,
    ) -> std::result::Result<Vec<usize>, Option<(usize, i128)>> {
        v.iter()
            .enumerate()
            .map(|(k, &x)| {
                let x: i128 = x.into();
                match x >= 0 && x < i128::from(bound) {
                    true => Ok(x as usize),
                    false => Err(Some((k, x))),
                }
            })
            .collect()
    }
    match values {
        Values::U8(v) => checked(v, bound),
        Values::U16(v) => checked(v, bound),
        Values::U32(v) => checked(v, bound),
        Values::U64(v) => checked(v, bound),
        Values::I8(v) => checked(v, bound),
        Values::I16(v) => checked(v, bound),
        Values::I32(v) => checked(v, bound),
        Values::I64(v) => checked(v, bound),
        Values::F32(_) | Values::F64(_) => Err(None),
    }
}

/// The sum of two values of one type, as a cell a sparse file gives twice sums when asked
/// to ([`crate::driver::Duplicates::Sum`]): in the type, as scipy adds them; `None` where an
/// integer sum leaves the type (or the types differ).
pub(crate) fn checked_sum(a: Value, b: Value) -> Option<Value> {
    Some(match (a, b) {
        (Value::F64(a), Value::F64(b)) => Value::F64(a + b),
        (Value::F32(a), Value::F32(b)) => Value::F32(a + b),
        (Value::U64(a), Value::U64(b)) => Value::U64(a.checked_add(b)?),
        (Value::I64(a), Value::I64(b)) => Value::I64(a.checked_add(b)?),
        (Value::U32(a), Value::U32(b)) => Value::U32(a.checked_add(b)?),
        (Value::I32(a), Value::I32(b)) => Value::I32(a.checked_add(b)?),
        (Value::U16(a), Value::U16(b)) => Value::U16(a.checked_add(b)?),
        (Value::I16(a), Value::I16(b)) => Value::I16(a.checked_add(b)?),
        (Value::U8(a), Value::U8(b)) => Value::U8(a.checked_add(b)?),
        (Value::I8(a), Value::I8(b)) => Value::I8(a.checked_add(b)?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_errors_carry_file_offsets_and_names() {
        let bytes = [0u8, 0, 0, 7, 0xff];
        let mut cursor = Cursor::in_file(&bytes, 100, Foreign("SystemDS"), "part-00000");
        assert_eq!(cursor.i32_be("a count").unwrap(), 7);
        let err = cursor.i32_be("a length").unwrap_err();
        assert_eq!(err.offset(), Some(104), "{err}");
        assert!(
            err.to_string()
                .contains("part-00000: a length needs 4 bytes"),
            "{err}"
        );
        assert_eq!(le_at::<u16>(&[1, 2, 3], 1), Some(0x0302));
        assert_eq!(le_at::<u32>(&[1, 2, 3], 1), None);
    }
}
