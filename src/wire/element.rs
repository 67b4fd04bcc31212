//! Single values and typed vectors: the ten Rust element types, [`Values`] (a vector of one of
//! them), their wire encoding and exact conversions.
//!
//! The conversion rule lives here and nowhere else: a value converts to another type only when
//! the number is preserved (`Value::convert`), and narrowing keeps a value only when the
//! round trip restores its exact bits (`Value::narrows_to`).

use std::fmt;

use std::io::{self, Write};

use super::le::{self, SwapIfBigEndian};
use crate::codes::{with_value, Value, ValueType};
use crate::error::{Error, Result};
use sealed::NarrowProbe;

mod sealed {
    /// One value as narrowing sees it: the integer it is, if it is one (saturated to `i64`:
    /// narrowing candidates are at most 32 bits wide), and whether `f32` holds it bit-exactly.
    #[derive(Clone, Copy, Debug)]
    pub struct NarrowProbe {
        pub integer: Option<i64>,
        pub f32_exact: bool,
    }

    /// Typed fast paths for narrowing, kept out of the public API.
    pub trait Sealed: Copy + super::le::SwapIfBigEndian {
        /// What narrowing needs to know of this value, without going through [`super::Value`].
        fn narrow_probe(self) -> NarrowProbe;
        /// `self as i64` (exact whenever narrowing chose an integer type).
        fn as_i64(self) -> i64;
        /// `self as f64` (exact whenever narrowing chose a float type).
        fn as_f64(self) -> f64;
        /// `x as Self`.
        fn from_i64(x: i64) -> Self;
        /// `x as Self`.
        fn from_f64(x: f64) -> Self;
        /// The slice as the [`super::ValuesRef`] variant of this type.
        fn values_ref(values: &[Self]) -> super::ValuesRef<'_>;
    }
}

/// What narrowing needs to know of `x`.
#[inline]
pub(crate) fn narrow_probe<T: Element>(x: T) -> NarrowProbe {
    sealed::Sealed::narrow_probe(x)
}

/// Whether every value of `from` converts exactly to `to` (so no value needs checking).
pub(crate) const fn widens_exactly(from: ValueType, to: ValueType) -> bool {
    let (fs, ts) = (from.size(), to.size());
    match (from.is_float(), to.is_float()) {
        (true, true) => fs <= ts,
        // f32 holds integers of up to 24 bits exactly, f64 up to 53.
        (false, true) => fs * 8 <= if ts == 4 { 24 } else { 53 },
        (true, false) => false,
        (false, false) => match (from.is_signed_int(), to.is_signed_int()) {
            (false, false) | (true, true) => fs <= ts,
            (false, true) => fs < ts,
            (true, false) => false,
        },
    }
}

/// `x` as `U`, for a conversion known to be exact: narrowing found it so (`narrows_to`), or
/// the types widen exactly ([`widens_exactly`]).
#[inline]
pub(crate) fn exact_cast<T: Element, U: Element>(x: T) -> U {
    if T::VALUE_TYPE == U::VALUE_TYPE {
        // The same type: the bits as they are (a float round trip would quiet signalling NaNs).
        return bytemuck::cast(x);
    }
    if U::VALUE_TYPE.is_float() {
        U::from_f64(x.as_f64())
    } else {
        U::from_i64(x.as_i64())
    }
}

/// A vector of values of one value type.
///
/// Equality is bitwise: same value type, same bits (so NaN equals the same NaN and
/// `-0.0 != 0.0`), as befits stored data.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[allow(missing_docs)]
pub enum Values {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl<T: Element> From<Vec<T>> for Values {
    fn from(values: Vec<T>) -> Values {
        T::into_values(values)
    }
}

/// A borrowed slice of values of one value type: [`Values`] without owning them, as a frame
/// of borrowed columns ([`ColumnsView`](crate::ColumnsView)) holds them.
///
/// Through other serde formats it looks as [`Values`] does (`{"F64": [1.5]}` in JSON), so
/// what is written from it reads back as [`Values`].
///
/// ```
/// use serde_daphne::{Values, ValuesRef, ValueType};
///
/// let prices = [9.5f64, 10.0];
/// let values = ValuesRef::from(&prices[..]);
/// assert_eq!((values.value_type(), values.len()), (ValueType::F64, 2));
/// assert_eq!(values.to_values(), Values::F64(vec![9.5, 10.0]));
/// ```
#[derive(Clone, Copy, Debug, serde::Serialize)]
#[allow(missing_docs)]
pub enum ValuesRef<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// Calls `$body` with `$v` bound to the slice inside any [`ValuesRef`] variant.
macro_rules! with_values_ref {
    ($values:expr, $v:ident => $body:expr) => {
        match $values {
            ValuesRef::U8($v) => $body,
            ValuesRef::U16($v) => $body,
            ValuesRef::U32($v) => $body,
            ValuesRef::U64($v) => $body,
            ValuesRef::I8($v) => $body,
            ValuesRef::I16($v) => $body,
            ValuesRef::I32($v) => $body,
            ValuesRef::I64($v) => $body,
            ValuesRef::F32($v) => $body,
            ValuesRef::F64($v) => $body,
        }
    };
}
pub(crate) use with_values_ref;

impl<'a, T: Element> From<&'a [T]> for ValuesRef<'a> {
    fn from(values: &'a [T]) -> ValuesRef<'a> {
        sealed::Sealed::values_ref(values)
    }
}

impl<'a, T: Element> From<&'a Vec<T>> for ValuesRef<'a> {
    fn from(values: &'a Vec<T>) -> ValuesRef<'a> {
        sealed::Sealed::values_ref(values.as_slice())
    }
}

impl<'a> From<&'a Values> for ValuesRef<'a> {
    fn from(values: &'a Values) -> ValuesRef<'a> {
        values.as_values_ref()
    }
}

impl ValuesRef<'_> {
    /// The value type of the elements.
    pub fn value_type(self) -> ValueType {
        fn of<T: Element>(_: &[T]) -> ValueType {
            T::VALUE_TYPE
        }
        with_values_ref!(self, v => of(v))
    }

    /// The number of values.
    pub fn len(self) -> usize {
        with_values_ref!(self, v => v.len())
    }

    /// Whether there are no values.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The values copied into a vector of their type.
    pub fn to_values(self) -> Values {
        with_values_ref!(self, v => Element::into_values(v.to_vec()))
    }
}

impl Values {
    /// The values borrowed as a slice of their type.
    pub fn as_values_ref(&self) -> ValuesRef<'_> {
        crate::with_values!(self, v => sealed::Sealed::values_ref(v.as_slice()))
    }
}

/// Labelled columns borrowed, as the frame writers take them.
pub(crate) fn borrowed_columns(columns: &[(String, Values)]) -> Vec<(&str, ValuesRef<'_>)> {
    columns
        .iter()
        .map(|(label, values)| (label.as_str(), values.as_values_ref()))
        .collect()
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

    /// Reads one value from the start of `bytes`, stored little-endian (the format's byte
    /// order); `None` when `bytes` is shorter than a value.
    ///
    /// ```
    /// use serde_daphne::Element;
    ///
    /// assert_eq!(u16::read_le(&[0x34, 0x12, 0xff]), Some(0x1234));
    /// assert_eq!(f64::read_le(&[0; 7]), None);
    /// ```
    #[inline]
    fn read_le(bytes: &[u8]) -> Option<Self> {
        (bytes.len() >= std::mem::size_of::<Self>()).then(|| le::read_le(bytes))
    }

    /// Decodes little-endian `bytes` into a new vector, in one copy (large runs split
    /// between the cores).
    ///
    /// ```
    /// use serde_daphne::Element;
    ///
    /// assert_eq!(i32::decode_le(&[1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff])?, vec![1, -2]);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] when `bytes` is not a whole number of values;
    /// [`crate::ErrorKind::OutOfMemory`].
    fn decode_le(bytes: &[u8]) -> Result<Vec<Self>> {
        let size = std::mem::size_of::<Self>();
        if !bytes.len().is_multiple_of(size) {
            return Err(Error::invalid(format!(
                "{} bytes are not a whole number of {} values",
                bytes.len(),
                Self::VALUE_TYPE
            )));
        }
        le::decode_le(bytes)
    }

    /// Writes `values` to `writer` as little-endian bytes: one `write_all` on little-endian
    /// hosts.
    ///
    /// # Errors
    /// The writer's.
    fn write_le<W: Write + ?Sized>(values: &[Self], writer: &mut W) -> io::Result<()> {
        le::write_le(writer, values)
    }

    /// How many of `values` are not zero in the sense of [`Element::is_zero`] (not every
    /// bit zero): what a sparse block stores. Counted on the bits, vectorised.
    ///
    /// ```
    /// use serde_daphne::Element;
    ///
    /// assert_eq!(f64::count_nonzero(&[0.0, -0.0, 1.5, 0.0]), 2);
    /// ```
    fn count_nonzero(values: &[Self]) -> usize {
        le::count_nonzero(values)
    }
}

macro_rules! impl_element {
    ($($variant:ident $t:ty, $conv:ident, $zero:expr;)*) => {$(
        impl sealed::Sealed for $t {
            #[inline]
            fn narrow_probe(self) -> NarrowProbe {
                impl_element!(@probe $conv, $t, self)
            }
            #[inline]
            #[allow(clippy::cast_possible_truncation, clippy::cast_lossless)]
            fn as_i64(self) -> i64 {
                self as i64
            }
            #[inline]
            #[allow(clippy::cast_lossless)]
            fn as_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            #[allow(clippy::cast_possible_truncation)]
            fn from_i64(x: i64) -> Self {
                x as $t
            }
            #[inline]
            #[allow(clippy::cast_possible_truncation)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn values_ref(values: &[Self]) -> ValuesRef<'_> {
                ValuesRef::$variant(values)
            }
        }
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
    // Saturating casts are safe here: every candidate range lies well inside `i64`.
    (@probe float64, $t:ty, $x:expr) => {{
        let x: f64 = $x;
        let i = x as i64;
        NarrowProbe {
            integer: (i as f64 == x && x.to_bits() != (-0.0f64).to_bits()).then_some(i),
            f32_exact: f64::from(x as f32).to_bits() == x.to_bits(),
        }
    }};
    (@probe float32, $t:ty, $x:expr) => {{
        let x: f32 = $x;
        let i = x as i64;
        NarrowProbe {
            integer: (i as f32 == x && x.to_bits() != (-0.0f32).to_bits()).then_some(i),
            f32_exact: true,
        }
    }};
    (@probe integer, $t:ty, $x:expr) => {{
        let x: $t = $x;
        // f32 holds an integer exactly when it has at most 24 significant bits.
        let m = (x as i128).unsigned_abs();
        NarrowProbe {
            integer: Some(i64::try_from(x).unwrap_or(i64::MAX)),
            f32_exact: m == 0 || (m >> m.trailing_zeros()) < (1 << 24),
        }
    }};
}

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

impl Value {
    /// Whether every bit is zero (`-0.0` and NaN are not).
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn narrows_to(self, value_type: ValueType) -> bool {
        self.convert(value_type)
            .and_then(|narrow| narrow.convert(self.value_type()))
            .is_some_and(|back| back.bits() == self.bits())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::values::with_value_type;

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

    /// Edge values of every type: where `widens_exactly` says no check is needed, the rule
    /// agrees and the cast gives the same number; where it does not, some edge fails.
    #[test]
    fn exact_widening_agrees_with_the_conversion_rule() {
        fn edges<T: Element>() -> Vec<Value> {
            let mut v: Vec<Value> = [0u64, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x100_0001]
                .iter()
                .chain(&[
                    0x7fff_ffff,
                    0xffff_ffff,
                    0x20_0000_0000_0001,
                    u64::MAX >> 1,
                    u64::MAX,
                ])
                .map(|&b| {
                    let bytes = b.to_le_bytes();
                    let t: T = bytemuck::pod_read_unaligned(&bytes[..std::mem::size_of::<T>()]);
                    t.into_value()
                })
                .collect();
            if T::VALUE_TYPE.is_float() {
                v.extend(
                    [1.5f64, -0.0, f64::NAN, f64::INFINITY, 1e300, 5e-324]
                        .iter()
                        .filter_map(|&x| Value::F64(x).convert(T::VALUE_TYPE)),
                );
                v.extend(
                    [1.5f32, -0.0, f32::MIN_POSITIVE / 4.0]
                        .iter()
                        .filter_map(|&x| Value::F32(x).convert(T::VALUE_TYPE)),
                );
            } else if T::VALUE_TYPE.is_signed_int() {
                v.extend(
                    [-1i64, i64::MIN, -128, -32768, -(1 << 31)]
                        .iter()
                        .filter_map(|&x| Value::I64(x).convert(T::VALUE_TYPE)),
                );
            }
            v
        }
        for from in ValueType::ALL {
            for to in ValueType::ALL {
                let values = with_value_type!(from, S => edges::<S>());
                let all_fit = values.iter().all(|v| v.convert(to).is_some());
                assert_eq!(widens_exactly(from, to), all_fit, "{from} -> {to}");
                if widens_exactly(from, to) {
                    for &v in &values {
                        let cast = with_value_type!(from, S => with_value_type!(to, U => {
                            exact_cast::<S, U>(v.to::<S>().unwrap()).into_value()
                        }));
                        assert_eq!(cast.bits(), v.convert(to).unwrap().bits(), "{v} -> {to}");
                    }
                }
            }
        }
    }

    #[test]
    fn zero_means_all_bits_zero() {
        assert!(0.0f64.is_zero());
        assert!(!(-0.0f64).is_zero());
        assert!(!f32::NAN.is_zero());
        assert!(0u16.is_zero());
    }
}
