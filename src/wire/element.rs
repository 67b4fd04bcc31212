//! Single values: the ten Rust element types, their wire encoding and exact conversions.
//!
//! The conversion rule lives here and nowhere else: a value converts to another type only when
//! the number is preserved (`Value::convert`), and narrowing keeps a value only when the
//! round trip restores its exact bits (`Value::narrows_to`).

use std::fmt;

use super::codes::ValueType;
use super::values::Values;

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that DAPHNE stores as one of its ten value types: `u8`..`u64`, `i8`..`i64`,
/// `f32`, `f64`.
///
/// This trait is sealed: the format has exactly these ten types.
pub trait Element:
    bytemuck::Pod
    + Default
    + PartialEq
    + PartialOrd
    + fmt::Debug
    + fmt::Display
    + Send
    + Sync
    + 'static
    + sealed::Sealed
{
    /// The value type this Rust type is stored as.
    const VALUE_TYPE: ValueType;

    /// This value as an untyped [`Value`].
    fn into_value(self) -> Value;

    /// `value` as this type, or `None` when the number is not exactly representable.
    fn from_value(value: Value) -> Option<Self>;

    /// Whether every bit is zero: the values sparse blocks leave out. `-0.0` and NaN are not zero.
    fn is_zero(self) -> bool;

    /// This value with its bytes in little-endian order (a no-op on little-endian hosts).
    fn to_le(self) -> Self;

    /// Wraps a vector of this type.
    fn into_values(values: Vec<Self>) -> Values;

    /// Unwraps a vector of this type, or gives `values` back when it holds another type.
    fn try_from_values(values: Values) -> Result<Vec<Self>, Values>;

    /// Borrows the vector when `values` holds this type.
    fn slice_of(values: &Values) -> Option<&[Self]>;
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

macro_rules! impl_element {
    ($($variant:ident $t:ty, $conv:ident, $zero:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const VALUE_TYPE: ValueType = ValueType::$variant;
            #[inline]
            fn into_value(self) -> Value {
                Value::$variant(self)
            }
            #[inline]
            fn from_value(value: Value) -> Option<Self> {
                impl_element!(@from $conv, $t, value)
            }
            #[inline]
            fn is_zero(self) -> bool {
                let f: fn($t) -> bool = $zero;
                f(self)
            }
            #[inline]
            fn to_le(self) -> Self {
                self.swap_if_big_endian()
            }
            fn into_values(values: Vec<Self>) -> Values {
                Values::$variant(values)
            }
            fn try_from_values(values: Values) -> Result<Vec<Self>, Values> {
                match values {
                    Values::$variant(v) => Ok(v),
                    other => Err(other),
                }
            }
            fn slice_of(values: &Values) -> Option<&[Self]> {
                match values {
                    Values::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    )*};
    (@from float64, $t:ty, $v:expr) => { $v.to_f64() };
    (@from float32, $t:ty, $v:expr) => { $v.to_f32() };
    (@from integer, $t:ty, $v:expr) => { $v.as_integer().and_then(|i| <$t>::try_from(i).ok()) };
}

/// Byte order swapping for `Element::to_le`, written once for all ten types.
trait SwapIfBigEndian: Sized {
    fn swap_if_big_endian(self) -> Self;
}

macro_rules! impl_swap {
    ($($t:ty => $bits:ty),*) => {$(
        impl SwapIfBigEndian for $t {
            #[inline]
            fn swap_if_big_endian(self) -> Self {
                bytemuck::cast(<$bits>::to_le(bytemuck::cast::<$t, $bits>(self)))
            }
        }
    )*};
}
impl_swap!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, i8 => u8, i16 => u16, i32 => u32,
    i64 => u64, f32 => u32, f64 => u64);

impl_element! {
    U8 u8, integer, |x| x == 0;
    U16 u16, integer, |x| x == 0;
    U32 u32, integer, |x| x == 0;
    U64 u64, integer, |x| x == 0;
    I8 i8, integer, |x| x == 0;
    I16 i16, integer, |x| x == 0;
    I32 i32, integer, |x| x == 0;
    I64 i64, integer, |x| x == 0;
    F32 f32, float32, |x| x.to_bits() == 0;
    F64 f64, float64, |x| x.to_bits() == 0;
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

    /// Whether every bit is zero (`-0.0` and NaN are not).
    pub fn is_zero(self) -> bool {
        with_value!(self, x => Element::is_zero(x))
    }

    /// The value as `T`, or `None` when the number is not exactly representable in `T`.
    ///
    /// Integers convert when in range; floats convert to integers when finite and integral
    /// (`-0.0` becomes `0`); integers convert to floats when the float holds them exactly; `f64`
    /// converts to `f32` when converting back restores the same bits (NaN payloads included).
    pub fn to<T: Element>(self) -> Option<T> {
        T::from_value(self)
    }

    /// The value converted to `value_type`, or `None` when not exactly representable.
    pub fn convert(self, value_type: ValueType) -> Option<Value> {
        match value_type {
            ValueType::U8 => self.to::<u8>().map(Value::U8),
            ValueType::U16 => self.to::<u16>().map(Value::U16),
            ValueType::U32 => self.to::<u32>().map(Value::U32),
            ValueType::U64 => self.to::<u64>().map(Value::U64),
            ValueType::I8 => self.to::<i8>().map(Value::I8),
            ValueType::I16 => self.to::<i16>().map(Value::I16),
            ValueType::I32 => self.to::<i32>().map(Value::I32),
            ValueType::I64 => self.to::<i64>().map(Value::I64),
            ValueType::F32 => self.to::<f32>().map(Value::F32),
            ValueType::F64 => self.to::<f64>().map(Value::F64),
        }
    }

    /// Whether storing this value as `value_type` and reading it back as its own type gives the
    /// same bits: the test value narrowing applies (so `-0.0` never becomes an integer).
    pub fn narrows_to(self, value_type: ValueType) -> bool {
        self.convert(value_type)
            .and_then(|narrow| narrow.convert(self.value_type()))
            .is_some_and(|back| back.bits() == self.bits())
    }

    /// The raw bits, zero-extended: equal bits mean the same value, NaN payloads included.
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

    /// Appends the value's little-endian bytes.
    pub(crate) fn extend_le(self, out: &mut Vec<u8>) {
        with_value!(self, x => out.extend_from_slice(bytemuck::bytes_of(&x.to_le())))
    }

    /// The exact integer this value is, if it is one.
    fn as_integer(self) -> Option<i128> {
        const LIMIT: f64 = 1.7014118346046923e38; // 2^127
        let float =
            |x: f64| (x.is_finite() && x.fract() == 0.0 && x.abs() < LIMIT).then_some(x as i128);
        match self {
            Value::F32(x) => float(f64::from(x)),
            Value::F64(x) => float(x),
            Value::U8(x) => Some(x.into()),
            Value::U16(x) => Some(x.into()),
            Value::U32(x) => Some(x.into()),
            Value::U64(x) => Some(x.into()),
            Value::I8(x) => Some(x.into()),
            Value::I16(x) => Some(x.into()),
            Value::I32(x) => Some(x.into()),
            Value::I64(x) => Some(x.into()),
        }
    }

    fn to_f64(self) -> Option<f64> {
        match self {
            Value::F64(x) => Some(x),
            Value::F32(x) => Some(f64::from(x)),
            other => {
                let i = other.as_integer()?;
                let f = i as f64;
                (f as i128 == i).then_some(f)
            }
        }
    }

    fn to_f32(self) -> Option<f32> {
        match self {
            Value::F32(x) => Some(x),
            Value::F64(x) => {
                let f = x as f32;
                (f64::from(f).to_bits() == x.to_bits()).then_some(f)
            }
            other => {
                let i = other.as_integer()?;
                let f = i as f32;
                (f as i128 == i).then_some(f)
            }
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
    fn conversions_preserve_the_number_or_fail() {
        assert_eq!(Value::U64(255).to::<u8>(), Some(255));
        assert_eq!(Value::U64(256).to::<u8>(), None);
        assert_eq!(Value::I8(-1).to::<u32>(), None);
        assert_eq!(Value::F64(3.0).to::<i16>(), Some(3));
        assert_eq!(Value::F64(3.5).to::<i16>(), None);
        assert_eq!(Value::F64(f64::NAN).to::<i64>(), None);
        assert_eq!(Value::F64(-0.0).to::<i32>(), Some(0));
        assert_eq!(Value::U64(u64::MAX).to::<f64>(), None);
        assert_eq!(Value::U64(1 << 53).to::<f64>(), Some(9007199254740992.0));
        assert_eq!(Value::U64((1 << 53) + 1).to::<f64>(), None);
        assert_eq!(Value::F64(0.1).to::<f32>(), None);
        assert_eq!(Value::F64(0.5).to::<f32>(), Some(0.5));
        assert_eq!(Value::I32(16_777_217).to::<f32>(), None);
        assert_eq!(Value::F32(1.5).to::<f64>(), Some(1.5));
    }

    #[test]
    fn narrowing_keeps_bits() {
        assert!(Value::F64(2.0).narrows_to(ValueType::U8));
        assert!(!Value::F64(-0.0).narrows_to(ValueType::U8));
        assert!(Value::F64(-0.0).narrows_to(ValueType::F32));
        assert!(Value::F64(f64::NAN).narrows_to(ValueType::F32));
        let payload = f64::from_bits(0x7ff8_0000_0000_0001);
        assert!(!Value::F64(payload).narrows_to(ValueType::F32));
        assert!(Value::I64(-128).narrows_to(ValueType::I8));
        assert!(!Value::I64(-129).narrows_to(ValueType::I8));
    }

    #[test]
    fn zero_means_all_bits_zero() {
        assert!(0.0f64.is_zero());
        assert!(!(-0.0f64).is_zero());
        assert!(!f32::NAN.is_zero());
        assert!(0u16.is_zero());
    }
}
