//! Serializers that look at a value without writing it: is it a number, or a row of numbers?
//! A sequence's representation is chosen from what its elements turn out to be.

use serde::ser::{self, Serialize};

use super::answer::answer;
use crate::adapter_protocol;
use crate::error::{Error, Result};
use crate::wire::{Value, Values};

/// Accepts any compound value and throws it away, ending in `Ok(None)`.
pub(crate) struct Discard<T>(std::marker::PhantomData<T>);

impl<T> Discard<T> {
    fn new() -> Self {
        Discard(std::marker::PhantomData)
    }
}

macro_rules! impl_discard {
    ($($trait:ident { $($method:ident ($($key:ty)?)),* }),*) => {$(
        impl<T> ser::$trait for Discard<T> {
            type Ok = Option<T>;
            type Error = Error;
            $(fn $method<V: ?Sized + Serialize>(&mut self, $(_: $key,)? _: &V) -> Result<()> {
                Ok(())
            })*
            fn end(self) -> Result<Option<T>> {
                Ok(None)
            }
        }
    )*};
}
impl_discard!(
    SerializeSeq { serialize_element() },
    SerializeTuple { serialize_element() },
    SerializeTupleStruct { serialize_field() },
    SerializeTupleVariant { serialize_field() },
    SerializeStruct { serialize_field(&'static str) },
    SerializeStructVariant { serialize_field(&'static str) }
);

impl<T> ser::SerializeMap for Discard<T> {
    type Ok = Option<T>;
    type Error = Error;
    fn serialize_key<V: ?Sized + Serialize>(&mut self, _: &V) -> Result<()> {
        Ok(())
    }
    fn serialize_value<V: ?Sized + Serialize>(&mut self, _: &V) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Option<T>> {
        Ok(None)
    }
}

/// Answers `Some(value)` when the serialized value is a number (or bool), `None` otherwise.
pub(crate) struct ScalarProbe;

macro_rules! probe_numbers {
    ($wrap:expr) => {
        fn serialize_bool(self, v: bool) -> Result<Self::Ok> {
            Ok($wrap(Value::U8(u8::from(v))))
        }
        fn serialize_i8(self, v: i8) -> Result<Self::Ok> {
            Ok($wrap(Value::I8(v)))
        }
        fn serialize_i16(self, v: i16) -> Result<Self::Ok> {
            Ok($wrap(Value::I16(v)))
        }
        fn serialize_i32(self, v: i32) -> Result<Self::Ok> {
            Ok($wrap(Value::I32(v)))
        }
        fn serialize_i64(self, v: i64) -> Result<Self::Ok> {
            Ok($wrap(Value::I64(v)))
        }
        fn serialize_u8(self, v: u8) -> Result<Self::Ok> {
            Ok($wrap(Value::U8(v)))
        }
        fn serialize_u16(self, v: u16) -> Result<Self::Ok> {
            Ok($wrap(Value::U16(v)))
        }
        fn serialize_u32(self, v: u32) -> Result<Self::Ok> {
            Ok($wrap(Value::U32(v)))
        }
        fn serialize_u64(self, v: u64) -> Result<Self::Ok> {
            Ok($wrap(Value::U64(v)))
        }
        fn serialize_f32(self, v: f32) -> Result<Self::Ok> {
            Ok($wrap(Value::F32(v)))
        }
        fn serialize_f64(self, v: f64) -> Result<Self::Ok> {
            Ok($wrap(Value::F64(v)))
        }
    };
}

/// The methods of a probe that answer "not what I look for": everything but numbers,
/// sequences and tuples (and newtype structs, which are looked through).
macro_rules! probe_nothing {
    () => {
        answer! { Ok(None);
        serialize_char serialize_str serialize_bytes serialize_unit_struct serialize_i128
        serialize_u128 serialize_none serialize_some serialize_unit serialize_unit_variant
        serialize_newtype_variant }
        answer! { Ok(Discard::new());
        serialize_tuple_variant serialize_map serialize_struct serialize_struct_variant }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            name: &'static str,
            value: &T,
        ) -> Result<Self::Ok> {
            if adapter_protocol::is_marker(name) {
                Ok(None)
            } else {
                value.serialize(self)
            }
        }
    };
}

impl ser::Serializer for ScalarProbe {
    type Ok = Option<Value>;
    type Error = Error;
    type SerializeSeq = Discard<Value>;
    type SerializeTuple = Discard<Value>;
    type SerializeTupleStruct = Discard<Value>;
    type SerializeTupleVariant = Discard<Value>;
    type SerializeMap = Discard<Value>;
    type SerializeStruct = Discard<Value>;
    type SerializeStructVariant = Discard<Value>;

    probe_numbers!(Some);
    probe_nothing!();

    answer! { Ok(Discard::new()); serialize_seq serialize_tuple serialize_tuple_struct }
}

/// Appends a serialized number (or bool, as u8) to a column: `Some(true)` when it went in
/// (converted exactly when the column's type differs), `Some(false)` when it does not fit,
/// `None` for anything but a number. What [`ScalarProbe`] then [`Values::push`] do, without
/// the detour through a [`Value`] for a number of the column's own type.
pub(crate) struct ColumnPush<'a>(pub(crate) &'a mut Values);

impl ColumnPush<'_> {
    /// A value of another type than the column's: converted exactly, if it can be.
    #[cold]
    fn push(self, value: Value) -> Option<bool> {
        Some(self.0.push(value))
    }
}

/// The number methods of [`ColumnPush`]: a number of the column's own type is pushed in
/// place (inlined into the derived `Serialize`); any other goes through [`Values::push`].
macro_rules! push_numbers {
    ($($method:ident $t:ty => $variant:ident),*) => {$(
        #[inline]
        fn $method(self, v: $t) -> Result<Option<bool>> {
            if let Values::$variant(column) = self.0 {
                column.push(v);
                return Ok(Some(true));
            }
            Ok(self.push(Value::$variant(v)))
        }
    )*};
}

impl ser::Serializer for ColumnPush<'_> {
    type Ok = Option<bool>;
    type Error = Error;
    type SerializeSeq = Discard<bool>;
    type SerializeTuple = Discard<bool>;
    type SerializeTupleStruct = Discard<bool>;
    type SerializeTupleVariant = Discard<bool>;
    type SerializeMap = Discard<bool>;
    type SerializeStruct = Discard<bool>;
    type SerializeStructVariant = Discard<bool>;

    push_numbers! {
        serialize_i8 i8 => I8, serialize_i16 i16 => I16, serialize_i32 i32 => I32,
        serialize_i64 i64 => I64, serialize_u8 u8 => U8, serialize_u16 u16 => U16,
        serialize_u32 u32 => U32, serialize_u64 u64 => U64, serialize_f32 f32 => F32,
        serialize_f64 f64 => F64
    }

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<Option<bool>> {
        self.serialize_u8(u8::from(v))
    }

    probe_nothing!();

    answer! { Ok(Discard::new()); serialize_seq serialize_tuple serialize_tuple_struct }
}

/// Answers `Some(row)` when the serialized value is a sequence of numbers of one type
/// (`Some(None)` for an empty one), `None` otherwise.
pub(super) struct RowProbe;

/// Collects a row's numbers.
#[doc(hidden)]
pub struct RowCollector {
    values: Option<Values>,
    is_row: bool,
}

impl RowCollector {
    fn push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        if !self.is_row {
            return Ok(());
        }
        match (value.serialize(ScalarProbe)?, &mut self.values) {
            (Some(v), Some(values)) => self.is_row = values.push(v),
            (Some(v), None) => {
                let mut values = Values::new(v.value_type());
                values.push(v);
                self.values = Some(values);
            }
            (None, _) => self.is_row = false,
        }
        Ok(())
    }

    fn done(self) -> Result<Option<Option<Values>>> {
        Ok(self.is_row.then_some(self.values))
    }
}

macro_rules! impl_row_collector {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for RowCollector {
            type Ok = Option<Option<Values>>;
            type Error = Error;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
                self.push(value)
            }
            fn end(self) -> Result<Self::Ok> {
                self.done()
            }
        }
    )*};
}
impl_row_collector!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::Serializer for RowProbe {
    type Ok = Option<Option<Values>>;
    type Error = Error;
    type SerializeSeq = RowCollector;
    type SerializeTuple = RowCollector;
    type SerializeTupleStruct = RowCollector;
    type SerializeTupleVariant = Discard<Option<Values>>;
    type SerializeMap = Discard<Option<Values>>;
    type SerializeStruct = Discard<Option<Values>>;
    type SerializeStructVariant = Discard<Option<Values>>;

    probe_numbers!(|_| None);
    probe_nothing!();

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Ok(RowCollector {
            values: None,
            is_row: true,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.serialize_seq(Some(len))
    }
}
