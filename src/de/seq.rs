//! Sequences read from objects: struct fields and counted elements (objects back to back), a
//! matrix as rows or as a flat sequence, and tuples (a column vector or objects).

use crate::error::ErrorDetails;
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

use super::value::ValueDe;
use super::Deserializer;
use crate::adapter_protocol;
use crate::error::{Error, Result};
use crate::model::Object;
use crate::wire::{Source, Values};

/// Objects back to back: struct fields, or the elements after a count marker.
pub(super) struct ObjectsSeq<'a, S> {
    pub(super) de: &'a mut Deserializer<S>,
    pub(super) remaining: usize,
    pub(super) index: usize,
    pub(super) fields: Option<&'static [&'static str]>,
}

impl<'de, S: Source> SeqAccess<'de> for ObjectsSeq<'_, S> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.remaining == 0 {
            return Ok(None);
        }
        let index = self.index;
        let value = seed
            .deserialize(&mut *self.de)
            .map_err(|e| match self.fields {
                Some(fields) => e.within(&fields[index]),
                None => e.within(&format_args!("[{index}]")),
            })?;
        self.remaining -= 1;
        self.index += 1;
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining)
    }
}

/// How a matrix is read as a sequence, decided by the first element's type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MatrixMode {
    /// Numbers: the values of a row or column vector.
    Vector,
    /// Sequences: the rows.
    Rows,
}

/// A matrix read as a sequence.
pub(super) struct MatrixSeq {
    values: Values,
    rows: usize,
    cols: usize,
    offset: u64,
    mode: Option<MatrixMode>,
    index: usize,
}

impl MatrixSeq {
    pub fn new(object: Object) -> Result<Self> {
        let offset = object.offset();
        let (rows, cols) = object.shape();
        let values = object.dense_values()?;
        Ok(MatrixSeq {
            values,
            rows: rows as usize,
            cols: cols as usize,
            offset,
            mode: None,
            index: 0,
        })
    }

    fn len(&self) -> usize {
        match self.mode {
            Some(MatrixMode::Rows) => self.rows,
            _ => self.values.len(),
        }
    }

    fn value(&self, index: usize) -> Result<ValueDe> {
        let value = self.values.get(index).ok_or_else(|| {
            Error::invalid(format!(
                "internal: value {index} of {} read",
                self.values.len()
            ))
        })?;
        Ok(ValueDe {
            value,
            offset: self.offset,
        })
    }

    /// Switches to vector mode for the first element.
    fn first_number(&mut self) -> Result<ValueDe> {
        if (self.rows != 1 && self.cols != 1) || self.values.is_empty() {
            return Err(ErrorDetails::ShapeMismatch {
                offset: self.offset,
                expected: "a sequence of numbers is read from a non-empty n x 1 or 1 x n object"
                    .into(),
                rows: self.rows as u64,
                cols: self.cols as u64,
            }
            .into());
        }
        self.mode = Some(MatrixMode::Vector);
        self.value(0)
    }

    fn row(&self, row: usize) -> RowSeq<'_> {
        RowSeq {
            seq: self,
            next: row * self.cols,
            end: (row + 1) * self.cols,
        }
    }
}

impl<'de> SeqAccess<'de> for MatrixSeq {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let index = self.index;
        let result = match self.mode {
            // A matrix without rows is an empty sequence, whatever the element type.
            None if self.rows == 0 => return Ok(None),
            None => seed.deserialize(FirstOfMatrix { seq: self }),
            Some(_) if index >= self.len() => return Ok(None),
            Some(MatrixMode::Vector) => seed.deserialize(self.value(index)?),
            Some(MatrixMode::Rows) => seed.deserialize(RowDe {
                row: self.row(index),
            }),
        };
        let value = result.map_err(|e| e.within(&format_args!("[{index}]")))?;
        self.index += 1;
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        self.mode.map(|_| self.len() - self.index)
    }
}

/// The first element of a matrix read as a sequence: its type picks the mode.
struct FirstOfMatrix<'a> {
    seq: &'a mut MatrixSeq,
}

impl FirstOfMatrix<'_> {
    fn number(self) -> Result<ValueDe> {
        self.seq.first_number()
    }

    fn not_a_sequence_of_objects(&self) -> Error {
        Error::from(ErrorDetails::ShapeMismatch {
            offset: self.seq.offset,
            expected: "a sequence of objects starts with a 0 x n count marker".into(),
            rows: self.seq.rows as u64,
            cols: self.seq.cols as u64,
        })
    }
}

impl<'de> de::Deserializer<'de> for FirstOfMatrix<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(self.not_a_sequence_of_objects())
    }

    numbers_via!(number);

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.seq.mode = Some(MatrixMode::Rows);
        RowDe {
            row: self.seq.row(0),
        }
        .deserialize_seq(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if adapter_protocol::is_marker(name) {
            Err(self.not_a_sequence_of_objects())
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf option unit unit_struct map struct enum
        identifier ignored_any
    }
}

/// One row of a matrix, as a sequence of numbers.
struct RowSeq<'a> {
    seq: &'a MatrixSeq,
    next: usize,
    end: usize,
}

impl<'de> SeqAccess<'de> for RowSeq<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.next >= self.end {
            return Ok(None);
        }
        let value = seed.deserialize(self.seq.value(self.next)?)?;
        self.next += 1;
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.end - self.next)
    }
}

/// A matrix row as a value: it deserializes as a sequence of numbers only.
struct RowDe<'a> {
    row: RowSeq<'a>,
}

impl<'de> de::Deserializer<'de> for RowDe<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let mut row = self.row;
        let value = visitor.visit_seq(&mut row)?;
        if row.next < row.end {
            return Err(de::Error::invalid_length(
                row.seq.cols,
                &"a row as long as the Rust type's",
            ));
        }
        Ok(value)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// A tuple: a column vector when its elements are numbers and the next object is `len x 1`,
/// objects back to back otherwise.
pub(super) struct TupleSeq<'a, S> {
    pub(super) de: &'a mut Deserializer<S>,
    pub(super) len: usize,
    pub(super) index: usize,
    pub(super) vector: Option<MatrixSeq>,
}

impl<'de, S: Source> SeqAccess<'de> for TupleSeq<'_, S> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let index = self.index;
        if index >= self.len {
            return Ok(None);
        }
        let result = match (&self.vector, index) {
            (Some(vector), _) => seed.deserialize(vector.value(index)?),
            (None, 0) => seed.deserialize(FirstOfTuple { tuple: self }),
            (None, _) => seed.deserialize(&mut *self.de),
        };
        let value = result.map_err(|e| e.within(&format_args!("[{index}]")))?;
        self.index += 1;
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len - self.index)
    }
}

/// The first element of a tuple: a number asks whether the tuple is a column vector.
struct FirstOfTuple<'a, 'b, S> {
    tuple: &'a mut TupleSeq<'b, S>,
}

impl<S: Source> FirstOfTuple<'_, '_, S> {
    fn number(self) -> Result<ValueDe> {
        let len = self.tuple.len as u64;
        let (data_type, rows, cols) = self.tuple.de.peek()?;
        if len >= 2 && data_type.is_matrix() && (rows, cols) == (len, 1) {
            let object = self.tuple.de.next_object_to_materialize(false, 0)?;
            let vector = MatrixSeq::new(object)?;
            let first = vector.value(0)?;
            self.tuple.vector = Some(vector);
            Ok(first)
        } else {
            self.tuple.de.scalar()
        }
    }
}

/// Forwards the methods named to the stream deserializer.
macro_rules! forward_to_stream {
    ($($method:ident($($arg:ident: $ty:ty),*))*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value> {
            (&mut *self.tuple.de).$method($($arg,)* visitor)
        }
    )*};
}

impl<'de, S: Source> de::Deserializer<'de> for FirstOfTuple<'_, '_, S> {
    type Error = Error;

    numbers_via!(number);

    forward_to_stream! {
        deserialize_any() deserialize_i128() deserialize_u128() deserialize_char()
        deserialize_str() deserialize_string() deserialize_bytes() deserialize_byte_buf()
        deserialize_option() deserialize_unit() deserialize_map() deserialize_identifier()
        deserialize_ignored_any() deserialize_seq()
        deserialize_unit_struct(name: &'static str)
        deserialize_newtype_struct(name: &'static str)
        deserialize_tuple(len: usize)
        deserialize_tuple_struct(name: &'static str, len: usize)
        deserialize_struct(name: &'static str, fields: &'static [&'static str])
        deserialize_enum(name: &'static str, variants: &'static [&'static str])
    }
}
