//! The format's vocabulary, below every other layer: the one-byte codes of data types, value
//! types and block types, and [`Value`], one value of any value type. The rules for converting
//! values live in `wire/element.rs`; this file only names things.

use std::fmt;

/// The kind of object a header describes (the header's `dt` byte).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum DataType {
    /// A dense matrix (code 1).
    DenseMatrix,
    /// A compressed-sparse-row matrix (code 2).
    CsrMatrix,
    /// A frame: columns with their own value types and labels (code 3).
    Frame,
    /// A single value (code 4): written only by DAPHNE's runtime (`Value_t`); the spec has
    /// no scalar type and this crate writes scalars as 1 x 1 DenseMatrix objects there.
    Scalar,
}

impl DataType {
    /// The code written in the header.
    #[doc(hidden)]
    pub const fn code(self) -> u8 {
        match self {
            DataType::DenseMatrix => 1,
            DataType::CsrMatrix => 2,
            DataType::Frame => 3,
            DataType::Scalar => 4,
        }
    }

    /// The data type for a header code of the spec, or `None` for a reserved or unknown code
    /// (4, the runtime's scalar, is not in the spec).
    #[doc(hidden)]
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(DataType::DenseMatrix),
            2 => Some(DataType::CsrMatrix),
            3 => Some(DataType::Frame),
            _ => None,
        }
    }

    /// Whether this is one of the two matrix data types.
    pub const fn is_matrix(self) -> bool {
        matches!(self, DataType::DenseMatrix | DataType::CsrMatrix)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DataType::DenseMatrix => "DenseMatrix",
            DataType::CsrMatrix => "CSRMatrix",
            DataType::Frame => "Frame",
            DataType::Scalar => "Scalar",
        })
    }
}

/// The type of the values of a matrix, a frame column or a block.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ValueType {
    /// `uint8_t` (code 1).
    U8,
    /// `uint16_t` (code 2).
    U16,
    /// `uint32_t` (code 3).
    U32,
    /// `uint64_t` (code 4).
    U64,
    /// `int8_t` (code 5).
    I8,
    /// `int16_t` (code 6).
    I16,
    /// `int32_t` (code 7).
    I32,
    /// `int64_t` (code 8).
    I64,
    /// `float` (code 9).
    F32,
    /// `double` (code 10).
    F64,
}

impl ValueType {
    /// All ten value types, in code order.
    pub const ALL: [ValueType; 10] = [
        ValueType::U8,
        ValueType::U16,
        ValueType::U32,
        ValueType::U64,
        ValueType::I8,
        ValueType::I16,
        ValueType::I32,
        ValueType::I64,
        ValueType::F32,
        ValueType::F64,
    ];

    /// The code the spec assigns to this value type (1 to 10).
    #[doc(hidden)]
    pub const fn code(self) -> u8 {
        match self {
            ValueType::U8 => 1,
            ValueType::U16 => 2,
            ValueType::U32 => 3,
            ValueType::U64 => 4,
            ValueType::I8 => 5,
            ValueType::I16 => 6,
            ValueType::I32 => 7,
            ValueType::I64 => 8,
            ValueType::F32 => 9,
            ValueType::F64 => 10,
        }
    }

    /// The value type for a spec code, or `None` for 0 (reserved) and codes above 10.
    #[doc(hidden)]
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            1..=10 => Some(Self::ALL[code as usize - 1]),
            _ => None,
        }
    }

    /// The size of one value in bytes (`S` in the spec's diagrams).
    pub const fn size(self) -> usize {
        match self {
            ValueType::U8 | ValueType::I8 => 1,
            ValueType::U16 | ValueType::I16 => 2,
            ValueType::U32 | ValueType::I32 | ValueType::F32 => 4,
            ValueType::U64 | ValueType::I64 | ValueType::F64 => 8,
        }
    }

    /// Whether values of this type are floating point.
    pub const fn is_float(self) -> bool {
        matches!(self, ValueType::F32 | ValueType::F64)
    }

    /// Whether values of this type are signed integers.
    #[doc(hidden)]
    pub const fn is_signed_int(self) -> bool {
        matches!(
            self,
            ValueType::I8 | ValueType::I16 | ValueType::I32 | ValueType::I64
        )
    }

    /// The Rust name of the type (`"f64"`, `"u8"`, ...).
    #[doc(hidden)]
    pub const fn name(self) -> &'static str {
        match self {
            ValueType::U8 => "u8",
            ValueType::U16 => "u16",
            ValueType::U32 => "u32",
            ValueType::U64 => "u64",
            ValueType::I8 => "i8",
            ValueType::I16 => "i16",
            ValueType::I32 => "i32",
            ValueType::I64 => "i64",
            ValueType::F32 => "f32",
            ValueType::F64 => "f64",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a block's values are laid out (the block header's `bt` byte).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum BlockType {
    /// All values are zero; nothing follows the block header (code 0).
    Empty,
    /// Every value, row-major (code 1).
    Dense,
    /// Compressed sparse row: per row a count, then (column, value) pairs (code 2).
    Sparse,
    /// Coordinate list: (row, value) pairs for one column, (row, column, value) triples otherwise (code 3).
    UltraSparse,
}

impl BlockType {
    /// The code written in the block header.
    #[doc(hidden)]
    pub const fn code(self) -> u8 {
        match self {
            BlockType::Empty => 0,
            BlockType::Dense => 1,
            BlockType::Sparse => 2,
            BlockType::UltraSparse => 3,
        }
    }

    /// The block type for a code, or `None` for an unknown code.
    #[doc(hidden)]
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(BlockType::Empty),
            1 => Some(BlockType::Dense),
            2 => Some(BlockType::Sparse),
            3 => Some(BlockType::UltraSparse),
            _ => None,
        }
    }
}

impl fmt::Display for BlockType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BlockType::Empty => "empty",
            BlockType::Dense => "dense",
            BlockType::Sparse => "sparse",
            BlockType::UltraSparse => "ultra-sparse",
        })
    }
}

/// One value of any of the ten value types.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
#[allow(missing_docs)]
pub enum Value {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

/// Calls `$body` with `$x` bound to the value inside any `Value` variant.
macro_rules! with_value {
    ($value:expr, $x:ident => $body:expr) => {
        match $value {
            Value::U8($x) => $body,
            Value::U16($x) => $body,
            Value::U32($x) => $body,
            Value::U64($x) => $body,
            Value::I8($x) => $body,
            Value::I16($x) => $body,
            Value::I32($x) => $body,
            Value::I64($x) => $body,
            Value::F32($x) => $body,
            Value::F64($x) => $body,
        }
    };
}
pub(crate) use with_value;

impl Value {
    /// The value type of this value.
    pub fn value_type(self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::U16(_) => ValueType::U16,
            Value::U32(_) => ValueType::U32,
            Value::U64(_) => ValueType::U64,
            Value::I8(_) => ValueType::I8,
            Value::I16(_) => ValueType::I16,
            Value::I32(_) => ValueType::I32,
            Value::I64(_) => ValueType::I64,
            Value::F32(_) => ValueType::F32,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// The zero of a value type.
    #[doc(hidden)]
    pub fn zero(value_type: ValueType) -> Value {
        match value_type {
            ValueType::U8 => Value::U8(0),
            ValueType::U16 => Value::U16(0),
            ValueType::U32 => Value::U32(0),
            ValueType::U64 => Value::U64(0),
            ValueType::I8 => Value::I8(0),
            ValueType::I16 => Value::I16(0),
            ValueType::I32 => Value::I32(0),
            ValueType::I64 => Value::I64(0),
            ValueType::F32 => Value::F32(0.0),
            ValueType::F64 => Value::F64(0.0),
        }
    }

    /// The raw bits, zero-extended: equal bits mean the same value, NaN payloads included.
    #[doc(hidden)]
    pub fn bits(self) -> u64 {
        match self {
            Value::F32(x) => u64::from(x.to_bits()),
            Value::F64(x) => x.to_bits(),
            other => with_value!(other, x => {
                let mut bits = [0u8; 8];
                let le = bytemuck::bytes_of(&x).to_vec();
                bits[..le.len()].copy_from_slice(&le);
                u64::from_ne_bytes(bits)
            }),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        with_value!(*self, x => write!(f, "{x}_{}", self.value_type()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_type_codes_are_the_specs() {
        let expected = [
            (1, "u8", 1),
            (2, "u16", 2),
            (3, "u32", 4),
            (4, "u64", 8),
            (5, "i8", 1),
            (6, "i16", 2),
            (7, "i32", 4),
            (8, "i64", 8),
            (9, "f32", 4),
            (10, "f64", 8),
        ];
        for (code, name, size) in expected {
            let vt = ValueType::from_code(code).unwrap();
            assert_eq!((vt.code(), vt.name(), vt.size()), (code, name, size));
        }
        assert_eq!(ValueType::from_code(0), None);
        assert_eq!(ValueType::from_code(11), None);
    }

    #[test]
    fn data_and_block_type_codes() {
        assert_eq!(DataType::from_code(0), None);
        assert_eq!(DataType::from_code(4), None);
        for dt in [DataType::DenseMatrix, DataType::CsrMatrix, DataType::Frame] {
            assert_eq!(DataType::from_code(dt.code()), Some(dt));
        }
        assert_eq!(BlockType::from_code(3), Some(BlockType::UltraSparse));
        assert_eq!(BlockType::from_code(4), None);
    }
}
