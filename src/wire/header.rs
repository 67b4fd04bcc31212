//! The object header: version, data type, dimensions, value type(s) and frame labels.
//!
//! ```text
//! matrix: | 1 | dt | #r u64 | #c u64 | vt |
//! frame:  | 1 | dt | #r u64 | #c u64 | vt[0..#c] | (len u16, label bytes)[0..#c] |
//! ```

use super::source::Source;
use crate::codes::{DataType, ValueType};
use crate::error::ErrorDetails;
use crate::error::{Error, Result};

/// The only format version this crate reads and writes.
pub const VERSION: u8 = 1;

/// Size of the fixed part of every header: version, data type, rows, columns.
pub const FIXED_HEADER_LEN: usize = 18;

/// One column of a frame.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Column {
    /// The label (column name).
    pub label: String,
    /// The value type of the column.
    pub value_type: ValueType,
}

/// An object header.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Header {
    /// A `DenseMatrix` (data type 1).
    DenseMatrix {
        /// Number of rows.
        rows: u64,
        /// Number of columns.
        cols: u64,
        /// The matrix's value type.
        value_type: ValueType,
    },
    /// A `CSRMatrix` (data type 2).
    CsrMatrix {
        /// Number of rows.
        rows: u64,
        /// Number of columns.
        cols: u64,
        /// The matrix's value type.
        value_type: ValueType,
    },
    /// A `Frame` (data type 3): one entry per column.
    Frame {
        /// Number of rows.
        rows: u64,
        /// The columns, in order.
        columns: Vec<Column>,
    },
    /// A single value (data type 4 of DAPHNE's runtime; 1 x 1). In the spec dialect it is
    /// written as a 1 x 1 DenseMatrix.
    Scalar {
        /// The value's type.
        value_type: ValueType,
    },
}

impl Header {
    /// A matrix header of the given data type (`DenseMatrix` or `CsrMatrix`; `Scalar` ignores
    /// the dimensions).
    ///
    /// # Panics
    /// When `data_type` is `Frame`, which needs labels.
    pub fn matrix(data_type: DataType, rows: u64, cols: u64, value_type: ValueType) -> Header {
        match data_type {
            DataType::DenseMatrix => Header::DenseMatrix {
                rows,
                cols,
                value_type,
            },
            DataType::CsrMatrix => Header::CsrMatrix {
                rows,
                cols,
                value_type,
            },
            DataType::Scalar => Header::Scalar { value_type },
            DataType::Frame => panic!("Header::matrix called with DataType::Frame"),
        }
    }

    /// A frame header for labelled columns of values.
    pub(crate) fn frame_of<'a>(
        rows: u64,
        columns: impl IntoIterator<Item = (&'a str, ValueType)>,
    ) -> Header {
        Header::Frame {
            rows,
            columns: columns
                .into_iter()
                .map(|(label, value_type)| Column {
                    label: label.to_owned(),
                    value_type,
                })
                .collect(),
        }
    }

    /// The data type.
    pub fn data_type(&self) -> DataType {
        match self {
            Header::DenseMatrix { .. } => DataType::DenseMatrix,
            Header::CsrMatrix { .. } => DataType::CsrMatrix,
            Header::Frame { .. } => DataType::Frame,
            Header::Scalar { .. } => DataType::Scalar,
        }
    }

    /// Number of rows.
    #[doc(hidden)]
    pub fn rows(&self) -> u64 {
        match self {
            Header::DenseMatrix { rows, .. }
            | Header::CsrMatrix { rows, .. }
            | Header::Frame { rows, .. } => *rows,
            Header::Scalar { .. } => 1,
        }
    }

    /// Number of columns.
    #[doc(hidden)]
    pub fn cols(&self) -> u64 {
        match self {
            Header::DenseMatrix { cols, .. } | Header::CsrMatrix { cols, .. } => *cols,
            Header::Frame { columns, .. } => columns.len() as u64,
            Header::Scalar { .. } => 1,
        }
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (u64, u64) {
        (self.rows(), self.cols())
    }

    /// The value type of column `col` (the matrix's value type for matrices).
    #[doc(hidden)]
    pub fn value_type_of(&self, col: u64) -> Option<ValueType> {
        match self {
            Header::DenseMatrix { value_type, .. }
            | Header::CsrMatrix { value_type, .. }
            | Header::Scalar { value_type } => Some(*value_type),
            Header::Frame { columns, .. } => usize::try_from(col)
                .ok()
                .and_then(|c| columns.get(c))
                .map(|c| c.value_type),
        }
    }

    /// The value type of a matrix or scalar, or `None` for frames.
    #[doc(hidden)]
    pub fn matrix_value_type(&self) -> Option<ValueType> {
        match self {
            Header::DenseMatrix { value_type, .. }
            | Header::CsrMatrix { value_type, .. }
            | Header::Scalar { value_type } => Some(*value_type),
            Header::Frame { .. } => None,
        }
    }

    /// The number of bytes [`Header::encode`] writes.
    #[doc(hidden)]
    pub fn encoded_len(&self) -> usize {
        match self {
            Header::Frame { columns, .. } => {
                FIXED_HEADER_LEN + columns.iter().map(|c| 3 + c.label.len()).sum::<usize>()
            }
            _ => FIXED_HEADER_LEN + 1,
        }
    }

    /// Appends the encoded header (in the spec dialect, where a scalar is a 1 x 1
    /// DenseMatrix).
    ///
    /// # Errors
    /// [`crate::ErrorKind::LabelTooLong`] when a frame label exceeds 65,535 bytes.
    #[doc(hidden)]
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        let data_type = match self.data_type() {
            DataType::Scalar => DataType::DenseMatrix,
            other => other,
        };
        out.push(VERSION);
        out.push(data_type.code());
        out.extend_from_slice(&self.rows().to_le_bytes());
        out.extend_from_slice(&self.cols().to_le_bytes());
        match self {
            Header::DenseMatrix { value_type, .. }
            | Header::CsrMatrix { value_type, .. }
            | Header::Scalar { value_type } => {
                out.push(value_type.code());
            }
            Header::Frame { columns, .. } => {
                out.extend(columns.iter().map(|c| c.value_type.code()));
                for (index, column) in columns.iter().enumerate() {
                    let len = u16::try_from(column.label.len()).map_err(|_| {
                        Error::from(ErrorDetails::LabelTooLong {
                            column: index as u64,
                            len: column.label.len(),
                        })
                    })?;
                    out.extend_from_slice(&len.to_le_bytes());
                    out.extend_from_slice(column.label.as_bytes());
                }
            }
        }
        Ok(())
    }

    /// Reads a header.
    ///
    /// # Errors
    /// End of input, an unsupported version, unknown data or value type codes, labels that
    /// are not UTF-8.
    #[doc(hidden)]
    pub fn decode<S: Source + ?Sized>(src: &mut S) -> Result<Header> {
        let (data_type, rows, cols) = decode_fixed(src)?;
        if data_type != DataType::Frame {
            let value_type = value_type(src, "the matrix value type")?;
            return Ok(Header::matrix(data_type, rows, cols, value_type));
        }
        // Each column takes at least 3 header bytes: never allocate for more than are present.
        let count = usize::try_from(cols).map_err(|_| {
            Error::from(ErrorDetails::TooLarge {
                offset: src.offset(),
                what: "frame columns",
                bytes: u128::from(cols) * 3,
            })
        })?;
        let codes_offset = src.offset();
        let codes = src.take(count, "the frame's column value types")?.to_vec();
        let mut columns = Vec::with_capacity(count);
        for (index, &code) in codes.iter().enumerate() {
            let value_type =
                ValueType::from_code(code).ok_or(Error::from(ErrorDetails::UnknownValueType {
                    offset: codes_offset + index as u64,
                    code,
                }))?;
            columns.push(value_type);
        }
        let mut out = Vec::with_capacity(count);
        for (index, value_type) in columns.into_iter().enumerate() {
            let len = src.u16("a frame label length")?;
            let offset = src.offset();
            let bytes = src.take(usize::from(len), "a frame label")?;
            let label = std::str::from_utf8(bytes)
                .map_err(|_| {
                    Error::from(ErrorDetails::InvalidLabel {
                        offset,
                        column: index as u64,
                    })
                })?
                .to_owned();
            out.push(Column { label, value_type });
        }
        Ok(Header::Frame { rows, columns: out })
    }
}

/// Reads the 18 fixed bytes: version, data type, rows, columns.
pub(crate) fn decode_fixed<S: Source + ?Sized>(src: &mut S) -> Result<(DataType, u64, u64)> {
    let offset = src.offset();
    let version = src.u8("the format version")?;
    if version != VERSION {
        return Err(ErrorDetails::UnsupportedVersion { offset, version }.into());
    }
    let code = src.u8("the data type")?;
    let data_type =
        DataType::from_code(code).ok_or(Error::from(ErrorDetails::UnknownDataType {
            offset: offset + 1,
            code,
        }))?;
    let rows = src.u64("the number of rows")?;
    let cols = src.u64("the number of columns")?;
    Ok((data_type, rows, cols))
}

/// Reads a value type code.
pub(crate) fn value_type<S: Source + ?Sized>(src: &mut S, what: &'static str) -> Result<ValueType> {
    let offset = src.offset();
    let code = src.u8(what)?;
    ValueType::from_code(code).ok_or(Error::from(ErrorDetails::UnknownValueType { offset, code }))
}

/// The data type and shape of the next object, without consuming it; `None` at end of input.
///
/// # Errors
/// A truncated or invalid fixed header.
pub(crate) fn peek_shape<S: Source + ?Sized>(src: &mut S) -> Result<Option<(DataType, u64, u64)>> {
    let offset = src.offset();
    let bytes = src.peek(FIXED_HEADER_LEN)?;
    if bytes.is_empty() {
        return Ok(None);
    }
    if bytes.len() >= 2 && bytes[0] == VERSION && bytes[1] == DataType::Scalar.code() {
        // The runtime's scalar: its dimensions are undefined bytes.
        return Ok(Some((DataType::Scalar, 1, 1)));
    }
    decode_fixed(&mut super::source::SliceSource::with_base(bytes, offset)).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorDetails;
    use crate::wire::source::SliceSource;

    #[test]
    fn matrix_header_layout_matches_the_spec_diagram() {
        // addr 0: 1 | 1: dt | 2..9: #r | 10..17: #c | 18: vt
        let h = Header::CsrMatrix {
            rows: 3,
            cols: 0x0102,
            value_type: ValueType::F32,
        };
        let mut out = Vec::new();
        h.encode(&mut out).unwrap();
        assert_eq!(
            out,
            [1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 9]
        );
        assert_eq!(Header::decode(&mut SliceSource::new(&out)).unwrap(), h);
    }

    #[test]
    fn frame_header_layout_matches_the_spec_diagram() {
        // vt[0..#c], then (len u16, lbl) per column.
        let h = Header::Frame {
            rows: 2,
            columns: vec![
                Column {
                    label: "id".into(),
                    value_type: ValueType::I64,
                },
                Column {
                    label: "x".into(),
                    value_type: ValueType::F64,
                },
            ],
        };
        let mut out = Vec::new();
        h.encode(&mut out).unwrap();
        let mut expected = vec![1, 3, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
        expected.extend_from_slice(&[8, 10, 2, 0, b'i', b'd', 1, 0, b'x']);
        assert_eq!(out, expected);
        assert_eq!(out.len(), h.encoded_len());
        assert_eq!(Header::decode(&mut SliceSource::new(&out)).unwrap(), h);
    }

    #[test]
    fn bad_codes_are_reported_at_their_offset() {
        let mut bytes = vec![1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 11];
        match Header::decode(&mut SliceSource::new(&bytes)).map_err(Error::into_details) {
            Err(ErrorDetails::UnknownValueType {
                offset: 18,
                code: 11,
            }) => {}
            other => panic!("{other:?}"),
        }
        bytes[1] = 0;
        let got = Header::decode(&mut SliceSource::new(&bytes));
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::UnknownDataType { offset: 1, code: 0 })
            ),
            "{got:?}"
        );
        bytes[0] = 2;
        let got = Header::decode(&mut SliceSource::new(&bytes));
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::UnsupportedVersion {
                    offset: 0,
                    version: 2
                })
            ),
            "{got:?}"
        );
    }
}
