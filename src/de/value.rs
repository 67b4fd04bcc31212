//! One stored value handed to a visitor as whatever number type it asks for.

use crate::error::ErrorDetails;
use serde::de::{self, Visitor};
use serde::forward_to_deserialize_any;

use crate::error::{Error, Result};
use crate::wire::{Element, Value, Values};

/// One stored value, converted exactly to whatever number type is asked for.
pub(crate) struct ValueDe {
    pub(crate) value: Value,
    /// Offset of the object (or block) holding it, for errors.
    pub(crate) offset: u64,
}

impl ValueDe {
    fn exact<T: Element>(&self) -> Result<T> {
        self.value
            .to::<T>()
            .ok_or(Error::from(ErrorDetails::LossyConversion {
                offset: self.offset,
                value: self.value,
                to: T::VALUE_TYPE,
            }))
    }
}

macro_rules! value_numbers {
    ($($method:ident $t:ty => $visit:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            visitor.$visit(self.exact::<$t>()?)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for ValueDe {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::U8(x) => visitor.visit_u8(x),
            Value::U16(x) => visitor.visit_u16(x),
            Value::U32(x) => visitor.visit_u32(x),
            Value::U64(x) => visitor.visit_u64(x),
            Value::I8(x) => visitor.visit_i8(x),
            Value::I16(x) => visitor.visit_i16(x),
            Value::I32(x) => visitor.visit_i32(x),
            Value::I64(x) => visitor.visit_i64(x),
            Value::F32(x) => visitor.visit_f32(x),
            Value::F64(x) => visitor.visit_f64(x),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value.to::<u8>() {
            Some(0) => visitor.visit_bool(false),
            Some(1) => visitor.visit_bool(true),
            _ => Err(ErrorDetails::NotABool {
                offset: self.offset,
                value: self.value,
            }
            .into()),
        }
    }

    value_numbers! {
        deserialize_i8 i8 => visit_i8, deserialize_i16 i16 => visit_i16,
        deserialize_i32 i32 => visit_i32, deserialize_i64 i64 => visit_i64,
        deserialize_u8 u8 => visit_u8, deserialize_u16 u16 => visit_u16,
        deserialize_u32 u32 => visit_u32, deserialize_u64 u64 => visit_u64,
        deserialize_f32 f32 => visit_f32, deserialize_f64 f64 => visit_f64
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf option unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// The value at `row` of a column, handed to a visitor: a number of the column's own type
/// goes straight from the column's slice, anything else through [`ValueDe`].
pub(crate) struct CellDe<'a> {
    pub(crate) column: &'a Values,
    pub(crate) row: usize,
    /// Offset of the object holding it, for errors.
    pub(crate) offset: u64,
}

impl CellDe<'_> {
    /// The cell as a [`Value`], for what the typed fast paths leave (conversions, errors).
    #[cold]
    #[inline(never)]
    fn value(&self) -> Result<ValueDe> {
        let value = self
            .column
            .get(self.row)
            .ok_or_else(|| Error::invalid("internal: frame row out of range"))?;
        Ok(ValueDe {
            value,
            offset: self.offset,
        })
    }
}

macro_rules! cell_numbers {
    ($($method:ident $variant:ident => $visit:ident),*) => {$(
        #[inline]
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            if let Values::$variant(v) = self.column {
                if let Some(&x) = v.get(self.row) {
                    return visitor.$visit(x);
                }
            }
            self.value()?.$method(visitor)
        }
    )*};
}

macro_rules! cell_through_value {
    ($($method:ident($($arg:ident: $t:ty),*))*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $t,)* visitor: V) -> Result<V::Value> {
            self.value()?.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for CellDe<'_> {
    type Error = Error;

    cell_numbers! {
        deserialize_i8 I8 => visit_i8, deserialize_i16 I16 => visit_i16,
        deserialize_i32 I32 => visit_i32, deserialize_i64 I64 => visit_i64,
        deserialize_u8 U8 => visit_u8, deserialize_u16 U16 => visit_u16,
        deserialize_u32 U32 => visit_u32, deserialize_u64 U64 => visit_u64,
        deserialize_f32 F32 => visit_f32, deserialize_f64 F64 => visit_f64
    }

    /// A bool column is a u8 column of zeros and ones.
    #[inline]
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if let Values::U8(v) = self.column {
            match v.get(self.row) {
                Some(0) => return visitor.visit_bool(false),
                Some(1) => return visitor.visit_bool(true),
                _ => {}
            }
        }
        self.value()?.deserialize_bool(visitor)
    }

    cell_through_value! {
        deserialize_any() deserialize_i128() deserialize_u128() deserialize_char()
        deserialize_str() deserialize_string() deserialize_bytes() deserialize_byte_buf()
        deserialize_option() deserialize_unit() deserialize_seq() deserialize_map()
        deserialize_identifier() deserialize_ignored_any()
        deserialize_unit_struct(name: &'static str)
        deserialize_tuple(len: usize)
        deserialize_tuple_struct(name: &'static str, len: usize)
        deserialize_struct(name: &'static str, fields: &'static [&'static str])
        deserialize_enum(name: &'static str, variants: &'static [&'static str])
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }
}
