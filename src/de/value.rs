//! One stored value handed to a visitor as whatever number type it asks for.

use serde::de::{self, Visitor};
use serde::forward_to_deserialize_any;

use crate::error::{Error, Result};
use crate::wire::{Element, Value};

/// One stored value, converted exactly to whatever number type is asked for.
pub(crate) struct ValueDe {
    pub(crate) value: Value,
    /// Offset of the object (or block) holding it, for errors.
    pub(crate) offset: u64,
}

impl ValueDe {
    fn exact<T: Element>(&self) -> Result<T> {
        self.value.to::<T>().ok_or(Error::LossyConversion {
            offset: self.offset,
            value: self.value,
            to: T::VALUE_TYPE,
        })
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
            _ => Err(Error::NotABool {
                offset: self.offset,
                value: self.value,
            }),
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
