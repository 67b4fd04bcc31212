//! Operations on typed vectors of values ([`Values`]), and their little-endian byte encoding.

use super::element::{exact_cast, widens_exactly, Element, Values};
pub(crate) use super::le::{count_nonzero, decode_le, extend_le, read_le, write_le, zeroed_vec};
use crate::codes::{Value, ValueType};
use crate::error::Result;

/// Calls `$body` with `$v` bound to the vector inside any [`Values`] variant (`$values` may
/// be a `Values`, a `&Values` or a `&mut Values`): one generic body for values of a type
/// known only at run time.
///
/// ```
/// use serde_daphne::{with_values, Element, Values};
///
/// fn nonzero(values: &Values) -> usize {
///     with_values!(values, v => Element::count_nonzero(v.as_slice()))
/// }
/// assert_eq!(nonzero(&Values::I16(vec![0, 3, 0, -1])), 2);
/// ```
#[macro_export]
macro_rules! with_values {
    ($values:expr, $v:ident => $body:expr) => {
        match $values {
            $crate::Values::U8($v) => $body,
            $crate::Values::U16($v) => $body,
            $crate::Values::U32($v) => $body,
            $crate::Values::U64($v) => $body,
            $crate::Values::I8($v) => $body,
            $crate::Values::I16($v) => $body,
            $crate::Values::I32($v) => $body,
            $crate::Values::I64($v) => $body,
            $crate::Values::F32($v) => $body,
            $crate::Values::F64($v) => $body,
        }
    };
}
pub use with_values;

/// Runs `$body` with the type alias `$t` bound to the Rust type of a [`ValueType`]: one
/// generic body for a value type known only at run time.
///
/// ```
/// use serde_daphne::{with_value_type, ValueType};
///
/// fn size_of(value_type: ValueType) -> usize {
///     with_value_type!(value_type, T => std::mem::size_of::<T>())
/// }
/// assert_eq!(size_of(ValueType::I16), 2);
/// ```
#[macro_export]
macro_rules! with_value_type {
    ($value_type:expr, $t:ident => $body:expr) => {
        match $value_type {
            $crate::ValueType::U8 => {
                type $t = u8;
                $body
            }
            $crate::ValueType::U16 => {
                type $t = u16;
                $body
            }
            $crate::ValueType::U32 => {
                type $t = u32;
                $body
            }
            $crate::ValueType::U64 => {
                type $t = u64;
                $body
            }
            $crate::ValueType::I8 => {
                type $t = i8;
                $body
            }
            $crate::ValueType::I16 => {
                type $t = i16;
                $body
            }
            $crate::ValueType::I32 => {
                type $t = i32;
                $body
            }
            $crate::ValueType::I64 => {
                type $t = i64;
                $body
            }
            $crate::ValueType::F32 => {
                type $t = f32;
                $body
            }
            $crate::ValueType::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}
pub use with_value_type;

impl Values {
    /// An empty vector of a value type.
    #[doc(hidden)]
    pub fn new(value_type: ValueType) -> Values {
        with_value_type!(value_type, T => T::into_values(Vec::new()))
    }

    /// `len` zeros of a value type. Fails cleanly (instead of aborting) when memory runs out.
    ///
    /// # Errors
    /// [`crate::ErrorKind::OutOfMemory`] when the allocation fails.
    #[doc(hidden)]
    pub fn zeros(value_type: ValueType, len: usize) -> Result<Values> {
        with_value_type!(value_type, T => zeroed_vec::<T>(len).map(T::into_values))
    }

    /// The value type of the elements.
    pub fn value_type(&self) -> ValueType {
        with_values!(self, v => element_type(v))
    }

    /// Appends `other` when it holds the same type; `false` (and nothing appended) otherwise.
    #[doc(hidden)]
    pub fn append(&mut self, other: Values) -> bool {
        macro_rules! same {
            ($($v:ident),*) => {
                match (self, other) {
                    $((Values::$v(a), Values::$v(mut b)) => {
                        a.append(&mut b);
                        true
                    })*
                    _ => false,
                }
            };
        }
        same!(U8, U16, U32, U64, I8, I16, I32, I64, F32, F64)
    }

    /// Makes room for `additional` more values.
    /// `self[order[0]], self[order[1]], ...` (every index in `order` must be in range).
    #[doc(hidden)]
    pub fn permuted(&self, order: &[usize]) -> Values {
        with_values!(self, v => Element::into_values(order.iter().map(|&k| v[k]).collect()))
    }

    /// Room for `additional` more values, faulted in when large (fresh memory that is about to
    /// be filled).
    #[doc(hidden)]
    pub fn reserve(&mut self, additional: usize) {
        with_values!(self, v => {
            v.reserve_exact(additional);
            crate::pages::fault_in_spare(v, additional);
        });
    }

    /// Keeps the first `len` values.
    #[doc(hidden)]
    pub fn truncate(&mut self, len: usize) {
        with_values!(self, v => v.truncate(len));
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        with_values!(self, v => v.len())
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `index`.
    pub fn get(&self, index: usize) -> Option<Value> {
        with_values!(self, v => v.get(index).map(|x| x.into_value()))
    }

    /// Sets the value at `index`, converting exactly; returns `false` when `value` does not fit
    /// (and changes nothing).
    ///
    /// # Panics
    /// When `index` is out of bounds.
    #[doc(hidden)]
    pub fn set(&mut self, index: usize, value: Value) -> bool {
        with_values!(self, v => match value.to() {
            Some(x) => {
                v[index] = x;
                true
            }
            None => false,
        })
    }

    /// Copies `src` into these values from index `at` when both hold the same type (and it
    /// fits); returns `false` otherwise.
    #[doc(hidden)]
    pub fn copy_from(&mut self, at: usize, src: &Values) -> bool {
        macro_rules! same {
            ($($variant:ident)*) => {
                match (self, src) {
                    $((Values::$variant(dst), Values::$variant(src)) if at + src.len() <= dst.len() => {
                        dst[at..at + src.len()].copy_from_slice(src);
                        true
                    })*
                    _ => false,
                }
            };
        }
        same!(U8 U16 U32 U64 I8 I16 I32 I64 F32 F64)
    }

    /// Appends `value`, converting exactly; returns `false` when it does not fit.
    #[inline]
    #[doc(hidden)]
    pub fn push(&mut self, value: Value) -> bool {
        // The common case, a value of the vector's own type, without a conversion.
        macro_rules! same {
            ($($t:ident),*) => {
                match (&mut *self, value) {
                    $((Values::$t(v), Value::$t(x)) => {
                        v.push(x);
                        return true;
                    })*
                    _ => {}
                }
            };
        }
        same!(U8, U16, U32, U64, I8, I16, I32, I64, F32, F64);
        with_values!(self, v => match value.to() {
            Some(x) => {
                v.push(x);
                true
            }
            None => false,
        })
    }

    /// The values' little-endian bytes: borrowed on little-endian hosts, converted elsewhere.
    #[doc(hidden)]
    pub fn le_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        if cfg!(target_endian = "little") {
            return std::borrow::Cow::Borrowed(self.raw_bytes());
        }
        let mut out = Vec::with_capacity(self.raw_bytes().len());
        with_values!(self, v => extend_le(&mut out, v));
        std::borrow::Cow::Owned(out)
    }

    /// The values' bytes in host order.
    fn raw_bytes(&self) -> &[u8] {
        with_values!(self, v => bytemuck::cast_slice(v))
    }

    /// The values as `Vec<T>`, moved when the type matches and converted exactly otherwise.
    ///
    /// # Errors
    /// The index of the first value that `T` cannot hold exactly.
    #[doc(hidden)]
    pub fn into_vec<T: Element>(self) -> Result<Vec<T>, usize> {
        match T::try_from_values(self) {
            Ok(v) => Ok(v),
            Err(other) => other.to_vec(),
        }
    }

    /// The values converted exactly to `Vec<T>`.
    ///
    /// # Errors
    /// The index of the first value that `T` cannot hold exactly.
    #[doc(hidden)]
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, usize> {
        with_values!(self, v => convert_slice(v))
    }

    /// The values converted exactly to another value type.
    ///
    /// # Errors
    /// The index of the first value that cannot be held exactly.
    pub fn convert(self, value_type: ValueType) -> Result<Values, usize> {
        if self.value_type() == value_type {
            return Ok(self);
        }
        with_value_type!(value_type, T => self.to_vec::<T>().map(T::into_values))
    }
}

impl PartialEq for Values {
    fn eq(&self, other: &Values) -> bool {
        self.value_type() == other.value_type() && self.raw_bytes() == other.raw_bytes()
    }
}

fn element_type<T: Element>(_: &[T]) -> ValueType {
    T::VALUE_TYPE
}

/// Converts every element exactly, or names the first that does not fit.
pub(crate) fn convert_slice<S: Element, T: Element>(src: &[S]) -> Result<Vec<T>, usize> {
    if S::VALUE_TYPE == T::VALUE_TYPE {
        return Ok(bytemuck::cast_slice::<S, T>(src).to_vec());
    }
    if widens_exactly(S::VALUE_TYPE, T::VALUE_TYPE) {
        return Ok(src.iter().map(|&x| exact_cast(x)).collect());
    }
    let mut out = Vec::with_capacity(src.len());
    for (i, &x) in src.iter().enumerate() {
        out.push(T::from_value(x.into_value()).ok_or(i)?);
    }
    Ok(out)
}
